"""``scripts/benchmark.py plot``: the cells of workloads runs as the performance page's PNGs.

The cells are written here in the shape ``workloads`` writes (``cells.json``: ``args`` and a
``cells`` list); nothing is timed.
"""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # times, probes or plots the benchmark

pytest.importorskip("matplotlib")

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:  # the harness imports as ``bench``, as when scripts/benchmark.py runs
    sys.path.insert(0, str(SCRIPTS))
plot = importlib.import_module("bench.plot")
report = importlib.import_module("bench.report")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cell(workload: str, method: str, rate: float) -> dict[str, object]:
    """One repeat's record, with the fields the plots read."""
    return {"workload": workload, "method": method, "repeat": 0, "steps_per_s": rate, "cpu_pct": 100.0,
            "other_cpu_pct": 0.0, "build_s": 0.1, "peak_mb": 50.0, "note": "", "seconds": 2.0,
            "steps": int(rate * 2)}


def write_run(folder: Path, cells: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cells.json").write_text(json.dumps({"args": {}, "cells": cells}), encoding="utf-8")
    return folder


def run_plot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPTS / "benchmark.py"), "plot", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_plot_writes_the_bars_and_the_scaling_pngs_from_pooled_runs(tmp_path):
    first = write_run(tmp_path / "run1", [cell(w, m, r) for w in ("W1", "W2", "W3")
                                          for m, r in [("ceiling", 400e3), ("subproc", 300e3), ("gym-sync", 150e3)]])
    second = write_run(tmp_path / "run2", [cell("W1", "subproc", 320e3)])
    done = run_plot(str(first), str(second / "cells.json"), "--out", str(tmp_path / "png"), "--title", "a machine")
    assert done.returncode == 0, done.stderr
    assert "plot: 10 cells -> " in done.stderr
    for name in ("workloads.png", "scaling.png"):
        assert (tmp_path / "png" / name).read_bytes()[:8] == PNG_MAGIC, name


def test_plot_of_one_size_per_env_writes_only_the_bars(tmp_path):
    run = write_run(tmp_path / "run", [cell("W3", "subproc", 7e3), cell("W5", "subproc", 2e3)])
    done = run_plot(str(run), "--out", str(tmp_path / "png"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["workloads.png"]


def test_plot_of_a_folder_without_cells_fails_in_one_line(tmp_path):
    done = run_plot(str(tmp_path), "--out", str(tmp_path / "png"))
    assert done.returncode == 1
    assert done.stderr == f"plot: {tmp_path} is neither a cells.json nor a folder holding one\n"
    write_run(tmp_path, [{"workload": "W1", "method": "subproc", "repeat": 0, "error": "the cell timed out"}])
    done = run_plot(str(tmp_path), "--out", str(tmp_path / "png"))
    assert done.returncode == 1
    assert done.stderr == f"plot: no cell of {tmp_path} has a rate to plot\n"
    assert not (tmp_path / "png").exists()


def test_a_workload_panel_draws_the_ceiling_as_a_dashed_line_above_the_bars():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sums = report.summarize([cell("W1", m, r) for m, r in [("ceiling", 400e3), ("subproc", 300e3),
                                                            ("gym-sync", 150e3)]])
    methods = plot.methods_in(sums)
    fig, ax = plt.subplots()
    plot._panel_bars(ax, "W1", methods, sums, plot._colors(methods))
    assert [round(p.get_height()) for p in ax.patches] == [300_000, 150_000]
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]  # the error bars are lines too
    assert [tuple(line.get_ydata()) for line in dashed] == [(400e3, 400e3)]
    assert ax.get_ylim()[1] > 400e3
    plt.close(fig)


def test_the_scaling_panel_draws_a_line_per_method_run_at_two_sizes_or_more():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [cell(w, m, r) for w in ("W1", "S16", "W2", "M1")
               for m, r in [("ceiling", 300e3), ("subproc", 150e3), ("envpool", 600e3)]]
    records.append(cell("W1", "sb3-subproc", 20e3))  # one size only: no line
    sums = report.summarize(records)
    methods = plot.methods_in(sums)
    fig, ax = plt.subplots()
    plot._panel_scaling(ax, "cartpole", ["W1", "S16", "W2", "M1"], methods, sums, plot._colors(methods),
                        plot.quartiles(records), "min-max of 1 repeats")
    _, labels = ax.get_legend_handles_labels()
    assert labels == ["SubprocVecEnv()", "EnvPool (sync)", "machine ceiling (1 raw loop per core, at once)"]
    assert [int(t) for t in ax.get_xticks()] == [8, 16, 64, 256]
    assert [len(container.lines[0].get_xdata()) for container in ax.containers] == [4, 4, 4]
    plt.close(fig)


def test_the_whiskers_are_quartiles_from_four_repeats_and_min_max_below():
    few = [cell("W1", "subproc", r) for r in (100.0, 200.0)]
    many = [cell("W1", "dummy", r) for r in (100.0, 110.0, 120.0, 130.0, 400.0)]
    spread = plot.quartiles(few + many)
    assert spread["W1", "subproc"] == (100.0, 200.0)
    assert spread["W1", "dummy"] == (110.0, 130.0)


def test_the_bars_of_c_plus_plus_envs_are_hatched_and_noted(tmp_path):
    run = write_run(tmp_path / "run", [cell("W4", m, r) for m, r in [("ceiling", 4e3), ("ale", 5e3), ("subproc", 3e3)]])
    assert plot.native(plot.METHODS["ale"]) and not plot.native(plot.METHODS["subproc"])
    assert run_plot(str(run), "--out", str(tmp_path / "png")).returncode == 0
