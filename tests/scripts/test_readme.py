"""README.md is a front door that works: its example runs as pasted, its commands are CI's,
its links lead somewhere, and it stays short.

Each Python block is written to a file in a temporary folder and run there in a subprocess
with a timeout (``tests/markdown_blocks.py``; a block that starts with ``# needs: ...`` runs
only where the need is met). The README's test command and its documentation build command
are the ones ``.ci/run`` runs.
"""
from __future__ import annotations

import re

import pytest

from tests.markdown_blocks import REPO, TIMEOUT_S, python_blocks, run_block

README = REPO / "README.md"
BLOCKS = python_blocks(README)
#: the README is a front door: what, why, install, set-up, an example, links into the site
MAX_LINES = 200


def bash_blocks() -> list[str]:
    """The README's ``bash`` blocks."""
    return re.findall(r"^```bash\n(.*?)^```", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


def test_the_readme_has_a_python_example():
    assert len(BLOCKS) >= 1


@pytest.mark.timeout(TIMEOUT_S + 30)
@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_block_runs_as_pasted_into_a_file(line, code, tmp_path):
    run_block(f"README.md:{line}", code, tmp_path)


def test_ci_runs_the_readme_test_command():
    commands = [c for c in bash_blocks() if "python3 -m venv" in c and "pytest" in c]
    assert len(commands) == 1, commands
    ci_lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0].strip() in ci_lines


def test_ci_builds_the_site_with_the_readme_command():
    builds = [c.strip() for c in bash_blocks() if "sphinx" in c]
    assert len(builds) == 1, builds
    assert builds[0].startswith("python3 -m venv "), builds[0]
    assert 'pip install -e ".[docs]" && python -m sphinx -W ' in builds[0], builds[0]
    ci_lines = [line.split("#")[0].strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert builds[0] in ci_lines


def test_the_readme_commands_use_distinct_venvs():
    text = README.read_text(encoding="utf-8")
    venvs = re.findall(r"python3 -m venv (\S+) && \. (\S+)/bin/activate", text)
    assert len(venvs) == 3, venvs  # Atari, the tests, the documentation site
    assert all(made == used for made, used in venvs), venvs
    assert len({made for made, _ in venvs}) == 3


def test_the_readme_is_a_front_door_of_at_most_200_lines():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; the guides belong in docs/"


def test_every_link_of_the_readme_leads_to_a_file_of_the_checkout():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert local, "the README links into the documentation"
    missing = [link for link in local if not (REPO / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_the_contract_the_readme_links_is_a_page_of_the_site():
    from importlib.resources import files

    assert "](docs/contract.md)" in README.read_text(encoding="utf-8")
    assert "## Interop (`vec_envs.interop`)" in (REPO / "docs" / "contract.md").read_text(encoding="utf-8")
    assert (files("vec_envs") / "py.typed").is_file()
    assert (files("vec_envs.wrappers") / "py.typed").is_file()
