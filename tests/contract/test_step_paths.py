"""The lean lock-step path: ``step()`` in one trip, the messenger's gather, the spin budgets.

``VecEnvBase.step`` runs ``step_async``'s and ``step_wait``'s bodies itself unless a
subclass overrides either (then it calls them); ``Messenger.gather`` hands out outcomes
in the order asked, keeping what arrived when it times out; ``Spin`` learns from a wait
at the next ``budget()``; a spinning worker looks at its env lanes by their bytes.
"""
from __future__ import annotations

import functools
import multiprocessing

import numpy as np
import pytest

from tests.envs import SeededEnv
from tests.faulty_envs import SlowStepEnv
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import AlreadyPendingCallError, ClosedEnvironmentError, EnvTimeoutError, NoAsyncCallError
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.subproc.control import ControlBlock, ParentColumn, ParentLanes, WorkerLanes
from vec_envs.subproc.lane_serving import serve_requests
from vec_envs.subproc.spin_wait import SPIN_MAX_S, SPIN_MIN_S, Spin
from vec_envs.workers.protocol import Command
from vec_envs.workers.slice_server import SliceServer
from wrappers import VecNormalize

LEAN_BACKENDS = [
    pytest.param(DummyVecEnv, id="dummy"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=4, step_in_parent=True), id="subproc-parent-only"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2), id="subproc-default"),
]


# ------------------------------------------------------------------ step() in one trip
class DoubledRewards(DummyVecEnv):
    """Overrides step_wait: step() must go through it."""

    def step_wait(self, timeout=None):
        obs, rewards, dones, infos = super().step_wait(timeout)
        return obs, rewards * 2, dones, infos


class CountedActions(DummyVecEnv):
    """Overrides step_async: step() must go through it."""

    calls = 0

    def step_async(self, actions):
        self.calls += 1
        super().step_async(actions)


def test_step_runs_in_one_trip_only_where_nothing_overrides_step_async_or_step_wait():
    assert DummyVecEnv._step_in_one
    assert SubprocVecEnv._step_in_one
    assert not DoubledRewards._step_in_one
    assert not CountedActions._step_in_one
    assert not VecNormalize._step_in_one  # a wrapper reshapes step_wait
    actions = np.ones(2, np.int64)
    with DummyVecEnv([SeededEnv] * 2) as plain, DoubledRewards([SeededEnv] * 2) as doubled, \
            CountedActions([SeededEnv] * 2) as counted:
        for venv in (plain, doubled, counted):
            venv.reset()
        assert plain.step(actions)[1].tolist() == [2.0, 2.0]  # action 1 + step 1
        assert doubled.step(actions)[1].tolist() == [4.0, 4.0]
        counted.step(actions)
        counted.step(actions)
        assert counted.calls == 2


@pytest.mark.parametrize("make", LEAN_BACKENDS)
def test_step_keeps_every_check_of_step_async(make, closing):
    venv = closing(make([SeededEnv] * 4))
    venv.reset()
    name = type(venv).__name__
    with pytest.raises(ValueError, match=r"step_async\(\): expected 4 actions \(one per env\), received 3"):
        venv.step([0, 1, 2])
    with pytest.raises(ValueError, match=r"step_async\(\): .*cannot be cast"):
        venv.step(np.full(4, 0.5))
    venv.step_async(np.zeros(4, np.int64))
    with pytest.raises(AlreadyPendingCallError, match=rf"{name}.step_async\(\) called while step_async\(\) still "
                                                      r"waits for its step_wait\(\)"):
        venv.step(np.zeros(4, np.int64))
    assert venv.step_wait()[1].shape == (4,)
    assert venv.step(np.zeros(4, np.int64))[1].tolist() == [2.0] * 4  # the refused calls stepped nothing
    venv.close()
    with pytest.raises(ClosedEnvironmentError, match=rf"{name}.step_async\(\) called after close\(\)"):
        venv.step(np.zeros(4, np.int64))


