"""One measurement in a fresh process (vec_envs.timing.cells): its record on success, the error a
builder raised, and a cell past its timeout killed with every process it started."""
from __future__ import annotations

import time

import pytest

from vec_envs.timing.cells import CellSpec, run_cell

psutil = pytest.importorskip("psutil")


def test_a_cell_reports_its_rate_cpu_and_memory():
    record = run_cell(CellSpec("vec_envs.timing.cells:cartpole_stepper", {"num_envs": 3}, window=0.1, warmup=0.0),
                      timeout=60)
    assert record["steps"] % 3 == 0 and record["steps_per_s"] > 0
    assert record["cpu_pct"] > 0 and record["peak_mb"] > 0 and record["leftover_processes"] == 0
    assert "error" not in record


def test_a_builder_that_raises_gives_its_error():
    record = run_cell(CellSpec("tests.tuning.cell_builders:raises"), timeout=60)
    assert record["error"] == "ValueError: no such env here"
    assert "steps_per_s" not in record


@pytest.mark.slow  # waits for the cell's timeout
def test_a_cell_past_its_timeout_is_killed_with_what_it_started(tmp_path):
    from tests.helpers import still_running

    started = time.perf_counter()
    pid_file = tmp_path / "pids"
    record = run_cell(CellSpec("tests.tuning.cell_builders:hangs", {"pid_file": str(pid_file)}), timeout=5)
    assert record["error"].startswith("cell timed out after 5 s")
    assert time.perf_counter() - started < 30
    assert still_running([int(pid) for pid in pid_file.read_text().split()]) == []
