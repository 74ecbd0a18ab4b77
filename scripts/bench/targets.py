"""The goals the benchmark checks, each marked met or missed.

2 cores (W workloads): best of ours vs gymnasium SyncVectorEnv; ALEVecEnv vs Sync on W4;
recv/send vs lock-step on W5; the default SubprocVecEnv never below DummyVecEnv; W2's
memory and start-up. Many cores (M workloads): recv/send and lock-step as a share of
the machine ceiling; ahead of EnvPool's asynchronous mode; M1's memory.

Example:
    >>> from bench.summary import Summary
    >>> sums = {("W1", "gym-sync"): Summary(rate=100.0), ("W1", "subproc"): Summary(rate=160.0),
    ...         ("W1", "dummy"): Summary(rate=120.0)}
    >>> [c.row() for c in checks("W1", sums)][:2]  # doctest: +NORMALIZE_WHITESPACE
    [['W1', 'best of ours / gymnasium SyncVectorEnv (SubprocVecEnv())', '1.60x', '>= 1.5x', 'met'],
     ['W1', 'SubprocVecEnv() / DummyVecEnv', '1.33x', '>= 1.0x', 'met']]
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bench.methods import METHODS, Method
from bench.summary import Summary, summary_of
from bench.table import fmt, ratio

__all__ = ["Check", "checks", "BEST_VS_SYNC"]

BEST_VS_SYNC: dict[str, float | None] = {"W1": 1.5, "W2": 1.5, "W3": 2.1, "W4": None, "W5": 2.0}
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
    """Every goal of ``workload`` with what was measured."""
    return _many_core_checks(workload, sums) if workload.startswith("M") else _two_core_checks(workload, sums)
