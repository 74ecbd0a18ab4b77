"""vec_envs.cli.args: a dataclass becomes a command line, and a bad one is one line and exit 2."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from vec_envs.cli.args import build_parser, in_series_arg, parse_args, parse_subcommands, positive_int


@dataclass
class Args:
    """A command with one field of each kind."""

    path: str = field(metadata={"help": "where to write"})
    env_id: str = field(metadata={"help": "a registered env id", "option": True})
    steps: int = field(default=10, metadata={"help": "steps timed", "type": positive_int})
    rate: float = field(default=0.5, metadata={"help": "a fraction"})
    mode: Literal["fast", "slow"] = field(default="fast", metadata={"help": "how to run"})
    limit: int | None = field(default=None, metadata={"help": "at most this many"})
    pauses: tuple[float, ...] = field(default=(0.0, 1.0), metadata={"help": "pauses in ms"})
    in_series: int | str = field(default="auto", metadata={"help": "envs per worker", "type": in_series_arg})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    quick: bool = field(default=False, metadata={"help": "a short run"})

    def __post_init__(self) -> None:
        if self.rate > 1:
            raise ValueError(f"--rate must be at most 1; received {self.rate}")


def test_defaults_when_only_the_required_arguments_are_given():
    args = parse_args(Args, ["out.csv", "--env-id", "CartPole-v1"])
    assert args == Args("out.csv", "CartPole-v1")


def test_every_kind_of_field_parses():
    args = parse_args(Args, ["out.csv", "--env-id", "Pong", "--steps", "3", "--rate", "0.25", "--mode", "slow",
                             "--limit", "7", "--pauses", "2", "5", "--in-series", "4", "--no-progress", "--quick"])
    assert args == Args("out.csv", "Pong", steps=3, rate=0.25, mode="slow", limit=7, pauses=(2.0, 5.0), in_series=4,
                        progress=False, quick=True)


def test_help_lists_each_field_with_its_help_and_default():
    text = build_parser(Args, "A command.", prog="demo").format_help()
    for line in ("steps timed (default: 10)", "how to run (default: fast)", "pauses in ms (default: 0.0 1.0)",
                 "--progress, --no-progress", "show a progress bar (default: True)", "--mode {fast,slow}"):
        assert line in " ".join(text.split()), line
    assert "at most this many (default" not in text  # None is no default worth showing


@pytest.mark.parametrize("argv, message", [
    (["x", "--env-id", "a", "--steps", "0"], "argument --steps: expected a positive int, received '0'"),
    (["x", "--env-id", "a", "--mode", "medium"], "argument --mode: invalid choice: 'medium'"),
    (["x", "--env-id", "a", "--rate", "2"], "--rate must be at most 1; received 2.0"),
    (["x"], "the following arguments are required: --env-id"),
    (["x", "--env-id", "a", "--in-series", "zero"], "argument --in-series: expected a positive int, received 'zero'"),
], ids=["converter", "choices", "post-init", "required-option", "in-series"])
def test_a_bad_command_line_is_one_line_and_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        parse_args(Args, argv, prog="demo")
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.count("\n") == 1
    assert err.startswith("demo: error: "), err
    assert message in err, err
    assert err.endswith(" (see --help)\n"), err


def test_a_field_without_a_known_type_is_refused_when_the_parser_is_built():
    @dataclass
    class Bad:
        items: list[int] = field(default_factory=list, metadata={"help": "numbers"})

    with pytest.raises(TypeError, match=r"field 'items' has type list\[int\]"):
        build_parser(Bad)


@dataclass
class Run:
    """Run it."""

    steps: int = field(default=10, metadata={"help": "steps"})


@dataclass
class Plot:
    """Plot it."""

    path: str = field(metadata={"help": "where"})


def test_subcommands_each_bind_their_own_dataclass(capsys):
    assert parse_subcommands({"run": Run, "plot": Plot}, ["run", "--steps", "3"]) == ("run", Run(3))
    assert parse_subcommands({"run": Run, "plot": Plot}, ["plot", "a.png"]) == ("plot", Plot("a.png"))
    with pytest.raises(SystemExit) as exited:
        parse_subcommands({"run": Run, "plot": Plot}, ["run", "--path", "a.png"], prog="tool")
    assert exited.value.code == 2
    assert capsys.readouterr().err == "tool: error: unrecognized arguments: --path a.png (see --help)\n"
    with pytest.raises(SystemExit):
        parse_subcommands({"run": Run, "plot": Plot}, ["--help"], prog="tool")
    out = capsys.readouterr().out
    assert "run" in out
    assert "Run it." in out
    assert "Plot it." in out
