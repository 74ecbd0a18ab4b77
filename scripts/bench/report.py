"""From cell records to the report: medians over the repeats, the targets, the Markdown tables.

Example:
    >>> from bench.envs import WORKLOADS
    >>> sums = summarize([{"workload": "W1", "method": "gym-sync", "steps_per_s": r, "cpu_pct": 100.0}
    ...                   for r in (90.0, 100.0, 110.0)])
    >>> print("\\n".join(workload_table(WORKLOADS["W1"], [METHODS["gym-sync"]], sums)))
    | method | steps/s median (min-max) | / Sync | % of ceiling | steps per CPU s | build s | CPU % | peak MB |
    |---|---:|---:|---:|---:|---:|---:|---:|
    | gymnasium SyncVectorEnv | 100 (90-110) | 1.00x | n/a | 100 | n/a | 100 | n/a |
    >>> checks("W1", {("W1", "gym-sync"): Summary(rate=100.0), ("W1", "subproc"): Summary(rate=160.0)})[0]
    ['W1', 'best of ours / gymnasium SyncVectorEnv (SubprocVecEnv())', '1.60x', '>= 1.5x', 'met']
"""
from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.contenders import METHODS, Method
from bench.envs import Workload
from vec_envs.timing.tables import fmt, markdown_table, ratio

__all__ = ["Summary", "Sums", "summarize", "checks", "render_report", "workload_table"]


@dataclass
class Summary:
    """The repeats of one (workload, method): medians and the steps/s range (NaN: not measured);
    ``per_cpu_s``, env steps per CPU second of the process tree, the machine's load skews far less."""

    rate: float = float("nan")
    low: float = float("nan")
    high: float = float("nan")
    build_s: float = float("nan")
    cpu_pct: float = float("nan")
    per_cpu_s: float = float("nan")
    peak_mb: float = float("nan")
    other_cpu_pct: float = float("nan")
    errors: list[str] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)

    @property
    def ran(self) -> bool:
        """At least one repeat gave a rate."""
        return not math.isnan(self.rate)


Sums = dict[tuple[str, str], Summary]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _summary(records: list[dict[str, Any]]) -> Summary:
    """The Summary of the repeats of one (workload, method)."""
    good = [r for r in records if "steps_per_s" in r]
    s = Summary(errors=[r["error"] for r in records if "error" in r])
    s.notes = {r["note"] for r in good if r.get("note")}
    s.notes |= {f"{r['leftover_processes']} process(es) outlived close() and were killed"
                for r in records if r.get("leftover_processes")}
    if good:
        rates = [r["steps_per_s"] for r in good]
        s.rate, s.low, s.high = statistics.median(rates), min(rates), max(rates)
        s.build_s, s.cpu_pct, s.peak_mb, s.other_cpu_pct = (
            _median([r[key] for r in good if key in r]) for key in ("build_s", "cpu_pct", "peak_mb", "other_cpu_pct"))
        s.per_cpu_s = _median([100 * r["steps_per_s"] / r["cpu_pct"] for r in good if r.get("cpu_pct", 0) > 0])
    return s


