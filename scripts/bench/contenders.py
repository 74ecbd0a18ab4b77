"""Every contender behind the stepping interface of ``vec_envs.timing.steppers`` (ours are
there, the other libraries' here), and how each is built: a ``Method`` is a row of the report,
its ``family`` picks its builder; ``unavailable`` says why it cannot run a workload here;
``build_cell`` builds one in a cell's process. The machine ceiling is one raw env loop per
available core, their timed windows started together: no batch API beats it on CPU-bound envs,
and it includes what the cores share (caches, memory bandwidth, hyper-threads).

Example:
    >>> unavailable(METHODS["envpool"], WORKLOADS["W5"])
    'EnvPool (sync) cannot run W5'
"""
from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from importlib.util import find_spec
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

import numpy as np
from gymnasium import spaces

import vec_envs
from bench.envs import WORKLOADS, Workload, make_env, spread
from vec_envs.extras import install_hint
from vec_envs.timing.cells import ACTION_TABLE
from vec_envs.timing.loops import presample, run_for
from vec_envs.timing.machine import available_cores
from vec_envs.timing.steppers import (
    Batch,
    EnvCounts,
    GymVectorStepper,
    RawStepper,
    RecvSendStepper,
    Stepper,
    VecEnvStepper,
    first_sends,
)

__all__ = ["Method", "METHODS", "Stacked", "unavailable", "build", "build_cell", "measure_ceiling"]

EnvFns = list[Callable[[], Any]]
BARRIER_TIMEOUT_S = 120.0


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


class Stacked(Stepper):
    """Any stepper followed by an in-script frame stacker: the last ``n`` frames of every env on the
    last axis, zeroed when its episode ends (as SB3's and baselines' VecFrameStack do).

    Example:
        >>> from bench.envs import ZeroCostEnv
        >>> Stacked(RawStepper(ZeroCostEnv()), n=2).push(np.ones((1, 1)), np.array([False]))
        array([[0., 1.]])
    """

    def __init__(self, inner: Stepper, n: int) -> None:
        self.inner, self.n, self.stacked = inner, n, np.zeros(0)
        self.num_envs, self.steps_per_call = inner.num_envs, inner.steps_per_call
        self.action_space, self.stacks_frames = inner.action_space, True
        self.note = "; ".join(filter(None, [inner.note, "frame stack: in-script stacker"]))

    def push(self, obs: np.ndarray, dones: np.ndarray, env_ids: np.ndarray | None = None) -> np.ndarray:
        """Add the newest frames of the envs ``env_ids`` (None: all); their stacks."""
        channels = obs.shape[-1]
        if not self.stacked.size:
            self.stacked = np.zeros((self.num_envs, *obs.shape[1:-1], channels * self.n), obs.dtype)
        rows = slice(None) if env_ids is None else env_ids
        stacked = np.roll(self.stacked[rows], -channels, axis=-1)
        stacked[np.atleast_1d(dones)] = 0
        stacked[..., -channels:] = obs
        self.stacked[rows] = stacked
        return stacked

    def start(self, seed: int) -> Any:
        obs = self.inner.start(seed)
        return None if obs is None else self.push(obs, np.zeros(self.num_envs, bool))

    def step(self, actions: Any) -> Batch:
        obs, dones, env_ids = self.inner.step(actions)
        return self.push(obs, dones, env_ids), dones, env_ids

    def rows(self, actions: np.ndarray) -> list[Any]:
        return self.inner.rows(actions)

    def close(self) -> None:
        self.inner.close()


# ---------------------------------------------------------------- the methods
ATARI = ("W3", "W4", "M3", "M4")
NOT_BUSY = ("W1", "W2", "M1", *ATARI)
SMALL = ("W1", "W3", "W4", "W5", "W6", "M3", "M4", "M5")  # a process per env is affordable
AGENT_ROWS = ("ours", "ma-raw", "supersuit")  # the families that step ParallelEnvs


