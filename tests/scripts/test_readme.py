"""Every Python block of README.md runs unchanged when pasted into a file.

Each block is written to a file in a temporary folder and run there in a subprocess
with a timeout. A block that starts with ``# needs: ...`` names something a laptop may
lack: it is always compiled, and run when the need is met here (see ``NEEDS``).
The README's test command is also the one ``.ci/run`` runs.
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

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
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


#: the start of a ``# needs:`` line -> whether that need is met on this machine
NEEDS: dict[str, Callable[[], bool]] = {"a Ray cluster": ray_cluster_running}


def readme_blocks() -> list[tuple[int, str]]:
    """(line number, code) of every Python block, in README order."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]


def need_met(code: str) -> bool:
    first = code.splitlines()[0]
    if not first.startswith("# needs:"):
        return True
    need = first[len("# needs:"):].strip()
    return any(need.startswith(name) and check() for name, check in NEEDS.items())


BLOCKS = readme_blocks()


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.timeout(TIMEOUT_S + 30)
@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_block_runs_as_pasted_into_a_file(line, code, tmp_path):
    script = tmp_path / f"readme_line_{line}.py"
    script.write_text(code)
    compile(code, str(script), "exec")
    if not need_met(code):  # compiled above; the need (e.g. a Ray cluster) is not met here
        pytest.skip(f"README.md line {line} {code.splitlines()[0].lstrip('# ')}, which is not met on this machine "
                    "(the block compiles)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, f"README.md line {line} failed:\n{done.stderr[-3000:]}"


def test_ci_runs_the_readme_test_command():
    text = README.read_text(encoding="utf-8")
    commands = [c for c in re.findall(r"^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
                if "python3 -m venv" in c and "pytest" in c]
    assert len(commands) == 1, commands
    ci_lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0].strip() in ci_lines


def test_the_readme_commands_use_distinct_venvs():
    text = README.read_text(encoding="utf-8")
    venvs = re.findall(r"python3 -m venv (\S+) && \. (\S+)/bin/activate", text)
    assert len(venvs) == 2, venvs
    assert all(made == used for made, used in venvs), venvs
    assert len({made for made, _ in venvs}) == 2


def test_the_contract_the_readme_links_ships_in_the_package():
    from importlib.resources import files

    assert "](vec_envs/API.md)" in README.read_text(encoding="utf-8")
    assert "## Interop (`vec_envs.interop`)" in (files("vec_envs") / "API.md").read_text(encoding="utf-8")
    assert (files("vec_envs") / "py.typed").is_file()
    assert (files("vec_envs.wrappers") / "py.typed").is_file()
