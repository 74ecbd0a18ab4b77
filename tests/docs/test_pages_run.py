"""Every Python block of the documentation site's pages runs as pasted into a file.

Each block of ``docs/*.md`` is written to a file in a temporary folder and run there in a
subprocess (``tests/markdown_blocks.py``); blocks that need Atari, Ray, SB3 or PettingZoo
run too (the ``test`` extra installs them). A block that starts with ``# needs:`` is only
compiled where the need is not met (a Ray cluster).
"""
from __future__ import annotations

import pytest

from tests.backends import uses_ray_runtime
from tests.markdown_blocks import REPO, TIMEOUT_S, python_blocks, run_block

pytestmark = pytest.mark.slow  # builds the site or runs every example of its pages

DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
BLOCKS = [(f"docs/{page.name}:{line}", code) for page in PAGES for line, code in python_blocks(page)]
#: the widest line of a code block that the site shows without a scroll bar
CODE_WIDTH = 84


def test_the_guides_have_python_blocks():
    assert len(BLOCKS) >= 30


def block_param(where: str, code: str) -> object:
    """A block that joins a running Ray cluster (on a machine running the tests: the session's
    runtime) runs where the Ray tests run, never beside them."""
    marks = [uses_ray_runtime] if code.startswith("# needs: a Ray cluster") else []
    return pytest.param(where, code, id=where, marks=marks)


@pytest.mark.timeout(TIMEOUT_S + 30)
@pytest.mark.parametrize("where, code", [block_param(where, code) for where, code in BLOCKS])
def test_block_runs_as_pasted_into_a_file(where, code, tmp_path):
    run_block(where, code, tmp_path)


def test_code_lines_fit_the_page_without_scrolling():
    wide = [f"{where} (+{n}): {len(line)} characters" for where, code in BLOCKS
            for n, line in enumerate(code.splitlines()) if len(line) > CODE_WIDTH]
    assert not wide, f"lines wider than {CODE_WIDTH} characters scroll on the page: {wide}"
