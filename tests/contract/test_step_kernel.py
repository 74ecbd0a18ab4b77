"""EnvSlice's C step loop (``_step_kernel.c``) stores exactly what the Python loop stores.

The C loop takes only the quiet results (an array observation of the space's dtype and
shape, a usual reward type, two False flags, an empty info) and hands every other result
back to the Python loop, so each kind of result below must give the same rows, infos and
errors with and without it.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from vec_envs.errors import EnvCallFailed
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.stepping import env_slice
from vec_envs.stepping.env_slice import EnvSlice
from vec_envs.stepping.marks import Marks

SPACE = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)


def _obs(value: float, dtype: type = np.float32) -> np.ndarray:
    return np.full(3, value, dtype)


# Each kind: the step result an env returns, from its step count t.
KINDS = {
    "quiet": lambda t: (_obs(t), 1.0, False, False, {}),
    "float32 reward": lambda t: (_obs(t), np.float32(0.25), False, False, {}),
    "int reward": lambda t: (_obs(t), 3, False, False, {}),
    "bool reward": lambda t: (_obs(t), True, False, False, {}),
    "0-d reward": lambda t: (_obs(t), np.array(1.5), False, False, {}),
    "huge reward": lambda t: (_obs(t), 1e300, False, False, {}),
    "info": lambda t: (_obs(t), 1.0, False, False, {"t": t}),
    "terminated": lambda t: (_obs(t), 1.0, True, False, {}),
    "truncated": lambda t: (_obs(t), 1.0, False, True, {"why": "time"}),
    "quiet truncated": lambda t: (_obs(t), 1.0, False, True, {}),
    "both flags": lambda t: (_obs(t), 1.0, True, True, {}),
    "numpy flags": lambda t: (_obs(t), 1.0, np.False_, np.False_, {}),
    "float64 obs": lambda t: (_obs(t, np.float64), 1.0, False, False, {}),
    "list obs": lambda t: ([float(t)] * 3, 1.0, False, False, {}),
    "strided obs": lambda t: (np.full(6, t, np.float32)[::2], 1.0, False, False, {}),
    "subclass obs": lambda t: (np.ma.masked_array(_obs(t)), 1.0, False, False, {}),
}


# Each kind of reset: what reset() returns, from the step count t.
RESETS = {
    "quiet": lambda t: (_obs(-t), {"reset": t}),
    "float64 obs": lambda t: (_obs(-t, np.float64), {}),
    "list obs": lambda t: ([-1.0] * 3, {"reset": t}),
    "quiet, no info": lambda t: (_obs(-t), {}),
}


class ScriptedEnv(gym.Env):
    """Returns ``KINDS[kinds[t % len(kinds)]]`` at step t; records the running slot it sees."""

    observation_space, action_space = SPACE, gym.spaces.Discrete(2)

    def __init__(self, kinds: list[str], slot: np.ndarray | None = None, reset_kind: str = "quiet") -> None:
        self.kinds, self.t, self.slot, self.seen, self.reset_kind = kinds, 0, slot, [], reset_kind

    def reset(self, *, seed=None, options=None):
        return RESETS[self.reset_kind](self.t)

    def step(self, action):
        if self.slot is not None:
            self.seen.append(int(self.slot[0]))
        self.t += 1
        return KINDS[self.kinds[self.t % len(self.kinds)]](self.t + 10 * int(action))


def _trace(kinds_per_env: list[list[str]], with_kernel: bool, monkeypatch, terminal: bool) -> list:
    with monkeypatch.context() as patch:
        if not with_kernel:
            patch.setattr(env_slice, "_step_kernel", None)
        envs = EnvSlice([lambda kinds=kinds, i=i: ScriptedEnv(kinds, reset_kind=list(RESETS)[i % len(RESETS)])
                         for i, kinds in enumerate(kinds_per_env)], first_index=5)
        envs.attach(BatchBuffers.allocate(SPACE, len(kinds_per_env), terminal=terminal))
        assert (envs._rows is not None) == with_kernel
        envs.reset()
        trace = []
        for step in range(2 * len(KINDS)):
            infos = envs.step(np.arange(len(kinds_per_env)) % 2)
            single = envs.step_env(step % len(kinds_per_env), 1)
            buffers = envs.buffers
            trace.append((buffers.obs.copy(), buffers.rewards.copy(), buffers.dones.copy(), infos, single,
                          [dict(info) for info in envs.reset_infos],
                          None if buffers.terminal_obs is None else buffers.terminal_obs.copy(),
                          None if buffers.time_limit_truncated is None else buffers.time_limit_truncated.copy()))
        return trace


def _same(a, b) -> None:
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and a == b


def test_the_c_step_loop_is_built():
    assert env_slice._step_kernel is not None, (
        "vec_envs/stepping/_step_kernel.c was not built (no C compiler at install?): every env step goes "
        "through Python")


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("terminal", [True, False], ids=["terminal rows", "terminal in infos"])
def test_every_kind_of_result_is_stored_as_the_python_loop_stores_it(terminal, monkeypatch):
    kinds = list(KINDS)
    per_env = [kinds[i:] + kinds[:i] for i in range(4)] + [["quiet"], ["quiet", "quiet", "terminated"]] * 3
    fast = _trace(per_env, True, monkeypatch, terminal)
    slow = _trace(per_env, False, monkeypatch, terminal)
    _same(fast, slow)


def _marked_trace(kinds_per_env: list[list[str]], with_kernel: bool, monkeypatch) -> list:
    """Step every env through ``step_marked`` as a recv/send worker does, recording what
    each call returns, the rows, the marks, and what ``notify`` sees when it is called."""
    n = len(kinds_per_env)
    with monkeypatch.context() as patch:
        if not with_kernel:
            patch.setattr(env_slice, "_step_kernel", None)
        envs = EnvSlice([lambda kinds=kinds, i=i: ScriptedEnv(kinds, reset_kind=list(RESETS)[i % len(RESETS)])
                         for i, kinds in enumerate(kinds_per_env)], first_index=5)
        envs.attach(BatchBuffers.allocate(SPACE, n, terminal=True))
        envs.reset()
        notified: list = []
        marks = Marks(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64),
                      lambda: notified.append((marks.cells.copy(), int(marks.tally[0]))))
        trace = []
        for step in range(2 * len(KINDS)):
            marks.values[:] = 2 * step + 2 + np.arange(n)
            marks.watch[0] = step % 2  # notify() only while the watched word is set
            actions, returned, k = np.arange(n) % 2, [], 0
            while k < n:
                k, info = envs.step_marked(actions[k:], k, k, n, marks)
                if k < n:
                    returned.append((k, info, dict(envs.reset_infos[k]) if envs.buffers.dones[k] else None))
                    k += 1
            marked = np.flatnonzero(marks.cells == marks.values).tolist()
            assert sorted(marked + [k for k, _, _ in returned]) == list(range(n))  # each env once, one way
            buffers = envs.buffers
            trace.append((returned, marks.cells.copy(), int(marks.tally[0]), buffers.obs.copy(),
                          buffers.rewards.copy(), buffers.dones.copy(), buffers.terminal_obs.copy(),
                          buffers.time_limit_truncated.copy()))
        return trace + [notified]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_step_marked_marks_each_env_with_nothing_to_say_as_the_python_loop_does(monkeypatch):
    kinds = list(KINDS)
    per_env = [kinds[i:] + kinds[:i] for i in range(4)] + [["quiet"], ["quiet", "quiet", "terminated"]] * 4
    fast = _marked_trace(per_env, True, monkeypatch)
    slow = _marked_trace(per_env, False, monkeypatch)
    _same(fast, slow)
    steps, notified = fast[:-1], fast[-1]
    returned, marked = sum(len(step[0]) for step in steps), steps[-1][2]
    assert returned > 0 and marked > 0 and returned + marked == len(steps) * len(per_env)
    assert 0 < len(notified) < marked  # only while watched


def test_the_c_loop_refuses_marks_it_cannot_write():
    envs = EnvSlice([lambda: ScriptedEnv(["quiet"])] * 2)
    envs.reset()
    word = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="int64 cells and values with a word per env"):
        envs.step_marked([0, 0], 0, 0, 2, Marks(np.zeros(1, np.int64), np.zeros(2, np.int64), word, word, None))
    with pytest.raises(ValueError, match="int64 cells"):
        envs.step_marked([0, 0], 0, 0, 2, Marks(np.zeros(2, np.int32), np.zeros(2, np.int64), word, word, None))


def test_infos_of_quiet_envs_are_fresh_dicts():
    envs = EnvSlice([lambda: ScriptedEnv(["quiet"])] * 3)
    envs.reset()
    infos = envs.step([0, 0, 0])
    assert infos == [{}, {}, {}]
    assert len({id(info) for info in infos}) == 3
    infos[0]["mine"] = 1
    assert envs.step([0, 0, 0]) == [{}, {}, {}]


class Raising(ScriptedEnv):
    def __init__(self, error: BaseException) -> None:
        super().__init__(["quiet"])
        self.error = error

    def step(self, action):
        if self.t >= 1:
            raise self.error
        return super().step(action)


@pytest.mark.parametrize("with_kernel", [True, False], ids=["C loop", "Python loop"])
def test_an_exception_in_step_names_the_env_and_chains_the_cause(with_kernel, monkeypatch):
    if not with_kernel:
        monkeypatch.setattr(env_slice, "_step_kernel", None)
    envs = EnvSlice([lambda: ScriptedEnv(["quiet"]), lambda: Raising(ValueError("boom"))], first_index=7)
    envs.reset()
    envs.step([0, 0])
    with pytest.raises(EnvCallFailed, match="env 8") as caught:
        envs.step([0, 0])
    assert isinstance(caught.value.__cause__, ValueError)
    assert caught.value.__cause__.__traceback__ is not None
    with pytest.raises(EnvCallFailed, match="env 8"):
        envs.step_env(1, 0)


class RaisingReset(ScriptedEnv):
    def reset(self, *, seed=None, options=None):
        if self.t >= 1:
            raise OSError("no reset")
        return super().reset()


@pytest.mark.parametrize("with_kernel", [True, False], ids=["C loop", "Python loop"])
def test_an_exception_in_the_reset_after_an_episode_end_names_the_env_and_reset(with_kernel, monkeypatch):
    if not with_kernel:
        monkeypatch.setattr(env_slice, "_step_kernel", None)
    envs = EnvSlice([lambda: ScriptedEnv(["quiet"]), lambda: RaisingReset(["terminated"])], first_index=3)
    envs.attach(BatchBuffers.allocate(SPACE, 2, terminal=True))
    envs.reset()
    with pytest.raises(EnvCallFailed, match=r"env 4 raised in reset\(\)") as caught:
        envs.step([0, 0])
    assert isinstance(caught.value.__cause__, OSError)
    assert envs.buffers.dones.tolist() == [False, True]


@pytest.mark.parametrize("with_kernel", [True, False], ids=["C loop", "Python loop"])
def test_a_keyboard_interrupt_in_step_goes_up_as_it_is(with_kernel, monkeypatch):
    if not with_kernel:
        monkeypatch.setattr(env_slice, "_step_kernel", None)
    envs = EnvSlice([lambda: Raising(KeyboardInterrupt())])
    envs.reset()
    envs.step([0])
    with pytest.raises(KeyboardInterrupt):
        envs.step([0])


def test_a_wrong_shape_names_the_env_and_the_shapes():
    class Wrong(ScriptedEnv):
        def step(self, action):
            return np.zeros(4, np.float32), 1.0, False, False, {}

    envs = EnvSlice([lambda: ScriptedEnv(["quiet"]), lambda: Wrong(["quiet"])], first_index=2)
    envs.reset()
    with pytest.raises(EnvCallFailed, match="env 3") as caught:
        envs.step([0, 0])
    assert "shape (4,)" in str(caught.value.__cause__)


def test_the_running_slot_names_the_env_being_stepped_and_is_cleared_after():
    slot = np.zeros(1, np.int64)
    envs = EnvSlice([lambda kinds=kinds: ScriptedEnv(kinds, slot) for kinds in (["quiet"], ["quiet", "info"])],
                    first_index=4)
    envs.track_running(memoryview(slot))
    envs.reset()
    for _ in range(3):
        envs.step([0, 1])
    envs.step_env(1, 0)
    assert envs.envs[0].seen == [5, 5, 5]
    assert envs.envs[1].seen == [6, 6, 6, 6]
    assert slot[0] == 0


def test_the_c_loop_refuses_rows_it_cannot_write():
    kernel = env_slice._step_kernel
    envs = [ScriptedEnv(["quiet"])]
    obs, rewards, dones = np.zeros((1, 3), np.float32), np.zeros(1, np.float32), np.zeros(1, np.bool_)

    def rows(**changed):
        parts = dict(envs=envs, obs=obs, rewards=rewards, dones=dones, terminal=None, truncated=None,
                     reset_infos=[{}], running=None, first=0, rewards_types=(float,), ndarray=np.ndarray)
        return tuple({**parts, **changed}.values())

    with pytest.raises(ValueError, match="float32 rewards"):
        kernel.step_quiet(rows(rewards=np.zeros(1, np.float64)), [0], 0, 0, 1, [])
    with pytest.raises(ValueError, match="terminal rows like them"):
        kernel.step_quiet(rows(terminal=np.zeros((1, 3), np.float64), truncated=dones), [0], 0, 0, 1, [])
    with pytest.raises(ValueError, match="a row per env"):
        kernel.step_quiet(rows(reset_infos=[]), [0], 0, 0, 1, [])
    with pytest.raises(IndexError, match="envs 0..2 of a slice of 1"):
        kernel.step_quiet(rows(), [0, 0], 0, 0, 2, [])
