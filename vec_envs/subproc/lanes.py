"""The lanes: the parent asks envs to step and the workers answer, through shared memory.

The parent runs ``ParentLanes``; each worker, and the parent for its own slice, runs
``WorkerLanes``. The control block (``words`` int64 after the batch buffers and actions) has:

- two lanes per env: ``requested[i]``, env i's last request number, and
  ``answered[i] = number << 1 | has_message``, its last answer;
- a row per worker (``W_SLEEPING``: asleep on its bell; ``W_ANSWERS``: its answer count;
  ``W_SCHEMA``: 1 once the parent knows its info schema), then the parent's row
  (``P_SLEEPING``: its sleep's number, 0 awake; ``P_TARGET``: the answer total that ends it;
  ``P_RINGS``: how often it rang the shared rings),
  each ``ROW_WORDS`` words on its own cache line;
- ``INFO_WORDS`` info columns per env: the number of the request answered, then the values.

Parent: write the actions, give the envs asked a new request number (above any used),
fence, and ring the sleeping workers (``doorbell.py``). Worker: take the new requests as runs
of consecutive envs, oldest first (``take_runs``), step each run, and answer each env once
done; with the message bit set, a message follows through the pipe (``child.py``). Parent:
env i answered when ``answered[i] >> 1`` is the number it waits for (``scan``). An info of
fixed schema (numbers under the same keys, as ALE's ``{"lives": 3}``) goes in the info
columns once the parent has learnt the schema (``propose``, ``answer_in_columns`` or the C step loop's
answerer, ``column_infos``); the parent's own slice hands any info over as it is (``ParentLanes.local``).

Ordering: x86-64 keeps stores in order as seen from other cores, so a request means its
action is there, and an answer means its rows are. Where a side stores, then loads what the
other stores (sleeping against requests, answers against the target), a full fence stands
between (``full_fence``). Other CPUs use the pipes (``supported``).

Example:
    >>> block = np.zeros(words(3, workers=1), np.int64)
    >>> parent, worker = ParentLanes(block, 3, 1), WorkerLanes(block, 3, 1, w=0, first=0, stop=3)
    >>> parent.request(np.array([2, 0]))             # after writing their actions: 2 first
    1
    >>> worker.take_runs()                           # (number, start, stop), the oldest first
    [(1, 2, 3), (2, 0, 1)]
    >>> worker.answer(0, has_message=False); worker.answer(2, has_message=True)
    >>> status, ready, talking = np.array([1, 0, 1], np.int8), [], []
    >>> parent.scan(status, ready, talking), ready, talking
    (2, [0, 2], [2])
    >>> parent.learn(0, worker.propose({"lives": 3})); _ = parent.request(slice(None)); _ = worker.take_runs()
    >>> infos, ids = [{}, {}, {}], np.arange(3)
    >>> worker.answer_in_columns(1, {"lives": 2}), parent.column_infos(None, ids * 0, infos), infos
    (True, None, [{}, {'lives': 2}, {}])
"""
from __future__ import annotations

import contextlib
import functools
import os
import platform
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from vec_envs import kernels
from vec_envs.env_states import ANSWERED, IN_FLIGHT

__all__ = ["ParentLanes", "Schema", "WorkerLanes", "full_fence", "info_schema", "int_words", "supported", "words"]

_kernel = kernels.load("lanes")
ROW_WORDS = 8  # int64 per row: one cache line
W_SLEEPING, W_ANSWERS, W_SCHEMA = 0, 1, 2  # a worker's row
INFO_WORDS = 8  # an env's info columns: the request answered, then up to 7 values
P_SLEEPING, P_TARGET, P_RINGS = 0, 1, 2  # the parent's row
ONE = (1).to_bytes(8, "little")  # what an eventfd write takes (a pipe takes it as well)


def supported() -> bool:
    """Only where the CPU keeps stores in order across cores (x86-64)."""
    return platform.machine().lower() in ("x86_64", "amd64")


