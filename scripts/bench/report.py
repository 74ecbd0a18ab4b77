"""From cell records to the report: medians, the targets and the Markdown tables.

Example:
    >>> records = [{"workload": "W1", "method": "raw", "steps_per_s": r, "build_s": 0.0,
    ...             "peak_mb": 40.0} for r in (90.0, 100.0, 120.0)]
    >>> s = summarize(records)["W1", "raw"]
    >>> s.rate, s.low, s.high
    (100.0, 90.0, 120.0)
    >>> from bench.envs import WORKLOADS
    >>> sums = {("W1", "ceiling"): Summary(rate=400.0, low=400.0, high=400.0, build_s=float("nan"),
    ...                                    cpu_pct=200.0, per_cpu_s=200.0, peak_mb=90.0),
    ...         ("W1", "gym-sync"): Summary(rate=100.0, low=90.0, high=110.0, build_s=0.01,
    ...                                     cpu_pct=100.0, per_cpu_s=100.0, peak_mb=45.0)}
    >>> print("\\n".join(workload_table(WORKLOADS["W1"], [METHODS["ceiling"], METHODS["gym-sync"]], sums)))
    | method | steps/s median (min-max) | / Sync | % of ceiling | steps per CPU s | build s | CPU % | peak MB |
    |---|---:|---:|---:|---:|---:|---:|---:|
    | machine ceiling (1 raw loop per core, at once) | 400 (400-400) | 4.00x | 100 % | 200 | n/a | 200 | 90 |
    | gymnasium SyncVectorEnv | 100 (90-110) | 1.00x | 25 % | 100 | 0.01 | 100 | 45 |
    >>> [c.row() for c in checks("W1", {("W1", "gym-sync"): Summary(rate=100.0),
    ...                                 ("W1", "subproc"): Summary(rate=160.0)})][0]
    ['W1', 'best of ours / gymnasium SyncVectorEnv (SubprocVecEnv())', '1.60x', '>= 1.5x', 'met']
"""
from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.contenders import METHODS, Method
from bench.envs import Workload
from vec_envs.timing.tables import fmt, markdown_table, ratio

__all__ = ["fmt", "ratio", "markdown_table", "LatencyStats", "Summary", "summarize", "summary_of", "Check",
           "checks", "Settings", "render_report", "workload_table"]

@dataclass(frozen=True)
class LatencyStats:
    """Median, 90th percentile and mean of call times, in milliseconds.

    Example:
        >>> LatencyStats.of(np.array([0.001, 0.002, 0.003])).cells()
        ['2.000', '2.800', '2.000']
    """

    median_ms: float
    p90_ms: float
    mean_ms: float

    HEADER = ("median ms", "p90 ms", "mean ms")

    @classmethod
    def of(cls, seconds: np.ndarray) -> LatencyStats:
        """The stats of call times given in seconds."""
        ms = 1e3 * np.asarray(seconds, float)
        return cls(float(np.median(ms)), float(np.percentile(ms, 90)), float(ms.mean()))

    def cells(self) -> list[str]:
        """The three figures as table cells (``HEADER`` order)."""
        return [fmt(self.median_ms, ".3f"), fmt(self.p90_ms, ".3f"), fmt(self.mean_ms, ".3f")]


# ---------------------------------------------------------------- medians over repeats
@dataclass
class Summary:
    """The repeats of one (workload, method): medians and the steps/s range (NaN: not measured).

    ``per_cpu_s`` is env steps per CPU second of the whole process tree (threads and
    workers included): what the machine's load skews far less than steps/s.
    """

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


def _median(records: list[dict[str, Any]], key: str) -> float:
    """Median of ``key`` over the records that have it (NaN if none)."""
    values = [r[key] for r in records if key in r]
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
        s.build_s, s.cpu_pct = _median(good, "build_s"), _median(good, "cpu_pct")
        s.peak_mb, s.other_cpu_pct = _median(good, "peak_mb"), _median(good, "other_cpu_pct")
        per_cpu = [100 * r["steps_per_s"] / r["cpu_pct"] for r in good if r.get("cpu_pct", 0) > 0]
        s.per_cpu_s = statistics.median(per_cpu) if per_cpu else float("nan")
    return s


