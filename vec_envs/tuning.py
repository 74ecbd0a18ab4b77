"""tune: which backend and settings step an env fastest on this machine, measured.

``tune(env_fn, num_envs)`` first times a few steps of one env (wall and CPU: an env that
waits uses little CPU), then picks the configurations worth timing for such an env
(``candidates``): DummyVecEnv; SubprocVecEnv with its defaults (the parent steps a slice
where it has one) and with a few ``in_series`` values around one worker per CPU, or, for
envs that wait, around one worker per env (the parent only driving); SubprocVecEnv
through ``recv``/``send`` with ``batch_size = num_envs // 2`` (the note says the fewest and
the most steps an env took: a training batch should sample every env alike); ALEVecEnv
for Atari ids. Each configuration is timed in a fresh process (``vec_envs.timing.cells``:
build, warm-up, a timed window, the CPU of its whole process tree), in rounds that
alternate them, within a budget of ``seconds``. The report is a table, fastest first, and
the line of code of the one to use (``recommend``: the fastest, or one as fast within the
noise of the measurement that takes less CPU).

Example:
    >>> cost = StepCost(wall_s=1e-3, cpu_s=3e-5, steps=50)           # a step that mostly waits
    >>> [c.label for c in candidates(16, cpus=2, cost=cost)]
    ['DummyVecEnv', 'SubprocVecEnv()', 'SubprocVecEnv(in_series=1)', 'SubprocVecEnv(in_series=2)', \
'SubprocVecEnv(in_series=4)', 'SubprocVecEnv(batch_size=8) recv/send', 'SubprocVecEnv(in_series=1, batch_size=8) \
recv/send']
    >>> [c.label for c in candidates(8, cpus=2, cost=StepCost(wall_s=1e-5, cpu_s=1e-5, steps=50))]
    ['DummyVecEnv', 'SubprocVecEnv()', 'SubprocVecEnv(in_series=4)', 'SubprocVecEnv(in_series=8)', \
'SubprocVecEnv(batch_size=4) recv/send']
"""
from __future__ import annotations

import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vec_envs.arguments import check_int
from vec_envs.checking.check_env import describe_factory
from vec_envs.cpus import available_cpus
from vec_envs.make_vec_env import backend_class
from vec_envs.timing.cells import CellSpec, run_cell
from vec_envs.timing.machine import machine_line
from vec_envs.timing.steppers import EnvCounts, RecvSendStepper, Stepper, VecEnvStepper
from vec_envs.timing.tables import fmt, markdown_table
from vec_envs.worker_plan import StepCost, WorkerPlan, measure_step_cost, plan_workers

__all__ = ["Candidate", "Timing", "TuneReport", "candidates", "recommend", "tune", "build_candidate"]

CELL_TIMEOUT_S = 180.0
BUILD_GUESS_S = 1.5           # what a cell costs beyond its window, before one was measured
MIN_WINDOW_S = 0.3
NOISE = 0.1                   # rates closer than this share are taken as alike
#: ALEVecEnv's options that give the frames, actions and randomness of an ``ALE/<Game>-v5`` id
ALE_V5: dict[str, Any] = {"frame_skip": 4, "repeat_action_probability": 0.25, "noop_max": 0, "warp_frame": False,
          "grayscale": False, "episode_life": False, "clip_rewards": False, "fire_reset": False}