@dataclass(frozen=True)
class Method:
    """One way to step a workload, named ``key`` on the command line and ``label`` in the report; its
    ``family`` picks the builder, whose arguments ``options`` holds; ``recv_send`` drives it by ``recv`` /
    ``send`` (``batch_size = num_envs // batch_divisor``); ``workloads``: those it can run (None: all)."""

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
    *(Method(f"fair-{k}", f"SubprocVecEnv({'' if k == 'auto' else f'in_series={k}'}) recv/send, batch_size "
             "num_envs/4", "ours", {"backend": "SubprocVecEnv", "in_series": k}, recv_send=True, batch_divisor=4,
             workloads=("W5", "W6")) for k in ("auto", 1, 2, 4)),  # the fairness command's
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
    Method("envpool-async", "EnvPool recv/send, batch_size num_envs/2", "envpool", recv_send=True, workloads=NOT_BUSY),
    Method("pufferlib", "PufferLib Multiprocessing", "pufferlib"),
    Method("ma-raw", "raw loop (ParallelEnv.step in series)", "ma-raw", workloads=("MA",)),
    Method("supersuit-0", "SuperSuit concat_vec_envs_v1, num_cpus=0", "supersuit", {"num_cpus": 0}, workloads=("MA",)),
    Method("supersuit-2", "SuperSuit concat_vec_envs_v1, num_cpus=2", "supersuit", {"num_cpus": 2}, workloads=("MA",)),
]}


