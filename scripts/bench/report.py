"""The benchmark's Markdown report: settings, one table per workload, the targets.

Example:
    >>> from bench.methods import METHODS
    >>> from bench.summary import Summary
    >>> from bench.workloads import WORKLOADS
    >>> sums = {("W1", "ceiling"): Summary(rate=400.0, low=400.0, high=400.0, build_s=float("nan"),
    ...                                    cpu_pct=200.0, per_cpu_s=200.0, peak_mb=90.0),
    ...         ("W1", "gym-sync"): Summary(rate=100.0, low=90.0, high=110.0, build_s=0.01,
    ...                                     cpu_pct=100.0, per_cpu_s=100.0, peak_mb=45.0)}
    >>> print("\\n".join(workload_table(WORKLOADS["W1"], [METHODS["ceiling"], METHODS["gym-sync"]], sums)))
    | method | steps/s median (min-max) | / Sync | % of ceiling | steps per CPU s | build s | CPU % | peak MB |
    |---|---:|---:|---:|---:|---:|---:|---:|
    | machine ceiling (1 raw loop per core, at once) | 400 (400-400) | 4.00x | 100 % | 200 | n/a | 200 | 90 |
    | gymnasium SyncVectorEnv | 100 (90-110) | 1.00x | 25 % | 100 | 0.01 | 100 | 45 |
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from bench.methods import METHODS, Method
from bench.summary import Summary, summary_of
from bench.table import fmt, markdown_table, ratio
from bench.targets import checks
from bench.workloads import Workload

__all__ = ["Settings", "render_report", "workload_table"]

HEADER = ["method", "steps/s median (min-max)", "/ Sync", "% of ceiling", "steps per CPU s", "build s", "CPU %",
          "peak MB"]
TARGETS_HEADER = ["workload", "check", "value", "target", "met"]
NOISY_OTHER_PCT = 20          # flag a row when other processes used more CPU than this meanwhile


@dataclass(frozen=True)
class Settings:
    """How the run measured (the report's settings line)."""

    repeats: int
    warmup: float
    window: float
    seed: int
    spin_per_ms: int
    command: str
    cells_run: int
    cells_planned: int


def _row(m: Method, s: Summary, sync: float, ceiling: float) -> list[str]:
    """One method's cells in its workload's table."""
    if not s.ran:
        return [m.label, "failed", *["n/a"] * (len(HEADER) - 2)]
    return [m.label, f"{fmt(s.rate)} ({fmt(s.low)}-{fmt(s.high)})", fmt(ratio(s.rate, sync), ".2f", "x"),
            fmt(100 * ratio(s.rate, ceiling), ".0f", " %"), fmt(s.per_cpu_s), fmt(s.build_s, ".2f"),
            fmt(s.cpu_pct, ".0f"),
            fmt(s.peak_mb, ".0f")]


def workload_table(w: Workload, methods: list[Method], sums: dict[tuple[str, str], Summary]) -> list[str]:
    """The table of one workload: a row per method that ran or failed."""
    sync, ceiling = summary_of(sums, w.key, "gym-sync").rate, summary_of(sums, w.key, "ceiling").rate
    rows = [_row(m, sums[w.key, m.key], sync, ceiling) for m in methods if (w.key, m.key) in sums]
    return markdown_table(HEADER, rows)


def workload_notes(w: Workload, methods: list[Method], sums: dict[tuple[str, str], Summary],
                   skipped: list[tuple[str, str, str]]) -> list[str]:
    """Bullets under a workload's table: methods that could not run, settings, failures, noise."""
    mine = [(METHODS[key], why) for wk, key, why in skipped if wk == w.key]
    not_for = [m.label for m, _ in mine if m.workloads is not None and w.key not in m.workloads]
    notes = [f"- {why}" for m, why in mine if m.label not in not_for]
    notes += ["- not made for this workload: " + ", ".join(not_for)] if not_for else []
    noisy = []
    for m in methods:
        s = summary_of(sums, w.key, m.key)
        notes += [f"- {m.label}: {note}" for note in sorted(s.notes)]
        notes += [f"- {m.label} FAILED: {(err.strip().splitlines() or [''])[0]}" for err in s.errors]
        if s.other_cpu_pct > NOISY_OTHER_PCT:
            noisy.append(f"{m.label} {s.other_cpu_pct:.0f} %")
    if noisy:
        notes.append("- NOISY: other processes' CPU during the timed windows (median, 100 % = one core): "
                     + ", ".join(noisy))
    return notes


def noise_line(records: list[dict[str, Any]]) -> str:
    """How busy the rest of the machine was during the timed windows."""
    other = [r["other_cpu_pct"] for r in records if "other_cpu_pct" in r]
    if not other:
        return "Other load: not measured."
    return (f"Other load (CPU used by processes outside the cell during its timed window, 100 % = one "
            f"core): median {statistics.median(other):.0f} %, max {max(other):.0f} %.")


def settings_line(s: Settings) -> str:
    """What was measured, and how."""
    stopped = (f" INTERRUPTED after {s.cells_run} of {s.cells_planned} cells."
               if s.cells_run < s.cells_planned else "")
    return (f"Settings:{stopped} `{s.command}`: {s.repeats} repeat(s) round-robin, {s.warmup:g} s warm-up, "
            f"{s.window:g} s window, seed {s.seed}; steps/s = env steps summed over the batch (recv/send: "
            f"batch_size per recv); % of ceiling = share of the machine ceiling row; CPU % = user+sys of the "
            f"process tree / wall (100 % = one core); steps per CPU s = steps/s / (CPU % / 100), what the "
            f"load of the rest of the machine skews far less; peak MB = summed RSS of the process tree; busy env "
            f"work: {s.spin_per_ms} loop iterations per ms (calibrated at start).")


def render_report(settings: Settings, workloads: list[Workload], methods: list[Method],
                  sums: dict[tuple[str, str], Summary], skipped: list[tuple[str, str, str]],
                  machine: str, records: list[dict[str, Any]]) -> str:
    """The whole Markdown report."""
    lines = ["# vec_envs benchmark", "", machine, "", settings_line(settings), "", noise_line(records), ""]
    for w in workloads:
        ran = any(wk == w.key for wk, _ in sums)
        table = workload_table(w, methods, sums) if ran else ["No cell of this workload finished."]
        lines += [f"## {w.key}: {w.title}", "", *table, ""]
        notes = workload_notes(w, methods, sums, skipped)
        lines += [*notes, ""] if notes else []
    rows = [c.row() for w in workloads for c in checks(w.key, sums)]
    lines += ["## Targets", "", *markdown_table(TARGETS_HEADER, rows, "lllll")]
    return "\n".join(lines) + "\n"
