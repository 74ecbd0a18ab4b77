"""Types of the C kernel ``_rms_kernel.c`` (RunningMeanStd's one-pass uint8 update)."""
import numpy as np

def update_normalize_u8(batch: np.ndarray, mean: np.ndarray, var: np.ndarray, count: float,
                        out: np.ndarray | None, epsilon: float, clip: float) -> None: ...
