"""The "Reading the code" page names only files and folders that exist in the checkout.

Every inline code span of ``docs/code.md`` that looks like a path (no spaces, and a ``/`` in
it or a file extension at its end) must exist relative to the repository root, written in
full: a bare
``env_slice.py`` is no path from the root and fails too, so a moved or deleted file shows
here instead of misleading a newcomer.
"""
from __future__ import annotations

import re

from tests.markdown_blocks import REPO

PAGE = REPO / "docs" / "code.md"
CODE_SPAN = re.compile(r"`([^`\n]+)`")
#: a span that names a path: path characters only, with a "/" in it or one of these extensions
PATH_LIKE = re.compile(r"^(?=[\w./-]*/|[\w./-]+\.(py|pyi|c|md|ini|toml|cfg|txt|json)$)[\w./-]+$")


def named_paths(text: str) -> list[str]:
    """The path-like code spans of ``text``, in order.

    Example:
        >>> named_paths("`vec_envs/errors.py`, `python -m vec_envs`, `tests/`, `.ci/run`, `setup.py`")
        ['vec_envs/errors.py', 'tests/', '.ci/run', 'setup.py']
    """
    return [span for span in CODE_SPAN.findall(text) if PATH_LIKE.match(span)]


def test_the_page_names_paths():
    assert len(named_paths(PAGE.read_text(encoding="utf-8"))) >= 80


def test_every_path_the_page_names_exists():
    missing = []
    for path in named_paths(PAGE.read_text(encoding="utf-8")):
        target = REPO / path
        exists = target.is_dir() if path.endswith("/") else target.exists()
        if not exists:
            missing.append(path)
    assert not missing, f"docs/code.md names paths that do not exist from the repository root: {missing}"


def test_a_moved_file_is_found_missing():
    assert named_paths("`vec_envs/interop/next_step.py`, `env_slice.py`") == [
        "vec_envs/interop/next_step.py", "env_slice.py"]
    assert not (REPO / "vec_envs/interop/next_step.py").exists()
    assert not (REPO / "env_slice.py").exists()
