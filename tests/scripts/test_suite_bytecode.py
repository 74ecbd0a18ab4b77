"""The processes the tests start compile each module once: where ``PYTHONDONTWRITEBYTECODE``
told Python to write no bytecode beside the sources, ``tests/conftest.py`` keeps it in pytest's
cache folder instead (``keep_bytecode_in_the_cache``), for this process and every one it starts.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import keep_bytecode_in_the_cache


def _compiled(folder: Path, prefix: str | None) -> tuple[list[Path], list[Path]]:
    """A module of ``folder`` imported by a new interpreter with this process's environment: its
    bytecode beside the source, and under ``prefix``."""
    (folder / "planted_module.py").write_text("X = 1\n", encoding="utf-8")
    subprocess.run([sys.executable, "-c", "import planted_module"], cwd=folder, env=os.environ, check=True, timeout=60)
    cached = Path(prefix + str(folder.resolve())) if prefix else None
    return list(folder.glob("__pycache__/*.pyc")), list(cached.glob("planted_module*.pyc")) if cached else []


def test_a_process_a_test_starts_writes_its_bytecode_where_this_one_does(tmp_path):
    beside, cached = _compiled(tmp_path, sys.pycache_prefix)
    if sys.pycache_prefix is None:  # the session was free to write beside the sources
        assert beside and not cached
    else:
        assert cached and not beside


def test_told_to_write_none_the_bytecode_goes_to_pytests_cache(tmp_path, pytestconfig):
    script = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).parents[2])!r})
from tests.conftest import keep_bytecode_in_the_cache
class Cache:
    def mkdir(self, name):
        folder = os.path.join({str(tmp_path)!r}, "cache", name)
        os.makedirs(folder, exist_ok=True)
        return folder
class Config:
    cache = Cache()
assert sys.dont_write_bytecode and sys.pycache_prefix is None
keep_bytecode_in_the_cache(Config())
import subprocess
subprocess.run([sys.executable, "-c", "import planted_module"], check=True)
print(sys.pycache_prefix, os.environ["PYTHONPYCACHEPREFIX"], "PYTHONDONTWRITEBYTECODE" in os.environ)
"""
    (tmp_path / "planted_module.py").write_text("X = 1\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    prefix = str(tmp_path / "cache" / "bytecode")
    assert out.stdout.split() == [prefix, prefix, "False"]
    assert not list(tmp_path.glob("__pycache__"))
    assert list(Path(prefix + str(tmp_path.resolve())).glob("planted_module*.pyc"))


@pytest.mark.parametrize("why", ["free to write", "a prefix set"])
def test_otherwise_nothing_changes(why, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", why != "free to write")
    monkeypatch.setattr(sys, "pycache_prefix", "/somewhere" if why == "a prefix set" else None)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", "unchanged")

    class Config:
        class cache:  # noqa: N801 (stands for pytest's Cache)
            @staticmethod
            def mkdir(name):
                raise AssertionError("no cache folder wanted")

    keep_bytecode_in_the_cache(Config())
    assert os.environ["PYTHONPYCACHEPREFIX"] == "unchanged"
