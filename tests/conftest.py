from __future__ import annotations

import os
import signal
import sys

import pytest

from tests import worker_groups

DEFAULT_TIMEOUT_S = 120


def pytest_configure(config):
    """Ctrl-C raises KeyboardInterrupt here and in every process the tests start, even when
    pytest was started with SIGINT ignored (as a shell's background job is): the Ctrl-C tests
    send real SIGINTs."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    worker_groups.register(config)  # under pytest-xdist: the tests of a group run in one worker
    keep_bytecode_in_the_cache(config)


def keep_bytecode_in_the_cache(config):
    """Where Python was told to write no bytecode beside the sources (``PYTHONDONTWRITEBYTECODE``),
    keep it in pytest's cache folder instead, for this process and every process the tests start:
    the suite starts some thousand interpreters (workers, scripts, Ray actors), and each would
    compile the package's modules anew. Nothing is written beside the sources."""
    cache = getattr(config, "cache", None)  # None: pytest's cache is switched off (-p no:cacheprovider)
    if not sys.dont_write_bytecode or cache is None or sys.pycache_prefix is not None:
        return
    prefix = str(cache.mkdir("bytecode"))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


def pytest_collection_modifyitems(items):
    """Every test gets a timeout: nothing in this suite may hang CI."""
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TIMEOUT_S))


@pytest.fixture
def closing():
    """``closing(venv)`` returns venv and closes it when the test ends, pass or fail."""
    made = []
    yield lambda venv: made.append(venv) or venv
    for venv in made:
        venv.close()


@pytest.fixture(scope="session", autouse=True)
def ray_runtime_stopped_at_end():
    """Stop the session's Ray runtime (if a test started one) and check nothing of it is left."""
    yield
    from tests import ray_runtime

    left = ray_runtime.shutdown()
    assert not left, f"Ray processes still running after the session: {left}"
