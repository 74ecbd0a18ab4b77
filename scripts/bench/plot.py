"""The report's chart: steps/s of every method relative to gymnasium SyncVectorEnv."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from bench.methods import Method
from bench.summary import Summary, summary_of
from bench.table import ratio
from bench.targets import BEST_VS_SYNC
from bench.workloads import Workload

__all__ = ["plot_ratios"]

NOT_BARS = ("raw", "ceiling", "gym-sync")


def _bars(ax: Any, workloads: list[Workload], m: Method, sums: dict[tuple[str, str], Summary],
          offset: float, width: float) -> None:
    """One method's bars (one per workload it ran), ``offset`` from each workload's tick."""
    xs: list[float] = []
    ys: list[float] = []
    errs: tuple[list[float], list[float]] = ([], [])
    for j, w in enumerate(workloads):
        s, sync = summary_of(sums, w.key, m.key), summary_of(sums, w.key, "gym-sync").rate
        if s.ran and sync > 0:
            xs.append(j + offset)
            ys.append(s.rate / sync)
            errs[0].append((s.rate - s.low) / sync)
            errs[1].append((s.high - s.rate) / sync)
    if xs:
        ax.bar(xs, ys, width, yerr=errs, capsize=2, label=m.label)


def _ticks(ax: Any, workloads: list[Workload], sums: dict[tuple[str, str], Summary]) -> None:
    """Per workload: the best-of-ours target (red) and the machine ceiling (grey)."""
    for j, w in enumerate(workloads):
        target = BEST_VS_SYNC.get(w.key)
        if target:
            ax.hlines(target, j - 0.45, j + 0.45, colors="red", linestyles="--", label="target" if j == 0 else None)
        ceiling = ratio(summary_of(sums, w.key, "ceiling").rate, summary_of(sums, w.key, "gym-sync").rate)
        if not math.isnan(ceiling):
            ax.hlines(ceiling, j - 0.45, j + 0.45, colors="grey", linestyles=":",
                      label="machine ceiling" if j == 0 else None)


def plot_ratios(workloads: list[Workload], methods: list[Method], sums: dict[tuple[str, str], Summary],
                path: Path) -> None:
    """Grouped bars of steps/s / Sync per workload and method (whiskers: min-max), written
    to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(workloads)), 5))
    shown = [m for m in methods if m.key not in NOT_BARS]
    width = 0.8 / max(len(shown), 1)
    for i, m in enumerate(shown):
        _bars(ax, workloads, m, sums, (i - (len(shown) - 1) / 2) * width, width)
    _ticks(ax, workloads, sums)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(workloads)), [w.key for w in workloads])
    ax.set_ylabel("steps/s relative to gymnasium SyncVectorEnv")
    ax.legend(fontsize="xx-small", ncols=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
