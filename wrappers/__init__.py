"""wrappers: VecEnv wrappers (one per module) and the Atari preprocessing."""
from __future__ import annotations

from vec_envs.wrappers.running_mean_std import RunningMeanStd
from vec_envs.wrappers.stacked_observations import StackedObservations
from vec_envs.wrappers.vec_check_nan import VecCheckNan
from vec_envs.wrappers.vec_extract_dict_obs import VecExtractDictObs
from vec_envs.wrappers.vec_frame_stack import VecFrameStack
from vec_envs.wrappers.vec_monitor import VecMonitor
from vec_envs.wrappers.vec_normalize import VecNormalize, VecNormalizeFileError
from vec_envs.wrappers.vec_transpose_image import VecTransposeImage
from vec_envs.wrappers.vec_video_recorder import VecVideoRecorder

__all__: list[str] = [
    "VecNormalize",
    "VecNormalizeFileError",
    "VecFrameStack",
    "VecMonitor",
    "VecTransposeImage",
    "VecVideoRecorder",
    "VecCheckNan",
    "VecExtractDictObs",
    "RunningMeanStd",
    "StackedObservations",
]
