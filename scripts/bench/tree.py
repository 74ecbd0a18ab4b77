"""The parent's side of the benchmark's cells: each runs in a fresh process, its whole process
tree sampled (``vec_envs.timing.cells.run_cell``: CPU over the timed window, peak memory, the
CPU the rest of the machine used, a timeout, processes that outlive it); the records keep
the cell's workload, method and repeat for the report.
"""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

from bench.harness import cell_spec
from vec_envs.timing.cells import run_cell

__all__ = ["Cell", "run_all"]


@dataclass(frozen=True)
class Cell:
    """One method on one workload, one repeat (see ``bench.harness.cell_spec`` for the rest)."""

    workload: str
    method: str
    repeat: int = 0
    seed: int = 0
    window: float = 1.0
    warmup: float = 0.25
    spin_per_ms: int = 25_000
    count_envs: bool = False

    def run(self, timeout: float) -> dict[str, Any]:
        """Measure it in a fresh process: its record."""
        spec = cell_spec(self.workload, self.method, self.seed, self.window, self.warmup, self.spin_per_ms,
                         self.count_envs)
        return {**asdict(self), **run_cell(spec, timeout)}


def run_all(cells: list[Cell], timeout: float) -> list[dict[str, Any]]:
    """Run the cells with a progress bar (on stderr); each record holds its cell and result.
    Ctrl-C stops the run: the cells finished so far are returned."""
    from tqdm import tqdm

    records: list[dict[str, Any]] = []
    bar = tqdm(cells, desc="cells", unit="cell", file=sys.stderr)
    try:
        for cell in bar:
            bar.set_postfix_str(f"{cell.workload} {cell.method} #{cell.repeat}")
            records.append(cell.run(timeout))
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted: reporting the {len(records)} of {len(cells)} cells that finished", file=sys.stderr)
    return records
