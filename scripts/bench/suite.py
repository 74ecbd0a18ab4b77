"""The workloads command: plan the cells, run them, write the report.

Each cell (workload x method x repeat) runs in a fresh process: it builds and resets the
batch, warms up, then steps it for a timed window with pre-sampled actions and reports
env steps per second (summed over the batch); the parent samples the cell's whole
process tree (CPU, peak memory). Cells run one at a time; repeats go round-robin over
the methods (their order rotated each repeat) so that drift of the machine hits every
method alike. The machine ceiling is one raw env loop per available core, all at once.

Example:
    >>> [w.key for w in select("M", WORKLOADS, "workloads", GROUPS)]
    ['M1', 'M3', 'M4', 'M5']
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from bench.contenders import METHODS, Method, unavailable
from bench.envs import WORKLOADS, Workload, calibrate_spin
from bench.report import Settings, render_report, summarize
from bench.tree import Cell, run_all

__all__ = ["WorkloadsArgs", "run_workloads", "PresetArgs", "AleArgs", "InfosArgs", "AutoresetArgs",
           "MultiagentArgs", "FairnessArgs", "select", "plan_cells", "default_out", "GROUPS"]

QUICK_REPEATS, QUICK_WINDOW, QUICK_WARMUP = 1, 1.0, 0.25
T = TypeVar("T")
GROUPS = {"W": [k for k in WORKLOADS if k.startswith("W")],
          "M": [k for k in WORKLOADS if k.startswith("M") and k[1:].isdigit()]}


@dataclass
class WorkloadsArgs:
    """Every method on the workloads W1..W6 (2 cores) or M1..M5 (many cores); results.md, cells.json.

    Each cell runs in a fresh process: build + reset, warm-up, a timed window of pre-sampled
    actions; the parent samples its process tree (CPU, peak memory).
    """

    workloads: str = field(default="W", metadata={
        "help": "comma-separated workloads (W1..W6, M1, M3, M4, M5, I1, MA), or W (the 2-core set), M (the many-core "
                "set), all"})
    methods: str = field(default="all", metadata={
        "help": "comma-separated method keys, or all (with --quick: the quick subset); see --list"})
    repeats: int = field(default=3, metadata={"help": "cells per (workload, method); the table shows the median"})
    window: float = field(default=5.0, metadata={"help": "seconds of each timed window"})
    warmup: float = field(default=1.0, metadata={"help": "seconds stepped before the timed window"})
    quick: bool = field(default=False, metadata={
        "help": "a short run: 1 repeat, 1 s windows, 0.25 s warm-up, the quick subset of methods"})
    out: str = field(default="", metadata={
        "help": "directory for results.md and cells.json (default: a new folder under "
                "~/.cache/vec_envs/bench, or $XDG_CACHE_HOME)"})
    seed: int = field(default=0, metadata={"help": "seeds the envs (env i: seed + i) and the pre-sampled actions"})
    cell_timeout: float = field(default=300.0, metadata={"help": "seconds before a cell's process tree is killed"})
    list: bool = field(default=False, metadata={"help": "list the workloads and methods, then exit"})
    count_envs: bool = field(default=False, metadata={
        "help": "count the steps of each env (recv/send: the fewest and the most, in the notes)"})

    def __post_init__(self) -> None:
        if self.repeats < 1 or self.window <= 0 or self.warmup < 0 or self.cell_timeout <= 0:
            raise ValueError(f"--repeats must be >= 1, --window and --cell-timeout > 0, --warmup >= 0; received "
                             f"{self.repeats}, {self.window}, {self.cell_timeout}, {self.warmup}")
        select(self.workloads, WORKLOADS, "workloads", GROUPS)
        select(self.methods, METHODS, "methods")
        if self.quick:
            self.repeats, self.window, self.warmup = QUICK_REPEATS, QUICK_WINDOW, QUICK_WARMUP


def select(text: str, table: dict[str, T], what: str, groups: dict[str, list[str]] | None = None) -> list[T]:
    """The entries of ``table`` named in the comma-separated ``text`` (``all``: every one; a name of
    ``groups``: its members).

    Raises:
        ValueError: a name that is neither a key of ``table`` nor a group.
    """
    if text == "all":
        return list(table.values())
    keys = [k.strip() for k in text.split(",") if k.strip()]
    keys = [key for k in keys for key in (groups or {}).get(k, [k])]
    unknown = [k for k in keys if k not in table]
    if unknown or not keys:
        raise ValueError(f"--{what}: unknown {unknown or text!r}; expected a comma-separated subset of "
                         f"{list(table)}{' or ' + ', '.join(groups) if groups else ''}, or all")
    return [table[k] for k in keys]


def list_choices() -> str:
    """The text of ``--list``: every workload and method."""
    lines = ["workloads:", *(f"  {w.key}: {w.title}" for w in WORKLOADS.values()), "methods:"]
    lines += [f"  {m.key}: {m.label}{'  [quick]' if m.quick else ''}" for m in METHODS.values()]
    return "\n".join(lines)


def plan_cells(args: WorkloadsArgs, workloads: list[Workload], methods: list[Method],
               spin: int) -> tuple[list[Cell], list[tuple[str, str, str]]]:
    """Cells in run order (repeats outermost, methods rotated each repeat); what cannot run, and why."""
    runnable: dict[str, list[str]] = {}
    skipped = []
    for w in workloads:
        runnable[w.key] = []
        for m in methods:
            why = unavailable(m, w)
            if why:
                skipped.append((w.key, m.key, why))
            else:
                runnable[w.key].append(m.key)
    cells = []
    for r in range(args.repeats):
        for w in workloads:
            keys = runnable[w.key]
            shift = r % max(len(keys), 1)
            cells += [Cell(w.key, key, r, args.seed, args.window, args.warmup, spin, args.count_envs)
                      for key in keys[shift:] + keys[:shift]]
    return cells, skipped


def default_out() -> Path:
    """A new folder for one benchmark's results, in the user's cache (never the work tree)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "vec_envs" / "bench" / time.strftime("%Y%m%d-%H%M%S")


