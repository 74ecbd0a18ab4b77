"""Smoke test of scripts/benchmark.py: a tiny --quick run, checked for a well-formed report.

Nothing here is timed: the numbers only have to be numbers.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("psutil")
pytest.importorskip("matplotlib")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "benchmark.py"
WORKLOADS = ["W1", "W5"]
METHOD_LABELS = ["raw (1 env, plain loop)", "DummyVecEnv", "gymnasium SyncVectorEnv"]
HEADER = ["method", "steps/s median (min-max)", "/ Sync", "/ 2-core limit", "build s", "CPU %", "peak MB"]
NUMBER = r"\d[\d,]*(\.\d+)?"


def cells(line: str) -> list[str]:
    """The cells of one Markdown table row."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def workload_tables(stdout: str) -> dict[str, list[list[str]]]:
    """``{heading: rows}`` for every method table in the report (header and separator checked)."""
    tables, lines = {}, stdout.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("| method |"):
            continue
        heading = next(lines[j] for j in range(i - 1, -1, -1) if lines[j].startswith("## "))
        assert cells(line) == HEADER, f"unexpected header in {heading}: {line}"
        assert re.fullmatch(r"\|(-+:?\|)+", lines[i + 1].strip()), f"bad separator: {lines[i + 1]}"
        rows = []
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            rows.append(cells(row))
        tables[heading] = rows
    return tables


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(scope="module")
def run(out_dir: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(SCRIPT), "--quick", "--workloads", ",".join(WORKLOADS),
           "--methods", "raw,dummy,sync", "--out", str(out_dir)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=110)


@pytest.mark.timeout(120)
def test_quick_run_exits_cleanly(run: subprocess.CompletedProcess, out_dir: Path) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Machine:" in run.stdout
    for name in ("results.md", "ratios.png", "cells.json"):
        assert (out_dir / name).stat().st_size > 0, name


@pytest.mark.timeout(120)
def test_one_well_formed_table_per_workload(run: subprocess.CompletedProcess) -> None:
    tables = workload_tables(run.stdout)
    assert [h.split(":")[0] for h in tables] == [f"## {w}" for w in WORKLOADS]
    for heading, rows in tables.items():
        assert [r[0] for r in rows] == METHOD_LABELS, heading
        for row in rows:
            assert len(row) == len(HEADER), (heading, row)
            assert re.fullmatch(rf"{NUMBER} \({NUMBER}-{NUMBER}\)", row[1]), (heading, row)
            assert all(re.fullmatch(rf"{NUMBER}x?", c) for c in row[2:]), (heading, row)


@pytest.mark.timeout(120)
def test_targets_table_lists_every_workload(run: subprocess.CompletedProcess) -> None:
    targets = run.stdout.split("## Targets", 1)[1]
    for w in WORKLOADS:
        assert f"| {w} | best of ours / Sync (DummyVecEnv) |" in targets


@pytest.mark.parametrize("script,args,pattern", [
    ("bench_agent_pause.py", ["--pause-ms", "0", "2", "--steps", "5", "--num-envs", "2"],
     rf"pause +2\.0 ms: step median {NUMBER} ms, p90 {NUMBER} ms, mean {NUMBER} ms"),
    ("bench_wrappers.py", ["--env", "synthetic", "--backend", "subproc", "--steps", "2", "--rounds", "4"],
     rf"wrappers add +: +-?{NUMBER} ms/step .*\noverhead +: [+-]{NUMBER} % \((meets|misses)"),
])
def test_the_other_bench_scripts_print_their_figures(script, args, pattern):
    done = subprocess.run([sys.executable, str(SCRIPT.parent / script), *args], capture_output=True, text=True,
                          timeout=110)
    assert done.returncode == 0, done.stderr
    assert re.search(pattern, done.stdout, re.S), done.stdout
