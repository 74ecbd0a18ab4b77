"""Command lines from dataclasses: one option per field, its help from the field.

As in cleanrl's scripts, a command declares an ``Args`` dataclass with a line of help per
field (``field(default=..., metadata={"help": ...})``); ``parse_args`` turns it into a
command line and returns an instance. How a field becomes an option:

- ``bool``: ``--flag`` / ``--no-flag``.
- ``int``, ``float``, ``str``: ``--name VALUE`` converted to that type; ``X | None``
  the same, ``None`` when the option is not given.
- ``Literal["a", "b"]`` (or ``metadata={"choices": ...}``): one of those values.
- ``tuple[X, ...]``: one or more values.
- ``metadata={"type": fn}``: ``fn(text)`` converts the value (raise
  ``argparse.ArgumentTypeError`` for a bad one).
- A field without a default is a positional argument, or a required ``--name`` with
  ``metadata={"option": True}``.

``--help`` lists every option with its help and its default. An error is one line on
stderr, ``PROG: error: MESSAGE (see --help)``, and exit status 2; so is a ``ValueError``
that the dataclass raises (checks across fields belong in its ``__post_init__``).

``run_command`` runs a command's body with the other exit statuses every command shares:
a ``CommandError`` (a missing or bad file, an unknown env id, an unwritable path, a
missing extra) is one line on stderr, ``PROG: error: MESSAGE``, and exit status 1; Ctrl-C
is one line, ``PROG: interrupted`` and what was done so far, and exit status 130.

Example:
    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Args:
    ...     steps: int = field(default=10, metadata={"help": "steps timed"})
    ...     mode: Literal["fast", "slow"] = field(default="fast", metadata={"help": "how"})
    ...     pauses: tuple[float, ...] = field(default=(0.0, 1.0), metadata={"help": "pauses in ms"})
    ...     limit: int | None = field(default=None, metadata={"help": "at most this many"})
    ...     quick: bool = field(default=False, metadata={"help": "a short run"})
    >>> parse_args(Args, ["--steps", "3", "--pauses", "2", "5", "--quick", "--mode", "slow"])
    Args(steps=3, mode='slow', pauses=(2.0, 5.0), limit=None, quick=True)
    >>> "steps timed (default: 10)" in build_parser(Args, prog="demo").format_help()
    True
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
import os
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar, Union

__all__ = ["parse_args", "build_parser", "parse_subcommands", "OneLineParser", "EXIT_OK", "EXIT_FAILED",
           "EXIT_USAGE", "EXIT_INTERRUPTED", "positive_int", "non_negative_int", "positive_float",
           "non_negative_float", "unit_float", "in_series_arg", "CommandError", "run_command",
           "require_extra", "check_env_id", "env_factory", "check_readable_file", "check_writable_file",
           "check_writable_dir"]

T = TypeVar("T")
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_SCALARS: dict[Any, Callable[[str], Any]] = {int: int, float: float, str: str}


def positive_int(text: str) -> int:
    """``text`` as an int >= 1 (a ``metadata={"type": ...}`` converter).

    Example:
        >>> positive_int("3")
        3
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive int, received {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """``text`` as an int >= 0 (a seed).

    Example:
        >>> non_negative_int("0")
        0
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, received {text!r}")
    return value


def _real(text: str, expected: str, inside: Callable[[float], bool]) -> float:
    """``text`` as a finite float for which ``inside`` holds, else an ArgumentTypeError."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and inside(value)):
        raise argparse.ArgumentTypeError(f"expected {expected}, received {text!r}")
    return value


def positive_float(text: str) -> float:
    """``text`` as a finite float > 0 (a learning rate, a clip range).

    Example:
        >>> positive_float("3e-4")
        0.0003
    """
    return _real(text, "a finite number > 0", lambda v: v > 0)


def non_negative_float(text: str) -> float:
    """``text`` as a finite float >= 0 (a coefficient that may be off)."""
    return _real(text, "a finite number >= 0", lambda v: v >= 0)


def unit_float(text: str) -> float:
    """``text`` as a float from 0 to 1 (a discount, a GAE lambda).

    Example:
        >>> unit_float("0.99")
        0.99
    """
    return _real(text, "a number from 0 to 1", lambda v: 0 <= v <= 1)


def in_series_arg(text: str) -> int | str:
    """``"auto"`` or a positive int: envs per worker process (a ``metadata={"type": ...}`` converter)."""
    return "auto" if text == "auto" else positive_int(text)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


class _DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """Appends ``(default: ...)`` to the help of every option whose default is not None; keeps the
    description's lines, each wrapped at the terminal's width with its own indent."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            lead = indent + line[:len(line) - len(line.lstrip())]
            lines.append(textwrap.fill(line.strip(), width, initial_indent=lead, subsequent_indent=lead)
                         if line.strip() else "")
        return "\n".join(lines)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, argparse.SUPPRESS) or action.required or not action.option_strings:
            return text
        default = " ".join(map(str, action.default)) if isinstance(action.default, tuple) else action.default
        return f"{text} (default: {str(default).replace('%', '%%')})"


def _unwrap_optional(tp: Any) -> Any:
    """``X`` for ``X | None`` (or ``Optional[X]``); anything else as it is."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return tp


def _options(f: dataclasses.Field[Any], tp: Any) -> dict[str, Any]:
    """``add_argument`` keywords for the field ``f`` of type ``tp`` (flags aside)."""
    meta = f.metadata
    kw: dict[str, Any] = {"help": meta.get("help", "")}
    if "metavar" in meta:
        kw["metavar"] = meta["metavar"]
    tp = _unwrap_optional(tp)
    if tp is bool:
        return {**kw, "action": argparse.BooleanOptionalAction}
    if typing.get_origin(tp) is tuple:
        kw["nargs"] = "+"
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) is Literal:
        kw["choices"] = typing.get_args(tp)
        tp = type(kw["choices"][0])
    if "choices" in meta:
        kw["choices"] = tuple(meta["choices"])
    convert = meta.get("type") or _SCALARS.get(tp)
    if convert is None:
        raise TypeError(f"parse_args(): field {f.name!r} has type {tp!r}; expected bool, int, float, str, "
                        f"Literal[...], tuple[X, ...] or X | None of those, or metadata={{'type': converter}}")
    return {**kw, "type": convert}