@dataclass(frozen=True)
class Candidate:
    """One configuration: ``backend`` (a vec_envs class name) with ``options``, stepped through
    ``recv``/``send`` when ``batch_size`` is set, else in lock-step."""

    backend: str
    options: dict = field(default_factory=dict)  # dict[str, Any]: the docs site cannot show that signature
    batch_size: int | None = None

    @property
    def label(self) -> str:
        """``SubprocVecEnv(in_series=1, batch_size=8) recv/send``."""
        shown = {**self.options, **({"batch_size": self.batch_size} if self.batch_size else {})}
        args = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        name = self.backend if self.backend == "DummyVecEnv" and not args else f"{self.backend}({args})"
        return name + (" recv/send" if self.batch_size else "")

    def code(self, num_envs: int) -> str:
        """The line that builds it: ``SubprocVecEnv(env_fns, in_series=1)``."""
        options = {**self.options, **({"batch_size": self.batch_size} if self.batch_size else {})}
        if self.backend == "ALEVecEnv":
            game = options.pop("game")
            args = [repr(game), str(num_envs), *(f"{k}={v!r}" for k, v in {**ALE_V5, **options}.items())]
        else:
            args = ["env_fns", *(f"{k}={v!r}" for k, v in options.items())]
        return f"{self.backend}({', '.join(args)})"


