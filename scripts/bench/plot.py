"""The plot command: the cells of ``workloads`` runs, pooled, as the performance page's PNGs:
``workloads.png``, a panel per workload, each method's median steps/s as a bar, the machine
ceiling dashed; ``scaling.png``, a panel per env run at several batch sizes, steps/s against
the number of envs. Contenders with no Python env loop (ALEVecEnv, EnvPool) are hatched or
dotted: they can pass the ceiling, which is Python env loops.

Example:
    >>> thousands(250_000.0), thousands(2_500.0), thousands(800.0)
    ('250k', '2.5k', '800')
"""
from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bench.contenders import METHODS, Method
from bench.envs import ENVS, WORKLOADS
from bench.report import Sums, summarize

__all__ = ["PlotArgs", "run_plot", "load_cells", "methods_in", "quartiles", "native", "thousands"]

NATIVE_NOTE = "{}: C++ envs, no Python env loop (ALEVecEnv, EnvPool): they can pass the ceiling of Python env loops"
CEILING_STYLE: dict[str, Any] = {"color": "black", "linestyle": "--", "linewidth": 1.2}
Spread = dict[tuple[str, str], tuple[float, float]]
QUARTILES_FROM = 4  # fewer repeats: the whiskers are their min and max


@dataclass
class PlotArgs:
    """The cells of workloads runs as PNGs: workloads.png (bars per workload, the machine ceiling) and scaling.png.

    Each file is a cells.json that ``workloads`` wrote, or the folder it wrote it to; their cells are pooled.
    """

    cells: tuple[str, ...] = field(metadata={"help": "cells.json files, or the folders workloads runs wrote"})
    out: str = field(default=".", metadata={"help": "folder for workloads.png and scaling.png (created if missing)"})
    title: str = field(default="", metadata={"help": "a line above the plots, e.g. the machine"})


def thousands(value: float, _position: Any = None) -> str:
    """A tick label: ``250k`` for 250,000."""
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


def native(method: Method) -> bool:
    """Whether ``method``'s envs step in C++ with no Python env loop (ALEVecEnv, EnvPool)."""
    return method.family in ("ale", "ale-engine", "envpool")


