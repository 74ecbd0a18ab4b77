"""The contenders: every batch API behind the one stepping interface of ``vec_envs.timing``
(``Stepper``: ours are there, the peers' here), and how each is built.

A ``Method`` is a row of the report: its ``family`` picks the builder (raw env loop, the
machine ceiling, ours, ALEVecEnv, gymnasium, SB3, EnvPool, PufferLib, a raw loop of
ParallelEnvs, SuperSuit), each a short function; ``unavailable`` says why a method cannot
run a workload here (a package not installed, a backend without the asynchronous API, an
env it does not take).

Example:
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

from bench.envs import WORKLOADS, Workload, spread
from vec_envs.extras import install_hint
from vec_envs.timing.steppers import (
    Batch,
    GymVectorStepper,
    RawStepper,
    RecvSendStepper,
    Stepper,
    VecEnvStepper,
    first_sends,
)

__all__ = ["Stepper", "RawStepper", "VecEnvStepper", "RecvSendStepper", "GymVectorStepper", "EnvPoolStepper",
           "EnvPoolRecvSendStepper", "FrameStacker", "Stacked", "Method", "METHODS", "unavailable", "build",
           "batch_size_of", "WORKLOADS"]


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
SMALL = ("W1", "W3", "W4", "W5", "W6", "M3", "M4", "M5")  # a process per env is affordable
AGENT_ROWS = ("ours", "ma-raw", "supersuit")  # the families that step ParallelEnvs


@dataclass(frozen=True)
class Method:
    """One way to step a workload.

    Attributes:
        key: command-line name.
        label: the report's name for it.
        family: which builder makes it (raw, ceiling, ours, ale, ale-engine, gymnasium, sb3, envpool,
            pufferlib, ma-raw, supersuit).
        options: that builder's arguments (ours: ``view="gymnasium"`` steps it behind ``to_gymnasium``).
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


def _quarter(in_series: int | str) -> Method:
    """SubprocVecEnv under recv/send with batch_size num_envs/4 (the fairness command's methods)."""
    shown = "" if in_series == "auto" else f"in_series={in_series}"
    return Method(f"fair-{in_series}", f"SubprocVecEnv({shown}) recv/send, batch_size num_envs/4", "ours",
                  {"backend": "SubprocVecEnv", "in_series": in_series}, recv_send=True, batch_divisor=4,
                  workloads=("W5", "W6"))


