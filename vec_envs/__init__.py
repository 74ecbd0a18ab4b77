"""vec_envs: fast, hard-to-break vectorized environments, baselines-style."""
from __future__ import annotations

from vec_envs.ale.ale_vec_env import ALEVecEnv
from vec_envs.checking import check_env
from vec_envs.dummy_vec_env import DummyVecEnv
from vec_envs.make_vec_env import make_vec_env
from vec_envs.ray.ray_vec_env import RayVecEnv
from vec_envs.rendering.tile_images import tile_images
from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.mpi_env_vars import clear_mpi_env_vars
from vec_envs.subproc.subproc_vec_env import SubprocVecEnv
from vec_envs.tuning import tune
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvObservationWrapper, VecEnvWrapper

__all__ = [
    "VecEnvBase",
    "DummyVecEnv",
    "SubprocVecEnv",
    "RayVecEnv",
    "ALEVecEnv",
    "VecEnvWrapper",
    "VecEnvObservationWrapper",
    "CloudpickleWrapper",
    "tile_images",
    "make_vec_env",
    "clear_mpi_env_vars",
    "check_env",
    "tune",
]
__version__ = "0.1.0"