@pytest.mark.parametrize("make", [pytest.param(DummyVecEnv, id="dummy"),
                                  pytest.param(functools.partial(SubprocVecEnv, in_series=2), id="subproc")])
def test_step_refuses_while_envs_are_in_flight_and_names_them(make, closing):
    venv = closing(make([SeededEnv] * 4, batch_size=2))
    venv.async_reset()
    env_ids = venv.recv()[4]
    in_flight = sorted(set(range(4)) - set(env_ids.tolist()))
    with pytest.raises(AlreadyPendingCallError, match=rf"step_async\(\) called while envs {in_flight} are in flight"
                                                      .replace("[", r"\[").replace("]", r"\]")):
        venv.step(np.zeros(4, np.int64))
    venv.send(np.zeros(2, np.int64), env_ids)


def test_a_step_that_times_out_stays_pending_and_a_refused_one_leaves_nothing_pending(closing):
    venv = closing(SubprocVecEnv([functools.partial(SlowStepEnv, 0.3)] * 2, in_series=1, timeout=0.05))
    venv.reset()
    with pytest.raises(EnvTimeoutError, match=r"envs \[0, 1\] \(workers \[0, 1\]\) did not answer within 0.05 s"):
        venv.step(np.zeros(2, np.int64))
    assert venv.step_wait(timeout=5.0)[1].tolist() == [1.0, 1.0]  # still pending: waited for again
    with pytest.raises(ValueError, match="expected 2 actions"):
        venv.step([0])
    with pytest.raises(NoAsyncCallError, match=r"step_wait\(\) called with no step_async\(\) pending"):
        venv.step_wait()


# ---------------------------------------------------------------- Messenger.gather
def test_gather_hands_out_outcomes_in_the_order_asked_and_keeps_what_arrived_at_a_timeout(closing):
    slow_first = [functools.partial(SlowStepEnv, 0.4)] + [SlowStepEnv] * 2
    venv = closing(SubprocVecEnv(slow_first, in_series=1, step_in_parent=False))
    venv.reset()
    messenger = venv.messenger
    for w in range(3):
        messenger.send(w, Command.STEP, None if venv._shared_actions is not None else np.zeros(1, np.int64))
    with pytest.raises(EnvTimeoutError, match=r"envs \[0\] \(workers \[0\]\) did not answer within 0.2 s"):
        messenger.gather([2, 0, 1], 0.2, "step")  # workers 1 and 2 answer at once, worker 0 late
    assert sorted(messenger.arrived([1, 2])) == [1, 2]
    outcomes = messenger.gather([0], None, "step")
    assert list(outcomes) == [0]
    assert outcomes[0].ok
    for w in (1, 0, 2):
        messenger.send(w, Command.GET_SPACES, None)
    spaces = messenger.gather([2, 1, 0], 10.0, "get_spaces")
    assert list(spaces) == [2, 1, 0]
    assert all(outcome.ok for outcome in spaces.values())


# ------------------------------------------------------------------------- spinning
def test_a_spin_learns_from_its_waits_at_the_next_budget():
    spin = Spin(enabled=True, thrifty=True)
    assert spin.budget() == SPIN_MIN_S
    for _ in range(40):
        spin.record(SPIN_MAX_S / 2)
    assert spin.budget() == pytest.approx(SPIN_MAX_S * 0.75, rel=0.05)  # 1.5 x the usual wait
    for _ in range(40):
        spin.record(10 * SPIN_MAX_S)  # waits that outlast any spin: a thrifty spin stops
    assert spin.budget() == 0.0
    for _ in range(40):
        spin.record(SPIN_MIN_S / 10)
    assert spin.budget() == SPIN_MIN_S
    assert Spin(enabled=False).budget() == 0.0
    unasked = Spin(enabled=True)
    for _ in range(10_000):  # nobody asks for a budget: the waits are learnt from anyway
        unasked.record(SPIN_MAX_S)
    assert len(unasked._unlearnt) < 100


