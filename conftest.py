"""pytest settings for the whole checkout (``tests/conftest.py`` adds the test suite's own)."""
from __future__ import annotations

from typing import Any

import pytest

MAIN_GUARD = 'if __name__ == "__main__":'


@pytest.fixture(autouse=True)
def guarded_examples_run_as_scripts(request: Any) -> None:
    """A docstring example that shows the main guard a script needs (``help(SubprocVecEnv)``)
    runs with ``__name__ == "__main__"``, as a script's top level does, so what it guards
    runs; every other example keeps its module's name."""
    dtest = getattr(request.node, "dtest", None)
    if dtest is not None and any(MAIN_GUARD in example.source for example in dtest.examples):
        dtest.globs["__name__"] = "__main__"
