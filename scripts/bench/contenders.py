"""The contenders: every batch API behind one stepping interface, and how each is built.

A ``Stepper``'s ``step`` is one call of the timed loop: a lock-step ``step`` of the whole
batch (``steps_per_call = num_envs``) or one ``recv`` + ``send`` round of an
asynchronous API (``steps_per_call = batch_size``). A ``Method`` is a row of the report:
its ``family`` picks the builder (raw env loop, the machine ceiling, ours, ALEVecEnv,
gymnasium, SB3, EnvPool, PufferLib), each a short function; ``unavailable`` says why a method
cannot run here (a package not installed, a backend without the asynchronous API).

Example:
    >>> import gymnasium as gym
    >>> from vec_envs import DummyVecEnv
    >>> stepper = VecEnvStepper(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    >>> stepper.start(seed=0).shape
    (2, 4)
    >>> obs, dones, env_ids = stepper.step(np.array([0, 1]))
    >>> obs.shape, env_ids is None, stepper.steps_per_call
    ((2, 4), True, 2)
    >>> stepper.close()
    >>> METHODS["subproc-async"].label
    'SubprocVecEnv() recv/send, batch_size num_envs/2'
    >>> unavailable(METHODS["envpool"], WORKLOADS["W5"])
    'EnvPool (sync) cannot run W5'
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces

from bench.envs import WORKLOADS, Workload
from vec_envs.extras import install_hint

__all__ = ["Stepper", "RawStepper", "VecEnvStepper", "RecvSendStepper", "GymVectorStepper", "EnvPoolStepper",
           "EnvPoolRecvSendStepper", "FrameStacker", "Stacked", "Method", "METHODS", "unavailable", "build",
           "batch_size_of", "WORKLOADS"]

Batch = tuple[Any, np.ndarray, "np.ndarray | None"]
"""``(obs, dones, env_ids)`` of one call; ``env_ids`` None = every env, in order."""


class Stepper:
    """One batch API (or one env) behind the interface of the timed loop.

    Attributes:
        num_envs: envs in the batch.
        steps_per_call: env steps that one ``step`` call performs.
        action_space: the action space of one env.
        stacks_frames: stacks frames itself (no in-script stacker needed on top).
        note: what the report should say about how it ran.
    """

    num_envs: int
    steps_per_call: int
    action_space: spaces.Space[Any]
    stacks_frames = False
    note = ""

    def start(self, seed: int) -> Any:
        """Seed env i with ``seed + i`` and reset; the first observations, or None for an
        asynchronous API (which has received every env's reset row and sent it an action)."""
        raise NotImplementedError

    def step(self, actions: np.ndarray) -> Batch:
        """One call: ``actions`` holds one action per env of the batch."""
        raise NotImplementedError

    def rows(self, actions: np.ndarray) -> list[Any]:
        """The pre-sampled ``(steps, num_envs, ...)`` actions as the arguments of ``step``."""
        return list(actions)

    def close(self) -> None:
        """Close the envs (and join any workers)."""
        raise NotImplementedError


class RawStepper(Stepper):
    """A single env in a plain loop (reset when its episode ends): the per-core rate."""

    def __init__(self, env: Any) -> None:
        self.env, self.action_space = env, env.action_space
        self.num_envs = self.steps_per_call = 1

    def start(self, seed: int) -> Any:
        return self.env.reset(seed=seed)[0][None]

    def step(self, actions: Any) -> Batch:
        obs, _, terminated, truncated, _ = self.env.step(actions)
        done = terminated or truncated
        if done:
            obs, _ = self.env.reset()
        return obs[None], np.array([done]), None

    def rows(self, actions: np.ndarray) -> list[Any]:
        return list(actions[:, 0])

    def close(self) -> None:
        self.env.close()


class VecEnvStepper(Stepper):
    """The baselines / SB3 API: ``seed()``, ``reset() -> obs``, ``step() -> 4-tuple``."""

    def __init__(self, venv: Any, stacks_frames: bool = False, note: str = "") -> None:
        self.venv, self.action_space = venv, venv.action_space
        self.num_envs = self.steps_per_call = venv.num_envs
        self.stacks_frames, self.note = stacks_frames, note

    def start(self, seed: int) -> Any:
        self.venv.seed(seed)
        return self.venv.reset()

    def step(self, actions: Any) -> Batch:
        obs, _, dones, _ = self.venv.step(actions)
        return obs, dones, None

    def close(self) -> None:
        self.venv.close()


def first_sends(recv: Callable[[], np.ndarray], send: Callable[[np.ndarray, np.ndarray], None],
                num_envs: int, action_space: spaces.Space[Any]) -> None:
    """Receive every env's reset row and send it a first action.

    An asynchronous reset finishes inside the first ``recv`` calls; done here, it counts
    as build time (as ``reset()`` does for lock-step methods), not as stepping.
    """
    seen: set[int] = set()
    while len(seen) < num_envs:
        env_ids = recv()
        send(np.array([action_space.sample() for _ in env_ids]), env_ids)
        seen.update(int(i) for i in env_ids)


class RecvSendStepper(VecEnvStepper):
    """Our asynchronous API: ``async_reset()``, then ``recv()`` + ``send(actions[ids], ids)``."""

    def __init__(self, venv: Any, stacks_frames: bool = False, note: str = "") -> None:
        super().__init__(venv, stacks_frames, note)
        self.steps_per_call = venv.batch_size

    def start(self, seed: int) -> Any:
        self.venv.seed(seed)
        self.venv.async_reset()
        first_sends(lambda: self.venv.recv()[-1], self.venv.send, self.num_envs, self.action_space)
        return None

    def step(self, actions: np.ndarray) -> Batch:
        obs, _, dones, _, env_ids = self.venv.recv()
        self.venv.send(actions[env_ids], env_ids)
        return obs, dones, env_ids


class GymVectorStepper(Stepper):
    """gymnasium.vector: ``reset(seed=) -> (obs, info)``, ``step() -> 5-tuple``."""

    def __init__(self, envs: Any, action_space: spaces.Space[Any], stacks_frames: bool = False,
                 note: str = "") -> None:
        self.envs, self.action_space = envs, action_space
        self.num_envs = self.steps_per_call = envs.num_envs
        self.stacks_frames, self.note = stacks_frames, note

    def start(self, seed: int) -> Any:
        return self.envs.reset(seed=seed)[0]

    def step(self, actions: Any) -> Batch:
        obs, _, terminated, truncated, _ = self.envs.step(actions)
        return obs, terminated | truncated, None

    def close(self) -> None:
        self.envs.close()


class EnvPoolStepper(GymVectorStepper):
    """EnvPool in lock-step (seeded when made; its own next-step auto-reset)."""

    def start(self, seed: int) -> Any:
        return self.envs.reset()[0]


class EnvPoolRecvSendStepper(EnvPoolStepper):
    """EnvPool's asynchronous API: ``async_reset()``, then ``recv()`` + ``send(actions, ids)``."""

    def __init__(self, envs: Any, action_space: spaces.Space[Any], batch_size: int,
                 stacks_frames: bool = False, note: str = "") -> None:
        super().__init__(envs, action_space, stacks_frames, note)
        self.steps_per_call = batch_size

    def start(self, seed: int) -> Any:
        self.envs.async_reset()
        first_sends(lambda: self.envs.recv()[-1]["env_id"], self.envs.send, self.num_envs, self.action_space)
        return None

    def step(self, actions: np.ndarray) -> Batch:
        obs, _, terminated, truncated, info = self.envs.recv()
        env_ids = info["env_id"]
        self.envs.send(actions[env_ids], env_ids)
        return obs, terminated | truncated, env_ids


class FrameStacker:
    """The last ``n`` frames of every env on the last axis; an env's stack is zeroed when
    its episode ends (what SB3's and baselines' VecFrameStack do). Rows follow ``env_ids``,
    so it serves lock-step and recv/send alike.

    Example:
        >>> stacker = FrameStacker(n=2, num_envs=2)
        >>> stacker.push(np.ones((2, 1, 1)), np.array([False, False]))[..., 0].ravel()
        array([0., 0.])
        >>> stacker.push(np.full((1, 1, 1), 5.0), np.array([True]), np.array([1]))[..., -1].ravel()
        array([5.])
    """

    def __init__(self, n: int, num_envs: int) -> None:
        self.n, self.num_envs = n, num_envs
        self.stacked: np.ndarray | None = None

    def push(self, obs: np.ndarray, dones: np.ndarray, env_ids: np.ndarray | None = None) -> np.ndarray:
        """Add the newest frames of the envs ``env_ids`` (None: all); their stacks."""
        channels = obs.shape[-1]
        if self.stacked is None:
            self.stacked = np.zeros((self.num_envs, *obs.shape[1:-1], channels * self.n), obs.dtype)
        rows = slice(None) if env_ids is None else env_ids
        stacked = np.roll(self.stacked[rows], -channels, axis=-1)
        stacked[np.atleast_1d(dones)] = 0
        stacked[..., -channels:] = obs
        self.stacked[rows] = stacked
        return stacked


class Stacked(Stepper):
    """Any stepper followed by the in-script ``FrameStacker``."""

    def __init__(self, inner: Stepper, n: int) -> None:
        self.inner, self.stacker = inner, FrameStacker(n, inner.num_envs)
        self.num_envs, self.steps_per_call = inner.num_envs, inner.steps_per_call
        self.action_space, self.stacks_frames = inner.action_space, True
        self.note = "; ".join(filter(None, [inner.note, "frame stack: in-script stacker"]))

    def start(self, seed: int) -> Any:
        obs = self.inner.start(seed)
        if obs is None:
            return None
        return self.stacker.push(obs, np.zeros(self.num_envs, bool))

    def step(self, actions: Any) -> Batch:
        obs, dones, env_ids = self.inner.step(actions)
        return self.stacker.push(obs, dones, env_ids), dones, env_ids

    def rows(self, actions: np.ndarray) -> list[Any]:
        return self.inner.rows(actions)

    def close(self) -> None:
        self.inner.close()


# ---------------------------------------------------------------- the methods
EnvFns = list[Callable[[], Any]]
ATARI = ("W3", "W4", "M3", "M4")
ATARI_ENVS = ("pong", "breakout")
NOT_BUSY = ("W1", "W2", "M1", *ATARI)


@dataclass(frozen=True)
class Method:
    """One way to step a workload.

    Attributes:
        key: command-line name.
        label: the report's name for it.
        family: which builder makes it (raw, ceiling, ours, ale, ale-engine, gymnasium, sb3, envpool,
            pufferlib).
        options: that builder's arguments.
        recv_send: driven by ``recv`` / ``send``, ``batch_size = num_envs // batch_divisor``.
        batch_divisor: see ``recv_send``.
        quick: part of the ``--quick`` subset.
        workloads: the workloads it can run (None: all).
    """

    key: str
    label: str
    family: str
    options: dict[str, Any] = field(default_factory=dict)
    recv_send: bool = False
    batch_divisor: int = 2
    quick: bool = False
    workloads: tuple[str, ...] | None = None

    @property
    def ours(self) -> bool:
        """One of vec_envs' backends."""
        return self.family in ("ours", "ale")


def _ours(key: str, label: str, backend: str, quick: bool = False, workloads: tuple[str, ...] | None = None,
          **options: Any) -> list[Method]:
    """The lock-step method of one of our backends and its recv/send twin."""
    options = {"backend": backend, **options}
    return [Method(key, label, "ours", options, quick=quick, workloads=workloads),
            Method(f"{key}-async", f"{label} recv/send, batch_size num_envs/2", "ours", options,
                   recv_send=True, quick=quick, workloads=workloads)]


METHODS: dict[str, Method] = {m.key: m for m in [
    Method("raw", "raw (1 env, plain loop)", "raw"),
    Method("ceiling", "machine ceiling (1 raw loop per core, at once)", "ceiling", quick=True),
    *_ours("dummy", "DummyVecEnv", "DummyVecEnv", quick=True),
    *_ours("subproc", "SubprocVecEnv()", "SubprocVecEnv", quick=True),
    Method("subproc-noshm", "SubprocVecEnv(shared_memory=False)", "ours",
           {"backend": "SubprocVecEnv", "shared_memory": False}),
    *_ours("subproc-1", "SubprocVecEnv(in_series=1)", "SubprocVecEnv", in_series=1,
           workloads=("W1", "W3", "W4", "W5", "M3", "M4", "M5")),
    *_ours("subproc-2", "SubprocVecEnv(in_series=2)", "SubprocVecEnv", in_series=2,
           workloads=("W1", "W3", "W4", "W5", "M3", "M4", "M5")),
    *_ours("ray", "RayVecEnv()", "RayVecEnv"),
    Method("ale", "ALEVecEnv", "ale", quick=True, workloads=ATARI),
    Method("ale-async", "ALEVecEnv recv/send, batch_size num_envs/2", "ale", recv_send=True, quick=True,
           workloads=ATARI),
    Method("ale-async-4", "ALEVecEnv recv/send, batch_size num_envs/4", "ale", recv_send=True, batch_divisor=4,
           workloads=ATARI),
    Method("ale-engine", "ale-py AtariVectorEnv (the C++ engine under ALEVecEnv)", "ale-engine", workloads=ATARI),
    Method("gym-sync", "gymnasium SyncVectorEnv", "gymnasium", {"cls": "SyncVectorEnv"}, quick=True),
    Method("gym-async", "gymnasium AsyncVectorEnv(shared_memory=True)", "gymnasium",
           {"cls": "AsyncVectorEnv", "shared_memory": True}),
    Method("sb3-dummy", "SB3 DummyVecEnv", "sb3", {"cls": "DummyVecEnv"}),
    Method("sb3-subproc", "SB3 SubprocVecEnv", "sb3", {"cls": "SubprocVecEnv"},
           workloads=("W1", "W3", "W4", "W5", "M3", "M4", "M5")),  # a process (with torch) per env
    Method("envpool", "EnvPool (sync)", "envpool", workloads=NOT_BUSY),
    Method("envpool-async", "EnvPool recv/send, batch_size num_envs/2", "envpool", recv_send=True,
           workloads=NOT_BUSY),
    Method("pufferlib", "PufferLib Multiprocessing", "pufferlib"),
]}


def batch_size_of(method: Method, workload: Workload) -> int:
    """Envs per ``recv`` of a recv/send method; the whole batch for a lock-step one."""
    return max(1, workload.num_envs // method.batch_divisor) if method.recv_send else workload.num_envs


def load_ours(name: str) -> Any:
    """``vec_envs.<name>``; ImportError when this checkout of vec_envs has no such backend."""
    import vec_envs

    cls = getattr(vec_envs, name, None)
    if cls is None:
        raise ImportError(f"vec_envs has no {name}")
    return cls


def _installed(module: str) -> bool:
    """``module`` can be imported here (checked without importing it)."""
    return importlib.util.find_spec(module) is not None


def unavailable(method: Method, workload: Workload) -> str | None:
    """Why ``method`` cannot run ``workload`` here, or None when it can."""
    if method.workloads is not None and workload.key not in method.workloads:
        return f"{method.label} cannot run {workload.key}"
    if workload.env in ATARI_ENVS and method.family not in ("envpool", "ale") and not _installed("ale_py"):
        return f"{method.label}: not installed (ale-py: {install_hint('atari')})"
    backend = {"ours": method.options.get("backend"), "ale": "ALEVecEnv"}.get(method.family)
    needs = {"sb3": "stable_baselines3", "envpool": "envpool", "ale-engine": "ale_py",
             "pufferlib": "pufferlib"}.get(method.family)
    needs = "ray" if backend == "RayVecEnv" else needs
    if needs and not _installed(needs):
        return f"{method.label}: not installed ({needs})"
    if backend is None:
        return None
    try:
        cls = load_ours(backend)
    except ImportError as exc:
        return f"{method.label}: not available ({exc})"
    if method.recv_send and "batch_size" not in inspect.signature(cls).parameters:
        return f"{method.label}: not available (vec_envs.{backend} takes no batch_size)"
    return None


def _frame_stacked(venv: Any, workload: Workload, note: str) -> tuple[Any, bool, str]:
    """``venv`` under ``vec_envs.wrappers.VecFrameStack`` when the workload stacks frames."""
    if not workload.frame_stack:
        return venv, False, note
    from vec_envs.wrappers import VecFrameStack

    note = "; ".join(filter(None, [note, "frame stack: vec_envs.wrappers.VecFrameStack"]))
    return VecFrameStack(venv, workload.frame_stack), True, note


def build_ours(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """One of our backends with its options (``batch_size`` for recv/send), frame-stacked
    by ``vec_envs.wrappers.VecFrameStack``."""
    options = dict(method.options)
    cls = load_ours(options.pop("backend"))
    if method.recv_send:
        options["batch_size"] = batch_size_of(method, workload)
    venv = cls(env_fns, **options)
    note = f"in_series resolved to {venv.in_series}" if hasattr(venv, "in_series") else ""
    venv, stacked, note = _frame_stacked(venv, workload, note)
    stepper = RecvSendStepper if method.recv_send else VecEnvStepper
    return stepper(venv, stacked, note)


ALE_COMMON = {"repeat_action_probability": 0.25, "episode_life": False, "clip_rewards": False,
              "fire_reset": False, "frame_skip": 4}
ALE_TASKS = {  # the options of ALEVecEnv that give each Atari env of bench.envs
    "pong": ("Pong", {**ALE_COMMON, "noop_max": 0, "warp_frame": False, "grayscale": False}),
    "breakout": ("Breakout", {**ALE_COMMON, "noop_max": 30}),
}


def build_ale(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """``vec_envs.ALEVecEnv``: C++ threads, its own preprocessing and frame stack."""
    game, options = ALE_TASKS[workload.env]
    venv = load_ours("ALEVecEnv")(game, workload.num_envs, seed=seed, frame_stack=workload.frame_stack or 1,
                                  batch_size=batch_size_of(method, workload), **options)
    note = "its own preprocessing and frame stack (C++ threads)"
    stepper = RecvSendStepper if method.recv_send else VecEnvStepper
    return stepper(venv, True, note)


ENGINE_COMMON: dict[str, Any] = {"autoreset_mode": "SameStep", "repeat_action_probability": 0.25,
                                 "use_fire_reset": False, "reward_clipping": False, "episodic_life": False}
# ale-py's AtariVectorEnv options that give each Atari env of bench.envs
ENGINE_TASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "pong": ("pong", {"stack_num": 1, "img_height": 210, "img_width": 160, "grayscale": False, "maxpool": False,
                      "noop_max": 0}),
    "breakout": ("breakout", {"stack_num": 4, "noop_max": 30}),
}


def build_ale_engine(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """ale-py's ``AtariVectorEnv`` alone: the engine ALEVecEnv puts our API on."""
    from ale_py.vector_env import AtariVectorEnv

    game, options = ENGINE_TASKS[workload.env]
    envs = AtariVectorEnv(game, workload.num_envs, **ENGINE_COMMON, **options)
    return GymVectorStepper(envs, envs.single_action_space, True, "same-step auto-reset, no API on top")


def build_gymnasium(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """A gymnasium vector env with same-step auto-reset (the work our backends do)."""
    import gymnasium

    options = dict(method.options)
    cls = getattr(gymnasium.vector, options.pop("cls"))
    envs = cls(env_fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP, **options)
    return GymVectorStepper(envs, envs.single_action_space)


def build_sb3(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """Stable-Baselines3's DummyVecEnv or SubprocVecEnv with its default arguments."""
    from stable_baselines3.common import vec_env

    return VecEnvStepper(getattr(vec_env, method.options["cls"])(env_fns))


ENVPOOL_ATARI = {"episodic_life": False, "reward_clip": False, "repeat_action_probability": 0.25,
                 "use_fire_reset": False}
ENVPOOL_TASKS = {
    "cartpole": ("CartPole-v1", {}),
    "pong": ("Pong-v5", {**ENVPOOL_ATARI, "img_height": 210, "img_width": 160, "gray_scale": False,
                         "stack_num": 1, "noop_max": 1}),
    "breakout": ("Breakout-v5", {**ENVPOOL_ATARI, "stack_num": 4}),
}


def build_envpool(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """EnvPool's own envs (its Atari preprocessing and frame stack stand in for ours)."""
    import envpool

    task, options = ENVPOOL_TASKS[workload.env]
    batch_size = batch_size_of(method, workload)
    envs = envpool.make_gymnasium(task, num_envs=workload.num_envs, batch_size=batch_size, seed=seed,
                                  **options)
    note = "its own C++ envs and preprocessing; next-step auto-reset"
    if method.recv_send:
        return EnvPoolRecvSendStepper(envs, envs.action_space, batch_size, bool(workload.frame_stack), note)
    return EnvPoolStepper(envs, envs.action_space, bool(workload.frame_stack), note)


def build_pufferlib(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """PufferLib's Multiprocessing backend: one worker per core (at most one per env), each env
    behind PufferLib's emulation layer."""
    import pufferlib.emulation
    import pufferlib.vector

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = max(w for w in range(1, min(cores, workload.num_envs) + 1) if workload.num_envs % w == 0)
    creators = [partial(pufferlib.emulation.GymnasiumPufferEnv, env_creator=fn) for fn in env_fns]
    envs = pufferlib.vector.make(creators, backend=pufferlib.vector.Multiprocessing, num_envs=workload.num_envs,
                                 num_workers=workers)
    return GymVectorStepper(envs, envs.single_action_space, note=f"{workers} workers; its own emulation layer")


def build_raw(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """Env 0 of the workload, alone."""
    return RawStepper(env_fns[0]())


BUILDERS: dict[str, Callable[[Workload, EnvFns, Method, int], Stepper]] = {
    "raw": build_raw, "ours": build_ours, "ale": build_ale, "ale-engine": build_ale_engine,
    "gymnasium": build_gymnasium,
    "sb3": build_sb3, "envpool": build_envpool, "pufferlib": build_pufferlib,
}


def build(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """The stepper of ``method`` on ``workload`` (not the ceiling: ``bench.ceiling`` measures that)."""
    return BUILDERS[method.family](workload, env_fns, method, seed)
