"""Time the backends and settings worth trying for an env on this machine; the line of code to use.

    vec-envs-tune CartPole-v1 --num-envs 8
    vec-envs-tune ALE/Pong-v5 --num-envs 8 --seconds 60       # ALEVecEnv's configurations too
    vec-envs-tune my_package.envs:make_env --num-envs 16      # a zero-argument factory of an importable module
    python scripts/tune.py CartPole-v1

Times a few steps of one env (how much of a step is CPU: an env that waits uses little),
then each configuration worth trying for such an env in a fresh process, in alternating
rounds within ``--seconds`` (``vec_envs.tune``), with a progress bar; prints a table,
fastest first, and the line that builds the one to use (the fastest, or one as fast within
the noise that takes less CPU). Exit status 0, 1 when no
configuration ran (or the env cannot be made), 2 for a bad command line, 130 on Ctrl-C.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from vec_envs.cli.args import CommandError, env_factory, parse_args, positive_int, require_extra, run_command

__all__ = ["Args", "main"]


def _seconds(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, received {text!r}")
    return value


@dataclass
class Args:
    """Which backend and settings step an env fastest here: each timed, the line of code to use."""

    env: str = field(metadata={"help": "a registered env id (CartPole-v1, ALE/Pong-v5) or module:factory, a "
                                       "zero-argument function returning a gymnasium env"})
    num_envs: int = field(default=8, metadata={"help": "envs per batch", "type": positive_int})
    seconds: float = field(default=40.0, metadata={"help": "the time budget, about", "type": _seconds})
    rounds: int = field(default=2, metadata={"help": "times each configuration is timed (median)",
                                             "type": positive_int})
    seed: int = field(default=0, metadata={"help": "env i is seeded with seed + i; also seeds the actions"})


def main(argv: Sequence[str] | None = None) -> int:
    """Time the configurations; 0 when one ran, 1 otherwise."""
    args = parse_args(Args, argv, __doc__.split("\n\n")[0])

    def body() -> int:
        from vec_envs.tuning import tune

        require_extra("psutil", "bench", "vec-envs-tune (it counts the CPU of each configuration's processes)")
        env_id = None if ":" in args.env else args.env
        report = tune(env_factory(args.env), args.num_envs, seconds=args.seconds, rounds=args.rounds,
                      seed=args.seed, env_id=env_id, name=args.env)
        print(report)
        if report.best is None:
            raise CommandError("no configuration ran (see the notes in the table)")
        return 0

    return run_command(body, lambda: "every process it started is ended; no table (a configuration was being timed)")


if __name__ == "__main__":
    sys.exit(main())