def candidates(num_envs: int, cpus: int, cost: StepCost, game: str | None = None) -> list[Candidate]:
    """The configurations worth timing for ``num_envs`` envs of step cost ``cost`` on ``cpus``
    CPUs (``game``: an Atari game, for ALEVecEnv)."""
    plan = plan_workers(num_envs, cpus, cost.own_s, cost.cpu_s)
    today = plan_workers(num_envs, cpus, 1.0, 1.0)  # one worker per CPU
    base = plan.in_series if plan.waiting else today.in_series
    sizes = (base, 2 * base, 4 * base) if plan.waiting else (base, 2 * base)
    found = [Candidate("DummyVecEnv"), Candidate("SubprocVecEnv")]
    found += [Candidate("SubprocVecEnv", {"in_series": k}) for k in sorted(set(sizes)) if k <= num_envs]
    if num_envs >= 4:
        half = num_envs // 2
        found.append(Candidate("SubprocVecEnv", {}, half))
        if plan.waiting:
            found.append(Candidate("SubprocVecEnv", {"in_series": plan.in_series}, half))
    if game is not None:
        found += [Candidate("ALEVecEnv", {"game": game}), Candidate("ALEVecEnv", {"game": game}, num_envs // 2 or 1)]
    return list({c.label: c for c in found}.values())


def build_candidate(seed: int, env_file: str, num_envs: int, backend: str, options: dict[str, Any],
                    batch_size: int | None) -> Stepper:
    """In a cell: the candidate's VecEnv over the pickled factory of ``env_file``, as a stepper."""
    import cloudpickle

    options = dict(options)
    if backend == "ALEVecEnv":
        from vec_envs.ale.ale_vec_env import ALEVecEnv

        venv: Any = ALEVecEnv(options.pop("game"), num_envs, seed=seed, batch_size=batch_size, **ALE_V5)
    else:
        env_fn = cloudpickle.loads(Path(env_file).read_bytes())
        venv = backend_class(backend)([env_fn] * num_envs, batch_size=batch_size, **options)
    note = ""
    if hasattr(venv, "in_series"):
        note = f"in_series {venv.in_series}, " + ("the parent steps a slice" if getattr(venv, "step_in_parent", False)
                                                  else "the parent only drives")
    return EnvCounts(RecvSendStepper(venv, note=note)) if batch_size else VecEnvStepper(venv, note=note)


def recommend(timings: list[Timing]) -> Candidate | None:
    """Of ``timings`` (fastest first), the fastest, or, among those as fast as it within the noise
    of the measurement (``NOISE``, or the fastest's own spread over its rounds), the one that
    takes the least CPU per env step: a difference the rounds cannot tell apart is not worth
    the CPU (which a machine shared with other work skews far less than steps/s)."""
    if not timings:
        return None
    top = timings[0]
    alike = [t for t in timings if t.rate >= top.rate * (1 - max(NOISE, top.spread))]
    return min(alike, key=lambda t: _median(t.cpu_us)).candidate


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


@dataclass
class Timing:
    """What one candidate measured, over its rounds (its rate is NaN before one)."""

    candidate: Candidate
    rates: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    build_s: list[float] = field(default_factory=list)
    note: str = ""
    error: str = ""

    @property
    def rate(self) -> float:
        """Median env steps per second."""
        return _median(self.rates)

    @property
    def spread(self) -> float:
        """How far apart its rounds' rates were, relative to their median (0 with one round)."""
        return (max(self.rates) - min(self.rates)) / self.rate if len(self.rates) > 1 else 0.0

    def add(self, record: dict[str, Any]) -> None:
        """One cell's record."""
        if "error" in record:
            self.error = str(record["error"]).strip().splitlines()[0]
            return
        self.rates.append(record["steps_per_s"])
        self.cpu_us.append(1e6 * record["cpu_pct"] / 100 / record["steps_per_s"])
        self.build_s.append(record["build_s"])
        self.note = record.get("note", "")


@dataclass
class TuneReport:
    """What ``tune`` measured: the step cost of one env, the plan it calls for, a row per candidate,
    the machine."""

    env: str
    num_envs: int
    cpus: int
    cost: StepCost
    plan: WorkerPlan
    rows: list[Timing]
    seconds: float = 0.0
    machine: str = ""

    @property
    def ranked(self) -> list[Timing]:
        """The candidates that ran, fastest first."""
        return sorted((r for r in self.rows if r.rates), key=lambda r: -r.rate)

    @property
    def best(self) -> Candidate | None:
        """The candidate to use (see ``recommend``), or None when none ran."""
        return recommend(self.ranked)

    def text(self) -> str:
        """The report the console command prints."""
        cost = self.cost
        kind = "mostly waits" if self.plan.waiting else "mostly computes" if cost.busy >= 0.5 else "is short"
        queued = f" and {1e3 * cost.queued_s:.3f} ms waiting for a CPU" if cost.queued_s else ""
        heading = (f"tune({self.env}) x {self.num_envs} on {self.cpus} CPUs, {self.seconds:.0f} s: one env's step "
                   f"takes {1e3 * cost.wall_s:.3f} ms, {1e3 * cost.cpu_s:.3f} ms of it CPU{queued} "
                   f"({100 * cost.busy:.0f} % busy): it {kind}")
        rows = [[row.candidate.label, fmt(row.rate), fmt(_median(row.cpu_us), ",.1f"), fmt(_median(row.build_s), ".2f"),
                 row.note if row.rates else row.error or "not measured"]
                for row in [*self.ranked, *(r for r in self.rows if not r.rates)]]
        table = markdown_table(["configuration", "env steps/s", "CPU us per env step", "build s", "note"], rows,
                               "lrrrl")
        return "\n".join([heading, self.machine, "", *table, "", *self._advice()])

    def _advice(self) -> list[str]:
        best = self.best
        if best is None:
            return ["no configuration ran: see the notes"]
        lines = [f"use: venv = {best.code(self.num_envs)}"]
        if best != self.ranked[0].candidate:
            lines[0] += f"  # as fast as {self.ranked[0].candidate.label} within the noise, for less CPU"
        if best.batch_size:
            lines[0] += "  # then venv.async_reset() and recv() / send(actions, env_ids)"
            lockstep = recommend([r for r in self.ranked if not r.candidate.batch_size])
            if lockstep is not None:
                lines.append(f"with step(): venv = {lockstep.code(self.num_envs)}")
        return lines

    def __str__(self) -> str:
        return self.text()


def tune(env_fn: Callable[[], Any], num_envs: int, *, seconds: float = 40.0, rounds: int = 2, seed: int = 0,
         env_id: str | None = None, only: Sequence[Candidate] | None = None, progress: bool = True,
         name: str | None = None) -> TuneReport:
    """Time the configurations worth trying for ``num_envs`` envs of ``env_fn`` on this machine.

    Args:
        env_fn: a zero-argument env factory; it must pickle (each configuration runs in a
            fresh process).
        num_envs: envs per batch.
        seconds: the time budget (about; a configuration already started finishes).
        rounds: times each configuration is timed, in alternating rounds (median).
        seed: seeds the envs (env i: ``seed + i``) and the actions.
        env_id: the registered id ``env_fn`` makes, when there is one (``ALE/<Game>-v5``
            adds ALEVecEnv's configurations).
        only: time these configurations instead of ``candidates``'s choice.
        progress: draw a progress bar on stderr.
        name: what the report calls the env (default: ``env_id``, else from the factory).

    Returns:
        The report: ``print(report)`` shows the table and the line of code of the fastest.

    Example:
        >>> import gymnasium as gym
        >>> from functools import partial
        >>> report = tune(partial(gym.make, "CartPole-v1"), 4, seconds=6, rounds=1, progress=False,
        ...               only=[Candidate("DummyVecEnv")])
        >>> report.best.code(4)
        'DummyVecEnv(env_fns)'
    """
    import cloudpickle

    check_int("tune(): num_envs", num_envs)
    check_int("tune(): rounds", rounds)
    if not seconds > 0:
        raise ValueError(f"tune(): seconds must be > 0, received {seconds!r}")
    try:
        pickled = cloudpickle.dumps(env_fn)
    except Exception as exc:
        raise TypeError(f"tune(): env_fn cannot be pickled ({type(exc).__name__}: {exc}); each configuration runs in "
                        f"a fresh process (vec-envs-check says why it does not pickle)") from exc
    started, cpus = time.perf_counter(), available_cpus()
    cost = measure_step_cost(env_fn)
    game = _game(env_id)
    rows = [Timing(c) for c in (only or candidates(num_envs, cpus, cost, game))]
    plan = plan_workers(num_envs, cpus, cost.own_s, cost.cpu_s)
    report = TuneReport(name or env_id or describe_factory(env_fn), num_envs, cpus, cost, plan, rows)
    with tempfile.TemporaryDirectory(prefix="vec_envs_tune_") as folder:
        env_file = Path(folder) / "env_fn.pkl"
        env_file.write_bytes(pickled)
        _measure(rows, str(env_file), num_envs, seed, rounds, started + seconds, progress)
    report.seconds, report.machine = time.perf_counter() - started, machine_line()
    return report


def _game(env_id: str | None) -> str | None:
    if env_id is None or not env_id.startswith("ALE/"):
        return None
    from vec_envs.ale.games import resolve_game

    return env_id.removeprefix("ALE/").split("-")[0] if resolve_game(env_id) else None


def _measure(rows: list[Timing], env_file: str, num_envs: int, seed: int, rounds: int, deadline: float,
             progress: bool) -> None:
    """Time every row ``rounds`` times (rotated order), each window sized to end by ``deadline``."""
    from tqdm import tqdm

    cells = [(r, row) for r in range(rounds) for row in (rows[r % len(rows):] + rows[:r % len(rows)])]
    overhead = BUILD_GUESS_S
    with tqdm(total=len(cells), desc="configurations", unit="cell", file=sys.stderr, disable=not progress) as bar:
        for done, (_, row) in enumerate(cells):
            left = len(cells) - done
            window = max(MIN_WINDOW_S, (deadline - time.perf_counter()) / left - overhead)
            if time.perf_counter() + overhead + MIN_WINDOW_S > deadline and done >= len(rows):
                break  # out of time: every configuration was timed at least once
            bar.set_postfix_str(row.candidate.label)
            c = row.candidate
            spec = CellSpec("vec_envs.tuning:build_candidate", {
                "env_file": env_file, "num_envs": num_envs, "backend": c.backend, "options": dict(c.options),
                "batch_size": c.batch_size}, seed=seed, window=window, warmup=window / 4)
            began = time.perf_counter()
            row.add(run_cell(spec, CELL_TIMEOUT_S + window))
            overhead = max(0.2, time.perf_counter() - began - 1.25 * window)
            bar.update()
