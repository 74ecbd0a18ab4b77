"""RunningMeanStd: the mean and variance of a stream of arrays, merged batch by batch.

Images are the hot path: a VecNormalize over stacked Atari frames updates and applies
28,224 statistics per step. A uint8 batch is merged from its sums and sums of squares,
which are exact integers. The C kernel ``_rms_kernel.c`` (built by setup.py when a
compiler is there) does that merge and the normalization in one pass, where the NumPy
path below takes several; it matches that path bit for bit.

The NumPy path keeps its per-step arrays in buffers reused from step to step. That
matters beyond allocation: 84*84*4 float64 = 225 KB is just under what glibc hands back
to the system at once, so a few such temporaries per step would make the heap grow and
shrink with page faults on every step.
"""
from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import numpy as np

from vec_envs import kernels

_rms_kernel: ModuleType | None = kernels.load("rms")  # None: not built, or VEC_ENVS_KERNELS=0

__all__ = ["RunningMeanStd", "batch_moments", "uses_exact_uint8_path"]


#: Up to this many uint8 samples, float32 sums and sums of squares are exact (< 2**24).
EXACT_UINT8_BATCH = 256


def uses_exact_uint8_path(batch: np.ndarray) -> bool:
    """Whether a batch takes the exact integer path (uint8 images, at most 256 samples)."""
    return batch.dtype == np.uint8 and 0 < batch.shape[0] <= EXACT_UINT8_BATCH


