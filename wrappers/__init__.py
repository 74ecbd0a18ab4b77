"""wrappers: VecEnv wrappers (one per module) and the Atari preprocessing."""
from __future__ import annotations

from wrappers.running_mean_std import RunningMeanStd
from wrappers.stacked_observations import StackedObservations
from wrappers.vec_check_nan import VecCheckNan
from wrappers.vec_extract_dict_obs import VecExtractDictObs
from wrappers.vec_frame_stack import VecFrameStack
from wrappers.vec_monitor import VecMonitor
from wrappers.vec_normalize import VecNormalize, VecNormalizeFileError
from wrappers.vec_transpose_image import VecTransposeImage
from wrappers.vec_video_recorder import VecVideoRecorder

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
