"""The documentation site builds without a warning, documents every public name, and has no
link that leads nowhere.

The site is built once per test session into a temporary folder with the command the README
gives (``python -m sphinx -W --keep-going -b html docs OUT``: warnings are errors, and
``nitpicky`` makes every cross-reference that finds no target one of them): the ``site``
fixture of ``tests/docs/conftest.py``.
"""
from __future__ import annotations

import importlib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.slow  # builds the site

#: the packages whose ``__all__`` is the public API: each name needs a page of its own
PUBLIC_MODULES = ["vec_envs", "vec_envs.errors", "vec_envs.types", "vec_envs.kernels", "vec_envs.wrappers",
                  "vec_envs.wrappers.atari", "vec_envs.ale", "vec_envs.interop", "vec_envs.multiagent"]


def test_the_site_builds_without_a_warning(site):
    log = (site / "build.log").read_text(encoding="utf-8")
    assert "WARNING" not in log and "ERROR" not in log, log[-5000:]
    assert (site / "html" / "index.html").is_file(), log[-5000:]


def documented_objects(site: Path) -> dict[str, object]:
    """Every Python object the site's inventory names, by its documented name."""
    from sphinx.util.inventory import InventoryFile

    with open(site / "html" / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", lambda base, uri: uri)
    found = {}
    for kind, entries in inventory.items():
        if kind.startswith("py:"):
            found.update({name: _resolve(name) for name in entries})
    return found


def _resolve(name: str) -> object:
    """The object a dotted name documents (its module imported), or None."""
    module, _, attr = name.rpartition(".")
    while module:
        try:
            return getattr(importlib.import_module(module), attr)
        except ImportError:
            module, _, first = module.rpartition(".")
            attr = f"{first}.{attr}"
        except AttributeError:
            return None
    return None


def test_every_public_name_has_an_api_entry(site):
    documented = documented_objects(site)
    same_object = {id(obj) for obj in documented.values() if obj is not None}
    missing = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            # a re-export is documented once, where users import it (vec_envs.ale's make_atari_env
            # is vec_envs.wrappers.atari's); a value (a str, a dict) must be documented by its own name
            if f"{module_name}.{name}" not in documented and (isinstance(obj, (str, dict))
                                                               or id(obj) not in same_object):
                missing.append(f"{module_name}.{name}")
    assert not missing, f"public names with no API entry: {missing}"


def test_every_public_class_and_function_has_a_page_of_its_own(site):
    pages = {p.stem for p in (site / "html" / "api" / "generated").glob("*.html")}
    without = [f"{m}.{n}" for m in PUBLIC_MODULES for n in importlib.import_module(m).__all__
               if f"{m}.{n}" not in pages and not _documented_elsewhere(m, n, pages)]
    assert not without, f"public names with no page: {without}"


def _documented_elsewhere(module: str, name: str, pages: set[str]) -> bool:
    """A re-export whose object has a page under another public module's name."""
    obj = getattr(importlib.import_module(module), name)
    return any(getattr(importlib.import_module(m), name, None) is obj and f"{m}.{name}" in pages
               for m in PUBLIC_MODULES)


class _Links(HTMLParser):
    """The ``href`` / ``src`` targets and the ``id`` anchors of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        for key in ("href", "src"):
            if values.get(key) and tag in ("a", "img", "link", "script"):
                self.targets.append(values[key] or "")


def _parse(page: Path) -> _Links:
    links = _Links()
    links.feed(page.read_text(encoding="utf-8"))
    return links


def test_no_page_links_nowhere(site):
    html = site / "html"
    pages = {page: _parse(page) for page in html.rglob("*.html") if "_static" not in page.parts}
    broken = []
    for page, links in pages.items():
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc:  # another site: not checked (no network in CI)
                continue
            path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not path.exists():
                broken.append(f"{page.relative_to(html)} -> {target} (no such file)")
            elif parts.fragment and path.suffix == ".html":
                ids = pages[path].ids if path in pages else _parse(path).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(html)} -> {target} (no such anchor)")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_the_pages_a_user_looks_for_are_there(site):
    for page in ["installation", "quickstart", "concepts", "backends", "async", "wrappers", "atari", "agents",
                 "multiagent", "planning", "ray", "reliability", "performance", "migrating", "troubleshooting",
                 "glossary", "commands", "contract", "api/index", "rendering"]:
        assert (site / "html" / f"{page}.html").is_file(), page


#: the API reference's groups, each a page in the sidebar that introduces its classes
API_GROUPS = ["backends", "wrappers", "adapters", "atari", "multiagent", "planning", "errors", "utilities"]


def test_the_api_reference_is_grouped_by_topic_in_the_sidebar(site):
    index = (site / "html" / "api" / "index.html").read_text(encoding="utf-8")
    sidebar = index[index.index('class="sidebar-tree"'):]
    for group in API_GROUPS:
        assert f'href="{group}.html"' in sidebar, group
    pages = {p.stem for p in (site / "html" / "api" / "generated").glob("*.html")}
    linked = set()
    for group in API_GROUPS:
        linked |= {target.split("/")[-1].removesuffix(".html") for target in
                   _parse(site / "html" / "api" / f"{group}.html").targets if target.startswith("generated/")}
    assert pages <= linked, f"API pages that no group lists: {sorted(pages - linked)}"


def test_the_site_links_to_the_api_pages_of_python_numpy_gymnasium_and_sb3(site):
    targets = {t for page in (site / "html").rglob("*.html") for t in _parse(page).targets}
    for base in ["https://docs.python.org/3/library/", "https://numpy.org/doc/stable/reference/",
                 "https://gymnasium.farama.org/api/", "https://stable-baselines3.readthedocs.io/en/master/"]:
        assert any(t.startswith(base) for t in targets), f"no link into {base}"
