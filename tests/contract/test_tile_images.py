from __future__ import annotations

import numpy as np
import pytest

from vec_envs import tile_images


def frames(n, h=2, w=3):
    return [np.full((h, w, 3), i + 1, np.uint8) for i in range(n)]


@pytest.mark.parametrize("n,grid", [(1, (1, 1)), (2, (2, 1)), (3, (2, 2)), (4, (2, 2)), (5, (3, 2)),
                                    (8, (3, 3)), (9, (3, 3)), (10, (4, 3))],
                         ids=lambda v: str(v))
def test_near_square_grid_row_by_row(n, grid):
    tiled = tile_images(frames(n))
    rows, cols = grid
    assert tiled.shape == (rows * 2, cols * 3, 3)
    for i in range(rows * cols):
        r, c = divmod(i, cols)
        cell = tiled[r * 2:(r + 1) * 2, c * 3:(c + 1) * 3]
        assert (cell == (i + 1 if i < n else 0)).all()


def test_different_sizes_are_padded_black_to_the_largest():
    small, big = np.full((2, 2, 3), 9, np.uint8), np.full((4, 5, 3), 7, np.uint8)
    tiled = tile_images([small, big])
    assert tiled.shape == (8, 5, 3)
    assert (tiled[:2, :2] == 9).all()
    assert (tiled[2:4] == 0).all()
    assert (tiled[:4, 2:] == 0).all()
    assert (tiled[4:8] == 7).all()


def test_accepts_an_nhwc_array_and_grayscale_frames():
    assert tile_images(np.zeros((4, 5, 6, 3), np.uint8)).shape == (10, 12, 3)
    assert tile_images([np.zeros((5, 6), np.uint8)] * 2).shape == (10, 6, 1)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="no frames"):
        tile_images([])
    with pytest.raises(ValueError, match=r"frame 1 has shape \(3,\)"):
        tile_images([np.zeros((2, 2, 3)), np.zeros(3)])
    with pytest.raises(ValueError, match="different channel counts"):
        tile_images([np.zeros((2, 2, 3)), np.zeros((2, 2, 1))])
