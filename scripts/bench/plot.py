"""The plot command: the cells of ``workloads`` runs as PNGs for the documentation's performance page.

``workloads.png`` has one panel per workload: each method's median steps/s as a bar (whiskers:
min-max over the repeats) and the machine ceiling as a dashed line. ``scaling.png`` has one
panel per env run at several batch sizes (CartPole-v1 x 8, 64 and 256 in W1, W2 and M1): steps/s
against the number of envs, a line per method. The cells of every file given are pooled, so
repeats split over several runs give one median.

Example:
    >>> cells = [{"workload": "W1", "method": m, "steps_per_s": r} for m, r in
    ...          [("ceiling", 400.0), ("subproc", 300.0), ("gym-sync", 150.0), ("gym-sync", 170.0)]]
    >>> sums = summarize(cells)
    >>> [m.key for m in methods_in(sums)]
    ['subproc', 'gym-sync']
    >>> sums["W1", "gym-sync"].rate, ceiling_of(sums, "W1")
    (160.0, 400.0)
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.contenders import METHODS, Method
from bench.envs import ENVS, WORKLOADS
from bench.report import Sums, summarize

__all__ = ["PlotArgs", "run_plot", "load_cells", "methods_in", "ceiling_of", "thousands", "plot_workloads",
           "plot_scaling"]

NOT_BARS = ("raw", "ceiling")
CEILING_STYLE: dict[str, Any] = {"color": "black", "linestyle": "--", "linewidth": 1.2}


def thousands(value: float, _position: Any = None) -> str:
    """A tick label: ``250k`` for 250,000, ``800`` for 800.

    Example:
        >>> thousands(250_000.0), thousands(2_500.0), thousands(800.0)
        ('250k', '2.5k', '800')
    """
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


@dataclass
class PlotArgs:
    """The cells of workloads runs as PNGs: workloads.png (bars per workload, the machine ceiling) and scaling.png.

    Each file is a cells.json that ``workloads`` wrote, or the folder it wrote it to; their cells are pooled.
    """

    cells: tuple[str, ...] = field(metadata={"help": "cells.json files, or the folders workloads runs wrote"})
    out: str = field(default=".", metadata={"help": "folder for workloads.png and scaling.png (created if missing)"})
    title: str = field(default="", metadata={"help": "a line above the plots, e.g. the machine"})


def load_cells(paths: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every cell record of the files (or folders holding a ``cells.json``) ``paths``.

    Raises:
        ValueError: a path that holds no cells.json, or a file without a ``cells`` list.
    """
    records: list[dict[str, Any]] = []
    for text in paths:
        path = Path(text) / "cells.json" if Path(text).is_dir() else Path(text)
        if not path.is_file():
            raise ValueError(f"plot: {text} is neither a cells.json nor a folder holding one")
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells")
        if not isinstance(cells, list):
            raise ValueError(f"plot: {path} has no 'cells' list; expected what `benchmark.py workloads` writes")
        records += [c for c in cells if c.get("workload") in WORKLOADS and c.get("method") in METHODS]
    return records


def methods_in(sums: Sums) -> list[Method]:
    """The methods that ran, ceiling and raw loop aside, in the benchmark's order."""
    ran = {m for (_, m), s in sums.items() if s.ran}
    return [m for key, m in METHODS.items() if key in ran and key not in NOT_BARS]


def ceiling_of(sums: Sums, workload: str) -> float:
    """The machine ceiling's median steps/s on ``workload`` (NaN when it was not run)."""
    s = sums.get((workload, "ceiling"))
    return s.rate if s is not None and s.ran else float("nan")


def _colors(methods: list[Method]) -> dict[str, Any]:
    """One colour per method, the same in every panel and plot."""
    import matplotlib

    palette = matplotlib.colormaps["tab10" if len(methods) <= 10 else "tab20"]
    return {m.key: palette(i) for i, m in enumerate(methods)}


def _panel_bars(ax: Any, workload: str, methods: list[Method], sums: Sums, colors: dict[str, Any]) -> None:
    """One workload: a bar per method that ran it, the ceiling as a dashed line."""
    shown = [m for m in methods if (workload, m.key) in sums and sums[workload, m.key].ran]
    for x, m in enumerate(shown):
        s = sums[workload, m.key]
        ax.bar(x, s.rate, color=colors[m.key], yerr=[[s.rate - s.low], [s.high - s.rate]], capsize=2)
    ceiling = ceiling_of(sums, workload)
    if not math.isnan(ceiling):
        ax.axhline(ceiling, **CEILING_STYLE)
    w = WORKLOADS[workload]
    ax.set_title(f"{w.key}: {ENVS[w.env].split(' (')[0]} x {w.num_envs}", fontsize=9)
    ax.set_xticks([])
    ax.yaxis.set_major_formatter(thousands)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_ylim(0, max([ceiling if not math.isnan(ceiling) else 0.0,
                        *(sums[workload, m.key].high for m in shown)]) * 1.12)


