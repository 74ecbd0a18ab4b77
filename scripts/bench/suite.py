"""The workloads command and its presets (ale, infos, autoreset, multiagent, fairness): plan
the cells, run them, write the report.

Each cell (one method on one workload, one repeat) runs in a fresh process, measured by
``vec_envs.timing.cells``. Cells run one at a time; repeats go round-robin over the methods,
their order rotated each repeat, so that drift of the machine hits every method alike.

Example:
    >>> PRESETS["infos"]().methods
    'dummy,subproc'
    >>> Cell("W5", "dummy", window=0.05, warmup=0.0, spin_per_ms=1_000).run(timeout=60)["steps_per_s"] > 0
    True
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench.contenders import METHODS, Method, unavailable
from bench.envs import WORKLOADS, Workload, calibrate_spin
from bench.report import render_report, summarize
from vec_envs.timing.cells import CellSpec, run_cell

__all__ = ["WorkloadsArgs", "PRESETS", "run_workloads", "select", "plan_cells", "default_out", "GROUPS"]

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
            self.repeats, self.window, self.warmup = 1, 1.0, 0.25


def preset(doc: str, workloads: str, methods: str, repeats: int = 3, warmup: float = 0.5,
           count_envs: bool = False) -> type[Any]:
    """The workloads command on ``workloads`` and ``methods`` by default, with 3 s windows; ``doc`` is its help."""
    base = {f.name: f for f in fields(WorkloadsArgs)}
    defaults = {"workloads": workloads, "methods": methods, "repeats": repeats, "window": 3.0, "warmup": warmup,
                "count_envs": count_envs}
    changed = [(name, base[name].type, field(default=value, metadata=base[name].metadata))
               for name, value in defaults.items()]
    return make_dataclass("PresetArgs", changed, bases=(WorkloadsArgs,), namespace={"__doc__": doc,
                                                                                    "__module__": __name__})


PRESETS = {  # command -> its arguments
    "ale": preset("ALEVecEnv on W4 (Breakout 84x84 gray + frame stack 4 x 8) beside SyncVectorEnv, SubprocVecEnv, "
                  "ale-py.", "W4", "gym-sync,subproc,ale,ale-async,ale-async-4,ale-engine"),
    "infos": preset("What an info every step costs: CartPole-v1 x 8 as it is (W1) and returning {'lives': 3} (I1).",
                    "W1,I1", "dummy,subproc"),
    "autoreset": preset("Next-step against same-step autoreset: SubprocVecEnv, to_gymnasium and ALEVecEnv on W1 and "
                        "W4.", "W1,W4", "subproc,subproc-next,subproc-gym,subproc-gym-next,ale,ale-next"),
    "multiagent": preset("Agent rows of simple_spread_v3 x 8 (MA) on our backends against a raw loop and SuperSuit.",
                         "MA", "ma-raw,dummy,subproc,subproc-2,supersuit-0,supersuit-2"),
    "fairness": preset("Whether recv/send samples every env alike: 16 envs sleeping 0-2 ms (W6), batch_size 4, "
                       "in_series 1, 2, 4, auto.\n\nEvery env counts its steps from the first recv(); the notes give "
                       "the fewest and the most per env.", "W6", "fair-auto,fair-1,fair-2,fair-4", repeats=1,
                       warmup=0.0, count_envs=True),
}


def select(text: str, table: dict[str, T], what: str, groups: dict[str, list[str]] | None = None) -> list[T]:
    """The entries of ``table`` named in the comma-separated ``text`` (``all``: every one; a name of
    ``groups``: its members); ValueError for a name that is neither."""
    if text == "all":
        return list(table.values())
    names = [k.strip() for k in text.split(",") if k.strip()]
    keys = [key for name in names for key in (groups or {}).get(name, [name])]
    unknown = [k for k in keys if k not in table]
    if unknown or not keys:
        raise ValueError(f"--{what}: unknown {unknown or text!r}; expected a comma-separated subset of "
                         f"{list(table)}{' or ' + ', '.join(groups) if groups else ''}, or all")
    return [table[k] for k in keys]


@dataclass(frozen=True)
class Cell:
    """One method on one workload (keys of ``METHODS`` and ``WORKLOADS``), one repeat."""

    workload: str
    method: str
    repeat: int = 0
    seed: int = 0
    window: float = 1.0
    warmup: float = 0.25
    spin_per_ms: int = 25_000
    count_envs: bool = False

    def run(self, timeout: float) -> dict[str, Any]:
        """Measure it in a fresh process: its record."""
        options = {"workload": self.workload, "method": self.method, "spin_per_ms": self.spin_per_ms,
                   "count_envs": self.count_envs}
        spec = CellSpec("bench.contenders:build_cell", options, self.seed, self.window, self.warmup)
        return {**asdict(self), **run_cell(spec, timeout)}


def run_all(cells: list[Cell], timeout: float) -> list[dict[str, Any]]:
    """Run the cells with a progress bar (on stderr); Ctrl-C stops the run and returns the
    records of the cells finished so far."""
    from tqdm import tqdm

    records: list[dict[str, Any]] = []
    bar = tqdm(cells, desc="cells", unit="cell", file=sys.stderr)
    try:
        for cell in bar:
            bar.set_postfix_str(f"{cell.workload} {cell.method} #{cell.repeat}")
            records.append(cell.run(timeout))
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted: reporting the {len(records)} of {len(cells)} cells that finished", file=sys.stderr)
    return records


def plan_cells(args: WorkloadsArgs, workloads: list[Workload], methods: list[Method],
               spin: int) -> tuple[list[Cell], list[tuple[str, str, str]]]:
    """Cells in run order (repeats outermost, methods rotated each repeat); what cannot run, and why."""
    why = {(w.key, m.key): unavailable(m, w) for w in workloads for m in methods}
    cells = []
    for r in range(args.repeats):
        for w in workloads:
            keys = [m.key for m in methods if not why[w.key, m.key]]
            shift = r % max(len(keys), 1)
            cells += [Cell(w.key, key, r, args.seed, args.window, args.warmup, spin, args.count_envs)
                      for key in keys[shift:] + keys[:shift]]
    return cells, [(w, m, reason) for (w, m), reason in why.items() if reason]


def default_out() -> Path:
    """A new folder for one benchmark's results, in the user's cache (never the work tree)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "vec_envs" / "bench" / time.strftime("%Y%m%d-%H%M%S")


