"""The parent's one wait for answers in the lanes: spin, sleep until woken, and never hang.

``LaneRequests`` waits here for every answer of a lock-step ``step()`` and for the first
answers of a ``recv`` alike. The parent first polls the answers a while (``Spin``: a
process polling sees an answer at once, where one asleep takes a wake-up), then sleeps
(``ParentSleep``): it writes in its row the total of answers that would do and that it
sleeps, looks once more, and sleeps on its wake fd (``WakeFd``) and the sentinels of the worker
processes it waits for, so a worker's answer that completes that total wakes it, and a
worker that dies wakes it too. It never sleeps more than ``FALLBACK_S`` between looks;
after such a nap with no new answer at all it wakes, through their pipes, the workers that
owe answers and sleep (a wake-up lost). Where there is no wake fd (no ``select.poll``) it
dozes on the sentinels, a little longer each time, and looks again.

Example:
    >>> import numpy as np
    >>> from vec_envs.subproc.shared.control_block import ControlBlock
    >>> block = ControlBlock(np.zeros(ControlBlock.words(4, workers=2), np.int64), n=4, workers=2)
    >>> wake = WakeFd()
    >>> sleeper = ParentSleep(block, wake)
    >>> waiting = Waiting(block, Spin(False), sleeper)
    >>> waiting.until(lambda: False, 2, (), lambda: None, deadline=time.monotonic() + 0.01)
    []
    >>> sleeper.naps > 0, sleeper.wakes
    (True, 0)
    >>> wake.close()
"""
from __future__ import annotations

import os
import select
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any

from vec_envs.subproc.shared.control_block import ControlBlock, ParentColumn, answer_counts, int_words
from vec_envs.subproc.shared.fence import full_fence
from vec_envs.subproc.shared.spin import WAIT_TIMES, Spin, yield_cpu
from vec_envs.subproc.shared.wake import FALLBACK_S

__all__ = ["NAP_MAX_S", "NAP_MIN_S", "ParentSleep", "WakeFd", "Waiting"]

NAP_MIN_S, NAP_MAX_S = 100e-6, 200e-6  # a parent with no wake fd dozes between looks


class WakeFd:
    """The parent's wake file descriptor: an eventfd, or a pipe where there is none.

    The parent reads (``read_fd``); each worker gets ``write_fd`` with the shared memory.
    Non-blocking both ways: a full pipe or counter already means "wake up".
    """

    def __init__(self) -> None:
        if hasattr(os, "eventfd"):
            self.read_fd = self.write_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:
            self.read_fd, self.write_fd = os.pipe()
            os.set_blocking(self.read_fd, False)
            os.set_blocking(self.write_fd, False)

    def close(self) -> None:
        """Close the descriptor(s); idempotent."""
        for fd in {self.read_fd, self.write_fd} - {-1}:
            os.close(fd)
        self.read_fd = self.write_fd = -1


class ParentSleep:
    """The parent's sleep on its wake fd, woken by the workers' answers.

    ``wakes`` counts the sleeps a worker's write ended, ``naps`` those that ran their whole
    time (a deadline, the fallback, or a wake-up lost).
    """

    def __init__(self, block: ControlBlock, fd: WakeFd) -> None:
        self._counts = answer_counts(block)
        self._row = int_words(block.parent_row)
        self.fd = fd
        self.wakes = self.naps = self.sleeps = 0

    def poller(self, fds: Sequence[int]) -> Any:
        """A ``select.poll`` on the wake fd and ``fds``, for ``sleep`` (built once, polled often)."""
        poller = select.poll()
        for fd in (self.fd.read_fd, *fds):
            poller.register(fd, select.POLLIN)
        return poller

    def sleep(self, done: Callable[[], Any], poller: Any, seconds: float, total: int) -> list[int]:
        """Say so (``total``: the workers' answers, all counted, that would do), look at
        ``done()`` once more, then sleep on ``poller`` (``poller()``) up to ``seconds`` (at
        most ``FALLBACK_S``); the fds other than the wake fd that are ready.

        ``total`` is a number of answers, not how many more: one counted between the
        caller's look and the sleep must not move it out of reach."""
        self._row[ParentColumn.TARGET] = total
        self.sleeps += 1
        self._row[ParentColumn.SLEEPING] = self.sleeps  # after the target: a worker that sees it sees the target
        full_fence()  # before the last look: an answer is seen by it, or the answering worker sees the sleep
        try:
            if done():
                return []
            events = poller.poll(max(0, int(min(seconds, FALLBACK_S) * 1000 + 0.999)))  # ms, rounded up
        finally:
            self._row[ParentColumn.SLEEPING] = 0
        ready = []
        for fd, _ in events:
            if fd != self.fd.read_fd:
                ready.append(fd)
                continue
            try:  # read every wake-up written so far
                while len(os.read(fd, 4096)) == 4096:
                    pass
            except BlockingIOError:
                pass
            self.wakes += 1
        if not events:
            self.naps += 1
        return ready