def summarize(records: list[dict[str, Any]]) -> Sums:
    """One Summary per (workload, method) that ran or failed."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for rec in records:
        groups[rec["workload"], rec["method"]].append(rec)
    return {key: _summary(recs) for key, recs in groups.items()}


# ---------------------------------------------------------------- the targets
PICKS: dict[str, str | Callable[[Method], bool]] = {  # a name in a check -> a method's key, or whose best it takes
    "gymnasium SyncVectorEnv": "gym-sync", "SubprocVecEnv()": "subproc", "DummyVecEnv": "dummy",
    "machine ceiling": "ceiling", "EnvPool recv/send": "envpool-async",
    "best of ours": lambda m: m.ours,
    "best recv/send of ours": lambda m: m.ours and m.recv_send,
    "best lock-step of ours": lambda m: m.ours and not m.recv_send,
    "ALEVecEnv": lambda m: m.family == "ale", "best ALEVecEnv": lambda m: m.family == "ale",
}
RATIOS: list[tuple[str, str, dict[str, float | None]]] = [  # (numerator, denominator, bound per workload)
    ("best of ours", "gymnasium SyncVectorEnv", {"W1": 1.5, "W2": 1.5, "W3": 2.1, "W4": None, "W5": 2.0, "W6": None}),
    ("ALEVecEnv", "gymnasium SyncVectorEnv", {"W4": 2.4}),
    ("best recv/send of ours", "best lock-step of ours", {"W5": 1.10}),
    ("SubprocVecEnv()", "best lock-step of ours", {"W6": 0.8}),
    ("SubprocVecEnv()", "DummyVecEnv", dict.fromkeys(["W1", "W2", "W3", "W4", "W5", "W6"], 1.0)),
    ("best recv/send of ours", "machine ceiling", {"M1": 0.6, "M3": 0.8, "M4": 0.8, "M5": 0.8}),
    ("best lock-step of ours", "machine ceiling", {"M3": 0.6, "M4": 0.6, "M5": 0.6}),
    ("best recv/send of ours", "EnvPool recv/send", {"M3": 1.0}),
    ("best ALEVecEnv", "EnvPool recv/send", {"M4": 1.0}),
]
LIMITS = [  # (workload, what, its value from the sums, the bound it must stay below, unit)
    ("W2", "SubprocVecEnv() peak MB", lambda sums: _get(sums, "W2", "subproc").peak_mb, 300, " MB"),
    ("W2", "SubprocVecEnv() build + reset", lambda sums: _get(sums, "W2", "subproc").build_s, 2.0, " s"),
    ("M1", "SubprocVecEnv() process tree peak MB (lock-step, recv/send)",
     lambda sums: _max(_get(sums, "M1", "subproc").peak_mb, _get(sums, "M1", "subproc-async").peak_mb), 1024, " MB"),
]
UNIT_FORMATS = {"x": ".2f", " MB": ",.0f", " s": ".2f"}


def _get(sums: Sums, workload: str, method: str) -> Summary:
    """The Summary of ``(workload, method)``; an empty one (all NaN) when it did not run."""
    return sums.get((workload, method), Summary())


def _max(*values: float) -> float:
    """The largest of the measured ``values`` (NaN if none was measured)."""
    return max((v for v in values if not math.isnan(v)), default=float("nan"))


def _rate(sums: Sums, workload: str, name: str) -> tuple[float, list[str]]:
    """The median steps/s of what ``name`` picks; for a best-of, the highest and its label."""
    pick = PICKS[name]
    if isinstance(pick, str):
        return _get(sums, workload, pick).rate, []
    rates = [(s.rate, METHODS[m].label) for (w, m), s in sums.items()
             if w == workload and m in METHODS and pick(METHODS[m]) and s.ran]
    rate, label = max(rates, default=(float("nan"), "none ran"))
    return rate, [label]


def _row(workload: str, what: str, value: float, bound: float | None, at_least: bool, unit: str) -> list[str]:
    """A row of the targets table: ``value`` against ``>= bound`` (``< bound`` when not ``at_least``)."""
    if bound is None:
        target, met = "none set", "-"
    else:
        target = (">= " if at_least else "< ") + format(bound, ".1f" if unit == "x" else "g") + unit
        met = "met" if (value >= bound if at_least else value < bound) else "**missed**"
    return [workload, what, fmt(value, UNIT_FORMATS[unit], unit), target, "n/a" if math.isnan(value) else met]


def checks(workload: str, sums: Sums) -> list[list[str]]:
    """The targets table's rows of ``workload``: every goal with what was measured."""
    rows = []
    for top, bottom, bounds in RATIOS:
        if workload in bounds:
            (a, a_label), (b, b_label) = _rate(sums, workload, top), _rate(sums, workload, bottom)
            labels = f" ({' / '.join(a_label + b_label)})" if a_label + b_label else ""
            rows.append(_row(workload, f"{top} / {bottom}{labels}", ratio(a, b), bounds[workload], True, "x"))
    rows += [_row(w, what, value(sums), bound, False, unit) for w, what, value, bound, unit in LIMITS if w == workload]
    return rows


