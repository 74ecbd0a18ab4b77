"""tile_images: many env frames as one near-square image."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["tile_images"]


def _as_hwc(img: np.ndarray, i: int) -> np.ndarray:
    img = np.asarray(img)
    if img.ndim == 2:
        return img[:, :, None]
    if img.ndim != 3:
        raise ValueError(f"tile_images: frame {i} has shape {img.shape}, expected (H, W, C) or (H, W)")
    return img


def tile_images(imgs: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """Tile N frames of shape (H, W, C) into one (rows*H, cols*W, C) image.

    The grid is near-square (``rows = ceil(sqrt(N))``, ``cols = ceil(N / rows)``), filled
    row by row; empty cells are black. Frames of different sizes are padded (bottom and
    right, black) to the largest height and width.

    Example:
        >>> tile_images([np.zeros((2, 3, 3), np.uint8)] * 3).shape
        (4, 6, 3)
    """
    frames = [_as_hwc(img, i) for i, img in enumerate(imgs)]
    if not frames:
        raise ValueError("tile_images: got no frames (expected at least one (H, W, C) array)")
    channels = {f.shape[2] for f in frames}
    if len(channels) > 1:
        raise ValueError(f"tile_images: frames have different channel counts {sorted(channels)}")
    n = len(frames)
    h = max(f.shape[0] for f in frames)
    w = max(f.shape[1] for f in frames)
    rows = int(math.ceil(math.sqrt(n)))
    cols = int(math.ceil(n / rows))
    img_nhwc = np.zeros((rows * cols, h, w, channels.pop()), dtype=np.result_type(*frames))
    for i, f in enumerate(frames):
        img_nhwc[i, : f.shape[0], : f.shape[1]] = f
    img_HWhwc = img_nhwc.reshape(rows, cols, h, w, -1)
    img_HhWwc = img_HWhwc.transpose(0, 2, 1, 3, 4)
    return img_HhWwc.reshape(rows * h, cols * w, -1)
