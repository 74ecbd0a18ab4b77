"""Convert VecNormalize statistics between vec_envs (.npz) and Stable-Baselines3 (pickle).

    python scripts/convert_vecnormalize.py to-sb3 vecnormalize.npz vecnormalize.pkl --env-id CartPole-v1
    python scripts/convert_vecnormalize.py from-sb3 vecnormalize.pkl vecnormalize.npz --env-id CartPole-v1

The statistics (running mean, variance and count of the observations, per key for Dict
spaces, and of the discounted return) and the settings (clip_obs, clip_reward, gamma,
epsilon, norm_obs, norm_reward, norm_obs_keys, training) are carried over; both sides
then normalize observations the same way, to float32 precision. ``--env-id`` names the
env the statistics belong to: it gives the observation space and is checked against it.

Reading an SB3 file unpickles it, and unpickling can run any code the file holds:
convert only files you trust (vec_envs' own .npz format holds no pickle). Needs
Stable-Baselines3: pip install -e ".[sb3]".
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import gymnasium as gym  # noqa: E402

from vec_envs import DummyVecEnv  # noqa: E402
from vec_envs.make_vec_env import make_env  # noqa: E402
from wrappers import VecNormalize  # noqa: E402

__all__ = ["npz_to_sb3", "sb3_to_npz"]

NO_SB3 = 'convert_vecnormalize.py needs Stable-Baselines3: pip install -e ".[sb3]"'
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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Reading an SB3 file unpickles it: convert only files you trust.")
    parser.add_argument("direction", choices=("to-sb3", "from-sb3"),
                        help="to-sb3: vec_envs .npz -> SB3 pickle; from-sb3: SB3 pickle -> vec_envs .npz")
    parser.add_argument("source", help="the file to read")
    parser.add_argument("target", help="the file to write")
    parser.add_argument("--env-id", required=True, help="the registered env the statistics belong to")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        sys.exit(NO_SB3)
    convert = npz_to_sb3 if args.direction == "to-sb3" else sb3_to_npz
    convert(args.source, args.target, args.env_id)
    print(f"wrote {args.target}")


if __name__ == "__main__":
    main()