def summarize(records: list[dict[str, Any]]) -> dict[tuple[str, str], Summary]:
    """One Summary per (workload, method) that ran or failed."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for rec in records:
        groups[rec["workload"], rec["method"]].append(rec)
    return {key: _summary(recs) for key, recs in groups.items()}


def summary_of(sums: dict[tuple[str, str], Summary], workload: str, method: str) -> Summary:
    """The Summary of ``(workload, method)``; an empty one (all NaN) when it did not run."""
    return sums.get((workload, method), Summary())


# ---------------------------------------------------------------- the targets
BEST_VS_SYNC: dict[str, float | None] = {"W1": 1.5, "W2": 1.5, "W3": 2.1, "W4": None, "W5": 2.0, "W6": None}
DEFAULT_VS_BEST_LOCKSTEP = {"W6": 0.8}  # SubprocVecEnv() against the best lock-step in_series of ours
ALE_VS_SYNC = {"W4": 2.4}
RECV_SEND_OVER_SYNC = {"W5": 1.10}
CEILING_RECV_SEND = {"M1": 0.6, "M3": 0.8, "M4": 0.8, "M5": 0.8}
CEILING_SYNC = {"M3": 0.6, "M4": 0.6, "M5": 0.6}
AHEAD_OF_ENVPOOL = {"M3": ("best recv/send of ours", lambda m: m.ours and m.recv_send),
                    "M4": ("best ALEVecEnv", lambda m: m.family == "ale")}
W2_PEAK_MB, W2_BUILD_S, M1_PEAK_MB = 300, 2.0, 1024
UNIT_FORMATS = {"x": ".2f", " MB": ",.0f", " s": ".2f"}

Sums = dict[tuple[str, str], Summary]


@dataclass(frozen=True)
class Check:
    """One goal on one workload: the value measured, the target, met or not (None: not measured)."""

    workload: str
    what: str
    shown: str
    target: str
    met: bool | None

    def row(self) -> list[str]:
        """The cells of its row in the targets table."""
        if self.met is None:
            verdict = "n/a" if self.shown == "n/a" else "-"
        else:
            verdict = "met" if self.met else "**missed**"
        return [self.workload, self.what, self.shown, self.target, verdict]


def _check(workload: str, what: str, value: float, bound: float | None, at_least: bool = True,
           unit: str = "x") -> Check:
    """A Check that ``value`` is ``>= bound`` (``< bound`` when ``at_least`` is False);
    with no ``bound``, the value alone."""
    shown = fmt(value, UNIT_FORMATS[unit], unit)
    if bound is None:
        return Check(workload, what, shown, "none set", None)
    target = (">= " if at_least else "< ") + format(bound, ".1f" if unit == "x" else "g") + unit
    met = None if math.isnan(value) else (value >= bound if at_least else value < bound)
    return Check(workload, what, shown, target, met)


def _max(*values: float) -> float:
    """The largest of the measured ``values`` (NaN if none was measured)."""
    return max((v for v in values if not math.isnan(v)), default=float("nan"))


def best(sums: Sums, workload: str, which: Callable[[Method], bool]) -> tuple[float, str]:
    """The highest median steps/s among the methods ``which`` selects, and its label."""
    rates = [(s.rate, METHODS[m].label) for (w, m), s in sums.items()
             if w == workload and m in METHODS and which(METHODS[m]) and s.ran]
    return max(rates, default=(float("nan"), "none ran"))


def _two_core_checks(w: str, sums: Sums) -> list[Check]:
    """The W workloads' goals."""
    sync = summary_of(sums, w, "gym-sync").rate
    rate, label = best(sums, w, lambda m: m.ours)
    out = [_check(w, f"best of ours / gymnasium SyncVectorEnv ({label})", ratio(rate, sync),
                  BEST_VS_SYNC.get(w))]
    if w in ALE_VS_SYNC:
        rate, label = best(sums, w, lambda m: m.family == "ale")
        out.append(_check(w, f"ALEVecEnv / gymnasium SyncVectorEnv ({label})", ratio(rate, sync),
                          ALE_VS_SYNC[w]))
    if w in RECV_SEND_OVER_SYNC:
        fast, fast_label = best(sums, w, lambda m: m.ours and m.recv_send)
        slow, slow_label = best(sums, w, lambda m: m.ours and not m.recv_send)
        out.append(_check(w, f"best recv/send of ours / best lock-step of ours ({fast_label} / "
                             f"{slow_label})", ratio(fast, slow), RECV_SEND_OVER_SYNC[w]))
    if w in DEFAULT_VS_BEST_LOCKSTEP:
        rate, label = best(sums, w, lambda m: m.ours and not m.recv_send)
        out.append(_check(w, f"SubprocVecEnv() / best lock-step of ours ({label})",
                          ratio(summary_of(sums, w, "subproc").rate, rate), DEFAULT_VS_BEST_LOCKSTEP[w]))
    out.append(_check(w, "SubprocVecEnv() / DummyVecEnv",
                      ratio(summary_of(sums, w, "subproc").rate, summary_of(sums, w, "dummy").rate), 1.0))
    if w == "W2":
        default = summary_of(sums, w, "subproc")
        out += [_check(w, "SubprocVecEnv() peak MB", default.peak_mb, W2_PEAK_MB, False, " MB"),
                _check(w, "SubprocVecEnv() build + reset", default.build_s, W2_BUILD_S, False, " s")]
    return out


