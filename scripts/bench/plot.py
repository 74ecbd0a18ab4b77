"""The plot command: the cells of ``workloads`` runs as PNGs for the documentation's performance page.

``workloads.png`` has one panel per workload: each method's median steps/s as a bar, its whiskers the
quartiles of the repeats (their min and max under four repeats), and the machine ceiling as a dashed
line. ``scaling.png`` has one panel per
env run at several batch sizes (CartPole-v1 x 8, 16, 64 and 256 in W1, S16, W2 and M1): steps/s
against the number of envs, a line per method that ran at two sizes or more, and the ceiling measured
at each size. Bars and lines of contenders whose envs step in C++ with no Python env loop (ALEVecEnv,
EnvPool) are hatched or dotted, with a note: they can pass the ceiling, which is Python env loops. The
cells of every file given are pooled, so repeats split over several runs give one median.

Example:
    >>> cells = [{"workload": "W1", "method": m, "steps_per_s": r} for m, r in
    ...          [("ceiling", 400.0), ("subproc", 300.0), ("gym-sync", 150.0), ("gym-sync", 170.0)]]
    >>> sums = summarize(cells)
    >>> [m.key for m in methods_in(sums)]
    ['subproc', 'gym-sync']
    >>> sums["W1", "gym-sync"].rate, ceiling_of(sums, "W1")
    (160.0, 400.0)
    >>> quartiles(cells)["W1", "gym-sync"]     # two repeats: min and max
    (150.0, 170.0)
"""
from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.contenders import METHODS, Method
from bench.envs import ENVS, WORKLOADS
from bench.report import Sums, summarize

__all__ = ["PlotArgs", "run_plot", "load_cells", "methods_in", "ceiling_of", "quartiles", "native", "thousands",
           "plot_workloads", "plot_scaling"]

NOT_BARS = ("raw", "ceiling")
#: the families whose envs step in C++ threads, with no Python env loop: the ceiling does not bound them
NATIVE_FAMILIES = ("ale", "ale-engine", "envpool")
NATIVE_NOTE = "{}: C++ envs, no Python env loop (ALEVecEnv, EnvPool): they can pass the ceiling of Python env loops"
CEILING_STYLE: dict[str, Any] = {"color": "black", "linestyle": "--", "linewidth": 1.2}
Spread = dict[tuple[str, str], tuple[float, float]]
QUARTILES_FROM = 4  # fewer repeats: the whiskers are their min and max


def thousands(value: float, _position: Any = None) -> str:
    """A tick label: ``250k`` for 250,000, ``800`` for 800.

    Example:
        >>> thousands(250_000.0), thousands(2_500.0), thousands(800.0)
        ('250k', '2.5k', '800')
    """
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


def native(method: Method) -> bool:
    """Whether ``method``'s envs step in C++ with no Python env loop (ALEVecEnv, EnvPool).

    Example:
        >>> native(METHODS["envpool"]), native(METHODS["ale-async"]), native(METHODS["subproc"])
        (True, True, False)
    """
    return method.family in NATIVE_FAMILIES


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


def quartiles(records: list[dict[str, Any]]) -> Spread:
    """The whiskers of each (workload, method): the first and third quartiles of its repeats' steps/s
    where it has ``QUARTILES_FROM`` repeats or more, else their min and max."""
    rates: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if "steps_per_s" in r:
            rates.setdefault((r["workload"], r["method"]), []).append(float(r["steps_per_s"]))
    spread = {}
    for key, values in rates.items():
        if len(values) < QUARTILES_FROM:
            spread[key] = (min(values), max(values))
        else:
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
            spread[key] = (q1, q3)
    return spread


def methods_in(sums: Sums) -> list[Method]:
    """The methods that ran, ceiling and raw loop aside, in the benchmark's order."""
    ran = {m for (_, m), s in sums.items() if s.ran}
    return [m for key, m in METHODS.items() if key in ran and key not in NOT_BARS]


def ceiling_of(sums: Sums, workload: str) -> float:
    """The machine ceiling's median steps/s on ``workload`` (NaN when it was not run)."""
    s = sums.get((workload, "ceiling"))
    return s.rate if s is not None and s.ran else float("nan")


def _whiskers(records: list[dict[str, Any]]) -> str:
    """What the whiskers are: ``quartiles of 5 repeats``, ``min-max of 2 repeats``, ``... of 3-5 repeats``."""
    counts: dict[tuple[str, str], int] = {}
    for r in records:
        if "steps_per_s" in r:
            counts[r["workload"], r["method"]] = counts.get((r["workload"], r["method"]), 0) + 1
    low, high = min(counts.values(), default=0), max(counts.values(), default=0)
    n = str(low) if low == high else f"{low}-{high}"
    kind = "quartiles" if low >= QUARTILES_FROM else "min-max" if high < QUARTILES_FROM else "quartiles or min-max"
    return f"{kind} of {n} repeats"


def _load_note(records: list[dict[str, Any]]) -> list[str]:
    """A note of what other processes took of the machine during the cells' timed windows."""
    other = [r["other_cpu_pct"] for r in records if isinstance(r.get("other_cpu_pct"), (int, float))]
    if not other:
        return []
    return [f"other processes' CPU during the timed windows: median {statistics.median(other):.0f} %, "
            f"max {max(other):.0f} % of a core"]


