"""Where SubprocVecEnv can start its workers: the checks the parent runs before any starts.

Spawn and forkserver workers import the main script again, so it needs a file and its
SubprocVecEnv must be built under ``if __name__ == "__main__":`` (``check_main_guard``); a
daemonic process may not have children (``check_may_have_children``; a worker may: it
declares itself not daemonic in ``child.worker_main``).
"""
from __future__ import annotations

import ast
import functools
import multiprocessing as mp
import os
import sys
import time
from types import FrameType

__all__ = ["check_main_guard", "check_may_have_children"]

NO_MAIN_GUARD = """\
SubprocVecEnv is created at {path}:{line} outside an `if __name__ == "__main__":` block. \
Its worker processes (start method {method!r}) import {name} again, and would start \
workers of their own. Put the code that builds and runs the envs under the guard:

    if __name__ == "__main__":
        venv = SubprocVecEnv(...)
        ...

or pass context="fork" (Linux only; unsafe once the script runs threads)."""

#: when this module was loaded, as the script starts: a main script edited after it may not
#: hold the lines that run, so its guard cannot be judged from the file
LOADED_AT = time.time()
NO_MAIN_FILE = ("SubprocVecEnv cannot start workers with start method {method!r} from this script: its workers "
                "import the main script again, and it has no file to import ({path!r}: a script piped in with "
                "`python -`, or deleted since). Save the script to a file and run that, or pass context=\"fork\" "
                "(Linux only; unsafe once the script runs threads)")
DAEMONIC = ("SubprocVecEnv cannot start worker processes from {name}, a daemonic process (a multiprocessing.Pool "
            "worker, or a Process made with daemon=True): multiprocessing forbids daemonic processes to have "
            "children. Use DummyVecEnv there (its envs run in that process), or start that process with "
            "daemon=False")


def check_may_have_children() -> None:
    """Raise ``RuntimeError`` naming the fix when this process may not start workers."""
    process = mp.current_process()
    if process.daemon:
        raise RuntimeError(DAEMONIC.format(name=process.name))


def _is_main_check(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    values = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and values == ["__main__"]


@functools.lru_cache(maxsize=8)
def _guarded_lines(path: str, mtime: float) -> tuple[tuple[int, int], ...]:
    """Line spans of the module-level ``if __name__ == "__main__":`` blocks of ``path``."""
    with open(path, "rb") as file:
        tree = ast.parse(file.read(), path)
    return tuple((node.lineno, node.end_lineno or node.lineno) for node in tree.body
                 if isinstance(node, ast.If) and _is_main_check(node.test))


def _script_file(path: str) -> str:
    """The main script's file, resolved as multiprocessing resolves it (from where Python started)."""
    original_dir = getattr(mp.process, "ORIGINAL_DIR", None)
    return os.path.join(original_dir, path) if not os.path.isabs(path) and original_dir is not None else path


def check_main_guard(start_method: str) -> None:
    """Raise ``RuntimeError`` when the main script creates workers outside its guard.

    Only for start methods that import the main script again (spawn, forkserver), and only
    when that script is a file; interactive sessions and ``python -c`` pass.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if start_method == "fork" or main is None or not path:
        return
    # a worker imports it by its module name (python -m) or from its file, as multiprocessing does
    if getattr(getattr(main, "__spec__", None), "name", None) is None and not os.path.isfile(_script_file(path)):
        raise RuntimeError(NO_MAIN_FILE.format(method=start_method, path=path))
    frame: FrameType | None = sys._getframe(1)  # up to the frame running the script's top level
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None:
        return  # created from an import or a thread: the script's top level is not running it
    line, mtime = frame.f_lineno, os.path.getmtime(_script_file(path))
    if mtime > LOADED_AT:
        return  # edited after it started: its lines are not the running code
    if not any(first <= line <= last for first, last in _guarded_lines(path, mtime)):
        raise RuntimeError(NO_MAIN_GUARD.format(path=path, line=line, method=start_method, name=os.path.basename(path)))
