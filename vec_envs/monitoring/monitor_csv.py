"""The monitor.csv file of VecMonitor and EpisodeMonitor, in Stable-Baselines3's format.

A first line ``#`` + JSON with ``t_start`` and ``env_id`` (``str(env_id)``, so ``"None"``
without one, as SB3 writes it), a header ``r,l,t`` (+ extra keys), then one row per
episode, flushed at once: what ``stable_baselines3.common.monitor.load_results`` reads.

Example:
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     log = MonitorCsv(monitor_path(folder), t_start=0.0, env_id=None)
    ...     log.write_row({"r": 1.0, "l": 3, "t": 0.5})
    ...     log.close()
    ...     print(open(os.path.join(folder, "monitor.csv")).read().splitlines())
    ['#{"t_start": 0.0, "env_id": "None"}', 'r,l,t', '1.0,3,0.5']
"""
from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from typing import Any

__all__ = ["MONITOR_SUFFIX", "MonitorCsv", "monitor_path"]

MONITOR_SUFFIX = "monitor.csv"


def monitor_path(filename: str | os.PathLike) -> str:
    """Where the CSV goes, as in baselines / SB3: ``dir/monitor.csv`` for a directory,
    ``name.monitor.csv`` for any other name not already ending in ``monitor.csv``."""
    filename = os.fspath(filename)
    if filename.endswith(MONITOR_SUFFIX):
        return filename
    if os.path.isdir(filename):
        return os.path.join(filename, MONITOR_SUFFIX)
    return f"{filename}.{MONITOR_SUFFIX}"


class MonitorCsv:
    """One monitor.csv, open for writing (``path`` as ``monitor_path`` makes it)."""

    def __init__(self, path: str, t_start: float, env_id: str | None, extra_keys: Sequence[str] = ()) -> None:
        self.path = path
        self.file = open(path, "w", newline="\n", encoding="utf-8")
        self.file.write(f"#{json.dumps({'t_start': t_start, 'env_id': str(env_id)})}\n")
        self.writer = csv.DictWriter(self.file, fieldnames=("r", "l", "t", *extra_keys))
        self.writer.writeheader()
        self.file.flush()

    def write_row(self, row: dict[str, Any]) -> None:
        self.writer.writerow(row)
        self.file.flush()

    def close(self) -> None:
        self.file.close()
