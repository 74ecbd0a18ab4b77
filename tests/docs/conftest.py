"""The documentation site, built once per test session for the tests that read it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.markdown_blocks import REPO

BUILD_TIMEOUT_S = 600


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site's folder (``html/`` and ``build.log``); the build's output is checked by
    ``test_site.py``."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-b", "html",
                           str(REPO / "docs"), str(out / "html")],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    (out / "build.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    return out