def build_parser(cls: type[Any], description: str | None = None, prog: str | None = None,
                 parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """A parser with one argument per field of the dataclass ``cls`` (added to ``parser`` if given).

    Raises:
        TypeError: ``cls`` is not a dataclass, or a field's type has no conversion.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"parse_args(): expected a dataclass, received {cls!r}")
    if parser is None:
        parser = OneLineParser(prog=prog, description=description, formatter_class=_DefaultsFormatter)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kw = _options(f, hints[f.name])
        factory: Any = f.default_factory
        has_default = f.default is not dataclasses.MISSING or factory is not dataclasses.MISSING
        if not has_default and not f.metadata.get("option"):
            kw.pop("action", None)
            parser.add_argument(f.name, **kw)
            continue
        flag = "--" + f.name.replace("_", "-")
        if has_default:
            kw["default"] = f.default if f.default is not dataclasses.MISSING else factory()
        else:
            kw["required"] = True
        parser.add_argument(flag, dest=f.name, **kw)
    return parser


def _instance(cls: Callable[..., T], namespace: argparse.Namespace, parser: argparse.ArgumentParser) -> T:
    """``cls`` of the parsed values; a ValueError it raises is a usage error of ``parser``."""
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in vars(namespace).items()}
    try:
        return cls(**values)
    except ValueError as exc:
        parser.error(str(exc))


def parse_args(cls: type[T], argv: Sequence[str] | None = None, description: str | None = None, *,
               prog: str | None = None) -> T:
    """An instance of the dataclass ``cls`` from the command line ``argv``.

    Args:
        cls: the ``Args`` dataclass; each field's ``metadata["help"]`` is its help line.
        argv: the arguments (None: ``sys.argv[1:]``).
        description: the ``--help`` heading.
        prog: the program name in help and errors (default: from ``sys.argv[0]``).

    Example:
        >>> from dataclasses import dataclass, field
        >>> @dataclass
        ... class Args:
        ...     n: int = field(default=1, metadata={"help": "how many"})
        >>> parse_args(Args, ["--n", "4"]).n
        4
    """
    parser = build_parser(cls, description, prog)
    return _instance(cls, parser.parse_args(argv), parser)


def parse_subcommands(commands: Mapping[str, type[Any]], argv: Sequence[str] | None = None,
                      description: str | None = None, prog: str | None = None) -> tuple[str, Any]:
    """``(name, args)``: the subcommand named first in ``argv`` and its dataclass instance.

    Each subcommand's help is the first line of its dataclass's docstring.

    Example:
        >>> from dataclasses import dataclass, field
        >>> @dataclass
        ... class Run:
        ...     '''Run it.'''
        ...     steps: int = field(default=10, metadata={"help": "steps"})
        >>> @dataclass
        ... class Plot:
        ...     '''Plot it.'''
        ...     path: str = field(metadata={"help": "where"})
        >>> parse_subcommands({"run": Run, "plot": Plot}, ["plot", "out.png"])
        ('plot', Plot(path='out.png'))
    """
    parser = OneLineParser(prog=prog, description=description, formatter_class=_DefaultsFormatter)
    subparsers = parser.add_subparsers(dest="_command", metavar="COMMAND", required=True)
    subs = {}
    for name, cls in commands.items():
        doc = (cls.__doc__ or "").strip()
        subs[name] = subparsers.add_parser(name, help=doc.splitlines()[0] if doc else None, description=doc or None,
                                           formatter_class=_DefaultsFormatter)
        build_parser(cls, parser=subs[name])
    namespace = parser.parse_args(argv)
    name = namespace._command
    del namespace._command
    return name, _instance(commands[name], namespace, subs[name])


class CommandError(Exception):
    """A failure the user can fix that is no bad command line (a missing or bad file, an
    unknown env id, an unwritable path, a missing extra): one line on stderr, exit status 1."""


def prog_name() -> str:
    """The command's name as argparse writes it: ``convert_vecnormalize.py`` or ``vec-envs-...``."""
    return os.path.basename(sys.argv[0]) or "vec_envs"


def run_command(body: Callable[[], int], done_so_far: Callable[[], str] | None = None) -> int:
    """``body()``'s exit status; a ``CommandError`` is one line and status 1, Ctrl-C one line
    (with ``done_so_far()``, if given) and status 130.

    Example:
        >>> def body() -> int:
        ...     raise CommandError("model.zip: no such file")
        >>> run_command(body)
        1
    """
    try:
        return body()
    except CommandError as exc:
        print(f"{prog_name()}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        so_far = f": {done_so_far()}" if done_so_far is not None else ""
        print(f"{prog_name()}: interrupted{so_far}", file=sys.stderr)
        return EXIT_INTERRUPTED


def require_extra(module: str, extra: str, what: str) -> None:
    """Raise ``CommandError`` naming the pip command when ``module`` (of the extra ``extra``) is missing."""
    from vec_envs.extras import install_hint

    try:
        importlib.import_module(module)
    except ImportError:
        raise CommandError(f"needs {what}: {install_hint(extra)}") from None


def check_env_id(env_id: str, option: str = "--env-id") -> None:
    """Raise ``CommandError`` when gymnasium has no env registered as ``env_id``."""
    import gymnasium as gym

    try:
        gym.spec(env_id)
    except gym.error.Error as exc:
        raise CommandError(f"{option} {env_id!r}: {exc} (gymnasium.pprint_registry() lists the ids)") from None


def env_factory(spec: str, option: str = "ENV") -> Callable[[], Any]:
    """The env factory ``spec`` names: a registered env id (``CartPole-v1``, ``ALE/Pong-v5``) or
    ``module:factory`` (a zero-argument callable of an importable module; the folder the
    command runs in is searched first, as ``python -m`` does).

    Raises:
        CommandError: an unknown id, a module that does not import, a name it does not have.

    Example:
        >>> env_factory("CartPole-v1")().spec.id
        'CartPole-v1'
        >>> env_factory("gymnasium.envs.classic_control:CartPoleEnv")().__class__.__name__
        'CartPoleEnv'
    """
    import functools

    from vec_envs.make_vec_env import make_env

    if ":" not in spec:
        if spec.startswith("ALE/"):
            require_extra("ale_py", "atari", f"{option} {spec!r}")
            from vec_envs.ale.games import import_ale

            import_ale()
        check_env_id(spec, option)
        return functools.partial(make_env, spec)
    module_name, _, name = spec.partition(":")
    if os.getcwd() not in sys.path:  # the user's module, beside where the command runs
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"{option} {spec!r}: module {module_name!r} does not import ({exc})") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise CommandError(f"{option} {spec!r}: module {module_name!r} has no callable {name!r}; expected "
                           f"module:factory, a zero-argument function that returns an env")
    return factory


def check_readable_file(path: str, what: str) -> None:
    """Raise ``CommandError`` when ``path`` is no file this process can read."""
    if not os.path.isfile(path):
        if os.path.isdir(path):
            reason = "is a directory"
        elif os.path.exists(path):
            reason = "is not a regular file (a device, a pipe or a socket)"
        else:
            reason = "no such file"
        raise CommandError(f"{what} {path!r}: {reason}")
    if not os.access(path, os.R_OK):
        raise CommandError(f"{what} {path!r}: not readable (permission denied)")


def check_writable_file(path: str, what: str) -> None:
    """Raise ``CommandError`` when ``path`` cannot be written (a directory, or in a folder
    that is missing or not writable)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CommandError(f"{what} {path!r} is a directory; expected a file name")
    if not os.path.isdir(folder):
        raise CommandError(f"{what} {path!r}: its folder {folder!r} does not exist; create it first")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CommandError(f"{what} {path!r}: not writable (permission denied)")


def check_writable_dir(path: str, what: str) -> None:
    """Create the folder ``path`` if needed; raise ``CommandError`` when no file can be written there."""
    import tempfile

    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise CommandError(f"{what} {path!r} is not a writable folder ({exc.strerror or exc})") from None
