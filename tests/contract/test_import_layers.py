"""The package layers: ``wrappers`` sits above ``vec_envs`` and ``vec_envs`` never imports it;
``vec_envs.cli`` (the console commands) sits above both and nothing imports it;
``vec_envs.planning`` works on any backend and imports none (of the Atari room it uses the
emulator snapshots alone, which serve any env holding an ALE emulator); ``vec_envs.interop`` adapts any
backend and imports no other (it asks a VecEnv what it does, e.g. ``reports_whole_episodes``).
Every import counts, those inside functions too."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the packages that hold a backend, and the modules that are one
BACKENDS = ("vec_envs.dummy_vec_env", "vec_envs.subproc", "vec_envs.workers", "vec_envs.ray", "vec_envs.ale",
            "vec_envs.interop", "vec_envs.make_vec_env")
#: what planning may take from a backend's package: ALE's emulator snapshots, no backend's code
PLANNING_MAY_USE = ("vec_envs.ale.ale_snapshot",)


def imports_of(package: str, above: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """``{module file: the modules it imports}`` for every module under ``package`` but those
    of the subpackages ``above`` it."""
    found: dict[str, set[str]] = {}
    skipped = [REPO / name.replace(".", "/") for name in above]
    for path in sorted((REPO / package.replace(".", "/")).rglob("*.py")):
        if any(path.is_relative_to(top) for top in skipped):
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[str(path.relative_to(REPO))] = names
    return found


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("package, forbidden, above, allowed", [
    ("vec_envs", ("wrappers", "vec_envs.cli"), ("vec_envs.cli",), ()),
    ("wrappers", ("vec_envs.cli",), (), ()),
    ("vec_envs.planning", BACKENDS + ("wrappers",), (), PLANNING_MAY_USE),
    ("vec_envs.interop", tuple(b for b in BACKENDS if b != "vec_envs.interop") + ("wrappers",), (), ()),
], ids=["vec_envs-not-wrappers", "wrappers-not-cli", "planning-no-backend", "interop-no-other-backend"])
def test_a_package_imports_nothing_above_it(package, forbidden, above, allowed):
    offending = {path: sorted(n for n in names if any(within(n, f) for f in forbidden)
                              and not any(within(n, a) for a in allowed))
                 for path, names in imports_of(package, above).items()}
    assert {path: names for path, names in offending.items() if names} == {}


def test_importing_vec_envs_loads_no_wrapper_module():
    code = "import sys, vec_envs; print(sorted(m for m in sys.modules if m.split('.')[0] == 'wrappers'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