METHODS: dict[str, Method] = {m.key: m for m in [
    Method("raw", "raw (1 env, plain loop)", "raw"),
    Method("ceiling", "machine ceiling (1 raw loop per core, at once)", "ceiling", quick=True,
           workloads=tuple(k for k in WORKLOADS if k not in ("W6", "MA"))),  # envs that wait have none of a core
    *_ours("dummy", "DummyVecEnv", "DummyVecEnv", quick=True),
    *_ours("subproc", "SubprocVecEnv()", "SubprocVecEnv", quick=True),
    Method("subproc-noshm", "SubprocVecEnv(shared_memory=False)", "ours",
           {"backend": "SubprocVecEnv", "shared_memory": False}),
    *_ours("subproc-1", "SubprocVecEnv(in_series=1)", "SubprocVecEnv", in_series=1, workloads=SMALL),
    *_ours("subproc-2", "SubprocVecEnv(in_series=2)", "SubprocVecEnv", in_series=2, workloads=(*SMALL, "MA")),
    Method("subproc-next", "SubprocVecEnv(autoreset_mode='next_step')", "ours",
           {"backend": "SubprocVecEnv", "autoreset_mode": "next_step"}),
    Method("subproc-gym", "to_gymnasium(SubprocVecEnv())", "ours", {"backend": "SubprocVecEnv", "view": "gymnasium"}),
    Method("subproc-gym-next", "to_gymnasium(SubprocVecEnv(autoreset_mode='next_step'))", "ours",
           {"backend": "SubprocVecEnv", "view": "gymnasium", "autoreset_mode": "next_step"}),
    *_ours("ray", "RayVecEnv()", "RayVecEnv"),
    *(_quarter(k) for k in ("auto", 1, 2, 4)),
    Method("ale", "ALEVecEnv", "ale", quick=True, workloads=ATARI),
    Method("ale-async", "ALEVecEnv recv/send, batch_size num_envs/2", "ale", recv_send=True, quick=True,
           workloads=ATARI),
    Method("ale-async-4", "ALEVecEnv recv/send, batch_size num_envs/4", "ale", recv_send=True, batch_divisor=4,
           workloads=ATARI),
    Method("ale-next", "ALEVecEnv(autoreset_mode='next_step')", "ale", {"autoreset_mode": "next_step"},
           workloads=ATARI),
    Method("ale-engine", "ale-py AtariVectorEnv (the C++ engine under ALEVecEnv)", "ale-engine", workloads=ATARI),
    Method("gym-sync", "gymnasium SyncVectorEnv", "gymnasium", {"cls": "SyncVectorEnv"}, quick=True),
    Method("gym-async", "gymnasium AsyncVectorEnv(shared_memory=True)", "gymnasium",
           {"cls": "AsyncVectorEnv", "shared_memory": True}),
    Method("sb3-dummy", "SB3 DummyVecEnv", "sb3", {"cls": "DummyVecEnv"}),
    Method("sb3-subproc", "SB3 SubprocVecEnv", "sb3", {"cls": "SubprocVecEnv"}, workloads=SMALL),  # torch per env
    Method("envpool", "EnvPool (sync)", "envpool", workloads=NOT_BUSY),
    Method("envpool-async", "EnvPool recv/send, batch_size num_envs/2", "envpool", recv_send=True,
           workloads=NOT_BUSY),
    Method("pufferlib", "PufferLib Multiprocessing", "pufferlib"),
    Method("ma-raw", "raw loop (ParallelEnv.step in series)", "ma-raw", workloads=("MA",)),
    Method("supersuit-0", "SuperSuit concat_vec_envs_v1, num_cpus=0", "supersuit", {"num_cpus": 0},
           workloads=("MA",)),
    Method("supersuit-2", "SuperSuit concat_vec_envs_v1, num_cpus=2", "supersuit", {"num_cpus": 2},
           workloads=("MA",)),
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
    if (method.workloads is not None and workload.key not in method.workloads) or (
            workload.env == "spread" and method.family not in AGENT_ROWS):
        return f"{method.label} cannot run {workload.key}"
    if workload.env in ATARI_ENVS and method.family not in ("envpool", "ale") and not _installed("ale_py"):
        return f"{method.label}: not installed (ale-py: {install_hint('atari')})"
    backend = {"ours": method.options.get("backend"), "ale": "ALEVecEnv"}.get(method.family)
    needs = {"sb3": "stable_baselines3", "envpool": "envpool", "ale-engine": "ale_py", "pufferlib": "pufferlib",
             "supersuit": "supersuit", "ma-raw": "mpe2"}.get(method.family)
    needs = "mpe2" if workload.env == "spread" and needs is None else needs
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
    by ``vec_envs.wrappers.VecFrameStack``; a row per agent on a multi-agent workload; behind
    ``to_gymnasium`` with ``view="gymnasium"``."""
    options = dict(method.options)
    cls, view = load_ours(options.pop("backend")), options.pop("view", None)
    if method.recv_send:
        options["batch_size"] = batch_size_of(method, workload)
    if workload.env == "spread":
        from vec_envs.multiagent import make_multiagent_vec_env

        venv = make_multiagent_vec_env(partial(spread), workload.num_envs, vec_env_cls=cls, vec_env_kwargs=options)
    else:
        venv = cls(env_fns, **options)
    backend = getattr(venv, "venv", venv)  # the backend under the agent rows
    note = f"in_series resolved to {backend.in_series}" if hasattr(backend, "in_series") else ""
    venv, stacked, note = _frame_stacked(venv, workload, note)
    if view == "gymnasium":
        from vec_envs.interop import to_gymnasium

        return GymVectorStepper(to_gymnasium(venv), venv.action_space, stacked, note)
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
                                  batch_size=batch_size_of(method, workload), **options, **method.options)
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


class ParallelLoopStepper(Stepper):
    """PettingZoo ParallelEnvs stepped one after the other in this process: what people write by hand.
    One step steps every env; an env with no agent left is reset."""

    def __init__(self, envs: list[Any]) -> None:
        self.envs, self.agents = envs, envs[0].possible_agents
        self.action_space = envs[0].action_space(self.agents[0])
        self.num_envs = self.steps_per_call = len(envs) * len(self.agents)

    def start(self, seed: int) -> Any:
        for i, env in enumerate(self.envs):
            env.reset(seed=seed + i)
        return None

    def step(self, actions: np.ndarray) -> Batch:
        for e, env in enumerate(self.envs):
            row = e * len(self.agents)
            env.step({agent: actions[row + self.agents.index(agent)] for agent in env.agents})
            if not env.agents:
                env.reset()
        return None, np.zeros(self.num_envs, bool), None

    def close(self) -> None:
        for env in self.envs:
            env.close()


def build_ma_raw(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """The ParallelEnvs of a multi-agent workload in a plain loop."""
    return ParallelLoopStepper([spread() for _ in range(workload.num_envs)])


def build_supersuit(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """SuperSuit's ``concat_vec_envs_v1`` (SB3's VecEnv API), a row per agent."""
    import supersuit as ss

    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(spread()), workload.num_envs,
                                 num_cpus=method.options["num_cpus"], base_class="stable_baselines3")
    return UnseededStepper(venv)


class UnseededStepper(VecEnvStepper):
    """A VecEnv without ``seed()`` (SuperSuit's): reset as it is."""

    def start(self, seed: int) -> Any:
        return self.venv.reset()


def build_raw(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """Env 0 of the workload, alone."""
    return RawStepper(env_fns[0]())


BUILDERS: dict[str, Callable[[Workload, EnvFns, Method, int], Stepper]] = {
    "raw": build_raw, "ours": build_ours, "ale": build_ale, "ale-engine": build_ale_engine,
    "gymnasium": build_gymnasium, "sb3": build_sb3, "envpool": build_envpool, "pufferlib": build_pufferlib,
    "ma-raw": build_ma_raw, "supersuit": build_supersuit,
}


def build(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """The stepper of ``method`` on ``workload`` (not the ceiling: ``bench.ceiling`` measures that)."""
    return BUILDERS[method.family](workload, env_fns, method, seed)
