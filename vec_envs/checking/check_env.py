"""check_env: run an env factory briefly, alone and through every backend and autoreset mode,
and say what the env would do wrong once vectorized, and what to change.

The checks, in order (each a row of the report):

1. the factory: a new env per call (not one shared instance), and picklable to send to
   worker processes;
2. one env stepped alone twice with the same seed and actions, NumPy's and Python's global
   generators seeded differently each time: every observation, reward and flag against the
   declared spaces and the batch buffers (``values``), the info keys against the ones a
   VecEnv writes and whether infos pickle (``infos``), the two runs bit for bit
   (determinism: a difference is blamed on the global generator the env drew from, else on
   time or entropy), the render mode;
3. ``num_envs`` envs through DummyVecEnv in each autoreset mode against gymnasium's
   ``SyncVectorEnv`` in that mode (autoreset), and through SubprocVecEnv (spawned workers:
   a worker per env with shared memory and with pipes, one worker in the other modes) and
   DummyVecEnv with the C kernels off (a fresh process) against DummyVecEnv (backends), bit
   for bit;
4. for a PettingZoo ParallelEnv factory (stepped as ``ParallelEnvAdapter`` in 1-3): the
   multi-agent rows of ``make_multiagent_vec_env`` on DummyVecEnv and on SubprocVecEnv.

The checks after the first are skipped when the factory returns one shared instance
(they would step one env as many); the backends are skipped when the batch buffers cannot
hold the values the env returns (the VecEnv raises at that step, which the values check
already names), and the spawned ones when the factory does not pickle.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from vec_envs import kernels
from vec_envs.arguments import check_int
from vec_envs.autoreset import mode_name
from vec_envs.checking import vec_rows
from vec_envs.checking.differences import first_difference, show
from vec_envs.checking.infos import INFO_FIXES, info_problems
from vec_envs.checking.kernels_off import rows_without_kernels
from vec_envs.checking.one_env import EnvStep, global_rngs, record, sample_actions
from vec_envs.checking.render import RENDER_FIX, render_check
from vec_envs.checking.report import CheckReport, Finding
from vec_envs.checking.values import FIXES, Problem, flag_problems, obs_problems, reward_problems

__all__ = ["check_env"]

EnvFn = Callable[[], Any]
SHARED_FIX = ("return a new env from every call (def make_env(): return MyEnv(...)), not one env made "
              "beforehand (env = MyEnv(); make_env = lambda: env): each env of a batch must be its own")
PICKLE_FIX = ("define the factory at the top level of an importable module, or as a lambda / functools.partial "
              "that captures only plain data; build what it needs (locks, open files, sockets, envs) inside it")
SPAWN_FIX = ("make the factory work in a fresh Python process: everything it uses must be importable there (a "
             "module on the path, env ids registered at import of that module, not under "
             "if __name__ == '__main__')")
NOT_DETERMINISTIC = "the env gives other rows from run to run (see the determinism finding)"
DETERMINISM_FIX = "make the env deterministic (see the determinism finding): each process draws other values"
RNG_CAUSES = {
    "np.random": ("it draws from NumPy's global generator (np.random.*), which reset(seed=...) does not seed",
                  "draw from self.np_random (seeded by super().reset(seed=seed)) instead of np.random.*"),
    "random": ("it draws from Python's global generator (random.*), which reset(seed=...) does not seed",
               "draw from self.np_random (seeded by super().reset(seed=seed)) instead of the random module"),
}
TIME_CAUSE = ("it drew from neither global generator: it reads the time or fresh entropy (an unseeded "
              "np.random.default_rng(), os.urandom, time.time()), or keeps state between instances (a class "
              "or module attribute)",
              "seed every generator from reset(seed=...): call super().reset(seed=seed) and draw from "
              "self.np_random; keep state on the instance")


@dataclass(frozen=True)
class Alone:
    """What the checks of one env alone found that decides the backends' checks."""

    storable: bool  # the batch buffers hold every observation
    deterministic: bool  # two runs gave the same results
    sendable: bool  # every info pickles
    own_keys: bool  # no info key is one a VecEnv writes