def write_results(out: Path, report: str, args: WorkloadsArgs, records: list[dict[str, Any]]) -> None:
    """``results.md`` and ``cells.json`` (every cell's record) in ``out`` (created if missing)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(report, encoding="utf-8")
    (out / "cells.json").write_text(json.dumps({"args": asdict(args), "cells": records}, indent=1),
                                    encoding="utf-8")


def run_workloads(args: WorkloadsArgs, command: str) -> int:
    """Run the benchmark; 0 when every cell ran, 1 when some failed, 130 when interrupted.

    ``command`` is the command line that the report's settings line quotes.
    """
    from vec_envs.timing.machine import machine_line

    if args.list:
        print(list_choices())
        return 0
    workloads = select(args.workloads, WORKLOADS, "workloads", GROUPS)
    methods = select(args.methods, METHODS, "methods")
    if args.quick and args.methods == "all":
        methods = [m for m in methods if m.quick]
    machine, spin = machine_line(), calibrate_spin()
    cells, skipped = plan_cells(args, workloads, methods, spin)
    records = run_all(cells, args.cell_timeout)
    sums = summarize(records)
    settings = Settings(args.repeats, args.warmup, args.window, args.seed, spin,
                        command, len(records), len(cells))
    report = render_report(settings, workloads, methods, sums, skipped, machine, records)
    out = Path(args.out) if args.out else default_out()
    write_results(out, report, args, records)
    print(report)
    print(f"results written to {out}/ (results.md, cells.json)", file=sys.stderr)
    if len(records) < len(cells):
        return 130
    return 1 if any("error" in r for r in records) else 0


@dataclass
class PresetArgs:
    """The workloads command on the preset's workloads and methods (``WORKLOADS``, ``METHODS``)."""

    WORKLOADS: ClassVar[str] = ""
    METHODS: ClassVar[str] = ""
    COUNT_ENVS: ClassVar[bool] = False
    workloads: str = field(default="", metadata={"help": "comma-separated workload keys (default: the preset's)"})
    methods: str = field(default="", metadata={"help": "comma-separated method keys (default: the preset's)"})
    repeats: int = field(default=3, metadata={"help": "cells per method, round-robin"})
    window: float = field(default=3.0, metadata={"help": "seconds of each timed window"})
    warmup: float = field(default=0.5, metadata={"help": "seconds stepped before the window"})
    seed: int = field(default=0, metadata={"help": "seeds the envs and the pre-sampled actions"})
    out: str = field(default="", metadata={"help": "directory for results.md and cells.json (default: the cache)"})

    def as_workloads(self) -> WorkloadsArgs:
        """The same run as workloads arguments (which check every value)."""
        return WorkloadsArgs(workloads=self.workloads or self.WORKLOADS, methods=self.methods or self.METHODS,
                             repeats=self.repeats,
                             window=self.window, warmup=self.warmup, seed=self.seed, out=self.out,
                             count_envs=self.COUNT_ENVS)

    def __post_init__(self) -> None:
        self.as_workloads()


@dataclass
class AleArgs(PresetArgs):
    """ALEVecEnv on W4 (Breakout 84x84 gray + frame stack 4 x 8) beside SyncVectorEnv, SubprocVecEnv, ale-py."""

    WORKLOADS: ClassVar[str] = "W4"
    METHODS: ClassVar[str] = "gym-sync,subproc,ale,ale-async,ale-async-4,ale-engine"


@dataclass
class InfosArgs(PresetArgs):
    """What an info every step costs: CartPole-v1 x 8 as it is (W1) and returning {'lives': 3} (I1)."""

    WORKLOADS: ClassVar[str] = "W1,I1"
    METHODS: ClassVar[str] = "dummy,subproc"


@dataclass
class AutoresetArgs(PresetArgs):
    """Next-step against same-step autoreset: SubprocVecEnv, to_gymnasium and ALEVecEnv on W1 and W4."""

    WORKLOADS: ClassVar[str] = "W1,W4"
    METHODS: ClassVar[str] = "subproc,subproc-next,subproc-gym,subproc-gym-next,ale,ale-next"


@dataclass
class MultiagentArgs(PresetArgs):
    """Agent rows of simple_spread_v3 x 8 (MA) on our backends against a raw loop and SuperSuit."""

    WORKLOADS: ClassVar[str] = "MA"
    METHODS: ClassVar[str] = "ma-raw,dummy,subproc,subproc-2,supersuit-0,supersuit-2"


@dataclass
class FairnessArgs(PresetArgs):
    """Whether recv/send samples every env alike: 16 envs sleeping 0-2 ms (W6), batch_size 4, in_series 1, 2, 4, auto.

    Every env counts its steps from the first recv(); the notes give the fewest and the most per env.
    """

    WORKLOADS: ClassVar[str] = "W6"
    METHODS: ClassVar[str] = "fair-auto,fair-1,fair-2,fair-4"
    COUNT_ENVS: ClassVar[bool] = True
    repeats: int = field(default=1, metadata={"help": "cells per method, round-robin"})
    warmup: float = field(default=0.0, metadata={"help": "seconds stepped before the window"})