def test_a_spinning_worker_sees_new_lane_requests_as_take_runs_does():
    block = ControlBlock(np.zeros(ControlBlock.words(6, workers=2), np.int64), n=6, workers=2)
    lanes = WorkerLanes(block, 1, 2, 5)
    assert not lanes.has_requests()
    assert lanes.take_runs() == []
    block.requested[4] = 1  # the parent sends env 4 (the worker's k = 2)
    assert lanes.has_requests()
    assert lanes.take_runs() == [(2, 3)]
    assert lanes.seq(2) == 1 and lanes.marks.values[2] == 1 << 1  # what its answer will say
    assert not lanes.has_requests()
    assert lanes.take_runs() == []
    block.requested[5] = 1  # another worker's env
    assert not lanes.has_requests()


def test_lock_step_and_recv_send_share_the_lanes():
    """A whole slice requested (lock-step) and some envs (recv/send) are the same numbers."""
    block = ControlBlock(np.zeros(ControlBlock.words(4, workers=2), np.int64), n=4, workers=2)
    parent, worker = ParentLanes(block), WorkerLanes(block, 1, 2, 4)
    parent.set_together(True)
    parent.request(slice(2, 4))  # lock-step: every env of worker 1
    assert worker.together()
    assert worker.has_requests()
    assert worker.take_runs() == [(0, 2)]
    worker.marks.mark(0)
    worker.answer(1, worker.seq(1), has_message=True)
    assert parent.finished(slice(2, 4)).all()
    assert parent.answers(1) == 2
    assert parent.has_message(3)
    parent.set_together(False)
    parent.request(np.array([3]))  # recv/send: one env
    assert not worker.together()
    assert worker.take_runs() == [(1, 2)]
    worker.marks.mark(1)  # what the step loop does for an env with nothing to say
    assert parent.finished(np.array([2, 3])).all()
    assert parent.answers(1) == 3
    assert not parent.has_message(3)


def test_lock_step_workers_send_the_messages_of_a_wake_up_in_one_and_recv_send_workers_one_per_env():
    """Lock-step (the parent waits for the whole batch): one pipe message for every env of
    a worker that had something to say, each answered after it, and the answers counted
    (the sleeping parent's waker called) once; recv/send: one message and one count per
    env, as soon as it is done."""
    n = 3
    block = ControlBlock(np.zeros(ControlBlock.words(n, workers=1), np.int64), n=n, workers=1)
    woken: list[int] = []
    parent, lanes = ParentLanes(block), WorkerLanes(block, 0, 0, n, lambda: woken.append(parent.answers(0)))
    block.parent_row[ParentColumn.SLEEPING] = 1  # the parent sleeps on the answers: each count calls the waker
    server = SliceServer([SeededEnv] * n, 0)
    server.attach(BatchBuffers.allocate(server.envs.observation_space, n, terminal=True), np.zeros(n, np.int64))
    server.envs.reset([0, 1, 2])
    parent_end, worker_end = multiprocessing.Pipe()
    try:
        for together, sends in ((True, 1), (False, n)):  # SeededEnv says {"t": t} at even steps
            parent.set_together(together)
            for talks in (False, True):
                seq, before = parent.request(slice(0, n)), parent.answers(0)
                woken.clear()
                assert serve_requests(worker_end, server, lanes) == n
                messages = []
                while parent_end.poll():
                    messages.append(parent_end.recv())
                assert len(messages) == (sends if talks else 0)
                assert sorted(m.env for batch in messages for m in batch) == ([0, 1, 2] if talks else [])
                assert block.answered.tolist() == [seq << 1 | talks] * n
                assert woken == ([before + n] if together else [before + k for k in range(1, n + 1)])
        assert parent.answers(0) == 4 * n
    finally:
        server.close_quietly()
        parent_end.close()
        worker_end.close()