@dataclass(frozen=True)
class Job:
    """What the checks run: ``env_fn`` makes the env the backends step (a ParallelEnv's
    adapter for a multi-agent factory, whose own factory is ``parallel_env_fn``)."""

    env_fn: EnvFn
    parallel_env_fn: EnvFn | None
    num_envs: int
    steps: int
    seed: int


def check_env(env_fn: EnvFn, *, num_envs: int = 2, steps: int = 100, seed: int = 0,
              name: str | None = None) -> CheckReport:
    """Run ``env_fn``'s envs briefly, alone and through every backend and autoreset mode;
    what they would do wrong once vectorized, each finding with what to change.

    Args:
        env_fn: a zero-argument factory of a gymnasium env, or of a PettingZoo ParallelEnv
            (checked through the multi-agent rows).
        num_envs: envs per batch.
        steps: steps of each env in each run (an episode that ends is reset and goes on).
        seed: env ``i`` is reset with ``seed + i``; also seeds the actions.
        name: what the report calls the env (default: from the factory).

    Returns:
        The report: ``print(report)`` shows its table and findings; ``report.findings``
        lists them; ``report.exit_status`` is 0 when nothing was found.

    Example:
        >>> import gymnasium as gym
        >>> from functools import partial
        >>> from vec_envs import check_env
        >>> if __name__ == "__main__":
        ...     report = check_env(partial(gym.make, "CartPole-v1"), steps=30)
        ...     print(report.findings)
        []
    """
    if not callable(env_fn):
        raise TypeError(f"check_env(): env_fn must be a zero-argument env factory, received {env_fn!r}")
    started = time.perf_counter()
    check_int("check_env(): num_envs", num_envs)
    check_int("check_env(): steps", steps)
    check_int("check_env(): seed", seed, minimum=0)
    report = CheckReport(name or describe_factory(env_fn), f"{num_envs} envs, {steps} steps each, seed {seed}")
    first, second = env_fn(), env_fn()
    try:
        job = _job(env_fn, first, num_envs, steps, seed)
        if _shared_instance(report, first, second):
            report.seconds = time.perf_counter() - started
            return report
        picklable = _picklable(report, env_fn)
        _backends(report, job, _one_env(report, job), picklable)
    finally:
        for env in {id(first): first, id(second): second}.values():
            env.close()
    report.seconds = time.perf_counter() - started
    return report


def describe_factory(env_fn: EnvFn) -> str:
    """A short name for a factory: the env id of ``partial(gym.make, id)``, else its qualified name."""
    if isinstance(env_fn, functools.partial):
        ids = [a for a in env_fn.args if isinstance(a, str)]
        return ids[0] if ids else describe_factory(env_fn.func)
    module = getattr(env_fn, "__module__", None) or ""
    return f"{module}:{getattr(env_fn, '__qualname__', type(env_fn).__name__)}".lstrip(":")


def _job(env_fn: EnvFn, env: Any, num_envs: int, steps: int, seed: int) -> Job:
    try:
        from pettingzoo.utils.env import ParallelEnv
    except ImportError:
        ParallelEnv = None  # noqa: N806 (without PettingZoo no env is one)
    if ParallelEnv is not None and isinstance(env, ParallelEnv):
        from vec_envs.multiagent import ParallelEnvAdapter

        return Job(functools.partial(ParallelEnvAdapter, env_fn), env_fn, num_envs, steps, seed)
    return Job(env_fn, None, num_envs, steps, seed)


# ---------------------------------------------------------------- 1. the factory
def _shared_instance(report: CheckReport, first: Any, second: Any) -> bool:
    shared = first is second or getattr(first, "unwrapped", first) is getattr(second, "unwrapped", second)
    if not shared:
        report.add("factory: a new env per call", "two calls gave two envs")
        return False
    report.add("factory: a new env per call", "two calls gave the same env",
               Finding("factory: a new env per call", f"two calls of the factory returned the same "
                                                      f"{type(first).__name__} object", SHARED_FIX))
    report.add("the other checks", "skipped: they would step one env as if it were many", skipped=True)
    return True


