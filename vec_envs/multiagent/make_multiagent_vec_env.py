"""make_multiagent_vec_env: n copies of a PettingZoo ParallelEnv as one VecEnv, a row per agent."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from vec_envs.arguments import resolve_autoreset_mode
from vec_envs.autoreset import AutoresetMode, mode_name
from vec_envs.make_vec_env import make_vec_env
from vec_envs.multiagent.multiagent_vec_env import SAME_STEP_ONLY, MultiAgentVecEnv
from vec_envs.multiagent.parallel_env_adapter import ParallelEnvAdapter
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["make_multiagent_vec_env"]


def make_multiagent_vec_env(parallel_env_fn: Callable[[], Any], n_envs: int = 1,
                            vec_env_cls: Callable[..., VecEnvBase] | str = "dummy",
                            vec_env_kwargs: dict[str, Any] | None = None) -> MultiAgentVecEnv:
    """``n_envs`` copies of a PettingZoo ParallelEnv on any backend, one row per agent.

    Each backend env is a ``ParallelEnvAdapter`` that packs every agent of one ParallelEnv
    (so what each agent sees travels through the backend's shared memory); the result
    shows ``n_envs * len(possible_agents)`` rows, env-major, agents in
    ``possible_agents`` order (see ``MultiAgentVecEnv`` and docs/contract.md, "Multi-agent rows").

    Args:
        parallel_env_fn: a zero-argument factory returning a ParallelEnv (e.g.
            ``simple_spread_v3.parallel_env``); every agent must have the same spaces.
        n_envs: how many copies.
        vec_env_cls: the backend: ``"dummy"``, ``"subproc"``, ``"ray"`` or a VecEnv class.
        vec_env_kwargs: keyword arguments of the backend (``in_series``, ``batch_size``
            in envs, ``on_error``...).

    Example:
        >>> from mpe2 import simple_spread_v3
        >>> venv = make_multiagent_vec_env(simple_spread_v3.parallel_env, n_envs=4,
        ...                                vec_env_cls="subproc", vec_env_kwargs={"in_series": 2})
        >>> venv.seed(0)[:4]                    # env e gets 0 + e, each of its rows too
        [0, 0, 0, 1]
        >>> venv.reset().shape
        (12, 18)
        >>> venv.close()
    """
    mode = resolve_autoreset_mode((vec_env_kwargs or {}).get("autoreset_mode", AutoresetMode.SAME_STEP),
                                  "make_multiagent_vec_env()")
    if mode is not AutoresetMode.SAME_STEP:  # before any env is built
        raise ValueError(SAME_STEP_ONLY.format(where="make_multiagent_vec_env()", mode=mode_name(mode)))
    venv = make_vec_env(functools.partial(ParallelEnvAdapter, parallel_env_fn), n_envs=n_envs,
                        vec_env_cls=vec_env_cls, vec_env_kwargs=vec_env_kwargs)
    try:
        agents, observation_space, action_space = (
            venv.get_attr(name, 0)[0]
            for name in ("possible_agents", "agent_observation_space", "agent_action_space"))
    except BaseException:
        venv.close()
        raise
    return MultiAgentVecEnv(venv, agents, observation_space, action_space)
