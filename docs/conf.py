"""Sphinx settings of the vec_envs site: MyST pages, autodoc from the docstrings, the furo theme.

Build it with ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra
installs what it needs); warnings are errors, and ``nitpicky`` makes every cross-reference that
finds no target one of them.
"""
from __future__ import annotations

import abc
import contextlib
import importlib
import io
import os
import shlex
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's vec_envs, whatever is installed

project = "vec_envs"
author = "the vec_envs authors"
copyright = "the vec_envs authors, MIT licence"  # noqa: A001 (Sphinx's name)
release = version = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
    "sphinx_copybutton",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}  # .rst: the API pages autosummary writes
root_doc = "index"
exclude_patterns = ["_build", "_intersphinx", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["custom.css"]

html_theme = "furo"
html_title = "vec_envs"
html_theme_options = {
    "navigation_with_keys": True,
}
pygments_style = "friendly"
pygments_dark_style = "monokai"

# MyST: heading anchors for links such as [Seeding](concepts.md#seeding), fenced directives.
myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 3

# autodoc: the docstrings are Google style (napoleon); members in source order.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True  # a class's "Attributes:" as fields, not a second description of each attribute
add_module_names = False

# The copy button leaves prompts and output out of what it copies.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

#: the characters of a line a code block shows whole, without scrolling, on a 1280-pixel-wide
#: screen: argparse wraps the commands' --help to it (tests/docs/test_pages_fit.py measures it)
HELP_COLUMNS = 84

# Links to the API pages of Python, NumPy, gymnasium and Stable-Baselines3. Their inventories are
# files of this checkout (docs/_intersphinx/make_inventories.sh says where each comes from), so the
# build never needs the network.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", "_intersphinx/python.inv"),
    "numpy": ("https://numpy.org/doc/stable", "_intersphinx/numpy.inv"),
    "gymnasium": ("https://gymnasium.farama.org", "_intersphinx/gymnasium.inv"),
    "sb3": ("https://stable-baselines3.readthedocs.io/en/master", "_intersphinx/sb3.inv"),
}
intersphinx_timeout = 1

# Every reference must find its target, here or in those inventories; the names below are
# other projects' objects those inventories lack (Ray's, PettingZoo's, a private name) or
# typing's, and are shown as plain text.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|gymnasium|gym|stable_baselines3|pettingzoo|ray|torch|multiprocessing|mp|cv2|ale_py)"
               r"(\..*)?"),
    (r"py:.*", r"(typing|collections\.abc|types|pathlib|enum|dataclasses|os|io|threading|concurrent)\..*"),
    (r"py:.*", r"(Any|Callable|Sequence|Mapping|Iterable|Iterator|Literal|ClassVar|TypeVar|T|Path|ModuleType|"
               r"Enum|IntEnum|NamedTuple|Generic|Self|Optional|Union|ndarray|Env|Wrapper|Space|"
               r"ObservationWrapper|RewardWrapper|ActionWrapper|VectorEnv|VecEnv|AutoresetMode|ParallelEnv)"),
    (r"py:class", r"(int|float|str|bool|bytes|list|dict|tuple|set|None|object|type|Exception|BaseException|"
                  r"ValueError|TypeError|RuntimeError|ImportError|NotImplementedError|KeyboardInterrupt|"
                  r"TimeoutError|OSError)"),
]


def _defined_in(cls: type, name: str) -> type | None:
    """The class of ``cls``'s MRO whose ``name`` has the docstring autodoc shows."""
    for klass in cls.__mro__:
        member = klass.__dict__.get(name)
        if member is not None and getattr(member, "__doc__", None):
            return klass
    return None


def skip_foreign_members(app: object, what: str, name: str, obj: object, skip: bool, options: object) -> bool | None:
    """Leave out the methods and properties a class takes, docstring and all, from gymnasium or
    another project: their pages are that project's."""
    func = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    if skip or what not in ("class", "exception") or not callable(func):
        return None
    module = getattr(func, "__module__", None) or ""
    if not module.startswith("vec_envs"):
        return True
    if func.__doc__:
        return None
    owner_path = getattr(func, "__qualname__", "").rpartition(".")[0]
    cls = sys.modules[module]
    for part in owner_path.split("."):
        cls = getattr(cls, part, None)
    docs_from = _defined_in(cls, name) if isinstance(cls, type) else None
    return docs_from is not None and not docs_from.__module__.startswith("vec_envs")


def public_bases(app: object, name: str, obj: type, options: object, bases: list[type]) -> None:
    """Show a class's nearest public ancestors: an internal base (a backend's ``WorkerVecEnv``,
    ``BackendHooks``) is replaced by its own bases."""
    i = 0
    while i < len(bases):
        base = bases[i]
        if base.__module__.startswith("vec_envs") and base.__qualname__ not in PUBLIC_CLASSES:
            bases[i:i + 1] = [b for b in base.__bases__ if b not in (object, abc.ABC)]
        else:
            i += 1


def _public_classes() -> set[str]:
    """The names of the classes the public packages export."""
    names = set()
    for module in ("vec_envs", "vec_envs.errors", "vec_envs.wrappers", "vec_envs.wrappers.atari", "vec_envs.ale",
                   "vec_envs.interop", "vec_envs.multiagent", "vec_envs.types", "vec_envs.rendering.frames"):
        mod = importlib.import_module(module)
        names |= {n for n in mod.__all__ if isinstance(getattr(mod, n), type)}
    return names


PUBLIC_CLASSES = _public_classes()


class CommandHelp(SphinxDirective):
    """``{command-help} MODULE:FUNCTION``: a literal block of what ``FUNCTION(["--help"])`` prints,
    run when the page is built, so the page shows the options the code has. ``:prog:`` names the
    command in its usage line; ``:args:`` replaces ``--help`` (``workloads --help``); ``:no-args:``
    calls ``FUNCTION()`` and shows what it prints or returns."""

    required_arguments = 1
    option_spec = {"prog": directives.unchanged_required, "args": directives.unchanged_required,
                   "no-args": directives.flag}

    def run(self) -> list[nodes.Node]:
        module, _, name = self.arguments[0].partition(":")
        function = getattr(importlib.import_module(module), name)
        args = [] if "no-args" in self.options else [shlex.split(self.options.get("args", "--help"))]
        out, returned = io.StringIO(), None
        saved_argv0, sys.argv[0] = sys.argv[0], self.options.get("prog", module)
        try:
            with contextlib.redirect_stdout(out):
                returned = function(*args)
        except SystemExit:
            pass  # argparse's --help exits
        finally:
            sys.argv[0] = saved_argv0
        text = (out.getvalue() + (returned if isinstance(returned, str) else "")).rstrip()
        # --help is wrapped to the page (HELP_COLUMNS); what a command prints otherwise is shown as printed
        block = nodes.literal_block(text, text, classes=["command-output" if "no-args" in self.options
                                                         else "command-help"])
        block["language"] = "text"
        return [block]


def setup(app: Sphinx) -> None:
    os.environ["COLUMNS"] = str(HELP_COLUMNS)  # argparse wraps the --help of the commands page at this width
    sys.path.append(str(ROOT / "scripts"))  # scripts/benchmark.py imports its package bench/
    app.connect("autodoc-skip-member", skip_foreign_members)
    app.connect("autodoc-process-bases", public_bases)
    app.add_directive("command-help", CommandHelp)
