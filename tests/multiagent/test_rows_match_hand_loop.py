"""Every row of a MultiAgentVecEnv is, bit for bit, what a hand loop over the same ParallelEnvs
gives (observations, rewards, dones, terminal observations, ``active``), across resets,
on every backend, in lock-step and under recv/send."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from mpe2 import simple_spread_v3

from tests import backends
from tests.multiagent.parallel_envs import AGENTS, Latecomer, Relay, expected_step
from vec_envs.multiagent import make_multiagent_vec_env

N_ENVS = 4
SEED = 11

BACKENDS = [
    pytest.param("dummy", id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=2), id="subproc-series2-shared"),
    pytest.param(functools.partial(backends.subproc, in_series="auto", shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=2), id="ray-series2", marks=backends.ray_marks),
]


def row_actions(env_index: int, t: int, count: int, n: int = 3) -> np.ndarray:
    """The actions of env ``env_index`` at its step ``t`` (the same whoever drives it)."""
    return np.random.default_rng([env_index, t]).integers(0, n, count).astype(np.int64)


def check_env_rows(obs: np.ndarray, rewards: np.ndarray, dones: np.ndarray, infos: list[dict], rows: slice,
                   want: dict[str, Any], where: str) -> None:
    assert obs[rows].tobytes() == want["obs"].tobytes(), f"obs at {where}"
    assert rewards.dtype == np.float32, f"rewards at {where}"
    assert rewards[rows].tobytes() == want["rewards"].tobytes(), f"rewards at {where}"
    assert dones[rows].tolist() == want["dones"].tolist(), f"dones at {where}"
    for k, info in enumerate(infos[rows]):
        if k in want["terminal"]:
            assert info["terminal_observation"].tobytes() == want["terminal"][k].tobytes(), f"terminal obs at {where}"
            assert info["TimeLimit.truncated"] is want["truncated"][k], f"TimeLimit.truncated at {where}"
        else:
            assert "terminal_observation" not in info, f"no terminal obs at {where}, row {k}"
        inactive = not want["active"][k] and not want["dones"][k]
        assert info.get("active", True) is not inactive, f"info active at {where}, row {k}: {info}"
        for key, value in want["infos"][k].items():
            assert info[key] == value, f"agent info {key} at {where}"


def hand_envs(env_fn: Any, n_envs: int) -> list[Any]:
    envs = [env_fn() for _ in range(n_envs)]
    for e, env in enumerate(envs):
        env.reset(seed=SEED + e)
    return envs


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_fn", [pytest.param(Relay, id="relay-leaving-apart"),
                                    pytest.param(Latecomer, id="latecomer-joining-mid-episode"),
                                    pytest.param(functools.partial(simple_spread_v3.parallel_env, max_cycles=5),
                                                 id="simple-spread-truncated-together")])
def test_lockstep_rows_match_hand_loop(backend: Any, env_fn: Any) -> None:
    agents = env_fn().possible_agents
    count = len(agents)
    envs = hand_envs(env_fn, N_ENVS)
    n = int(envs[0].action_space(agents[0]).n)
    with make_multiagent_vec_env(env_fn, N_ENVS, vec_env_cls=backend) as venv:
        venv.seed(SEED)
        first = venv.reset()
        assert first.shape == (N_ENVS * count, *envs[0].observation_space(agents[0]).shape)
        assert venv.active.tolist() == [agent in env.agents for env in envs for agent in agents]
        ended = 0
        for t in range(16):
            actions = np.concatenate([row_actions(e, t, count, n) for e in range(N_ENVS)])
            obs, rewards, dones, infos = venv.step(actions)
            for e, env in enumerate(envs):
                rows = slice(e * count, (e + 1) * count)
                want = expected_step(env, actions[rows], agents)
                check_env_rows(obs, rewards, dones, infos, rows, want, f"step {t}, env {e}")
                assert venv.active[rows].tolist() == want["active"].tolist()
            ended += int(dones.sum())
        assert ended > N_ENVS * count  # every env went through at least one reset


def test_first_rows_are_the_seeded_resets() -> None:
    envs = [Relay() for _ in range(N_ENVS)]
    firsts = [env.reset(seed=SEED + e) for e, env in enumerate(envs)]
    with make_multiagent_vec_env(Relay, N_ENVS) as venv:
        venv.seed(SEED)
        obs = venv.reset()
        for e, (first, reset_infos) in enumerate(firsts):
            for k, agent in enumerate(AGENTS):
                assert obs[e * 3 + k].tobytes() == first[agent].tobytes()
                assert venv.reset_infos[e * 3 + k] == reset_infos[agent]


def test_reset_infos_follow_the_auto_reset() -> None:
    env = Relay()
    env.reset(seed=SEED)
    with make_multiagent_vec_env(Relay, 1) as venv:
        venv.seed(SEED)
        venv.reset()
        for t in range(12):
            actions = row_actions(0, t, 3)
            was_reset = not [a for a in env.agents if env.t + 1 < env.lifetimes[a]]
            venv.step(actions)
            expected_step(env, actions, AGENTS)
            if was_reset:
                assert [info["lifetime"] for info in venv.reset_infos] == [env.lifetimes[a] for a in AGENTS]


@pytest.mark.parametrize("backend", BACKENDS)
def test_recv_send_rows_match_hand_loop(backend: Any) -> None:
    """Envs driven by recv/send, rows sent back in a shuffled order, step as in the hand loop."""
    count = len(AGENTS)
    envs = hand_envs(Relay, N_ENVS)
    steps = [0] * N_ENVS
    sent: dict[int, np.ndarray] = {}
    shuffle = np.random.default_rng(0)
    with make_multiagent_vec_env(Relay, N_ENVS, vec_env_cls=backend,
                                 vec_env_kwargs={"batch_size": 2}) as venv:
        assert venv.batch_size == 2 * count
        venv.seed(SEED)
        venv.async_reset()
        for _ in range(30):
            obs, rewards, dones, infos, rows = venv.recv()
            env_ids = (rows[::count] // count).tolist()
            assert rows.tolist() == [e * count + k for e in env_ids for k in range(count)]
            for j, e in enumerate(env_ids):
                if steps[e] > 0:  # an env's first row after async_reset is its reset row
                    want = expected_step(envs[e], sent[e], AGENTS)
                    check_env_rows(obs, rewards, dones, infos, slice(j * count, (j + 1) * count), want,
                                   f"env {e}, step {steps[e]}")
                sent[e] = row_actions(e, steps[e], count)
                steps[e] += 1
            actions = np.concatenate([sent[e] for e in env_ids])
            order = shuffle.permutation(len(rows))
            venv.send(actions[order], rows[order])
        assert min(steps) > 5
