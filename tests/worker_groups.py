"""Worker groups under pytest-xdist: the tests of one group run in one worker process.

A test's group is its ``xdist_group`` mark (the Ray variants': the session's Ray runtime), else
the session fixture it shares that builds something once per process (``BUILT_ONCE``: the
installed wheel, the documentation site), else its module when it uses a module-scoped fixture
(a VecEnv per backend, the benchmark's smoke runs); the other tests go to whichever worker is
free. So what a fixture builds is built once, and the Ray tests share one runtime.

The tests that import Stable-Baselines3 into the test process (``imports_sb3``) run last, in
one worker: once SB3's ``Monitor`` is imported, every VecMonitor asks the envs' workers whether
they are in it, and each worker process then imports SB3 and torch. Collecting the suite
imports neither (the tests import SB3 themselves).

``--dist loadgroup`` reads the groups from the node ids its workers send, to which it appends
them; under pytest 9.2 the appended names do not reach the node ids. Here the workers write
each test's group to a file the controller names (``pytest_configure_node``), and the
controller's scheduler (``pytest_xdist_make_scheduler``) reads it: a scope per group, and a
scope per test outside any group. Larger scopes are handed out first, the SB3 group last.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

#: session fixtures that build something once per test process (a wheel, the site)
BUILT_ONCE = ("installed", "site")
KEY = "vec_envs_worker_groups"
#: the mark of a test that imports Stable-Baselines3 into the test process: its group runs last
imports_sb3 = pytest.mark.xdist_group("sb3")
LAST = "group sb3"


def group_of(item: pytest.Item) -> str | None:
    """The test's worker group, or None for a test any worker may run."""
    marks = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                    for mark in item.iter_markers("xdist_group")})
    if marks:
        return "_".join(marks)
    names = getattr(item, "fixturenames", ())
    for name in BUILT_ONCE:
        if name in names:
            return name
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    if any(defs[-1].scope == "module" for defs in definitions):
        return item.nodeid.split("::", 1)[0]
    return None


def group_scheduling(config: pytest.Config, log: Any, folder: Path) -> Any:
    """pytest-xdist's scheduler of scopes, with a scope per worker group, read from the files the
    workers wrote, and a scope per test outside any group; the SB3 group is handed out last."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # the workers have collected: each wrote the same groups
                self.groups = {}
                for written in sorted(folder.glob("*.json")):
                    self.groups.update(json.loads(written.read_text(encoding="utf-8")))
            group = self.groups.get(nodeid)
            return nodeid if group is None else f"group {group}"

        def _assign_work_unit(self, node: Any) -> None:
            if len(self.workqueue) > 1 and next(iter(self.workqueue)) == LAST:
                self.workqueue.move_to_end(LAST)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


class Controller:
    """The plugin of the process that runs the workers: a folder for their groups, and the
    scheduler that reads it."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="vec_envs-worker-groups-"))

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[KEY] = str(self.folder)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadgroup":
            return None
        return group_scheduling(config, log, self.folder)

    def pytest_unconfigure(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class Worker:
    """The plugin of a worker: after collection, each test's group to the controller's folder."""

    def __init__(self, folder: str, worker_id: str) -> None:
        self.file = Path(folder) / f"{worker_id}.json"

    @pytest.hookimpl(trylast=True)  # after deselection: the items this worker may run
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        groups = {item.nodeid: group for item in items if (group := group_of(item)) is not None}
        self.file.write_text(json.dumps(groups), encoding="utf-8")


def register(config: pytest.Config) -> None:
    """Register the plugin this process needs (none without pytest-xdist)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        config.pluginmanager.register(Controller(), KEY)
    elif KEY in workerinput:
        config.pluginmanager.register(Worker(workerinput[KEY], workerinput["workerid"]), KEY)
