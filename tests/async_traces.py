"""Per-env traces under lock-step and under recv/send, to compare env by env.

Env ``i``'s action at its ``t``-th step depends only on ``(i, t)``, so an env driven by
recv/send, in whatever order the envs come back, gets the same actions as in lock-step.
A trace is one record per row an env produced: its reset row first, then one per step.
"""
from __future__ import annotations

import numpy as np

from vec_envs.spaces.batching import get_row

SEED = 123


def action(i, t, n_actions):
    """Env i's action at its t-th step (varies with both)."""
    return (i + t * (i + 1)) % n_actions


def _actions(ids_and_steps, n_actions):
    return np.array([action(int(i), t, n_actions) for i, t in ids_and_steps], np.int64)


def _record(obs, j, reward, done, info):
    info = dict(info)
    terminal = info.pop("terminal_observation", None)
    episode = info.pop("episode", None)
    if episode is not None:
        episode = {k: v for k, v in episode.items() if k != "t"}  # wall-clock time differs
    return {"obs": get_row(obs, j), "reward": float(reward), "done": bool(done), "terminal": terminal,
            "episode": episode, "info": info}


def lockstep_traces(venv, steps, n_actions, seed=SEED):
    """Seeded ``reset`` then ``steps`` lock-step steps: one trace per env."""
    venv.seed(seed)
    obs = venv.reset()
    traces = [[_record(obs, i, 0.0, False, venv.reset_infos[i])] for i in range(venv.num_envs)]
    for t in range(steps):
        obs, rewards, dones, infos = venv.step(_actions([(i, t) for i in range(venv.num_envs)], n_actions))
        for i, trace in enumerate(traces):
            trace.append(_record(obs, i, rewards[i], dones[i], infos[i]))
    return traces


def async_traces(venv, steps, n_actions, seed=SEED):
    """Seeded ``async_reset`` then recv/send until every env took ``steps`` steps.

    Checks the batch shape, that ids are unique, and that reset rows have reward 0 and
    done False. Envs may be left in flight (``close`` must cope)."""
    venv.seed(seed)
    venv.async_reset()
    traces = [[] for _ in range(venv.num_envs)]
    while min(len(trace) for trace in traces) <= steps:
        obs, rewards, dones, infos, env_ids = venv.recv()
        assert env_ids.dtype == np.int64
        assert len(env_ids) == venv.batch_size == len(rewards) == len(infos)
        assert len(set(env_ids.tolist())) == len(env_ids)
        for j, i in enumerate(env_ids):
            if not traces[i]:
                assert rewards[j] == 0.0
                assert not dones[j]
            traces[i].append(_record(obs, j, rewards[j], dones[j], infos[j]))
        venv.send(_actions([(i, len(traces[i]) - 1) for i in env_ids], n_actions), env_ids)
    return [trace[:steps + 1] for trace in traces]


def assert_same_traces(got, expected):
    """Env by env, row by row: observations, rewards, dones, terminal observations, infos."""
    assert len(got) == len(expected)
    for i, (a_trace, b_trace) in enumerate(zip(got, expected)):
        assert len(a_trace) == len(b_trace), f"env {i}"
        for t, (a, b) in enumerate(zip(a_trace, b_trace)):
            where = f"env {i}, row {t}"
            _same(a["obs"], b["obs"], where)
            assert (a["reward"], a["done"], a["episode"], a["info"].keys()) == \
                (b["reward"], b["done"], b["episode"], b["info"].keys()), where
            assert (a["terminal"] is None) == (b["terminal"] is None), where
            if a["terminal"] is not None:
                _same(a["terminal"], b["terminal"], where)
            for key in a["info"]:
                _same(a["info"][key], b["info"][key], f"{where}, info[{key!r}]")


def _same(a, b, where):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], where)
    elif isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            _same(x, y, where)
    else:
        np.testing.assert_array_equal(a, b, err_msg=where)
        assert np.asarray(a).dtype == np.asarray(b).dtype, where