def _many_core_checks(w: str, sums: Sums) -> list[Check]:
    """The M workloads' goals."""
    ceiling, out = summary_of(sums, w, "ceiling").rate, []
    if w in CEILING_RECV_SEND:
        rate, label = best(sums, w, lambda m: m.ours and m.recv_send)
        out.append(_check(w, f"best recv/send of ours / machine ceiling ({label})", ratio(rate, ceiling),
                          CEILING_RECV_SEND[w]))
    if w in CEILING_SYNC:
        rate, label = best(sums, w, lambda m: m.ours and not m.recv_send)
        out.append(_check(w, f"best lock-step of ours / machine ceiling ({label})", ratio(rate, ceiling),
                          CEILING_SYNC[w]))
    if w in AHEAD_OF_ENVPOOL:
        what, which = AHEAD_OF_ENVPOOL[w]
        rate, label = best(sums, w, which)
        out.append(_check(w, f"{what} / EnvPool recv/send ({label})",
                          ratio(rate, summary_of(sums, w, "envpool-async").rate), 1.0))
    if w == "M1":
        peak = _max(summary_of(sums, w, "subproc").peak_mb, summary_of(sums, w, "subproc-async").peak_mb)
        out.append(_check(w, "SubprocVecEnv() process tree peak MB (lock-step, recv/send)", peak,
                          M1_PEAK_MB, False, " MB"))
    return out


def checks(workload: str, sums: Sums) -> list[Check]:
    """Every goal of ``workload`` with what was measured (none for a workload without goals)."""
    if workload in BEST_VS_SYNC:
        return _two_core_checks(workload, sums)
    return _many_core_checks(workload, sums) if workload in ("M1", "M3", "M4", "M5") else []


# ---------------------------------------------------------------- the Markdown report
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
    rows = [c.row() for w in workloads for c in checks(w.key, sums) if c.shown != "n/a"]  # those measured
    lines += ["## Targets", "", *markdown_table(TARGETS_HEADER, rows, "lllll")] if rows else []
    return "\n".join(lines) + "\n"
