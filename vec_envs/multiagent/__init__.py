"""Multi-agent envs as VecEnvs: every agent of every PettingZoo ParallelEnv is one row.

One shared policy (IPPO / MAPPO-style, SB3's PPO) then trains on every agent at once, on
any backend, with our wrappers and the SB3 / gymnasium adapters.

Example:
    >>> from mpe2 import simple_spread_v3
    >>> from vec_envs.interop import to_sb3
    >>> env = to_sb3(make_multiagent_vec_env(simple_spread_v3.parallel_env, n_envs=8))
    >>> env.num_envs, env.reset().shape     # 8 envs x 3 agents
    (24, (24, 18))
    >>> env.close()
"""
from __future__ import annotations

from vec_envs.multiagent.agent_rows import AgentRows
from vec_envs.multiagent.make_multiagent_vec_env import make_multiagent_vec_env
from vec_envs.multiagent.multiagent_vec_env import MultiAgentVecEnv
from vec_envs.multiagent.parallel_env_adapter import ParallelEnvAdapter

__all__ = ["AgentRows", "MultiAgentVecEnv", "ParallelEnvAdapter", "make_multiagent_vec_env"]
