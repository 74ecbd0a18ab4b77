"""Nothing on the site's pages is cut off, on a desktop (1280 px) or a phone (390 px) screen.

Headless Chromium loads each page of the built site at both widths and runs ``fit.js`` in it,
which measures the page:

- the page never scrolls sideways, no element sticks out of the content column unless a box
  that scrolls holds it, and no element hides text behind ``overflow: hidden``;
- at 1280 px every command's ``--help``, every shell command and every Python block of the
  guides shows its lines whole, with no sideways scrolling (``scrollWidth`` within
  ``clientWidth``); wide tables, program output and the docstrings' examples may scroll inside
  their own box;
- a code block shows at least ``HELP_COLUMNS`` characters a line at 1280 px: the width argparse
  wraps the commands' ``--help`` to (``docs/conf.py``), and the widest code line
  ``test_pages_run.py`` allows.

``VEC_ENVS_SCREENSHOTS=DIR`` also writes a screenshot of each page at both widths to ``DIR``.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.docs.browser import CHROMIUM, Browser
from tests.docs.test_pages_run import CODE_WIDTH
from tests.markdown_blocks import REPO

pytestmark = [pytest.mark.slow,  # builds the site and opens it in Chromium
              pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on the path (apt-get install chromium)")]

WIDTHS = (1280, 390)
#: every page of the guides and the reference, and a class's and a function's API pages
PAGES = sorted({p.relative_to(REPO / "docs").with_suffix("").as_posix() for p in (REPO / "docs").glob("*.md")}
               | {f"api/{p.stem}" for p in (REPO / "docs" / "api").glob("*.md")}
               | {"api/generated/vec_envs.SubprocVecEnv", "api/generated/vec_envs.wrappers.atari.make_atari_env"})
#: the blocks that must show their lines whole at 1280 px
MUST_FIT = ("command-help", "highlight-python", "highlight-bash")
FIT_JS = (Path(__file__).parent / "fit.js").read_text(encoding="utf-8")


def _help_columns() -> int:
    spec = importlib.util.spec_from_file_location("docs_conf", REPO / "docs" / "conf.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return int(conf.HELP_COLUMNS)


@pytest.fixture(scope="module")
def measured(site: Path) -> dict[tuple[str, int], dict[str, object]]:
    """What ``fit.js`` found on each page at each width."""
    shots = os.environ.get("VEC_ENVS_SCREENSHOTS")
    found = {}
    with Browser() as browser:
        for page in PAGES:
            for width in WIDTHS:
                shot = Path(shots) / f"{page.replace('/', '_')}-{width}.png" if shots else None
                found[page, width] = browser.look((site / "html" / f"{page}.html").as_uri(), width, FIT_JS, shot)
    return found


def test_every_page_is_measured(measured):
    assert len(measured) == len(PAGES) * len(WIDTHS)
    assert all(isinstance(m.get("problems"), list) for m in measured.values())


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_sticks_out_or_is_clipped(measured, width):
    problems = [f"{page}: {p}" for (page, w), m in measured.items() if w == width for p in m["problems"]]
    assert not problems, f"at {width} px:\n" + "\n".join(problems)


def test_help_commands_and_code_show_whole_lines_on_a_desktop(measured):
    scrolling = [f"{page}: {s['what']}" for (page, w), m in measured.items() if w == 1280
                 for s in m["scrolling"] if any(kind in s["kind"].split() for kind in MUST_FIT)]
    assert not scrolling, "blocks that scroll sideways at 1280 px:\n" + "\n".join(scrolling)


def test_a_code_block_shows_the_help_width_and_the_code_width(measured):
    columns = measured["commands", 1280]["columns"]
    assert isinstance(columns, int)
    assert columns >= _help_columns(), f"--help is wrapped at {_help_columns()} columns; the page shows {columns}"
    assert columns >= CODE_WIDTH, f"code lines may have {CODE_WIDTH} characters; the page shows {columns}"


def test_the_check_finds_a_block_that_scrolls(measured):
    """Python code scrolls inside its box on a phone: what the desktop rule would catch."""
    assert any("highlight-python" in s["kind"].split()
               for (page, w), m in measured.items() if w == 390 for s in m["scrolling"])
