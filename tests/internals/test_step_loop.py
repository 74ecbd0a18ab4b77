"""EnvSlice's C step loop (``_step_kernel.c``) stores exactly what the Python loop stores.

The C loop takes only the usual results (an array observation of the space's dtype and
shape, a usual reward type, two bool flags, an info dict) and hands every other result
back to the Python loop, so each kind of result below must give the same rows, infos,
reports and errors with and without it.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from vec_envs.errors import EnvCallFailed
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.workers import env_slice
from vec_envs.workers.env_slice import EnvSlice

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
    "largest float32 reward": lambda t: (_obs(t), 3.4028234e38, False, False, {}),
    "int64 reward past 2**24": lambda t: (_obs(t), np.int64(2**60 + 2**36 + t), False, False, {}),  # rounds once
    "int reward past 2**24": lambda t: (_obs(t), 2**60 + 2**36 + t, False, False, {}),
    "numpy bool reward": lambda t: (_obs(t), np.True_, False, False, {}),
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
            patch.setattr(env_slice, "_kernel", None)
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


pytestmark = pytest.mark.skipif(env_slice._kernel is None, reason="the C step loop is not built or is off")


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal rows", "terminal in infos"])
def test_every_kind_of_result_is_stored_as_the_python_loop_stores_it(terminal, monkeypatch):
    kinds = list(KINDS)
    per_env = [kinds[i:] + kinds[:i] for i in range(4)] + [["quiet"], ["quiet", "quiet", "terminated"]] * 3
    fast = _trace(per_env, True, monkeypatch, terminal)
    slow = _trace(per_env, False, monkeypatch, terminal)
    _same(fast, slow)


def _run_trace(kinds_per_env: list[list[str]], with_kernel: bool, monkeypatch) -> list:
    """Step every env as a worker serving its lanes does (``said`` and ``done``), recording
    what was said, what was reported done (and what the rows held then), and the rows."""
    n = len(kinds_per_env)
    with monkeypatch.context() as patch:
        if not with_kernel:
            patch.setattr(env_slice, "_kernel", None)
        envs = EnvSlice([lambda kinds=kinds, i=i: ScriptedEnv(kinds, reset_kind=list(RESETS)[i % len(RESETS)])
                         for i, kinds in enumerate(kinds_per_env)], first_index=5)
        envs.attach(BatchBuffers.allocate(SPACE, n, terminal=True))
        envs.reset()
        reported: list = []
        hook = (lambda k: reported.append((k, envs.buffers.rewards[k].item(), bool(envs.buffers.dones[k]))), None)
        trace = []
        for _ in range(2 * len(KINDS)):
            reported.clear()
            ks: list = []
            actions = np.arange(n) % 2
            infos = envs.step(actions[1:], list(range(1, n)), None, ks, hook)  # a run of envs 1..
            said = [(k, infos[k - 1]) for k in ks]
            assert sorted(ks + [k for k, _, _ in reported]) == list(range(1, n))  # once each
            buffers = envs.buffers
            trace.append((said, list(reported), [dict(info) for info in envs.reset_infos], buffers.obs.copy(),
                          buffers.rewards.copy(), buffers.dones.copy(), buffers.terminal_obs.copy(),
                          buffers.time_limit_truncated.copy()))
        return trace


def test_step_run_reports_each_env_with_nothing_to_say_and_keeps_the_others_as_the_python_loop_does(
        monkeypatch):
    kinds = list(KINDS)
    per_env = [kinds[i:] + kinds[:i] for i in range(4)] + [["quiet"], ["quiet", "quiet", "terminated"]] * 4
    fast = _run_trace(per_env, True, monkeypatch)
    slow = _run_trace(per_env, False, monkeypatch)
    _same(fast, slow)
    said = sum(len(step[0]) for step in fast)
    reported = sum(len(step[1]) for step in fast)
    assert said > 0 and reported > 0 and said + reported == len(fast) * (len(per_env) - 1)


def test_the_c_loop_reports_through_a_c_hook_as_through_a_python_one():
    from vec_envs.subproc import _lanes_kernel  # the lanes kernel makes the C hook

    n = 3
    answered, values = np.zeros(n, np.int64), np.full(n, 7 << 1, np.int64)
    rows = np.zeros((2, 8), np.int64)  # one worker's row, then the parent's
    hook = (lambda k: None, _lanes_kernel.answerer(answered, values, rows, 0, -1, 1, 0, 1))
    envs = EnvSlice([lambda: ScriptedEnv(["quiet"]), lambda: ScriptedEnv(["info"]), lambda: ScriptedEnv(["quiet"])])
    envs.attach(BatchBuffers.allocate(SPACE, n, terminal=True))
    envs.reset()
    said: list = []
    envs.step([0, 0, 0], [0, 1, 2], None, said, hook)
    assert said == [1]  # env 1 said {"t": ...}: not answered here
    assert answered.tolist() == [7 << 1, 0, 7 << 1]
    assert rows[0, 1] == 2  # two answers counted


def test_the_c_loop_refuses_a_hook_it_cannot_call():
    envs = EnvSlice([lambda: ScriptedEnv(["quiet"])] * 2)
    envs.reset()
    with pytest.raises(TypeError, match="on_done must be None, a callable or an on_done capsule"):
        env_slice._kernel.step_quiet(envs._rows, [0, 0], 0, 0, 2, [], 5, [])
    with pytest.raises(TypeError, match="on_done and said"):
        env_slice._kernel.step_quiet(envs._rows, [0, 0], 0, 0, 2, [], lambda k: None)


def test_an_env_that_empties_the_slice_mid_loop_is_an_index_error_not_a_crash():
    class Emptying(ScriptedEnv):
        def step(self, action):
            envs.envs.clear()  # env code reaching into the slice's list
            return super().step(action)

    envs = EnvSlice([lambda: Emptying(["quiet"]), lambda: ScriptedEnv(["quiet"])])
    envs.reset()
    k, result, error, resetting, _ = env_slice._kernel.step_quiet(envs._rows, [0, 0], 0, 0, 2, [])
    assert (k, result, resetting) == (1, None, False)  # env 1's call failed, as any env failure
    assert isinstance(error, IndexError) and "env 1 is gone from the slice's list" in str(error)


def test_an_info_is_copied_before_the_reset_that_may_change_it():
    class Reused(ScriptedEnv):
        info: dict = {}

        def reset(self, *, seed=None, options=None):
            self.info["t"] = 0
            return _obs(0), self.info

        def step(self, action):
            self.t += 1
            self.info["t"] = self.t
            return _obs(self.t), 1.0, True, False, self.info  # every step ends the episode

    envs = EnvSlice([lambda: Reused(["quiet"])])
    envs.attach(BatchBuffers.allocate(SPACE, 1, terminal=True))
    envs.reset()
    assert envs.step([0]) == [{"t": 1}]  # the step's info, not the reset's update of the same dict
    assert envs.reset_infos == [{"t": 0}]


def test_infos_are_fresh_dicts():
    envs = EnvSlice([lambda: ScriptedEnv(["quiet"])] * 3 + [lambda: ScriptedEnv(["info"])])
    envs.reset()
    infos = envs.step([0, 0, 0, 0])
    assert infos[:3] == [{}, {}, {}] and list(infos[3]) == ["t"]
    assert len({id(info) for info in infos}) == 4
    infos[0]["mine"] = infos[3]["mine"] = 1
    assert envs.step([0, 0, 0, 0])[:3] == [{}, {}, {}]
    assert "mine" not in envs.envs[3].step(0)[4]


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
        monkeypatch.setattr(env_slice, "_kernel", None)
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
        monkeypatch.setattr(env_slice, "_kernel", None)
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
        monkeypatch.setattr(env_slice, "_kernel", None)
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
    kernel = env_slice._kernel
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
