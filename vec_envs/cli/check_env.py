"""Check an env for what would go wrong once it is vectorized, each finding with what to change.

    vec-envs-check CartPole-v1
    vec-envs-check ALE/Pong-v5 --steps 200
    vec-envs-check my_package.envs:make_env          # a zero-argument factory of an importable module
    python scripts/check_env.py CartPole-v1

Runs the env briefly, alone and through DummyVecEnv, SubprocVecEnv (spawned workers,
shared memory and pipes), the C kernels on and off and each autoreset mode, and prints
one table (``vec_envs.check_env``). A factory that returns a PettingZoo ParallelEnv is
checked through the multi-agent rows. Exit status 0 when nothing was found, 1 when
something was (or the env cannot be made), 2 for a bad command line, 130 on Ctrl-C.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from vec_envs.cli.args import env_factory, parse_args, positive_int, run_command

__all__ = ["Args", "main"]


@dataclass
class Args:
    """What an env would do wrong in a VecEnv: its spaces, determinism, infos, autoreset, backends."""

    env: str = field(metadata={"help": "a registered env id (CartPole-v1, ALE/Pong-v5) or module:factory, a "
                                       "zero-argument function returning a gymnasium env or a PettingZoo ParallelEnv"})
    num_envs: int = field(default=2, metadata={"help": "envs per batch", "type": positive_int})
    steps: int = field(default=100, metadata={"help": "steps of each env in each run", "type": positive_int})
    seed: int = field(default=0, metadata={"help": "env i is reset with seed + i; also seeds the actions"})

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ValueError(f"--seed must be an int >= 0, received {self.seed}")


def main(argv: Sequence[str] | None = None) -> int:
    """Check the env; 0 when nothing was found, 1 otherwise."""
    args = parse_args(Args, argv, __doc__.split("\n\n")[0])

    def body() -> int:
        from vec_envs.checking import check_env

        report = check_env(env_factory(args.env), num_envs=args.num_envs, steps=args.steps, seed=args.seed,
                           name=args.env)
        print(report)
        return report.exit_status

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