def words(n: int, workers: int) -> int:
    """How many int64 the control block of ``n`` envs and ``workers`` workers takes."""
    return 2 * -(-n // ROW_WORDS) * ROW_WORDS + (workers + 1) * ROW_WORDS + n * INFO_WORDS


def _layout(block: np.ndarray, n: int, workers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``requested``, ``answered`` (each on its own cache lines), the rows and the info columns."""
    lanes = -(-n // ROW_WORDS) * ROW_WORDS
    end = 2 * lanes + (workers + 1) * ROW_WORDS
    rows = block[2 * lanes:end].reshape(workers + 1, ROW_WORDS)
    return block[:n], block[lanes:lanes + n], rows, block[end:end + n * INFO_WORDS].reshape(n, INFO_WORDS)


#: an info schema: its keys, each with the type of its value
Schema = tuple[tuple[str, type], ...]
_INTS = (bool, int, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32)
_FLOATS = (float, np.float16, np.float32, np.float64)


def info_schema(info: dict[str, Any]) -> Schema | None:
    """The schema of ``info`` if it can travel in the info columns (else None).

    Example:
        >>> info_schema({"lives": 3, "x": np.float32(0.5)}), info_schema({"frame": np.zeros(2)})
        ((('lives', <class 'int'>), ('x', <class 'numpy.float32'>)), None)
    """
    if not 0 < len(info) < INFO_WORDS:
        return None
    schema = tuple((key, type(value)) for key, value in info.items())
    return schema if all(type(key) is str and kind in _INTS + _FLOATS for key, kind in schema) else None


def _columns(columns: np.ndarray) -> tuple[memoryview, Any]:
    """The info columns as int64 and as float64 words (one memory)."""
    return int_words(columns), columns.data.cast("B").cast("d")


def int_words(array: np.ndarray) -> memoryview:
    """Plain int reads and writes of an int64 array (cheaper than NumPy scalars)."""
    return array.data.cast("B").cast("q")


_fence_lock = threading.Lock()  # without the kernel, a lock's locked instruction is the fence


def _lock_fence() -> None:
    with _fence_lock:
        pass


def _renew_fence() -> None:  # in a forked child: another thread may have held the lock
    global _fence_lock
    _fence_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_fence)
#: every store before a call is seen by other processes before any load after it
full_fence: Callable[[], None] = _lock_fence if _kernel is None else _kernel.fence


class ParentLanes:
    """The parent's side; ``wake(workers)`` wakes sleeping workers (bells, or pipe messages),
    ``wake_all(parent_row)`` every sleeping worker at once (the shared rings; None: ``wake``)."""

    def __init__(self, block: np.ndarray, n: int, workers: int, wake: Callable[[list[int]], None] | None = None,
                 wake_all: Callable[[Any], None] | None = None) -> None:
        self.requested, self.answered, self.rows, columns = _layout(block, n, workers)
        self.wake, self.wake_all, self._block, self._workers = wake, wake_all, block, workers
        self._info_seqs = columns[:, 0]
        self.objects: dict[int, dict[str, Any]] = {}  # env -> the info the parent's own slice answered with
        self._ints, self._floats = _columns(columns)
        self.schemas: dict[int, list[tuple[str, Any, bool]]] = {}  # worker -> (key, type, is float) per value
        self.expected = self.requested.copy()  # the number each env's answer will carry
        self._top = int(self.expected.max(initial=0))  # the highest number used, for any env
        self._sleeping = self.rows[:workers, W_SLEEPING]
        self.counts = int_words(self.rows)[W_ANSWERS:workers * ROW_WORDS:ROW_WORDS]  # sum(): every answer so far
        self.parent_row = int_words(self.rows[workers])

    def request(self, env_ids: np.ndarray | slice, owners: np.ndarray | None = None) -> int:
        """Ask ``env_ids`` to step (actions written), waking their sleeping workers (``owners``,
        else all): a slice with one number, an array with one each in stepping order; the first."""
        seq = self._top + 1
        numbers: int | np.ndarray = seq if isinstance(env_ids, slice) else np.arange(seq, seq + len(env_ids))
        self._top = seq if isinstance(env_ids, slice) else seq + len(env_ids) - 1
        self.expected[env_ids] = numbers
        self.requested[env_ids] = numbers
        full_fence()  # before the look at who sleeps: a worker going to sleep sees the request, or is seen
        sleeping = self._sleeping if owners is None else self._sleeping[owners]
        if not np.count_nonzero(sleeping):
            return seq
        if owners is None and self.wake_all is not None:
            self.wake_all(self.parent_row)
        elif self.wake is not None:
            self.wake((np.flatnonzero(sleeping) if owners is None else np.unique(owners[sleeping != 0])).tolist())
        return seq

    def reserve(self, env_ids: np.ndarray | slice) -> int:
        """The number ``env_ids`` will answer a request sent another way (a reset) with."""
        self._top = seq = self._top + 1
        self.expected[env_ids] = seq
        return seq

    def scan(self, status: np.ndarray, ready: list[int], talking: list[int]) -> int:
        """Mark the envs in flight that answered ANSWERED, append them to ``ready`` (those with a
        message to ``talking`` too); how many."""
        if _kernel is not None:
            return _kernel.scan(self.answered, self.expected, status, ready, talking)
        answered = self.answered.copy()  # (one read of each word)
        done = ((status == IN_FLIGHT) & ((answered >> 1) == self.expected)).nonzero()[0]
        status[done] = ANSWERED
        ready.extend(done.tolist())
        talking.extend(done[(answered[done] & 1) != 0].tolist())
        return len(done)

    def count_finished(self, status: np.ndarray) -> int:
        """How many envs ``scan`` would find now."""
        if _kernel is not None:
            return _kernel.scan(self.answered, self.expected, status, None, None)
        return int(np.count_nonzero((status == IN_FLIGHT) & ((self.answered >> 1) == self.expected)))

    def finished(self, status: np.ndarray, wanted: int) -> bool:
        """Would ``scan`` find ``wanted`` envs now? (A waiting parent asks often.)"""
        if _kernel is not None:
            return _kernel.scan(self.answered, self.expected, status, None, None) >= wanted
        return self.count_finished(status) >= wanted

    def sleeping(self, w: int) -> bool:
        return bool(self._sleeping[w])

    def learn(self, w: int, schema: Schema) -> None:
        """Worker ``w``'s infos of ``schema`` may come in the info columns."""
        self.schemas[w] = [(key, None if kind in (int, float) else kind, kind in _FLOATS) for key, kind in schema]
        self.rows[w, W_SCHEMA] = 1

    def local(self, w: int, first: int, stop: int) -> WorkerLanes:
        """The lanes of worker ``w`` run by the parent itself (its own slice): its infos, whatever
        they hold, are handed over as they are (``objects``) with the columns' request number."""
        return WorkerLanes(self._block, len(self.requested), self._workers, w, first, stop, objects=self.objects)

    def column_infos(self, env_ids: np.ndarray | None, worker_of: np.ndarray, infos: list[Any]) -> None:
        """The infos of the envs ``env_ids`` (None: all) that answered in the columns, at their places in
        ``infos`` (over what an ended env's place holds: its terminal observation)."""
        if env_ids is None:  # (``nonzero``: ``flatnonzero`` costs a Python call more)
            ids = hits = (self._info_seqs == self.expected).nonzero()[0]
        else:
            hits = (self._info_seqs[env_ids] == self.expected[env_ids]).nonzero()[0]
            ids = env_ids[hits]
        objects, schemas, ints, floats = self.objects, self.schemas, self._ints, self._floats
        for j, i, w in zip(hits.tolist(), ids.tolist(), worker_of[ids].tolist()):
            info = objects.pop(i, None)
            if info is None:
                info = {}
                for at, (key, kind, is_float) in enumerate(schemas[w], i * INFO_WORDS + 1):
                    value = floats[at] if is_float else ints[at]
                    info[key] = value if kind is None else kind(value)
            infos[j] = {**info, **infos[j]} if infos[j] else info

    def restart(self, w: int, first: int, stop: int) -> None:
        """A new worker ``w`` takes over envs ``first:stop``: they count as answered."""
        self.rows[w] = 0
        self.schemas.pop(w, None)
        self._info_seqs[first:stop] = -1  # what the old worker wrote answers no request
        for i in range(first, stop):
            self.objects.pop(i, None)
        self.requested[first:stop] = self.expected[first:stop]
        self.answered[first:stop] = self.expected[first:stop] << 1


class WorkerLanes:
    """Worker ``w``'s side for envs ``first:stop`` (``k`` counts from ``first``); ``wake_fd``:
    the write end of the parent's wake fd (None: the parent naps instead); ``objects``: the
    parent's dict its own slice hands its infos over in (``ParentLanes.local``)."""

    def __init__(self, block: np.ndarray, n: int, workers: int, w: int, first: int, stop: int,
                 wake_fd: int | None = None, objects: dict[int, dict[str, Any]] | None = None) -> None:
        requested, answered, rows, columns = _layout(block, n, workers)
        self._objects, self._first = objects, first
        self.requested, self.answered = requested[first:stop], answered[first:stop]
        self._ints, self._floats = _columns(columns[first:stop])
        self.schema: Schema | None = None  # of the infos this worker may write in its columns
        self._keys: tuple[str, ...] = ()
        self._types: tuple[type, ...] = ()
        self._is_float: tuple[bool, ...] = ()
        self.seen = self.requested.copy()  # the last request taken, per env
        self.values = np.zeros(len(self.seen), np.int64)  # the answer word of each env's request taken
        self._answered, self._values = int_words(self.answered), int_words(self.values)
        self._row, self._parent = int_words(rows[w]), int_words(rows[workers])
        self._counts = int_words(rows)[W_ANSWERS:workers * ROW_WORDS:ROW_WORDS]
        self._fd = -1 if wake_fd is None else wake_fd
        self._woken = 0  # the parent's sleep this worker woke last (Python answers)
        self._capsule = None if _kernel is None else _kernel.answerer(  # (it answers in the columns too)
            self.answered, self.values, rows, w, self._fd, W_ANSWERS, P_SLEEPING, P_TARGET, columns[first:stop],
            W_SCHEMA, first, objects)
        #: how the step loop answers an env with nothing to say, the moment it is done
        self.done = (functools.partial(self.answer, has_message=False), self._capsule)

    def has_requests(self) -> bool:
        """Is a request not taken yet? (One bytes comparison: a spinning worker asks often.)"""
        return self.requested.tobytes() != self.seen.tobytes()

    def take_runs(self) -> list[tuple[int, int, int]]:
        """Take the new requests: ``(first number, start, stop)`` per run of consecutive envs
        whose numbers are equal or one apart, oldest first (the order they were asked in)."""
        if _kernel is not None:
            runs = _kernel.take_runs(self.requested, self.seen, self.values)
        else:
            requested = self.requested.copy()  # one look: a request written meanwhile waits for the next
            new = requested != self.seen
            np.copyto(self.seen, requested, where=new)
            np.left_shift(requested, 1, out=self.values, where=new)
            step = np.diff(requested)
            follows = new[1:] & new[:-1] & ((step == 0) | (step == 1))  # env k + 1 goes on env k's run
            starts = np.flatnonzero(new & np.concatenate(([True], ~follows)))
            stops = np.flatnonzero(new & np.concatenate((~follows, [True]))) + 1
            runs = [(int(requested[a]), int(a), int(b)) for a, b in zip(starts.tolist(), stops.tolist())]
        runs.sort()
        return runs

    def seq(self, k: int) -> int:
        """The number of the request env ``k`` answers next."""
        return self._values[k] >> 1

    def take(self, k: int, seq: int) -> None:
        """Env ``k`` will answer request ``seq`` (a reset sent through the pipe)."""
        self.seen[k] = self.requested[k]
        self._values[k] = seq << 1

    def untake(self, ks: list[int]) -> None:
        """Give back requests taken but not served (a deadline passed)."""
        self.seen[ks] = -1

    def answer(self, k: int, has_message: bool) -> None:
        """Env ``k`` answered its request (its message, if any, follows through the pipe)."""
        if self._capsule is not None:
            _kernel.answer(self._capsule, k, has_message)  # type: ignore[union-attr]
            return
        self._answered[k] = self._values[k] | has_message
        self._row[W_ANSWERS] += 1
        full_fence()  # after the count, before the parent's row
        sleep = self._parent[P_SLEEPING]
        if sleep and sleep != self._woken and self._fd >= 0 and sum(self._counts) >= self._parent[P_TARGET]:
            self._woken = sleep
            with contextlib.suppress(BlockingIOError):  # full: a wake-up is pending already
                os.write(self._fd, ONE)

    def propose(self, info: dict[str, Any]) -> Schema | None:
        """The schema to send with ``info``: this worker's (of its first info that fits the
        columns) until the parent knows it; else None."""
        if self._row[W_SCHEMA]:
            return None
        if self.schema is None:
            self.schema = info_schema(info)
            if self.schema is not None:  # what ``answer_in_columns`` compares each info with
                self._keys, self._types = tuple(info), tuple(map(type, info.values()))
                self._is_float = tuple(kind in _FLOATS for kind in self._types)
                if self._capsule is not None:  # 'f': float64, 'b': a NumPy bool, 'i': int64
                    kinds = b"".join(b"f" if is_float else b"b" if kind is np.bool_ else b"i"
                                     for is_float, kind in zip(self._is_float, self._types))
                    _kernel.schema(self._capsule, self._keys, self._types, kinds)  # type: ignore[union-attr]
        return self.schema

    def answer_in_columns(self, k: int, info: dict[str, Any]) -> bool:
        """Answer env ``k`` with its ``info`` in its columns, if the parent knows its schema and
        it fits; whether it did (if not, the info goes as a message)."""
        base = j = k * INFO_WORDS
        if self._objects is not None:  # the parent's own slice: the info itself
            self._objects[self._first + k] = info
        elif not self._row[W_SCHEMA] or tuple(info) != self._keys or tuple(map(type, info.values())) != self._types:
            return False
        else:
            try:
                for value, is_float in zip(info.values(), self._is_float):
                    j += 1
                    if is_float:
                        self._floats[j] = value
                    else:
                        self._ints[j] = value if type(value) is not np.bool_ else int(value)
            except (OverflowError, ValueError):  # an int beyond int64
                return False
        self._ints[base] = self._values[k] >> 1  # after the values, before the answer
        if self._capsule is not None:  # (``answer``, one call less on the step's path)
            _kernel.answer(self._capsule, k, False)  # type: ignore[union-attr]
        else:
            self.answer(k, False)
        return True

    def rings(self) -> int:
        """How often the parent rang the shared rings (``doorbell.Doorbell.ring_all``)."""
        return self._parent[P_RINGS]

    def set_sleeping(self, asleep: bool) -> None:
        """Say whether this worker sleeps; going to sleep, fence before the last look."""
        self._row[W_SLEEPING] = int(asleep)
        if asleep:
            full_fence()