def _picklable(report: CheckReport, env_fn: EnvFn) -> bool:
    import cloudpickle

    try:
        cloudpickle.dumps(env_fn)
    except Exception as exc:  # noqa: BLE001 (any failure to pickle is the finding)
        problem = f"the factory cannot be pickled to send it to a worker process: {type(exc).__name__}: {exc}"
        report.add("factory: picklable", "cloudpickle refused it", Finding("factory: picklable", problem, PICKLE_FIX))
        return False
    report.add("factory: picklable", "cloudpickle pickles it (worker processes rebuild it)")
    return True


# ---------------------------------------------------------------- 2. one env alone
def _one_env(report: CheckReport, job: Job) -> Alone:
    """The values, infos, determinism and render checks."""
    probe = job.env_fn()
    try:
        actions = sample_actions(probe.action_space, job.steps, job.seed)
        space = probe.observation_space
        with global_rngs(1) as drew:
            run = record(job.env_fn(), job.seed, actions)
        with global_rngs(2) as drew_again:
            rerun = record(job.env_fn(), job.seed, actions)
        storable = _values(report, space, run)
        sendable, own_keys = _infos(report, run, ("agent_infos", "reset_agent_infos") if job.parallel_env_fn else ())
        deterministic = _determinism(report, run, rerun, drew + drew_again)
        probe.reset(seed=job.seed)
        seen, problem = render_check(probe)
        report.add("render", seen, *([Finding("render", problem, RENDER_FIX)] if problem else []))
    finally:
        probe.close()
    return Alone(storable, deterministic, sendable, own_keys)


def brief(space: Any) -> str:
    """A space in a few words: ``Box(float32, (4,))``, ``Dict(obs: Box(float32, (3, 18)), ...)``."""
    if isinstance(space, spaces.Box):
        return f"Box({space.dtype}, {space.shape})"
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{key}: {brief(sub)}" for key, sub in space.spaces.items()) + ")"
    return show(space, 70)


def _where(step: EnvStep) -> str:
    return f"env 0, step {step.t}" + (" (its reset)" if step.kind == "reset" else "")


def _grouped(check: str, found: list[tuple[EnvStep, Problem]], fixes: dict[str, str]) -> list[Finding]:
    """One finding per kind of problem: the first seen, and how many more of that kind."""
    first: dict[str, tuple[EnvStep, Problem]] = {}
    counts: dict[str, int] = {}
    for step, problem in found:
        first.setdefault(problem.kind, (step, problem))
        counts[problem.kind] = counts.get(problem.kind, 0) + 1
    findings = []
    for kind, (step, problem) in first.items():
        more = f" ({counts[kind] - 1} more results like it)" if counts[kind] > 1 else ""
        findings.append(Finding(check, f"{_where(step)}: {problem.text}{more}", fixes[kind]))
    return findings


def _values(report: CheckReport, space: Any, run: list[EnvStep]) -> bool:
    observations = [(s, p) for s in run for p in obs_problems(space, s.obs)]
    returns = [(s, p) for s in run if s.kind == "step"
               for p in reward_problems(s.reward) + flag_problems(s.terminated, s.truncated)]
    report.add("spaces: observations", f"{len(run)} observations of env 0 against {brief(space)}",
               *_grouped("spaces: observations", observations, FIXES))
    report.add("spaces: rewards and flags", f"{len(run) - 1 - sum(s.kind == 'reset' for s in run[1:])} steps",
               *_grouped("spaces: rewards and flags", returns, FIXES))
    return not any(p.kind in ("wraps", "overflows", "shape", "contains") for _, p in observations)


def _infos(report: CheckReport, run: list[EnvStep], ignore: tuple[str, ...]) -> tuple[bool, bool]:
    """The infos' keys and pickling: (every info pickles, no key is reserved)."""
    found = [(s, p) for s in run for p in info_problems(s.info, ignore)]
    keys = sorted({str(k) for s in run if isinstance(s.info, dict) for k in s.info})
    seen = f"keys seen: {', '.join(keys)}" if keys else "every info empty"
    reserved = [(s, p) for s, p in found if p.kind == "reserved"]
    report.add("infos: keys", seen, *_grouped("infos: keys", reserved, INFO_FIXES))
    unpicklable = [(s, p) for s, p in found if p.kind == "unpicklable"]
    report.add("infos: picklable", f"{len(run)} infos through pickle", *_grouped("infos: picklable", unpicklable,
                                                                                 INFO_FIXES))
    return not unpicklable, not reserved