def settings_line(args: WorkloadsArgs, command: str, spin: int, ran: int, planned: int) -> str:
    """What was measured, and how."""
    stopped = f" INTERRUPTED after {ran} of {planned} cells." if ran < planned else ""
    return (f"Settings:{stopped} `{command}`: {args.repeats} repeat(s) round-robin, {args.warmup:g} s warm-up, "
            f"{args.window:g} s window, seed {args.seed}; steps/s = env steps summed over the batch (recv/send: "
            f"batch_size per recv); % of ceiling = share of the machine ceiling row; CPU % = user+sys of the "
            f"process tree / wall (100 % = one core); steps per CPU s = steps/s / (CPU % / 100), what the "
            f"load of the rest of the machine skews far less; peak MB = summed RSS of the process tree; busy env "
            f"work: {spin} loop iterations per ms (calibrated at start).")


def run_workloads(args: WorkloadsArgs, command: str) -> int:
    """Run the benchmark, ``command`` being its command line (the report quotes it); 0 when every
    cell ran, 1 when some failed, 130 when interrupted."""
    from vec_envs.timing.machine import machine_line

    if args.list:
        print("\n".join(["workloads:", *(f"  {w.key}: {w.title}" for w in WORKLOADS.values()), "methods:",
                         *(f"  {m.key}: {m.label}{'  [quick]' if m.quick else ''}" for m in METHODS.values())]))
        return 0
    workloads = select(args.workloads, WORKLOADS, "workloads", GROUPS)
    methods = select(args.methods, METHODS, "methods")
    if args.quick and args.methods == "all":
        methods = [m for m in methods if m.quick]
    machine, spin = machine_line(), calibrate_spin()
    cells, skipped = plan_cells(args, workloads, methods, spin)
    records = run_all(cells, args.cell_timeout)
    settings = settings_line(args, command, spin, len(records), len(cells))
    report = render_report([machine, settings], workloads, methods, summarize(records), skipped, records)
    out = Path(args.out) if args.out else default_out()
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(report, encoding="utf-8")
    (out / "cells.json").write_text(json.dumps({"args": asdict(args), "cells": records}, indent=1), encoding="utf-8")
    print(report)
    print(f"results written to {out}/ (results.md, cells.json)", file=sys.stderr)
    if len(records) < len(cells):
        return 130
    return 1 if any("error" in r for r in records) else 0