def _colors(methods: list[Method]) -> dict[str, Any]:
    """One colour per method, the same in every panel and plot."""
    import matplotlib

    palette = matplotlib.colormaps["tab10" if len(methods) <= 10 else "tab20"]
    return {m.key: palette(i) for i, m in enumerate(methods)}


def _bar_style(method: Method, colors: dict[str, Any]) -> dict[str, Any]:
    """A bar's colour, hatched for a contender with no Python env loop."""
    return {"facecolor": colors[method.key], "edgecolor": "white", "hatch": "///" if native(method) else None}


def _panel_bars(ax: Any, workload: str, methods: list[Method], sums: Sums, colors: dict[str, Any],
                spread: Spread | None = None) -> None:
    """One workload: a bar per method that ran it (whiskers: ``spread``, else min-max), the ceiling as a
    dashed line."""
    shown = [m for m in methods if (workload, m.key) in sums and sums[workload, m.key].ran]
    tops = []
    for x, m in enumerate(shown):
        s = sums[workload, m.key]
        low, high = (spread or {}).get((workload, m.key), (s.low, s.high))
        ax.bar(x, s.rate, yerr=[[s.rate - low], [high - s.rate]], capsize=2, **_bar_style(m, colors))
        tops.append(high)
    ceiling = ceiling_of(sums, workload)
    if not math.isnan(ceiling):
        ax.axhline(ceiling, **CEILING_STYLE)
    w = WORKLOADS[workload]
    ax.set_title(f"{w.key}: {ENVS[w.env].split(' (')[0]} x {w.num_envs}", fontsize=9)
    ax.set_xticks([])
    ax.yaxis.set_major_formatter(thousands)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_ylim(0, max([ceiling if not math.isnan(ceiling) else 0.0, *tops]) * 1.12)


def _figure(panels: int, width: float, entries: int, notes: int) -> tuple[Any, list[Any], float, int]:
    """Up to three panels a row; the share of the figure's height the legend and the notes under them
    need, and the legend's columns."""
    import matplotlib.pyplot as plt

    cols = min(3, panels)
    legend_cols = 2 if width * cols >= 7 else 1
    legend_rows = math.ceil(entries / legend_cols) + notes
    height = 2.9 * math.ceil(panels / cols) + 0.6 + 0.2 * legend_rows
    fig, axes = plt.subplots(math.ceil(panels / cols), cols, figsize=(width * cols + 0.6, height), squeeze=False)
    for ax in axes.flat[panels:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:panels]), (0.2 * legend_rows + 0.05) / height, legend_cols