def _run_difference(a: list[EnvStep], b: list[EnvStep]) -> str | None:
    for x, y in zip(a, b):
        for name in ("kind", "obs", "reward", "terminated", "truncated", "info"):
            found = first_difference(getattr(x, name), getattr(y, name), name)
            if found:
                return f"{_where(x)}, {found}"
    return None if len(a) == len(b) else f"{len(a)} results against {len(b)}"


def _determinism(report: CheckReport, run: list[EnvStep], rerun: list[EnvStep], drew: list[str]) -> bool:
    difference = _run_difference(run, rerun)
    detail = "env 0 twice, same seed and actions, the global generators seeded differently"
    if difference is None:
        report.add("determinism", f"{detail}: the same results bit for bit")
        return True
    cause, fix = next((RNG_CAUSES[name] for name in RNG_CAUSES if name in drew), TIME_CAUSE)
    report.add("determinism", f"{detail}: they differ", Finding(
        "determinism", f"two runs of env 0 with the same seed and actions differ ({difference}): {cause}; "
                       f"each backend (each process) gives other rows", fix))
    return False


# ---------------------------------------------------------------- 3. the backends
MODES = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)


def _backends(report: CheckReport, job: Job, alone: Alone, picklable: bool) -> None:
    if not alone.storable:
        report.add("backends and autoreset", "skipped: the batch buffers cannot hold the observations above",
                   skipped=True)
        return
    probe = job.env_fn()
    try:
        actions = vec_rows.sample_batches(probe.action_space, job.num_envs, job.steps, job.seed)
    finally:
        probe.close()
    dummy = {mode: _rows(vec_rows.DUMMY, job, mode, actions) for mode in MODES}
    first = dummy[AutoresetMode.SAME_STEP]
    if isinstance(first, Finding):
        report.add(f"backends: {vec_rows.DUMMY.label}", "raised", first)
        return
    for mode in MODES:
        _autoreset(report, job, mode, dummy[mode], actions, alone)
    sent = None if picklable and alone.sendable else (
        "the factory does not pickle" if not picklable else "the infos do not pickle")
    _compare_backends(report, job, dummy, actions, alone.deterministic, sent)


def _rows(way: vec_rows.Way, job: Job, mode: AutoresetMode, actions: list[Any],
          env_fn: EnvFn | None = None) -> vec_rows.Rows | Finding:
    """The rows of ``way``, or the finding that it raised."""
    try:
        envs = way.build(env_fn or job.env_fn, job.num_envs, mode)
        return vec_rows.record(envs, job.seed, actions, mode)
    except Exception as exc:  # noqa: BLE001 (any failure of a backend on this env is the finding)
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Finding(f"backends: {way.label}", f"{way.label} ({mode_name(mode)}) raised {type(exc).__name__}: "
                                                 f"{text}", SPAWN_FIX if "spawn" in way.label else
                       "make the env's results fit its spaces (see the other findings)")


def _autoreset(report: CheckReport, job: Job, mode: AutoresetMode, ours: vec_rows.Rows | Finding,
               actions: list[Any], alone: Alone) -> None:
    check = f"autoreset {mode_name(mode)}: DummyVecEnv vs SyncVectorEnv"
    why = (None if alone.deterministic and alone.own_keys and job.parallel_env_fn is None else
           NOT_DETERMINISTIC if not alone.deterministic else
           "the env's infos hold keys the VecEnv writes (above)" if not alone.own_keys else
           "a ParallelEnv's episodes end inside its adapter, which resets it in the same step")
    if why is not None:
        report.add(check, f"skipped: {why}", skipped=True)
        return
    reference = _rows(vec_rows.SYNC, job, mode, actions)
    if isinstance(ours, Finding) or isinstance(reference, Finding):
        report.add(check, "raised", *[r for r in (ours, reference) if isinstance(r, Finding)])
        return
    difference = vec_rows.compare(reference, ours)
    ends = vec_rows.episode_ends(reference)
    if difference is None:
        report.add(check, f"{ends} episode ends in {job.steps} steps x {job.num_envs} envs: the same rows"
                          + ("" if ends else " (no episode ended: pass more steps to see one)"))
        return
    report.add(check, "the rows differ", Finding(check, f"in autoreset mode {mode_name(mode)} DummyVecEnv's rows "
                                                        f"differ from SyncVectorEnv's at {difference}",
                                                 "report it to vec_envs with this env: the two should agree"))


