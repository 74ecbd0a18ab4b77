"""Cell builders for the cell tests (importable by name in the cell's fresh process)."""
from __future__ import annotations

import time
from typing import Any


def raises(seed: int) -> Any:
    raise ValueError("no such env here")


def hangs(seed: int, pid_file: str) -> Any:
    import os
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # to be killed with the cell
    with open(pid_file, "w", encoding="ascii") as f:
        f.write(f"{os.getpid()} {child.pid}")
    time.sleep(600)
