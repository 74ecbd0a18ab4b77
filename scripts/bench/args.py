"""Command lines from dataclasses: one ``--flag`` per field, its help from the field.

As in cleanrl's scripts, each script declares an ``Args`` dataclass with a line of help
per field (``field(metadata={"help": ...})``); ``parse`` turns it into a command line.
A boolean that is off by default becomes ``--flag``, one that is on ``--no-flag`` too;
tuples take any number of values.

Example:
    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Args:
    ...     steps: int = field(default=10, metadata={"help": "steps timed"})
    ...     pauses: tuple = field(default=(0.0, 1.0), metadata={"help": "pauses in ms", "type": float})
    ...     quick: bool = field(default=False, metadata={"help": "a short run"})
    >>> parse(Args, ["--steps", "3", "--pauses", "2", "5", "--quick"], "demo")
    Args(steps=3, pauses=(2.0, 5.0), quick=True)
"""
from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import MISSING, fields
from typing import Any, TypeVar

__all__ = ["parse"]

T = TypeVar("T")


def _add(parser: argparse.ArgumentParser, name: str, default: Any, metadata: Any) -> None:
    """One ``--flag`` for the field ``name``."""
    flag, help_text = "--" + name.replace("_", "-"), metadata["help"]
    if default is False:
        parser.add_argument(flag, action="store_true", help=help_text)
        return
    if default is True:
        parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=True, help=help_text)
        return
    if default != "":
        help_text += f" (default: {' '.join(map(str, default)) if isinstance(default, tuple) else default})"
    if isinstance(default, tuple):
        parser.add_argument(flag, nargs="*", type=metadata["type"], default=default, help=help_text)
    else:
        parser.add_argument(flag, type=type(default), default=default, help=help_text)


def parse(cls: Callable[..., T], argv: Sequence[str] | None, description: str,
          check: Callable[[T], str | None] | None = None) -> T:
    """``cls`` (a dataclass with a default for every field) from the command line ``argv``.

    Args:
        cls: the ``Args`` dataclass.
        argv: the arguments (None: ``sys.argv[1:]``).
        description: the ``--help`` heading.
        check: returns what is wrong with the parsed arguments, or None; a problem exits
            with status 2 and one line on stderr, as argparse does for a bad flag.
    """
    parser = argparse.ArgumentParser(description=description)
    for f in fields(cls):  # type: ignore[arg-type]
        if f.default is MISSING:
            raise TypeError(f"parse(): {cls.__name__}.{f.name} needs a default (its value without the flag)")
        _add(parser, f.name, f.default, f.metadata)
    values = vars(parser.parse_args(argv))
    args = cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
    problem = check(args) if check else None
    if problem:
        parser.error(problem)
    return args