def _compare_backends(report: CheckReport, job: Job, dummy: dict[AutoresetMode, Any], actions: list[Any],
                      deterministic: bool, unsent: str | None) -> None:
    """The worker backends against DummyVecEnv; all skipped, saying ``unsent``, when the envs
    or their infos cannot reach another process."""
    ways = [(vec_rows.subproc(True), AutoresetMode.SAME_STEP), (vec_rows.subproc(False), AutoresetMode.SAME_STEP)]
    ways += [(vec_rows.subproc(True, worker_per_env=False), mode) for mode in MODES[1:]]
    for way, mode in ways:
        rows = None if unsent else _rows(way, job, mode, actions)
        _against(report, f"backends: {way.label}, {mode_name(mode)}", dummy[mode], rows, deterministic, unsent)
    _against(report, "backends: DummyVecEnv, C kernels off", dummy[AutoresetMode.SAME_STEP],
             None if unsent else _kernels_off(job, actions), deterministic, unsent)
    if job.parallel_env_fn is not None:
        _multiagent(report, job, job.parallel_env_fn, deterministic, unsent)


def _kernels_off(job: Job, actions: list[Any]) -> vec_rows.Rows | Finding:
    try:
        return rows_without_kernels(job.env_fn, job.num_envs, job.seed, actions)
    except Exception as exc:  # noqa: BLE001
        return Finding("backends: DummyVecEnv, C kernels off", f"DummyVecEnv with {kernels.SWITCH}=0 in a fresh "
                                                               f"process failed: {exc}", SPAWN_FIX)


def _against(report: CheckReport, check: str, reference: Any, rows: vec_rows.Rows | Finding | None,
             deterministic: bool, unsent: str | None = None) -> None:
    """Record ``check``: ``rows`` against ``reference`` (DummyVecEnv's), bit for bit (None: skipped, ``unsent``)."""
    if rows is None:
        report.add(check, f"skipped: {unsent}", skipped=True)
    elif isinstance(rows, Finding):
        report.add(check, "raised", rows)
    else:
        difference = vec_rows.compare(reference, rows)
        if difference is None:
            report.add(check, f"the same rows as DummyVecEnv, {len(rows)} calls bit for bit")
        else:
            fix = (DETERMINISM_FIX if not deterministic else "keep the env's state on the instance, not in a module "
                   "or class attribute, and seed it from reset(seed=...)")
            report.add(check, "the rows differ", Finding(check, f"the rows differ from DummyVecEnv's at {difference}",
                                                         fix))


def _multiagent(report: CheckReport, job: Job, parallel_env_fn: EnvFn, deterministic: bool,
                unsent: str | None) -> None:
    dummy_way, subproc_way = vec_rows.multiagent_rows("dummy"), vec_rows.multiagent_rows("subproc")
    probe = dummy_way.build(parallel_env_fn, job.num_envs, AutoresetMode.SAME_STEP)
    try:
        actions = vec_rows.sample_batches(probe.single_action_space, probe.num_envs, job.steps, job.seed)
    finally:
        probe.close()
    mode = AutoresetMode.SAME_STEP
    dummy = _rows(dummy_way, job, mode, actions, parallel_env_fn)
    if isinstance(dummy, Finding):
        report.add(f"backends: {dummy_way.label}", "raised", dummy)
        return
    report.add(f"backends: {dummy_way.label}", f"{probe.num_envs} rows per step, {len(dummy)} calls, "
                                               f"{vec_rows.episode_ends(dummy)} agent episode ends")
    rows = None if unsent else _rows(subproc_way, job, mode, actions, parallel_env_fn)
    _against(report, f"backends: {subproc_way.label}", dummy, rows, deterministic, unsent)