def batch_size_of(method: Method, workload: Workload) -> int:
    """Envs per ``recv`` of a recv/send method, or the whole batch."""
    return max(1, workload.num_envs // method.batch_divisor) if method.recv_send else workload.num_envs


NEEDS = {"sb3": "stable_baselines3", "envpool": "envpool", "ale-engine": "ale_py", "pufferlib": "pufferlib",
         "supersuit": "supersuit", "ma-raw": "mpe2"}  # family -> the module it needs


def unavailable(method: Method, workload: Workload) -> str | None:
    """Why ``method`` cannot run ``workload`` here, or None when it can."""
    if (method.workloads is not None and workload.key not in method.workloads) or (
            workload.env == "spread" and method.family not in AGENT_ROWS):
        return f"{method.label} cannot run {workload.key}"
    if workload.env in ALE_TASKS and method.family not in ("envpool", "ale") and not find_spec("ale_py"):
        return f"{method.label}: not installed (ale-py: {install_hint('atari')})"
    needs = NEEDS.get(method.family) or ("mpe2" if workload.env == "spread" else None)
    needs = "ray" if method.options.get("backend") == "RayVecEnv" else needs
    if needs and not find_spec(needs):
        return f"{method.label}: not installed ({needs})"
    return None


# ---------------------------------------------------------------- the builders
def build_ours(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """One of our backends, a row per agent on a multi-agent workload, frames stacked by
    ``VecFrameStack``; behind ``to_gymnasium`` where its options say ``view="gymnasium"``."""
    options = dict(method.options)
    cls, view = getattr(vec_envs, options.pop("backend")), options.pop("view", None)
    if method.recv_send:
        options["batch_size"] = batch_size_of(method, workload)
    venv: Any
    if workload.env == "spread":
        from vec_envs.multiagent import make_multiagent_vec_env

        venv = make_multiagent_vec_env(partial(spread), workload.num_envs, vec_env_cls=cls, vec_env_kwargs=options)
    else:
        venv = cls(env_fns, **options)
    backend = getattr(venv, "venv", venv)  # the backend under the agent rows
    notes = [f"in_series resolved to {backend.in_series}"] if hasattr(backend, "in_series") else []
    if workload.frame_stack:
        from vec_envs.wrappers import VecFrameStack

        venv = VecFrameStack(venv, workload.frame_stack)
        notes.append("frame stack: vec_envs.wrappers.VecFrameStack")
    stacked, note = bool(workload.frame_stack), "; ".join(notes)
    if view == "gymnasium":
        from vec_envs.interop import to_gymnasium

        return GymVectorStepper(to_gymnasium(venv), venv.action_space, stacked, note)
    return (RecvSendStepper if method.recv_send else VecEnvStepper)(venv, stacked, note)


ALE_COMMON: dict[str, Any] = {"repeat_action_probability": 0.25, "episode_life": False, "clip_rewards": False,
                              "fire_reset": False, "frame_skip": 4}
ALE_TASKS: dict[str, tuple[str, dict[str, Any]]] = {  # ALEVecEnv options for the envs of bench.envs
    "pong": ("Pong", {**ALE_COMMON, "noop_max": 0, "warp_frame": False, "grayscale": False}),
    "breakout": ("Breakout", {**ALE_COMMON, "noop_max": 30}),
}


def build_ale(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """``vec_envs.ALEVecEnv``: C++ threads, its own preprocessing and frame stack."""
    game, options = ALE_TASKS[workload.env]
    venv = vec_envs.ALEVecEnv(game, workload.num_envs, seed=seed, frame_stack=workload.frame_stack or 1,
                              batch_size=batch_size_of(method, workload), **options, **method.options)
    stepper = RecvSendStepper if method.recv_send else VecEnvStepper
    return stepper(venv, True, "its own preprocessing and frame stack (C++ threads)")


ENGINE_COMMON: dict[str, Any] = {"autoreset_mode": "SameStep", "repeat_action_probability": 0.25,
                                 "use_fire_reset": False, "reward_clipping": False, "episodic_life": False}
ENGINE_TASKS: dict[str, tuple[str, dict[str, Any]]] = {  # ale-py's AtariVectorEnv options for the same envs
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
    envs = envpool.make_gymnasium(task, num_envs=workload.num_envs, batch_size=batch_size, seed=seed, **options)
    note = "its own C++ envs and preprocessing; next-step auto-reset"
    if method.recv_send:
        return EnvPoolRecvSendStepper(envs, envs.action_space, batch_size, bool(workload.frame_stack), note)
    return EnvPoolStepper(envs, envs.action_space, bool(workload.frame_stack), note)


def build_pufferlib(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """PufferLib's Multiprocessing backend, one worker per core (at most one per env)."""
    import pufferlib.emulation
    import pufferlib.vector

    n = workload.num_envs
    workers = max(w for w in range(1, min(available_cores(), n) + 1) if n % w == 0)
    creators = [partial(pufferlib.emulation.GymnasiumPufferEnv, env_creator=fn) for fn in env_fns]
    envs = pufferlib.vector.make(creators, backend=pufferlib.vector.Multiprocessing, num_envs=n, num_workers=workers)
    return GymVectorStepper(envs, envs.single_action_space, note=f"{workers} workers; its own emulation layer")


class ParallelLoopStepper(Stepper):
    """PettingZoo ParallelEnvs stepped one after the other, as people write by hand."""

    def __init__(self, envs: list[Any]) -> None:
        self.envs, self.agents = envs, envs[0].possible_agents
        self.action_space = envs[0].action_space(self.agents[0])
        self.num_envs = self.steps_per_call = len(envs) * len(self.agents)

    def start(self, seed: int) -> Any:
        for i, env in enumerate(self.envs):
            env.reset(seed=seed + i)

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


class UnseededStepper(VecEnvStepper):
    """A VecEnv without ``seed()`` (SuperSuit's): reset as it is."""

    def start(self, seed: int) -> Any:
        return self.venv.reset()


def build_supersuit(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """SuperSuit's ``concat_vec_envs_v1`` (SB3's VecEnv API), a row per agent."""
    import supersuit as ss

    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(spread()), workload.num_envs,
                                 num_cpus=method.options["num_cpus"], base_class="stable_baselines3")
    return UnseededStepper(venv)


BUILDERS: dict[str, Callable[[Workload, EnvFns, Method, int], Stepper]] = {
    "raw": lambda workload, env_fns, method, seed: RawStepper(env_fns[0]()),  # env 0 alone
    "ma-raw": lambda workload, env_fns, method, seed: ParallelLoopStepper([spread() for _ in range(workload.num_envs)]),
    "ours": build_ours, "ale": build_ale, "ale-engine": build_ale_engine, "gymnasium": build_gymnasium,
    "sb3": build_sb3, "envpool": build_envpool, "pufferlib": build_pufferlib, "supersuit": build_supersuit,
}


def build(workload: Workload, env_fns: EnvFns, method: Method, seed: int) -> Stepper:
    """The stepper of ``method`` on ``workload`` (not the machine ceiling, which measures itself)."""
    return BUILDERS[method.family](workload, env_fns, method, seed)


# ---------------------------------------------------------------- in a cell's process
def build_cell(seed: int, workload: str, method: str, spin_per_ms: int, count_envs: bool = False) -> Any:
    """The stepper of ``method`` on ``workload`` (frames stacked here where the method does not), or the
    machine ceiling's measurement."""
    w, m = WORKLOADS[workload], METHODS[method]
    if m.family == "ceiling":
        return partial(measure_ceiling, w.env, spin_per_ms, seed)
    env_fns: EnvFns = [partial(make_env, w.env, i, spin_per_ms) for i in range(w.num_envs)]
    stepper = build(w, env_fns, m, seed)
    if w.frame_stack and not stepper.stacks_frames:
        stepper = Stacked(stepper, w.frame_stack)
    return EnvCounts(stepper) if count_envs else stepper


def _raw_loop(env: str, index: int, spin_per_ms: int, seed: int, warmup: float, window: float,
              started: Barrier, finished: Barrier, results: Queue[tuple[int, float] | str]) -> None:
    """One core's loop: warm up, wait for the others, time the window, report, wait to exit.
    A loop that fails reports why (a string) and breaks both barriers, so that nobody waits for it."""
    stepper = None
    try:
        stepper = RawStepper(make_env(env, index, spin_per_ms))
        stepper.start(seed + index)
        actions = stepper.rows(presample(stepper.action_space, 1, ACTION_TABLE, seed + index))
        run_for(stepper.step, actions, warmup)
        started.wait(BARRIER_TIMEOUT_S)
        results.put(run_for(stepper.step, actions, window))
        finished.wait(BARRIER_TIMEOUT_S)  # stay alive until the parent has read our CPU time
    except BaseException as exc:
        results.put(f"loop {index}: {type(exc).__name__}: {exc}")
        started.abort()
        finished.abort()
        raise
    finally:
        if stepper is not None:
            stepper.close()


def measure_ceiling(env: str, spin_per_ms: int, seed: int, warmup: float, window: float,
                    window_start: Callable[[], None], window_end: Callable[[], None]) -> dict[str, Any]:
    """Run ``available_cores()`` raw loops of ``env`` at once (forked where fork exists, so that they
    start at once); their summed steps/s. ``window_start`` / ``window_end`` mark the common window."""
    cores = available_cores()
    fork = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork") if fork else multiprocessing.get_context("spawn")
    started, finished = context.Barrier(cores + 1), context.Barrier(cores + 1)
    results = context.Queue()
    loops = [context.Process(target=_raw_loop, daemon=True,
                             args=(env, i, spin_per_ms, seed, warmup, window, started, finished, results))
             for i in range(cores)]
    for loop in loops:
        loop.start()
    try:
        try:
            started.wait(BARRIER_TIMEOUT_S)
            window_start()
            timed = [results.get(timeout=window + BARRIER_TIMEOUT_S) for _ in loops]
            window_end()
            finished.wait(BARRIER_TIMEOUT_S)
        except threading.BrokenBarrierError:
            raise RuntimeError(f"the machine ceiling of {env}: {results.get(timeout=10)}") from None
        failed = [t for t in timed if isinstance(t, str)]
        if failed:
            raise RuntimeError(f"the machine ceiling of {env}: {failed[0]}")
    finally:
        for loop in loops:
            loop.join(timeout=10)
            if loop.is_alive():
                loop.kill()
    counts = [t for t in timed if not isinstance(t, str)]
    return {"steps": sum(c for c, _ in counts), "seconds": max(s for _, s in counts),
            "steps_per_s": sum(c / s for c, s in counts), "build_s": float("nan"), "note": f"{cores} loops"}
