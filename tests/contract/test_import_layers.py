"""The package layers and rooms, read off the import graph of every module of ``vec_envs``
(``vec_envs.wrappers`` included, whose files are the top-level ``wrappers/`` folder). Every
import counts: those inside functions and under ``if TYPE_CHECKING:`` too.

- ``vec_envs.wrappers`` sits above the rest of ``vec_envs``, which never imports it;
  ``vec_envs.cli`` (the console commands) sits above both and nothing imports it;
- ``vec_envs.planning`` works on any backend and imports none (of the Atari room it uses the
  emulator snapshots alone, which serve any env holding an ALE emulator);
- ``vec_envs.interop`` adapts any backend and imports no other (it asks a VecEnv what it
  does, e.g. ``reports_whole_episodes``);
- no two modules import each other, directly or through others;
- the subprocess transport: what a worker process runs (``child.py``) imports nothing
  the parent alone runs (``process.py``, ``lane_scheduler.py``, ``subproc_vec_env.py``);
  the protocols both ends run (``lanes.py``, ``doorbell.py``) import neither; no module
  outside ``vec_envs/subproc/`` reaches into it but through ``SubprocVecEnv`` and the
  public helpers; ``workers/`` (what every transport shares) imports no transport.
"""
from __future__ import annotations

import ast
import functools
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: each package's name and its folder (vec_envs/wrappers links to wrappers/, which is walked once)
PACKAGES = (("vec_envs", REPO / "vec_envs"), ("vec_envs.wrappers", REPO / "wrappers"))
WRAPPERS = "vec_envs.wrappers"
#: the packages that hold a backend, and the modules that are one
BACKENDS = ("vec_envs.dummy_vec_env", "vec_envs.subproc", "vec_envs.workers", "vec_envs.ray", "vec_envs.ale",
            "vec_envs.interop", "vec_envs.make_vec_env")
#: what planning may take from a backend's package: ALE's emulator snapshots, no backend's code
PLANNING_MAY_USE = ("vec_envs.ale.ale_snapshot",)
SUBPROC = "vec_envs.subproc"
#: the parent's VecEnv, at the top of the subprocess transport
SUBPROC_VEC_ENV = f"{SUBPROC}.subproc_vec_env"
CHILD = f"{SUBPROC}.child"
PARENT_ONLY = (f"{SUBPROC}.process", f"{SUBPROC}.lane_scheduler", SUBPROC_VEC_ENV)
BOTH_ENDS = (f"{SUBPROC}.lanes", f"{SUBPROC}.doorbell")
#: what the rest of vec_envs may import of the subprocess transport
SUBPROC_PUBLIC = (SUBPROC_VEC_ENV, f"{SUBPROC}.cloudpickle_wrapper", f"{SUBPROC}.mpi_env_vars")


def module_name(package: str, folder: Path, path: Path) -> str:
    """``vec_envs/ale/__init__.py`` -> ``vec_envs.ale``; ``vec_envs/ale/games.py`` -> ``vec_envs.ale.games``;
    ``wrappers/vec_monitor.py`` -> ``vec_envs.wrappers.vec_monitor``."""
    parts = (*package.split("."), *path.relative_to(folder).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def module_paths() -> dict[str, Path]:
    """Every module of ours and its file (``rglob`` does not enter the link vec_envs/wrappers)."""
    return {module_name(package, folder, path): path for package, folder in PACKAGES
            for path in sorted(folder.rglob("*.py"))}


def imported_names(path: Path, name: str) -> set[str]:
    """Every name ``path`` (module ``name``) imports, absolute: ``from a import b`` gives ``a.b``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from this package, or level - 1 packages up
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def as_module(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that importing ``name`` loads (``a.b`` itself, or ``a`` for an
    attribute ``b`` of ``a``), or None for a module not of ours."""
    if name in modules:
        return name
    owner = name.rpartition(".")[0]
    return owner if owner in modules else None


@functools.cache
def import_graph() -> dict[str, frozenset[str]]:
    """``{module: the modules of ours it imports}``, for every module of ``PACKAGES``."""
    modules = module_paths()
    graph = {}
    for name, path in modules.items():
        imported = {as_module(n, modules) for n in imported_names(path, name)}
        graph[name] = frozenset(m for m in imported if m is not None and m != name)
    return graph


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def offending_imports(room: str, forbidden: tuple[str, ...], outside: tuple[str, ...] = (),
                      allowed: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """``{module: what it imports of forbidden}`` for the modules of ``room`` that are not in
    ``outside``, ``allowed`` excepted."""
    offending = {}
    for module, imported in import_graph().items():
        if not within(module, room) or any(within(module, o) for o in outside):
            continue
        bad = sorted(m for m in imported if any(within(m, f) for f in forbidden)
                     and not any(within(m, a) for a in allowed))
        if bad:
            offending[module] = bad
    return offending


# ---------------------------------------------------------------- the graph itself
@pytest.mark.parametrize("module, imported", [
    ("vec_envs.ale.make_atari_env", SUBPROC_VEC_ENV),  # inside a function
    ("vec_envs.ray.ray_vec_env", "vec_envs.ray.ray_worker"),  # under if TYPE_CHECKING:
    ("vec_envs.workers.env_slice", "vec_envs.kernels"),  # from vec_envs import kernels
], ids=["in-a-function", "type-checking", "from-package-import-module"])
def test_the_graph_counts_every_kind_of_import(module, imported):
    assert imported in import_graph()[module]


def test_no_import_cycle():
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
        cycle: list[str] = []
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
    assert cycle == [], f"import cycle: {' -> '.join(cycle)}"


# ---------------------------------------------------------------- the layers
@pytest.mark.parametrize("package, forbidden, above, allowed", [
    ("vec_envs", (WRAPPERS, "vec_envs.cli"), ("vec_envs.cli", WRAPPERS), ()),
    (WRAPPERS, ("vec_envs.cli",), (), ()),
    ("vec_envs.planning", BACKENDS + (WRAPPERS,), (), PLANNING_MAY_USE),
    ("vec_envs.interop", tuple(b for b in BACKENDS if b != "vec_envs.interop") + (WRAPPERS,), (), ()),
], ids=["vec_envs-not-wrappers", "wrappers-not-cli", "planning-no-backend", "interop-no-other-backend"])
def test_a_package_imports_nothing_above_it(package, forbidden, above, allowed):
    assert offending_imports(package, forbidden, above, allowed) == {}


def test_importing_vec_envs_loads_no_wrapper_module():
    code = "import sys, vec_envs; print(sorted(m for m in sys.modules if m.split('.')[:2] == ['vec_envs', 'wrappers']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------- the subprocess transport
@pytest.mark.parametrize("room, forbidden, outside, allowed", [
    (CHILD, PARENT_ONLY, (), ()),
    (BOTH_ENDS[0], (CHILD, *PARENT_ONLY), (), ()),
    (BOTH_ENDS[1], (CHILD, *PARENT_ONLY), (), ()),
    ("vec_envs", (SUBPROC,), (SUBPROC,), SUBPROC_PUBLIC),
    ("vec_envs.workers", (SUBPROC, "vec_envs.ray"), (), ()),
], ids=["child-not-parent", "lanes-neither-end", "doorbell-neither-end", "vec_envs-outside-not-in",
        "workers-transport-free"])
def test_the_subprocess_transport_keeps_its_ends_apart(room, forbidden, outside, allowed):
    assert offending_imports(room, forbidden, outside, allowed) == {}