def _figure(panels: int, width: float, entries: int) -> tuple[Any, list[Any], float, int]:
    """Up to three panels a row; the share of the figure's height the legend under them needs,
    and the legend's columns."""
    import matplotlib.pyplot as plt

    cols = min(3, panels)
    legend_cols = 2 if width * cols >= 7 else 1
    legend_rows = math.ceil(entries / legend_cols)
    height = 2.9 * math.ceil(panels / cols) + 0.6 + 0.18 * legend_rows
    fig, axes = plt.subplots(math.ceil(panels / cols), cols, figsize=(width * cols + 0.6, height), squeeze=False)
    for ax in axes.flat[panels:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:panels]), (0.18 * legend_rows + 0.05) / height, legend_cols


def _finish(fig: Any, path: Path, shown: list[Method], colors: dict[str, Any], ceiling: bool, title: str,
            legend: tuple[float, int]) -> None:
    """The legend (each shown method's colour, the ceiling's line) under the panels, the title; saved to ``path``."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(color=colors[m.key], label=m.label) for m in shown]
    if ceiling:
        handles.append(Line2D([], [], label=METHODS["ceiling"].label, **CEILING_STYLE))
    fig.legend(handles=handles, loc="lower center", ncols=legend[1], fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, legend[0], 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_workloads(sums: Sums, path: Path, title: str = "") -> None:
    """``path`` (PNG): a panel per workload, the methods' steps/s as bars against the machine ceiling."""
    workloads = [w for w in WORKLOADS if any(wk == w for wk, _ in sums)]
    methods = methods_in(sums)
    ceiling = any(not math.isnan(ceiling_of(sums, w)) for w in workloads)
    fig, axes, legend_share, legend_cols = _figure(len(workloads), 3.0, len(methods) + ceiling)
    colors = _colors(methods)
    for ax, w in zip(axes, workloads):
        _panel_bars(ax, w, methods, sums, colors)
    axes[0].set_ylabel("env steps/s (median, min-max)", fontsize=8)
    _finish(fig, path, methods, colors, ceiling, title or "env steps per second by workload",
            (legend_share, legend_cols))


def _panel_scaling(ax: Any, env: str, keys: list[str], methods: list[Method], sums: Sums,
                   colors: dict[str, Any]) -> None:
    """One env at several sizes: a line per method (and the ceiling's), steps/s against the number of envs."""
    sizes = [WORKLOADS[k].num_envs for k in keys]
    for m in [*methods, METHODS["ceiling"]]:
        points = [(n, sums[k, m.key].rate) for n, k in zip(sizes, keys) if (k, m.key) in sums and sums[k, m.key].ran]
        if points:
            ax.plot(*zip(*points), marker="o", **(CEILING_STYLE if m.key == "ceiling" else {"color": colors[m.key]}))
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(thousands)
    ax.set_title(ENVS[env].split(" (")[0], fontsize=9)
    ax.set_xlabel("number of envs", fontsize=8)
    ax.set_ylabel("env steps/s", fontsize=8)
    ax.tick_params(labelsize=8)


def plot_scaling(sums: Sums, path: Path, title: str = "") -> bool:
    """``path`` (PNG): steps/s against the number of envs, a panel per env run at several sizes;
    False (nothing written) when no env was."""
    by_env: dict[str, list[str]] = {}
    for key, w in WORKLOADS.items():
        if any(wk == key for wk, _ in sums):
            by_env.setdefault(w.env, []).append(key)
    panels = {env: keys for env, keys in by_env.items() if len(keys) > 1}
    if not panels:
        return False
    methods = methods_in(sums)
    colors = _colors(methods)  # all the methods': each keeps the colour it has in the bars
    keys = [k for ks in panels.values() for k in ks]
    shown = [m for m in methods if any((k, m.key) in sums and sums[k, m.key].ran for k in keys)]
    ceiling = any(not math.isnan(ceiling_of(sums, k)) for k in keys)
    fig, axes, legend_share, legend_cols = _figure(len(panels), 4.6, len(shown) + ceiling)
    for ax, (env, env_keys) in zip(axes, panels.items()):
        _panel_scaling(ax, env, env_keys, shown, sums, colors)
    _finish(fig, path, shown, colors, ceiling, title or "env steps per second against the number of envs",
            (legend_share, legend_cols))
    return True


def run_plot(args: PlotArgs) -> int:
    """Write the PNGs; 0, or 1 when the files hold no cell."""
    import matplotlib

    matplotlib.use("Agg")
    try:
        records = load_cells(args.cells)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    sums = summarize(records)
    if not any(s.ran for s in sums.values()):
        print(f"plot: no cell of {', '.join(args.cells)} has a rate to plot", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot_workloads(sums, out / "workloads.png", args.title)
    written = ["workloads.png"] + (["scaling.png"] if plot_scaling(sums, out / "scaling.png", args.title) else [])
    print(f"plot: {len(records)} cells -> {', '.join(str(out / name) for name in written)}", file=sys.stderr)
    return 0