# ---------------------------------------------------------------- the Markdown report
TARGETS_HEADER = ["workload", "check", "value", "target", "met"]
HEADER = ["method", "steps/s median (min-max)", "/ Sync", "% of ceiling", "steps per CPU s", "build s", "CPU %",
          "peak MB"]
NOISY_OTHER_PCT = 20          # flag a row when other processes used more CPU than this meanwhile


def workload_table(w: Workload, methods: list[Method], sums: Sums) -> list[str]:
    """The table of one workload: a row per method that ran or failed."""
    sync, ceiling = _get(sums, w.key, "gym-sync").rate, _get(sums, w.key, "ceiling").rate
    rows = []
    for m in (m for m in methods if (w.key, m.key) in sums):
        s = sums[w.key, m.key]
        rows.append([m.label, "failed", *["n/a"] * (len(HEADER) - 2)] if not s.ran else [
            m.label, f"{fmt(s.rate)} ({fmt(s.low)}-{fmt(s.high)})", fmt(ratio(s.rate, sync), ".2f", "x"),
            fmt(100 * ratio(s.rate, ceiling), ".0f", " %"), fmt(s.per_cpu_s), fmt(s.build_s, ".2f"),
            fmt(s.cpu_pct, ".0f"), fmt(s.peak_mb, ".0f")])
    return markdown_table(HEADER, rows)


def workload_notes(w: Workload, methods: list[Method], sums: Sums, skipped: list[tuple[str, str, str]]) -> list[str]:
    """Bullets under a workload's table: methods that could not run, settings, failures, noise."""
    mine = [(METHODS[key], why) for wk, key, why in skipped if wk == w.key]
    not_for = [m.label for m, _ in mine if m.workloads is not None and w.key not in m.workloads]
    notes = [f"- {why}" for m, why in mine if m.label not in not_for]
    notes += ["- not made for this workload: " + ", ".join(not_for)] if not_for else []
    noisy = []
    for m in methods:
        s = _get(sums, w.key, m.key)
        notes += [f"- {m.label}: {note}" for note in sorted(s.notes)]
        notes += [f"- {m.label} FAILED: {(err.strip().splitlines() or [''])[0]}" for err in s.errors]
        if s.other_cpu_pct > NOISY_OTHER_PCT:
            noisy.append(f"{m.label} {s.other_cpu_pct:.0f} %")
    if noisy:
        notes.append("- NOISY: other processes' CPU during the timed windows (median, 100 % = one core): "
                     + ", ".join(noisy))
    return notes


def render_report(heading: list[str], workloads: list[Workload], methods: list[Method], sums: Sums,
                  skipped: list[tuple[str, str, str]], records: list[dict[str, Any]]) -> str:
    """The whole Markdown report; ``heading``: its first paragraphs (the machine, the settings)."""
    other = [r["other_cpu_pct"] for r in records if "other_cpu_pct" in r]
    noise = "Other load: not measured." if not other else (
        f"Other load (CPU used by processes outside the cell during its timed window, 100 % = one core): "
        f"median {statistics.median(other):.0f} %, max {max(other):.0f} %.")
    lines = ["# vec_envs benchmark", ""] + [line for text in [*heading, noise] for line in (text, "")]
    for w in workloads:
        ran = any(wk == w.key for wk, _ in sums)
        table = workload_table(w, methods, sums) if ran else ["No cell of this workload finished."]
        lines += [f"## {w.key}: {w.title}", "", *table, ""]
        notes = workload_notes(w, methods, sums, skipped)
        lines += [*notes, ""] if notes else []
    rows = [row for w in workloads for row in checks(w.key, sums) if row[2] != "n/a"]  # those measured
    lines += ["## Targets", "", *markdown_table(TARGETS_HEADER, rows, "lllll")] if rows else []
    return "\n".join(lines) + "\n"
