"""From cell records to one ``Summary`` per (workload, method): medians over repeats.

Example:
    >>> records = [{"workload": "W1", "method": "raw", "steps_per_s": r, "build_s": 0.0,
    ...             "peak_mb": 40.0} for r in (90.0, 100.0, 120.0)]
    >>> s = summarize(records)["W1", "raw"]
    >>> s.rate, s.low, s.high
    (100.0, 90.0, 120.0)
"""
from __future__ import annotations

import collections
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Summary", "summarize", "summary_of"]


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