def _finish(fig: Any, path: Path, handles: list[Any], notes: list[str], title: str,
            legend: tuple[float, int]) -> None:
    """The legend and the notes under the panels, the title; saved to ``path``."""
    import matplotlib.pyplot as plt

    bottom, cols = legend
    height = fig.get_figheight()
    fig.legend(handles=handles, loc="lower center", ncols=cols, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.2 * len(notes) / height))
    for i, note in enumerate(reversed(notes)):
        fig.text(0.5, (0.06 + 0.2 * i) / height, note, ha="center", va="bottom", fontsize=7.5)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_workloads(sums: Sums, path: Path, title: str = "", records: list[dict[str, Any]] | None = None) -> None:
    """``path`` (PNG): a panel per workload, the methods' steps/s as bars against the machine ceiling;
    whiskers are the quartiles of ``records``' repeats (without records: min-max)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    workloads = [w for w in WORKLOADS if any(wk == w for wk, _ in sums)]
    workloads = [w for w in workloads if not _scaling_only(w, sums)]
    methods = [m for m in methods_in(sums) if any((w, m.key) in sums and sums[w, m.key].ran for w in workloads)]
    ceiling = any(not math.isnan(ceiling_of(sums, w)) for w in workloads)
    notes = [NATIVE_NOTE.format("hatched")] if any(native(m) for m in methods) else []
    notes += _load_note(records or [])
    fig, axes, legend_share, legend_cols = _figure(len(workloads), 3.0, len(methods) + ceiling, len(notes))
    colors = _colors(methods_in(sums))
    spread = quartiles(records) if records is not None else None
    for ax, w in zip(axes, workloads):
        _panel_bars(ax, w, methods, sums, colors, spread)
    whiskers = _whiskers(records) if records is not None else "min-max"
    axes[0].set_ylabel(f"env steps/s (median; whiskers: {whiskers})", fontsize=8)
    handles: list[Any] = [Patch(label=m.label, **_bar_style(m, colors)) for m in methods]
    if ceiling:
        handles.append(Line2D([], [], label=METHODS["ceiling"].label, **CEILING_STYLE))
    _finish(fig, path, handles, notes, title or "env steps per second by workload", (legend_share, legend_cols))


def _scaling_only(workload: str, sums: Sums) -> bool:
    """A workload run only for the scaling plot (``S16``): not a panel of the bars."""
    return workload.startswith("S")


def _scaling_panels(sums: Sums) -> dict[str, list[str]]:
    """The envs run at several sizes -> their workloads, smallest first."""
    by_env: dict[str, list[str]] = {}
    for key, w in WORKLOADS.items():
        if any(wk == key for wk, _ in sums):
            by_env.setdefault(w.env, []).append(key)
    return {env: sorted(keys, key=lambda k: WORKLOADS[k].num_envs) for env, keys in by_env.items() if len(keys) > 1}


def _ran_at(sums: Sums, keys: list[str], method: str) -> list[str]:
    """The workloads of ``keys`` that ``method`` ran."""
    return [k for k in keys if (k, method) in sums and sums[k, method].ran]


def _sizes(sums: Sums, panels: dict[str, list[str]], method: str) -> str:
    """The numbers of envs ``method`` ran at in the scaling panels: ``8`` or ``8, 16``."""
    return ", ".join(str(WORKLOADS[k].num_envs) for keys in panels.values() for k in _ran_at(sums, keys, method))


def _panel_scaling(ax: Any, env: str, keys: list[str], methods: list[Method], sums: Sums,
                   colors: dict[str, Any], spread: Spread, whiskers: str) -> None:
    """One env at several sizes: a line per method (and the ceiling's), steps/s against the number of envs,
    with whiskers (``whiskers`` says which)."""
    sizes = [WORKLOADS[k].num_envs for k in keys]
    for m in [*methods, METHODS["ceiling"]]:
        ran = _ran_at(sums, keys, m.key)
        if len(ran) < 2:
            continue
        x = [WORKLOADS[k].num_envs for k in ran]
        y = [sums[k, m.key].rate for k in ran]
        low = [y_k - spread.get((k, m.key), (y_k, y_k))[0] for k, y_k in zip(ran, y)]
        high = [spread.get((k, m.key), (y_k, y_k))[1] - y_k for k, y_k in zip(ran, y)]
        style = dict(CEILING_STYLE) if m.key == "ceiling" else {
            "color": colors[m.key], "linestyle": ":" if native(m) else "-", "linewidth": 1.5}
        ax.errorbar(x, y, yerr=[low, high], marker="o", markersize=4, capsize=2, label=m.label, **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # C++ envs run ten times the Python loops: ratios read the same at every height
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(thousands)
    ax.set_title(ENVS[env].split(" (")[0], fontsize=9)
    ax.set_xlabel("number of envs", fontsize=8)
    ax.set_ylabel(f"env steps/s (median; whiskers: {whiskers})", fontsize=8)
    ax.tick_params(labelsize=8)


def plot_scaling(sums: Sums, path: Path, title: str = "", records: list[dict[str, Any]] | None = None) -> bool:
    """``path`` (PNG): steps/s against the number of envs, a panel per env run at several sizes, a line per
    method that ran at two of them or more; False (nothing written) when no env was run at several sizes."""
    from matplotlib.lines import Line2D

    panels = _scaling_panels(sums)
    if not panels:
        return False
    methods = methods_in(sums)
    colors = _colors(methods)  # all the methods': each keeps the colour it has in the bars
    drawn = [m for m in methods if any(len(_ran_at(sums, keys, m.key)) >= 2 for keys in panels.values())]
    single = [m for m in methods if m not in drawn and any(_ran_at(sums, keys, m.key) for keys in panels.values())]
    ceiling = any(len(_ran_at(sums, keys, "ceiling")) >= 2 for keys in panels.values())
    notes = []
    if single:
        notes.append("not drawn, run at one size only: " + ", ".join(
            f"{m.label} ({_sizes(sums, panels, m.key)} envs)" for m in single))
    if ceiling:
        notes.append("the ceiling, measured at each size, does not depend on the number of envs: "
                     "its changes are the machine's drift")
    if any(native(m) for m in drawn):
        notes.append(NATIVE_NOTE.format("dotted"))
    scaling_keys = {k for keys in panels.values() for k in keys}
    notes += _load_note([r for r in records or [] if r.get("workload") in scaling_keys])
    fig, axes, legend_share, legend_cols = _figure(len(panels), 7.4, len(drawn) + ceiling, len(notes))
    spread = quartiles(records or [])
    for ax, (env, env_keys) in zip(axes, panels.items()):
        _panel_scaling(ax, env, env_keys, drawn, sums, colors, spread, _whiskers(records or []))
    handles: list[Any] = [Line2D([], [], marker="o", markersize=4, label=m.label, color=colors[m.key],
                                 linestyle=":" if native(m) else "-", linewidth=1.5) for m in drawn]
    if ceiling:
        handles.append(Line2D([], [], marker="o", markersize=4, label=METHODS["ceiling"].label, **CEILING_STYLE))
    _finish(fig, path, handles, notes, title or "env steps per second against the number of envs",
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
    plot_workloads(sums, out / "workloads.png", args.title, records)
    scaling = plot_scaling(sums, out / "scaling.png", args.title, records)
    written = ["workloads.png"] + (["scaling.png"] if scaling else [])
    print(f"plot: {len(records)} cells -> {', '.join(str(out / name) for name in written)}", file=sys.stderr)
    return 0