def load_cells(paths: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every cell record of the files (or folders holding a ``cells.json``) ``paths``; ValueError
    for a path that holds none."""
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


def _rates(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[float]]:
    """The steps/s of each (workload, method)'s repeats."""
    rates: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if "steps_per_s" in r:
            rates.setdefault((r["workload"], r["method"]), []).append(float(r["steps_per_s"]))
    return rates


def quartiles(records: list[dict[str, Any]]) -> Spread:
    """The whiskers of each (workload, method): the first and third quartiles of its repeats' steps/s
    from ``QUARTILES_FROM`` repeats on, else their min and max."""
    spread = {}
    for key, values in _rates(records).items():
        if len(values) < QUARTILES_FROM:
            spread[key] = (min(values), max(values))
        else:
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
            spread[key] = (q1, q3)
    return spread


def _whiskers(records: list[dict[str, Any]]) -> str:
    """What the whiskers are: ``quartiles of 5 repeats``, ``min-max of 2 repeats``, ``... of 3-5 repeats``."""
    counts = [len(v) for v in _rates(records).values()]
    low, high = min(counts, default=0), max(counts, default=0)
    kind = "quartiles" if low >= QUARTILES_FROM else "min-max" if high < QUARTILES_FROM else "quartiles or min-max"
    return f"{kind} of {low if low == high else f'{low}-{high}'} repeats"


def methods_in(sums: Sums) -> list[Method]:
    """The methods that ran, ceiling and raw loop aside, in the benchmark's order."""
    ran = {m for (_, m), s in sums.items() if s.ran}
    return [m for key, m in METHODS.items() if key in ran and key not in ("raw", "ceiling")]


def _ran_at(sums: Sums, keys: list[str], method: str) -> list[str]:
    """The workloads of ``keys`` that ``method`` ran."""
    return [k for k in keys if (k, method) in sums and sums[k, method].ran]


def _notes(methods: list[Method], style: str, records: list[dict[str, Any]]) -> list[str]:
    """The note on C++ envs where one is drawn, and what other processes took of the machine."""
    notes = [NATIVE_NOTE.format(style)] if any(native(m) for m in methods) else []
    other = [r["other_cpu_pct"] for r in records if isinstance(r.get("other_cpu_pct"), (int, float))]
    return notes + ([f"other processes' CPU during the timed windows: median {statistics.median(other):.0f} %, "
                     f"max {max(other):.0f} % of a core"] if other else [])


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
    """One workload: a bar per method that ran it (whiskers: ``spread``, else min-max), the ceiling dashed."""
    tops = []
    for x, m in enumerate(m for m in methods if (workload, m.key) in sums and sums[workload, m.key].ran):
        s = sums[workload, m.key]
        low, high = (spread or {}).get((workload, m.key), (s.low, s.high))
        ax.bar(x, s.rate, yerr=[[s.rate - low], [high - s.rate]], capsize=2, **_bar_style(m, colors))
        tops.append(high)
    if _ran_at(sums, [workload], "ceiling"):
        ax.axhline(sums[workload, "ceiling"].rate, **CEILING_STYLE)
        tops.append(sums[workload, "ceiling"].rate)
    w = WORKLOADS[workload]
    ax.set_title(f"{w.key}: {ENVS[w.env].split(' (')[0]} x {w.num_envs}", fontsize=9)
    ax.set_xticks([])
    ax.yaxis.set_major_formatter(thousands)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_ylim(0, max(tops, default=0.0) * 1.12)


def _panel_scaling(ax: Any, env: str, keys: list[str], methods: list[Method], sums: Sums,
                   colors: dict[str, Any], spread: Spread, whiskers: str) -> None:
    """One env at several sizes: steps/s against the number of envs, a line per method (and the ceiling's)."""
    for m in [*methods, METHODS["ceiling"]]:
        ran = _ran_at(sums, keys, m.key)
        if len(ran) < 2:
            continue
        y = [sums[k, m.key].rate for k in ran]
        bounds = [spread.get((k, m.key), (rate, rate)) for k, rate in zip(ran, y)]
        yerr = [[rate - low for rate, (low, _) in zip(y, bounds)], [high - rate for rate, (_, high) in zip(y, bounds)]]
        style = dict(CEILING_STYLE) if m.key == "ceiling" else {
            "color": colors[m.key], "linestyle": ":" if native(m) else "-", "linewidth": 1.5}
        ax.errorbar([WORKLOADS[k].num_envs for k in ran], y, yerr=yerr, marker="o", markersize=4, capsize=2,
                    label=m.label, **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # C++ envs run ten times the Python loops: ratios read the same at every height
    sizes = [WORKLOADS[k].num_envs for k in keys]
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(thousands)
    ax.set_title(ENVS[env].split(" (")[0], fontsize=9)
    ax.set_xlabel("number of envs", fontsize=8)
    ax.set_ylabel(f"env steps/s (median; whiskers: {whiskers})", fontsize=8)
    ax.tick_params(labelsize=8)


def _draw(path: Path, panels: list[Callable[[Any], None]], width: float, handles: list[Any], notes: list[str],
          title: str, ylabel: str = "") -> None:
    """Up to three panels a row (``panels`` each draw one on an axis; ``ylabel`` on the first), the
    legend and the notes under them, the title; saved to ``path``."""
    import matplotlib.pyplot as plt

    cols = min(3, len(panels))
    legend_cols = 2 if width * cols >= 7 else 1
    legend_rows = math.ceil(len(handles) / legend_cols) + len(notes)
    height = 2.9 * math.ceil(len(panels) / cols) + 0.6 + 0.2 * legend_rows
    fig, axes = plt.subplots(math.ceil(len(panels) / cols), cols, figsize=(width * cols + 0.6, height), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels):
        panel(ax)
    if ylabel:
        axes.flat[0].set_ylabel(ylabel, fontsize=8)
    fig.legend(handles=handles, loc="lower center", ncols=legend_cols, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.2 * len(notes) / height))
    for i, note in enumerate(reversed(notes)):
        fig.text(0.5, (0.06 + 0.2 * i) / height, note, ha="center", va="bottom", fontsize=7.5)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, (0.2 * legend_rows + 0.05) / height, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_workloads(sums: Sums, path: Path, title: str, records: list[dict[str, Any]]) -> None:
    """``path`` (PNG): a panel per workload (those run only for the scaling plot aside), the methods'
    steps/s as bars against the machine ceiling."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    workloads = [w for w in WORKLOADS if any(wk == w for wk, _ in sums) and not w.startswith("S")]
    methods = [m for m in methods_in(sums) if _ran_at(sums, workloads, m.key)]
    colors, spread = _colors(methods_in(sums)), quartiles(records)
    handles: list[Any] = [Patch(label=m.label, **_bar_style(m, colors)) for m in methods]
    if _ran_at(sums, workloads, "ceiling"):
        handles.append(Line2D([], [], label=METHODS["ceiling"].label, **CEILING_STYLE))
    _draw(path, [partial(_panel_bars, workload=w, methods=methods, sums=sums, colors=colors, spread=spread)
                 for w in workloads], 3.0, handles, _notes(methods, "hatched", records),
          title or "env steps per second by workload", f"env steps/s (median; whiskers: {_whiskers(records)})")


def plot_scaling(sums: Sums, path: Path, title: str, records: list[dict[str, Any]]) -> bool:
    """``path`` (PNG): steps/s against the number of envs, a panel per env run at several sizes, a line per
    method that ran at two of them or more; False (nothing written) when no env was run at several sizes."""
    from matplotlib.lines import Line2D

    by_env: dict[str, list[str]] = {}
    for key, w in WORKLOADS.items():
        if any(wk == key for wk, _ in sums):
            by_env.setdefault(w.env, []).append(key)
    panels = {env: sorted(keys, key=lambda k: WORKLOADS[k].num_envs) for env, keys in by_env.items() if len(keys) > 1}
    if not panels:
        return False
    methods = methods_in(sums)
    colors = _colors(methods)  # all the methods': each keeps the colour it has in the bars
    drawn = [m for m in methods if any(len(_ran_at(sums, keys, m.key)) >= 2 for keys in panels.values())]
    single = [m for m in methods if m not in drawn and any(_ran_at(sums, keys, m.key) for keys in panels.values())]
    ceiling = any(len(_ran_at(sums, keys, "ceiling")) >= 2 for keys in panels.values())
    sizes = {m.key: ", ".join(str(WORKLOADS[k].num_envs) for keys in panels.values()
                              for k in _ran_at(sums, keys, m.key)) for m in single}
    notes = ["not drawn, run at one size only: " + ", ".join(f"{m.label} ({sizes[m.key]} envs)" for m in single)
             ] if single else []
    notes += ["the ceiling, measured at each size, does not depend on the number of envs: its changes are the "
              "machine's drift"] if ceiling else []
    scaling_keys = {k for keys in panels.values() for k in keys}
    notes += _notes(drawn, "dotted", [r for r in records if r.get("workload") in scaling_keys])
    spread, whiskers = quartiles(records), _whiskers(records)
    handles: list[Any] = [Line2D([], [], marker="o", markersize=4, label=m.label, color=colors[m.key],
                                 linestyle=":" if native(m) else "-", linewidth=1.5) for m in drawn]
    if ceiling:
        handles.append(Line2D([], [], marker="o", markersize=4, label=METHODS["ceiling"].label, **CEILING_STYLE))
    _draw(path, [partial(_panel_scaling, env=env, keys=keys, methods=drawn, sums=sums, colors=colors, spread=spread,
                         whiskers=whiskers) for env, keys in panels.items()], 7.4, handles, notes,
          title or "env steps per second against the number of envs")
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
    written = ["workloads.png"] + (["scaling.png"] if plot_scaling(sums, out / "scaling.png", args.title, records)
                                   else [])
    print(f"plot: {len(records)} cells -> {', '.join(str(out / name) for name in written)}", file=sys.stderr)
    return 0