class Waiting:
    """The wait for answers: spin, then sleep (``ParentSleep``, or dozes without one).

    Args:
        block: the control block whose answer counts tell progress.
        spin: how long to poll first (learnt from the waits seen).
        sleep: the sleep on the wake fd, or None to doze.
    """

    def __init__(self, block: ControlBlock, spin: Spin, sleep: ParentSleep | None) -> None:
        self.spin, self.sleep = spin, sleep
        self._counts = answer_counts(block)
        self._sentinels: tuple[int, ...] = ()
        self._poller: Any = None

    def until(self, done: Callable[[], Any], total: int, sentinels: tuple[int, ...],
              wake_sleepers: Callable[[], None], deadline: float | None) -> list[int]:
        """Wait until ``done()`` (then ``[]``), ``deadline`` (``time.monotonic()``; then ``[]``
        too: the caller looks at ``done()``), or a process of ``sentinels`` ended (those
        ended). ``total`` is the total of answers, all workers', that would make ``done()``
        true (a sleep's target: a worker whose answer makes it wakes the parent);
        ``wake_sleepers()`` wakes the workers that owe answers through their pipes, after a
        nap with no new answer at all."""
        start, times = time.perf_counter(), WAIT_TIMES
        cpu = time.thread_time() if times.enabled else 0.0
        budget = self.spin.budget()
        if deadline is not None:
            budget = min(budget, max(0.0, deadline - time.monotonic()))
        end = start + budget
        while not done():  # spin: a look at the answers, then the CPU to whoever needs it
            if time.perf_counter() >= end:
                break
            yield_cpu()
        else:
            self.spin.record(time.perf_counter() - start)
            if times.enabled:
                times.spun += time.thread_time() - cpu
            return []
        if not times.enabled:
            return self._sleep_until(done, total, sentinels, wake_sleepers, deadline, start)
        slept = time.thread_time()
        times.spun += slept - cpu
        try:
            return self._sleep_until(done, total, sentinels, wake_sleepers, deadline, start)
        finally:
            times.slept += time.thread_time() - slept

    def _sleep_until(self, done: Callable[[], Any], total: int, sentinels: tuple[int, ...],
                     wake_sleepers: Callable[[], None], deadline: float | None, start: float) -> list[int]:
        """``until`` once the spin is over: sleep and look, until one of its ends."""
        if self.sleep is not None and (self._poller is None or sentinels != self._sentinels):  # (a restart: others)
            self._sentinels, self._poller = sentinels, self.sleep.poller(sentinels)
        nap = NAP_MIN_S if self.sleep is None else FALLBACK_S
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return []
            pause = nap if remaining is None else min(nap, remaining)
            answers = sum(self._counts)
            if self.sleep is not None:
                ended = self.sleep.sleep(done, self._poller, pause, total)
            elif sentinels:
                ended = [fd for fd in wait(list(sentinels), pause) if isinstance(fd, int)]
                nap = min(2 * nap, NAP_MAX_S)
            else:
                time.sleep(pause)
                ended, nap = [], min(2 * nap, NAP_MAX_S)
            if ended:
                return ended
            if done():
                self.spin.record(time.perf_counter() - start)
                return []
            if sum(self._counts) == answers:  # a whole nap without an answer: a wake-up may be lost
                wake_sleepers()