def batch_moments(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population variance over axis 0, in float64 (two passes)."""
    mean = batch.mean(axis=0, dtype=np.float64)
    deviations = np.subtract(batch, mean, dtype=np.float64)
    return mean, np.einsum("i...,i...->...", deviations, deviations) / batch.shape[0]


class _Buffers:
    """Arrays reused by every update of one RunningMeanStd."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.a = np.empty(shape, np.float64)
        self.b = np.empty(shape, np.float64)
        self.sum = np.empty(shape, np.float32)      # a uint8 batch's exact sums, then
        self.sum_sq = np.empty(shape, np.float32)   # the mean and 1/std of normalization
        self.batch32: np.ndarray | None = None      # a float32 copy of a uint8 batch

    def float32_copy(self, batch: np.ndarray) -> np.ndarray:
        if self.batch32 is None or self.batch32.shape != batch.shape:
            self.batch32 = np.empty(batch.shape, np.float32)
        np.copyto(self.batch32, batch)
        return self.batch32


class RunningMeanStd:
    """Running mean and (population) variance in float64, per element of ``shape``.

    Each batch is merged with the parallel update of Chan et al. (1979), so after any
    sequence of ``update`` calls ``mean`` and ``var`` equal ``np.mean`` / ``np.var``
    over every sample seen (up to rounding). Before the first sample, ``mean`` is 0,
    ``var`` is 1 and ``count`` is 0, so a normalizer built on it starts as the identity.
    ``update`` changes ``mean`` and ``var`` in place: copy them to keep a snapshot.

    A uint8 batch (images) of up to 256 samples is merged from its sums and sums of
    squares, which are integers below 2**24 and so exact in float32.

    Args:
        shape: the shape of one sample.
        epsilon: the count to start from (SB3 starts from 1e-4 samples of mean 0 and
            variance 1; here the default is none, so the first batch sets the statistics).

    Example:
        >>> rms = RunningMeanStd(shape=(2,))
        >>> rms.update(np.array([[0.0, 1.0], [2.0, 3.0]]))
        >>> rms.mean, rms.var, rms.count
        (array([1., 2.]), array([1., 1.]), 2.0)
    """

    def __init__(self, shape: Sequence[int] = (), epsilon: float = 0.0) -> None:
        self.shape = tuple(shape)
        self.mean = np.zeros(self.shape, np.float64)
        self.var = np.ones(self.shape, np.float64)
        self.count = float(epsilon)
        self._buffers: _Buffers | None = None

    # ---------------------------------------------------------------- updates
    def update(self, batch: np.ndarray) -> None:
        """Merge a batch of samples shaped ``(batch_size, *shape)``."""
        batch = self._checked(batch)
        if uses_exact_uint8_path(batch) and _rms_kernel is not None:
            self._run_kernel(_rms_kernel, batch, None)
        elif uses_exact_uint8_path(batch):
            self._merge_exact_sums(self._scratch().float32_copy(batch))
        elif batch.shape[0] > 0 and self.shape == ():
            self._merge_scalars(batch)
        elif batch.shape[0] > 0:
            self.update_from_moments(*batch_moments(batch), batch.shape[0])

    def update_and_normalize(self, batch: np.ndarray, epsilon: float, clip: float) -> np.ndarray:
        """``update(batch)``, then ``normalize(batch, epsilon, clip)``.

        A uint8 batch takes one pass in the C kernel; on the NumPy path its float32 copy
        yields the sums and then becomes the result.
        """
        batch = self._checked(batch)
        if not uses_exact_uint8_path(batch):
            self.update(batch)
            return self.normalize(batch, epsilon, clip)
        if _rms_kernel is not None:
            out = np.empty(batch.shape, np.float32)
            self._run_kernel(_rms_kernel, batch, out, epsilon, clip)
            return out
        out = batch.astype(np.float32)
        self._merge_exact_sums(out)
        return self._normalize_in_place(out, epsilon, clip)

    def _run_kernel(self, kernel: ModuleType, batch: np.ndarray, out: np.ndarray | None, epsilon: float = 0.0,
                    clip: float = 0.0) -> np.ndarray | None:
        """``_merge_exact_sums`` (and ``_normalize_in_place`` into ``out``) in C, in one pass."""
        self._own_statistics()
        kernel.update_normalize_u8(np.ascontiguousarray(batch), self.mean, self.var, self.count, out, epsilon, clip)
        self.count += batch.shape[0]
        return out

    def update_from_moments(self, batch_mean: np.ndarray, batch_var: np.ndarray, batch_count: float) -> None:
        """Merge a batch given by its mean, population variance and size."""
        if batch_count <= 0:
            return
        self._own_statistics()
        total = self.count + batch_count
        w_old, w_new = self.count / total, batch_count / total
        buffers = self._scratch()
        delta = np.subtract(batch_mean, self.mean, out=buffers.a)
        term = buffers.b
        # var <- w_old * (var + w_new * delta²) + w_new * batch_var; mean <- mean + w_new * delta
        self.var += np.multiply(np.multiply(delta, delta, out=term), w_new, out=term)
        self.var *= w_old
        self.var += np.multiply(batch_var, w_new, out=term)
        self.mean += np.multiply(delta, w_new, out=delta)
        self.count = float(total)

    def combine(self, other: RunningMeanStd) -> None:
        """Merge the statistics of ``other`` (of the same shape) into these.

        Example:
            >>> a, b = RunningMeanStd(), RunningMeanStd()
            >>> a.update(np.array([0.0, 2.0])); b.update(np.array([4.0, 6.0]))
            >>> a.combine(b)
            >>> a.mean, a.var, a.count
            (array(3.), array(5.), 4.0)
        """
        if np.shape(other.mean) != self.shape:
            raise ValueError(f"RunningMeanStd.combine(): expected statistics of shape {self.shape}, received "
                             f"shape {np.shape(other.mean)}")
        self.update_from_moments(np.asarray(other.mean, np.float64), np.asarray(other.var, np.float64),
                                 float(other.count))

    def _merge_exact_sums(self, batch32: np.ndarray) -> None:
        """Merge a float32 batch of integers in 0..255 from its exact sums (in float32).

        With ``D = sum - n * mean`` the Chan et al. update reads
        ``mean += D / total`` and
        ``var = (count * var + (sum_sq - sum**2 / n) + count / (n * total) * D**2) / total``.
        """
        self._own_statistics()
        buffers = self._scratch()
        n, count = batch32.shape[0], self.count
        total = count + n
        s = np.add.reduce(batch32, axis=0, out=buffers.sum)
        s_sq = np.einsum("i...,i...->...", batch32, batch32, out=buffers.sum_sq)
        d = np.multiply(self.mean, -n, out=buffers.a)
        d += s                                                         # D
        term = np.multiply(s, s, out=buffers.b, dtype=np.float64)      # sum**2, exact in float64
        term *= -1.0 / n
        term += s_sq                                                   # n * batch variance
        self.var *= count
        self.var += term
        self.var += np.multiply(np.multiply(d, d, out=term), count / (n * total), out=term)
        self.var *= 1.0 / total
        self.mean += np.multiply(d, 1.0 / total, out=d)
        self.count = float(total)

    def _merge_scalars(self, batch: np.ndarray) -> None:
        """``update_from_moments`` for scalar samples (returns), in Python floats."""
        n = batch.shape[0]
        batch_mean = float(np.add.reduce(batch, dtype=np.float64)) / n
        deviations = batch - batch_mean
        batch_var = float(np.dot(deviations, deviations)) / n
        total = self.count + n
        w_old, w_new = self.count / total, n / total
        self._own_statistics()
        delta = batch_mean - float(self.mean)
        self.var[()] = w_old * (float(self.var) + w_new * delta * delta) + w_new * batch_var
        self.mean[()] = float(self.mean) + w_new * delta
        self.count = float(total)

    # ---------------------------------------------------------- normalization
    def normalize(self, x: np.ndarray, epsilon: float, clip: float) -> np.ndarray:
        """``clip((x - mean) / sqrt(var + epsilon), -clip, clip)`` as a new float32 array."""
        return self._normalize_in_place(np.array(x, np.float32), epsilon, clip)

    def _normalize_in_place(self, out: np.ndarray, epsilon: float, clip: float) -> np.ndarray:
        buffers = self._scratch()
        mean, inv_std = buffers.sum, buffers.sum_sq
        np.copyto(inv_std, np.add(self.var, epsilon, out=buffers.a), casting="same_kind")
        np.sqrt(inv_std, out=inv_std)
        np.reciprocal(inv_std, out=inv_std)
        np.copyto(mean, self.mean, casting="same_kind")
        out -= mean
        out *= inv_std
        return np.clip(out, -clip, clip, out=out)

    # ------------------------------------------------------------------ misc
    def copy(self) -> RunningMeanStd:
        """An independent copy."""
        twin = RunningMeanStd(self.shape)
        twin.mean, twin.var, twin.count = self.mean.copy(), self.var.copy(), self.count
        return twin

    def _checked(self, batch: np.ndarray) -> np.ndarray:
        batch = np.asarray(batch)
        if batch.shape[1:] != self.shape:
            raise ValueError(f"RunningMeanStd.update(): expected a batch shaped (batch_size, *{self.shape}), "
                             f"received shape {batch.shape}")
        return batch

    def _scratch(self) -> _Buffers:
        if self._buffers is None:
            self._buffers = _Buffers(self.shape)
        return self._buffers

    def _own_statistics(self) -> None:
        """Make ``mean`` / ``var`` writable float64 arrays of their own (they may have been assigned)."""
        for name in ("mean", "var"):
            value = getattr(self, name)
            if not (isinstance(value, np.ndarray) and value.dtype == np.float64 and value.shape == self.shape
                    and value.flags.writeable and value.flags.c_contiguous and value.base is None):
                setattr(self, name, np.array(value, np.float64, order="C").reshape(self.shape))

    def __repr__(self) -> str:
        return f"RunningMeanStd(shape={self.shape}, count={self.count:g})"
