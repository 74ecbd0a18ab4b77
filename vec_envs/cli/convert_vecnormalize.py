"""Convert VecNormalize statistics between vec_envs (.npz) and Stable-Baselines3 (pickle).

    vec-envs-convert-vecnormalize to-sb3 vecnormalize.npz vecnormalize.pkl --env-id CartPole-v1
    python scripts/convert_vecnormalize.py to-sb3 vecnormalize.npz vecnormalize.pkl --env-id CartPole-v1
    python scripts/convert_vecnormalize.py from-sb3 vecnormalize.pkl vecnormalize.npz --env-id CartPole-v1

The statistics (running mean, variance and count of the observations, per key for Dict
spaces, and of the discounted return) and the settings (clip_obs, clip_reward, gamma,
epsilon, norm_obs, norm_reward, norm_obs_keys, training) are carried over; both sides
then normalize observations the same way, to float32 precision. ``--env-id`` names the
env the statistics belong to: it gives the observation space and is checked against it.

Reading an SB3 file unpickles it, and unpickling can run any code the file holds:
convert only files you trust (vec_envs' own .npz format holds no pickle). Needs
Stable-Baselines3 (the ``sb3`` extra).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym

from vec_envs import DummyVecEnv
from vec_envs.cli.args import (
    CommandError,
    check_env_id,
    check_readable_file,
    check_writable_file,
    parse_args,
    require_extra,
    run_command,
)
from vec_envs.make_vec_env import make_env
from vec_envs.wrappers import VecNormalize
from vec_envs.wrappers.vec_normalize import VecNormalizeFileError

__all__ = ["Args", "convert", "main", "npz_to_sb3", "sb3_to_npz"]

UNPICKLE_WARNING = ("note: reading {path} unpickles it; a pickle can run any code, so convert only "
                    "SB3 files you trust")
SETTINGS = ("training", "norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon",
            "norm_obs_keys")


def _copy_rms(source: Any, target: Any) -> None:
    """Mean, variance and count from one running-statistics object to the other."""
    target.mean = source.mean.astype("float64").copy()
    target.var = source.var.astype("float64").copy()
    target.count = float(source.count)


def _obs_rms_pairs(source: Any, target: Any) -> list[tuple[Any, Any]]:
    if source.obs_rms is None or not source.norm_obs:
        return []
    if isinstance(source.obs_rms, dict):
        return [(source.obs_rms[key], target.obs_rms[key]) for key in source.obs_rms]
    return [(source.obs_rms, target.obs_rms)]


def npz_to_sb3(npz_path: str, pkl_path: str, env_id: str) -> Any:
    """Write vec_envs statistics ``npz_path`` as SB3's ``pkl_path``; returns SB3's VecNormalize."""
    from stable_baselines3.common.vec_env import DummyVecEnv as SB3DummyVecEnv
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize

    ours = VecNormalize.load(npz_path, DummyVecEnv([lambda: make_env(env_id)]))
    theirs = SB3VecNormalize(SB3DummyVecEnv([lambda: gym.make(env_id)]),
                             **{name: getattr(ours, name) for name in SETTINGS})
    _copy_rms(ours.ret_rms, theirs.ret_rms)
    for source, target in _obs_rms_pairs(ours, theirs):
        _copy_rms(source, target)
    ours.close()
    theirs.save(pkl_path)
    theirs.venv.close()
    return theirs


def sb3_to_npz(pkl_path: str, npz_path: str, env_id: str) -> VecNormalize:
    """Write SB3's statistics ``pkl_path`` (unpickled: trusted files only) as vec_envs' ``npz_path``."""
    from stable_baselines3.common.vec_env import DummyVecEnv as SB3DummyVecEnv
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize

    print(UNPICKLE_WARNING.format(path=pkl_path), file=sys.stderr)
    theirs = SB3VecNormalize.load(pkl_path, SB3DummyVecEnv([lambda: gym.make(env_id)]))
    ours = VecNormalize(DummyVecEnv([lambda: make_env(env_id)]),
                        **{name: getattr(theirs, name) for name in SETTINGS})
    _copy_rms(theirs.ret_rms, ours.ret_rms)
    for source, target in _obs_rms_pairs(theirs, ours):
        _copy_rms(source, target)
    ours.save(npz_path)
    ours.close()
    theirs.venv.close()
    return ours


@dataclass
class Args:
    """Convert VecNormalize statistics between vec_envs (.npz) and Stable-Baselines3 (pickle)."""

    direction: Literal["to-sb3", "from-sb3"] = field(metadata={
        "help": "to-sb3: vec_envs .npz -> SB3 pickle; from-sb3: SB3 pickle -> vec_envs .npz"})
    source: str = field(metadata={"help": "the file to read"})
    target: str = field(metadata={"help": "the file to write"})
    env_id: str = field(metadata={"help": "the registered env the statistics belong to", "option": True})

    def __post_init__(self) -> None:
        if _same_file(self.source, self.target):
            raise ValueError(f"source and target are the same file {self.target!r}: the conversion would "
                             "overwrite what it reads; give another target")
        other = ".npz" if self.direction == "to-sb3" else ".pkl"
        if self.target.lower().endswith(other):
            writes = "an SB3 pickle (name it .pkl)" if self.direction == "to-sb3" else "vec_envs' .npz"
            raise ValueError(f"target {self.target!r} is named as a {other} file, but {self.direction} writes "
                             f"{writes}")


#: how the two formats start: a .npz is a zip archive; SB3's pickles are of protocol 2 or later
ZIP_START, PICKLE_START = b"PK", b"\x80"


def _same_file(a: str, b: str) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # the target does not exist yet
        return False


def _check_source_kind(path: str, direction: str) -> None:
    """Raise ``CommandError`` when the source is not of the format ``direction`` reads."""
    with open(path, "rb") as f:
        start = f.read(2)
    if not start:
        raise CommandError(f"source {path!r} is empty")
    if direction == "from-sb3" and start == ZIP_START:
        raise CommandError(f"source {path!r} is vec_envs' .npz statistics, not an SB3 pickle; to write it in "
                           "SB3's format use to-sb3")
    if direction == "to-sb3" and start[:1] == PICKLE_START:
        raise CommandError(f"source {path!r} is a pickle (SB3's format), not vec_envs' .npz; to read it use "
                           "from-sb3")


def main(argv: list[str] | None = None) -> int:
    """Convert; returns the exit status (2: a bad command line; 1: a missing or bad file, an
    unknown env id, an unwritable target, Stable-Baselines3 not installed; 130: Ctrl-C)."""
    description = f"{Args.__doc__}\n\nReading an SB3 file unpickles it: convert only files you trust."
    args = parse_args(Args, argv, description)
    return run_command(lambda: convert(args))


def convert(args: Args) -> int:
    """Check every file and name before reading any, then convert (raises ``CommandError``)."""
    require_extra("stable_baselines3", "sb3", "Stable-Baselines3")
    check_env_id(args.env_id)
    check_readable_file(args.source, "source")
    check_writable_file(args.target, "target")
    _check_source_kind(args.source, args.direction)
    to_sb3 = args.direction == "to-sb3"
    try:
        (npz_to_sb3 if to_sb3 else sb3_to_npz)(args.source, args.target, args.env_id)
    except OSError as exc:
        raise CommandError(f"{exc.filename or args.target!r}: {exc.strerror or exc}") from None
    except VecNormalizeFileError as exc:
        raise CommandError(str(exc)) from None
    except Exception as exc:  # whatever a bad file makes the reader raise, one line naming it
        kind = "vec_envs VecNormalize statistics (.npz)" if to_sb3 else "an SB3 VecNormalize pickle"
        raise CommandError(f"source {args.source!r} cannot be read as {kind} for {args.env_id}: "
                           f"{type(exc).__name__}: {exc}".rstrip(": ")) from None
    print(f"wrote {args.target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
