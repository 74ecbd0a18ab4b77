"""RunningMeanStd: the mean and variance of a stream of arrays, merged batch by batch."""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["RunningMeanStd", "batch_moments", "uses_exact_uint8_path"]


#: Up to this many uint8 samples, their sum and sum of squares are exact in float32 (< 2**24).
EXACT_UINT8_BATCH = 256


def uses_exact_uint8_path(batch: np.ndarray) -> bool:
    """Whether ``batch_moments`` takes the exact uint8 path for ``batch``."""
    return batch.dtype == np.uint8 and batch.shape[0] <= EXACT_UINT8_BATCH


def batch_moments(batch: np.ndarray, scratch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population variance over axis 0, in float64.

    Two-pass in float64 in general. A uint8 batch (images) of up to 256 samples takes an
    exact, faster path: its sums and sums of squares are integers below 2**24, computed
    without rounding in float32, and ``(n * sum_sq - sum**2) / n**2`` is then exact in
    float64 up to the final division. ``scratch``, a float32 array shaped like the batch,
    is reused for that path instead of allocating a batch-sized array on every call.
    """
    n = batch.shape[0]
    if uses_exact_uint8_path(batch):
        if scratch is None:
            scratch = np.empty(batch.shape, np.float32)
        x = scratch
        np.copyto(x, batch)
        total = x.sum(axis=0, dtype=np.float32).astype(np.float64)
        np.square(x, out=x)
        total_sq = x.sum(axis=0, dtype=np.float32).astype(np.float64)
        return total / n, (n * total_sq - total * total) / (n * n)
    mean = batch.mean(axis=0, dtype=np.float64)
    deviations = np.subtract(batch, mean, dtype=np.float64)
    return mean, np.einsum("i...,i...->...", deviations, deviations) / n


class RunningMeanStd:
    """Running mean and (population) variance in float64, per element of ``shape``.

    Each batch is merged with the parallel update of Chan et al. (1979), so after any
    sequence of ``update`` calls ``mean`` and ``var`` equal ``np.mean`` / ``np.var``
    over every sample seen (up to rounding). Before the first sample, ``mean`` is 0,
    ``var`` is 1 and ``count`` is 0, so a normalizer built on it starts as the identity.

    Args:
        shape: the shape of one sample.

    Example:
        >>> rms = RunningMeanStd(shape=(2,))
        >>> rms.update(np.array([[0.0, 1.0], [2.0, 3.0]]))
        >>> rms.mean, rms.var, rms.count
        (array([1., 2.]), array([1., 1.]), 2.0)
    """

    def __init__(self, shape: Sequence[int] = ()) -> None:
        self.shape = tuple(shape)
        self.mean = np.zeros(self.shape, np.float64)
        self.var = np.ones(self.shape, np.float64)
        self.count = 0.0
        self._scratch: np.ndarray | None = None  # reused by the uint8 path of batch_moments

    def update(self, batch: np.ndarray) -> None:
        """Merge a batch of samples shaped ``(batch_size, *shape)``."""
        batch = np.asarray(batch)
        if batch.shape[1:] != self.shape:
            raise ValueError(f"RunningMeanStd.update(): expected a batch shaped (batch_size, *{self.shape}), "
                             f"received shape {batch.shape}")
        if batch.shape[0] == 0:
            return
        if uses_exact_uint8_path(batch) and (self._scratch is None or self._scratch.shape != batch.shape):
            self._scratch = np.empty(batch.shape, np.float32)
        self.update_from_moments(*batch_moments(batch, self._scratch), batch.shape[0])

    def update_from_moments(self, batch_mean: np.ndarray, batch_var: np.ndarray, batch_count: float) -> None:
        """Merge a batch given by its mean, population variance and size."""
        if batch_count <= 0:
            return
        total = self.count + batch_count
        w_old, w_new = self.count / total, batch_count / total
        delta = batch_mean - self.mean
        # = (var * count + batch_var * batch_count + delta² * count * batch_count / total) / total
        self.var = np.asarray(w_old * self.var + w_new * batch_var + (w_old * w_new) * (delta * delta))
        self.mean = np.asarray(self.mean + w_new * delta)
        self.count = float(total)

    def copy(self) -> "RunningMeanStd":
        """An independent copy."""
        twin = RunningMeanStd(self.shape)
        twin.mean, twin.var, twin.count = self.mean.copy(), self.var.copy(), self.count
        return twin

    def __repr__(self) -> str:
        return f"RunningMeanStd(shape={self.shape}, count={self.count:g})"
