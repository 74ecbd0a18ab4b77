"""The Python blocks of a Markdown page, and running one as a user would: pasted into a file.

A block that starts with ``# needs: ...`` names something a laptop may lack: it is always
compiled, and run when the need is met here (``NEEDS``). A block that needs a display runs
under ``xvfb-run -a`` where ``DISPLAY`` is not set, as its page tells a reader to. Used by the tests of README.md and
of the documentation site's pages.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
TIMEOUT_S = 240


def ray_cluster_running() -> bool:
    """A cluster started by ``ray start`` on this machine answers ``ray status``."""
    if shutil.which("ray") is None:
        return False
    try:
        return subprocess.run(["ray", "status"], capture_output=True, timeout=60, check=False).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def display_or_xvfb() -> bool:
    """An X display is set, or ``xvfb-run`` can make one."""
    return bool(os.environ.get("DISPLAY")) or shutil.which("xvfb-run") is not None


#: the start of a ``# needs:`` line -> whether that need is met on this machine
NEEDS: dict[str, Callable[[], bool]] = {"a Ray cluster": ray_cluster_running, "a display": display_or_xvfb}


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line number, code) of every Python block of the page ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]


def need_met(code: str) -> bool:
    """False when the block's ``# needs:`` line names something this machine lacks."""
    first = code.splitlines()[0]
    if not first.startswith("# needs:"):
        return True
    need = first[len("# needs:"):].strip()
    return any(need.startswith(name) and check() for name, check in NEEDS.items())


def run_block(where: str, code: str, folder: Path) -> None:
    """Write ``code`` to a file in ``folder`` and run it there with this checkout's vec_envs
    first on the path; fail with its stderr unless it exits 0. ``where`` names the block."""
    script = folder / (re.sub(r"\W", "_", where) + ".py")
    script.write_text(code, encoding="utf-8")
    compile(code, str(script), "exec")
    if not need_met(code):  # compiled above; the need (e.g. a Ray cluster) is not met here
        pytest.skip(f"{where} {code.splitlines()[0].lstrip('# ')}, which is not met on this machine "
                    "(the block compiles)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, script.name]
    if code.startswith("# needs: a display") and not os.environ.get("DISPLAY"):
        command = ["xvfb-run", "-a", *command]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"
