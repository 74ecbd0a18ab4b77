"""``scripts/benchmark.py``'s command line: plan the cells, run them, write the report.

Cells (workload x method x repeat) run one at a time, each in a fresh process; repeats
go round-robin over the methods (their order rotated each repeat) so that drift of
the machine hits every method alike.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.args import parse
from bench.cell import CellSpec
from bench.envs import calibrate_spin
from bench.machine import machine_line
from bench.methods import METHODS, Method, unavailable
from bench.plot import plot_ratios
from bench.report import Settings, render_report
from bench.summary import summarize
from bench.tree import run_cell_process
from bench.workloads import WORKLOADS, Workload

__all__ = ["Args", "main"]

QUICK_REPEATS, QUICK_WINDOW, QUICK_WARMUP = 1, 1.0, 0.25
T = TypeVar("T")
GROUPS = {"W": [k for k in WORKLOADS if k.startswith("W")], "M": [k for k in WORKLOADS if k.startswith("M")]}


@dataclass
class Args:
    """The command line of ``scripts/benchmark.py``."""

    workloads: str = field(default="W", metadata={
        "help": "comma-separated workloads (W1..W5, M1, M3, M4, M5), or W (the 2-core set), M (the many-core "
                "set), all"})
    methods: str = field(default="all", metadata={
        "help": "comma-separated method keys, or all (with --quick: the quick subset); see --list"})
    repeats: int = field(default=3, metadata={"help": "cells per (workload, method); the table shows the median"})
    window: float = field(default=5.0, metadata={"help": "seconds of each timed window"})
    warmup: float = field(default=1.0, metadata={"help": "seconds stepped before the timed window"})
    quick: bool = field(default=False, metadata={
        "help": "a short run: 1 repeat, 1 s windows, 0.25 s warm-up, the quick subset of methods"})
    out: str = field(default="", metadata={
        "help": "directory for results.md, ratios.png and cells.json (default: a new folder under "
                "~/.cache/vec_envs/bench, or $XDG_CACHE_HOME)"})
    seed: int = field(default=0, metadata={"help": "seeds the envs (env i: seed + i) and the pre-sampled actions"})
    cell_timeout: float = field(default=300.0, metadata={"help": "seconds before a cell's process tree is killed"})
    list: bool = field(default=False, metadata={"help": "list the workloads and methods, then exit"})


def _check(args: Args) -> str | None:
    """What is wrong with ``args`` (None: nothing)."""
    if args.repeats < 1 or args.window <= 0 or args.warmup < 0 or args.cell_timeout <= 0:
        return (f"--repeats must be >= 1, --window and --cell-timeout > 0, --warmup >= 0; received "
                f"{args.repeats}, {args.window}, {args.cell_timeout}, {args.warmup}")
    try:
        select(args.workloads, WORKLOADS, "workloads", GROUPS)
        select(args.methods, METHODS, "methods")
    except ValueError as exc:
        return str(exc)
    return None


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """``Args`` from the command line; ``--quick`` sets repeats, window and warm-up."""
    args = parse(Args, argv, "Benchmark vec_envs' backends against gymnasium, SB3 and EnvPool.", _check)
    if args.quick:
        args.repeats, args.window, args.warmup = QUICK_REPEATS, QUICK_WINDOW, QUICK_WARMUP
    return args


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


def plan_cells(args: Args, workloads: list[Workload], methods: list[Method],
               spin: int) -> tuple[list[CellSpec], list[tuple[str, str, str]]]:
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
            cells += [CellSpec(w.key, key, r, args.seed, args.window, args.warmup, spin, handshake=True)
                      for key in keys[shift:] + keys[:shift]]
    return cells, skipped


def run_all(cells: list[CellSpec], timeout: float) -> list[dict[str, Any]]:
    """Run the cells with a progress bar (on stderr); each record holds its spec and result.
    Ctrl-C stops the run: the cells finished so far are returned."""
    from tqdm import tqdm

    records: list[dict[str, Any]] = []
    bar = tqdm(cells, desc="cells", unit="cell", file=sys.stderr)
    try:
        for spec in bar:
            bar.set_postfix_str(f"{spec.workload} {spec.method} #{spec.repeat}")
            records.append({**asdict(spec), **run_cell_process(spec, timeout)})
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted: reporting the {len(records)} of {len(cells)} cells that finished", file=sys.stderr)
    return records


def default_out() -> Path:
    """A new folder for one benchmark's results, in the user's cache (never the work tree)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "vec_envs" / "bench" / time.strftime("%Y%m%d-%H%M%S")


def write_results(out: Path, report: str, args: Args, records: list[dict[str, Any]], plot: dict[str, Any]) -> None:
    """``results.md``, ``cells.json`` and ``ratios.png`` in ``out`` (created if missing)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(report, encoding="utf-8")
    (out / "cells.json").write_text(json.dumps({"args": asdict(args), "cells": records}, indent=1),
                                    encoding="utf-8")
    plot_ratios(path=out / "ratios.png", **plot)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 when every cell ran, 1 when some failed, 130 when interrupted."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
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
                        " ".join(["python scripts/benchmark.py", *argv]), len(records), len(cells))
    report = render_report(settings, workloads, methods, sums, skipped, machine, records)
    out = Path(args.out) if args.out else default_out()
    write_results(out, report, args, records, {"workloads": workloads, "methods": methods, "sums": sums})
    print(report)
    print(f"results written to {out}/ (results.md, ratios.png, cells.json)", file=sys.stderr)
    if len(records) < len(cells):
        return 130
    return 1 if any("error" in r for r in records) else 0
