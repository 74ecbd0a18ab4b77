"""The rows a batch of envs gives through each backend and autoreset mode, as gymnasium's vector
API shows them, and where two recordings part.

A ``Way`` builds a ``gymnasium.vector.VectorEnv`` over ``num_envs`` copies of an env: one of
our backends behind ``to_gymnasium``, or gymnasium's own ``SyncVectorEnv``, the reference for
what each autoreset mode means. ``record`` resets it with a seed and steps it through the
same actions; under ``DISABLED`` autoreset it resets the envs that ended before their next
step (``reset(options={"reset_mask": ...})``), as an agent must. Rewards are kept as float32
(the VecEnv's type) and truncation as ``truncated and not terminated`` (the VecEnv's
``TimeLimit.truncated``), so that what differs is what an agent would see differ.

Example:
    >>> import gymnasium as gym
    >>> from functools import partial
    >>> fn = partial(gym.make, "CartPole-v1")
    >>> actions = sample_batches(gym.spaces.Discrete(2), 2, 30, seed=0)
    >>> ours = record(DUMMY.build(fn, 2, AutoresetMode.SAME_STEP), 0, actions, AutoresetMode.SAME_STEP)
    >>> ref = record(SYNC.build(fn, 2, AutoresetMode.SAME_STEP), 0, actions, AutoresetMode.SAME_STEP)
    >>> len(ours) == 31, compare(ref, ours) is None
    (True, True)
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import batch_space

from vec_envs.checking.differences import first_difference
from vec_envs.interop.to_gymnasium import to_gymnasium
from vec_envs.make_vec_env import backend_class
from vec_envs.spaces.batching import copy_obs

__all__ = ["Way", "DUMMY", "SYNC", "subproc", "multiagent_rows", "record", "compare", "sample_batches", "Rows"]

#: one recorded call: ("reset", obs, infos) or ("step", obs, rewards, terminations, truncations, infos)
Rows = list[tuple[Any, ...]]
EnvFn = Callable[[], Any]


@dataclass(frozen=True)
class Way:
    """A way to step ``num_envs`` copies of an env: ``build(env_fn, num_envs, mode)`` returns a
    gymnasium ``VectorEnv``; ``label`` names it in the report."""

    label: str
    build: Callable[[EnvFn, int, AutoresetMode], Any]


def _ours(backend: str, env_fn: EnvFn, num_envs: int, mode: AutoresetMode, one_worker: bool = False,
          **kwargs: Any) -> Any:
    """The backend ``backend`` (``DummyVecEnv``...) over ``num_envs`` copies (``one_worker``: all in
    one worker), behind ``to_gymnasium``."""
    if one_worker:
        kwargs["in_series"] = num_envs
    return to_gymnasium(backend_class(backend)([env_fn] * num_envs, autoreset_mode=mode, **kwargs))


def _sync(env_fn: EnvFn, num_envs: int, mode: AutoresetMode) -> Any:
    return SyncVectorEnv([env_fn] * num_envs, autoreset_mode=mode)


DUMMY = Way("DummyVecEnv", functools.partial(_ours, "DummyVecEnv"))
SYNC = Way("gymnasium SyncVectorEnv", _sync)


def subproc(shared_memory: bool, worker_per_env: bool = True) -> Way:
    """SubprocVecEnv with spawned workers, none of its envs stepped in the parent: a worker
    per env, or one worker for them all."""
    transport = "shared memory" if shared_memory else "pipes"
    options: dict[str, Any] = {"context": "spawn", "shared_memory": shared_memory, "step_in_parent": False}
    if worker_per_env:
        options["in_series"] = 1
    return Way(f"SubprocVecEnv, {transport}, spawn{'' if worker_per_env else ', 1 worker'}",
               functools.partial(_ours, "SubprocVecEnv", one_worker=not worker_per_env, **options))


def _agent_rows(backend: str, parallel_env_fn: EnvFn, num_envs: int, mode: AutoresetMode) -> Any:
    from vec_envs.multiagent import make_multiagent_vec_env

    kwargs = {"context": "spawn", "in_series": 1, "step_in_parent": False} if backend == "subproc" else {}
    return to_gymnasium(make_multiagent_vec_env(parallel_env_fn, num_envs, vec_env_cls=backend,
                                                vec_env_kwargs=kwargs))


def multiagent_rows(backend: str) -> Way:
    """``make_multiagent_vec_env`` over ``backend`` (``dummy``, or ``subproc`` spawned): a row per agent.
    Its ``build`` takes the ParallelEnv factory."""
    label = "DummyVecEnv" if backend == "dummy" else "SubprocVecEnv, spawn"
    return Way(f"multi-agent rows, {label}", functools.partial(_agent_rows, backend))


def sample_batches(single_space: Any, num_envs: int, steps: int, seed: int) -> list[Any]:
    """``steps`` batches of actions for ``num_envs`` envs of ``single_space``, drawn with ``seed``."""
    space = batch_space(single_space, num_envs)
    space.seed(seed)
    return [space.sample() for _ in range(steps)]


def record(envs: Any, seed: int, actions: Sequence[Any], mode: AutoresetMode) -> Rows:
    """Reset ``envs`` with ``seed``, step them through ``actions``; every result, copied. Closes ``envs``."""
    try:
        obs, infos = envs.reset(seed=seed)
        rows: Rows = [("reset", copy_obs(obs), infos)]
        ended = np.zeros(envs.num_envs, bool)
        for action in actions:
            if mode is AutoresetMode.DISABLED and ended.any():
                obs, infos = envs.reset(options={"reset_mask": ended.copy()})
                rows.append(("reset", copy_obs(obs), infos))
            obs, rewards, terminations, truncations, infos = envs.step(action)
            terminations, truncations = np.asarray(terminations), np.asarray(truncations)
            rows.append(("step", copy_obs(obs), np.asarray(rewards, np.float32), terminations,
                         truncations & ~terminations, infos))
            ended = terminations | truncations
    finally:
        envs.close()
    return rows


FIELDS = {"reset": ("obs", "infos"), "step": ("obs", "rewards", "terminations", "truncations", "infos")}


def compare(reference: Rows, rows: Rows) -> str | None:
    """Where ``rows`` first part from ``reference`` (``"step 12, terminations[1]: ..."``), or None."""
    for k, (want, got) in enumerate(zip(reference, rows)):
        call = f"call {k} ({want[0]})"
        if want[0] != got[0]:
            return f"{call}: a {got[0]} where the reference has a {want[0]}"
        for name, a, b in zip(FIELDS[want[0]], want[1:], got[1:]):
            found = first_difference(a, b, name)
            if found:
                return f"{call}, {found}"
    if len(reference) != len(rows):
        return f"{len(rows)} calls against {len(reference)}"
    return None


def episode_ends(rows: Rows) -> int:
    """How many episodes ended in ``rows``."""
    return int(sum(np.sum(row[3] | row[4]) for row in rows if row[0] == "step"))
