"""RunningMeanStd and VecNormalize: statistics, reward scaling, freezing, save / load."""
from __future__ import annotations

import functools
import json
import os

import gymnasium as gym
import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.envs import SeededEnv
from tests.wrapper_envs import DictFrameEnv, ScriptedEnv
from vec_envs import DummyVecEnv
from vec_envs.wrappers import (
    RunningMeanStd,
    VecFrameStack,
    VecNormalize,
    VecNormalizeFileError,
    running_mean_std,
    vec_normalize,
)

N = 3
REWARDS = [[1.0, -2.0, 0.5, 3.0], [0.0, 4.0, -1.0], [2.5, 2.5, -0.5, 1.0, 0.0]]
ENDS = [(2, 9, 10), (4, 5, 11), (7,)]


def scripted_fns(shape=(2, 3)):
    return [functools.partial(ScriptedEnv, REWARDS[i], ENDS[i], shape=shape) for i in range(N)]


def lockstep(venv, reference, steps, seed=0):
    """Reset and step ``venv`` and the bare ``reference`` with the same seed and actions."""
    venv.seed(seed)
    reference.seed(seed)
    yield venv.reset(), reference.reset()
    actions = np.zeros(venv.num_envs, np.int64)
    for _ in range(steps):
        yield venv.step(actions), reference.step(actions)


def with_moments(pairs):
    """For each ``(out, ref)`` of ``lockstep``: the step, both, the normalized and the raw
    observations, and NumPy's mean / var over every raw observation so far."""
    seen = []
    for step, (out, ref) in enumerate(pairs):
        obs, raw = (out, ref) if step == 0 else (out[0], ref[0])
        seen.append(raw)
        everything = np.concatenate(seen)
        yield (step, out, ref, obs, raw, everything.mean(axis=0, dtype=np.float64),
               everything.var(axis=0, dtype=np.float64))


def normalized(raw, mean, var, eps=1e-8, clip=10.0):
    return np.clip((raw - mean) / np.sqrt(var + eps), -clip, clip)


# ------------------------------------------------------------------- RunningMeanStd
def draw(rng, dtype, size):
    if dtype == np.uint8:  # images: the exact integer path, extremes included
        batch = rng.integers(0, 256, (size, 4), dtype=np.uint8)
        batch[:, 0] = 255
        return batch
    return rng.normal(3.0, 2.0, (size, 4)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.uint8])
def test_running_mean_std_merges_batches_exactly(dtype):
    rng = np.random.default_rng(1)
    batches = [draw(rng, dtype, size) for size in (1, 7, 3, 256, 300, 2)]
    rms = RunningMeanStd(shape=(4,))
    for batch in batches:
        rms.update(batch)
    everything = np.concatenate(batches)
    np.testing.assert_allclose(rms.mean, everything.mean(axis=0, dtype=np.float64), rtol=1e-12)
    np.testing.assert_allclose(rms.var, everything.var(axis=0, dtype=np.float64), rtol=1e-12, atol=1e-12)
    assert rms.count == len(everything)
    assert rms.mean.dtype == rms.var.dtype == np.float64


def test_running_mean_std_rejects_a_wrong_shape():
    with pytest.raises(ValueError, match=r"expected a batch shaped \(batch_size, \*\(4,\)\), received shape \(2, 3\)"):
        RunningMeanStd(shape=(4,)).update(np.zeros((2, 3)))


@pytest.mark.parametrize("shape", [(7, 6, 4), (20, 30, 1)])  # within one block of columns, across blocks
def test_the_c_kernel_is_built_and_gives_the_numpy_paths_bits(shape, monkeypatch):
    assert running_mean_std._rms_kernel is not None, (
        "wrappers/_rms_kernel.c was not built (no C compiler at install?): VecNormalize falls back to "
        "NumPy, ~3x slower on images")
    rng = np.random.default_rng(5)
    fast, slow = RunningMeanStd(shape), RunningMeanStd(shape)
    for size in (1, 8, 3, 256, 5):
        batch = rng.integers(0, 256, (size, *shape), dtype=np.uint8)
        batch[:, 0] = 200  # constant pixels: variance exactly 0
        out_fast = fast.update_and_normalize(batch, 1e-8, 3.0)
        fast.update(batch[:2])
        with monkeypatch.context() as patch:
            patch.setattr(running_mean_std, "_rms_kernel", None)
            out_slow = slow.update_and_normalize(batch, 1e-8, 3.0)
            slow.update(batch[:2])
        np.testing.assert_array_equal(out_fast, out_slow)
        np.testing.assert_array_equal(fast.mean, slow.mean)
        np.testing.assert_array_equal(fast.var, slow.var)
        assert fast.count == slow.count
        assert out_fast.dtype == np.float32
    assert np.all(fast.var[0] == 0.0)


def test_the_c_kernel_rejects_arrays_it_cannot_use():
    kernel = running_mean_std._rms_kernel
    batch, mean, var = np.zeros((2, 3), np.uint8), np.zeros(3), np.ones(3)
    cases = [((batch[:, ::2], mean[:2], var[:2], None), "not C-contiguous"),
             ((np.zeros((300, 3), np.uint8), mean, var, None),
              "batch must be a C-contiguous uint8 array of 1..256 rows"),
             ((batch, mean.astype(np.float32), var, None),
              "mean must be a C-contiguous array of 3 items of format 'd'"),
             ((batch, mean, var, np.empty((2, 4), np.float32)), "out must be a C-contiguous array of 6 items")]
    for (b, m, v, out), message in cases:
        with pytest.raises(ValueError, match=message):
            kernel.update_normalize_u8(b, m, v, 0.0, out, 1e-8, 10.0)


def test_assigned_statistics_of_any_layout_are_taken_over():
    rms = RunningMeanStd((3, 4))
    rms.mean = np.asfortranarray(np.full((3, 4), 2.0))   # not C-contiguous
    rms.var = np.ones((3, 4), np.float32)                # not float64
    rms.count = 4.0
    batch = np.full((4, 3, 4), 6, np.uint8)
    rms.update(batch)
    np.testing.assert_allclose(rms.mean, 4.0)
    np.testing.assert_allclose(rms.var, (4 * 1.0 + 4 * 0.0 + 4 * 4 / 8 * 16) / 8)
    assert rms.mean.dtype == rms.var.dtype == np.float64
    assert rms.count == 8.0


class NoisyFrameEnv(gym.Env):
    """Seeded random uint8 frames (a constant corner), episodes of 5 steps."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(0, 255, (6, 7, 2), np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def _frame(self):
        frame = self.np_random.integers(0, 256, self.observation_space.shape, dtype=np.uint8)
        frame[:2, :2] = 99
        return frame

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._frame(), {}

    def step(self, action):
        self.t += 1
        return self._frame(), 1.0, self.t >= 5, False, {}


@pytest.mark.parametrize("make", BACKENDS)
def test_stacked_image_statistics_and_outputs_equal_numpy(make, closing):
    fns = [NoisyFrameEnv] * 3
    venv = closing(VecNormalize(VecFrameStack(make(fns), 3), norm_reward=False))
    reference = closing(VecFrameStack(DummyVecEnv(fns), 3))
    for step, out, ref, obs, raw, mean, var in with_moments(lockstep(venv, reference, steps=12)):
        np.testing.assert_allclose(venv.obs_rms.mean, mean, rtol=1e-12)
        np.testing.assert_allclose(venv.obs_rms.var, var, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(obs, normalized(raw, mean, var), rtol=1e-5, atol=1e-5)
        for i in np.flatnonzero(ref[2]) if step else ():
            np.testing.assert_allclose(out[3][i]["terminal_observation"],
                                       normalized(ref[3][i]["terminal_observation"], mean, var),
                                       rtol=1e-5, atol=1e-5)
    assert np.all(venv.obs_rms.var[:2, :2, -2:] == 0.0)  # the newest frame's constant corner


# ------------------------------------------------- statistics and reward scaling
class RewardReference:
    """The documented rule, by hand: reward / std of every discounted return seen so far."""

    def __init__(self, n, gamma, eps=1e-8, clip=10.0):
        self.ret, self.seen = np.zeros(n), []
        self.gamma, self.eps, self.clip = gamma, eps, clip

    def scale(self, rewards, dones):
        self.ret = self.gamma * self.ret + rewards
        self.seen.append(self.ret.copy())
        std = np.sqrt(np.var(np.concatenate(self.seen)) + self.eps)
        self.ret[dones] = 0.0
        return np.clip(rewards / std, -self.clip, self.clip)


@pytest.mark.parametrize("make", BACKENDS)
def test_statistics_and_reward_scaling_equal_numpy_references(make, closing):
    venv = closing(VecNormalize(make(scripted_fns()), gamma=0.9, clip_reward=100.0))
    reference = closing(DummyVecEnv(scripted_fns()))
    rewards_ref, ends = RewardReference(N, gamma=0.9, clip=100.0), 0
    for step, out, ref, obs, raw, mean, var in with_moments(lockstep(venv, reference, steps=16)):
        np.testing.assert_allclose(venv.obs_rms.mean, mean, rtol=1e-6)
        np.testing.assert_allclose(venv.obs_rms.var, var, rtol=1e-6)
        assert venv.obs_rms.count == (step + 1) * N
        np.testing.assert_array_equal(venv.get_original_obs(), raw)
        assert obs.dtype == np.float32
        assert obs.shape == (N, 2, 3)
        np.testing.assert_allclose(obs, normalized(raw, mean, var), rtol=1e-5, atol=1e-5)
        if step == 0:
            continue
        assert out[1].dtype == np.float32
        np.testing.assert_allclose(out[1], rewards_ref.scale(ref[1], ref[2]), rtol=1e-5)
        np.testing.assert_array_equal(venv.get_original_reward(), ref[1])
        np.testing.assert_array_equal(out[2], ref[2])
        for i in np.flatnonzero(ref[2]):  # terminal obs: normalized, not counted
            ends += 1
            np.testing.assert_allclose(out[3][i]["terminal_observation"],
                                       normalized(ref[3][i]["terminal_observation"], mean, var),
                                       rtol=1e-5, atol=1e-5)
    assert step == 16
    assert ends == 7  # the script's episode ends
    assert np.all(np.sign(out[1]) == np.sign(ref[1]))  # no mean subtracted


def test_dict_observations_normalize_the_chosen_keys_only(closing):
    venv = closing(VecNormalize(DummyVecEnv([DictFrameEnv] * 2), norm_obs_keys=["vec"], norm_reward=False))
    obs = venv.reset()
    assert obs["image"].dtype == np.uint8
    assert obs["vec"].dtype == np.float32
    vecs = [venv.get_original_obs()["vec"]]
    for _ in range(4):  # DictFrameEnv episodes last 4 steps
        obs, _, dones, infos = venv.step([0, 0])
        vecs.append(venv.get_original_obs()["vec"])
    everything = np.concatenate(vecs)
    np.testing.assert_allclose(venv.obs_rms["vec"].mean, everything.mean(axis=0, dtype=np.float64), rtol=1e-6)
    np.testing.assert_array_equal(obs["image"], venv.get_original_obs()["image"])
    assert set(venv.obs_rms) == {"vec"}
    assert venv.observation_space["vec"].dtype == np.float32
    terminal = infos[0]["terminal_observation"]
    assert dones[0]
    assert terminal["image"].dtype == np.uint8
    assert terminal["vec"].dtype == np.float32


def test_unsupported_spaces_and_keys_are_clear_errors():
    from tests.envs import DictObsEnv

    with pytest.raises(ValueError, match=r"norm_obs_keys entry 'nested' is not a Box key .*valid keys: \['pos'\]"):
        VecNormalize(DummyVecEnv([DictObsEnv]), norm_obs_keys=["nested"])
    with pytest.raises(ValueError, match="only supports Box or Dict observation spaces.*norm_obs=False"):
        VecNormalize(DummyVecEnv([lambda: gym.make("FrozenLake-v1")]))
    assert VecNormalize(DummyVecEnv([lambda: gym.make("FrozenLake-v1")]), norm_obs=False).reset().shape == (1,)
    with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\], received 1.5"):
        VecNormalize(DummyVecEnv([SeededEnv]), gamma=1.5)


# ------------------------------------------------------------------- rewards
def test_reward_clipping(closing):
    venv = closing(VecNormalize(DummyVecEnv(scripted_fns()), norm_obs=False, clip_reward=0.25))
    venv.reset()
    for _ in range(6):
        _, rewards, _, _ = venv.step(np.zeros(N, np.int64))
        assert np.all(np.abs(rewards) <= 0.25)
    assert np.any(np.abs(rewards) == np.float32(0.25))


def test_training_false_freezes_the_statistics(closing):
    venv = closing(VecNormalize(DummyVecEnv(scripted_fns())))
    venv.reset()
    for _ in range(5):
        venv.step(np.zeros(N, np.int64))
    venv.training = False
    frozen = (venv.obs_rms.mean.copy(), venv.obs_rms.var.copy(), venv.obs_rms.count,
              venv.ret_rms.var.copy(), venv.ret_rms.count, venv.returns.copy())
    for _ in range(7):
        obs, rewards, _, _ = venv.step(np.zeros(N, np.int64))
        np.testing.assert_allclose(obs, normalized(venv.get_original_obs(), frozen[0], frozen[1]), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(rewards, np.clip(venv.get_original_reward() / np.sqrt(frozen[3] + 1e-8), -10, 10),
                                   rtol=1e-6)
    venv.reset()
    np.testing.assert_array_equal(venv.obs_rms.mean, frozen[0])
    np.testing.assert_array_equal(venv.obs_rms.var, frozen[1])
    assert (venv.obs_rms.count, venv.ret_rms.count) == (frozen[2], frozen[4])
    np.testing.assert_array_equal(venv.ret_rms.var, frozen[3])


# --------------------------------------------------------------- save and load
def trained(steps=6):
    venv = VecNormalize(DummyVecEnv(scripted_fns()), gamma=0.95, clip_obs=5.0)
    venv.seed(3)
    venv.reset()
    for _ in range(steps):
        venv.step(np.zeros(N, np.int64))
    return venv


def test_save_load_round_trip_gives_identical_outputs(closing, tmp_path):
    original = closing(trained())
    path = tmp_path / "stats.npz"
    original.save(path)
    loaded = closing(VecNormalize.load(path, DummyVecEnv(scripted_fns())))
    assert loaded.settings() == original.settings()
    assert loaded.training
    for a, b in [(loaded.obs_rms, original.obs_rms), (loaded.ret_rms, original.ret_rms)]:
        np.testing.assert_array_equal(a.mean, b.mean)
        np.testing.assert_array_equal(a.var, b.var)
        assert a.count == b.count
    original.training = loaded.training = False
    for step, (out, again) in enumerate(lockstep(loaded, original, steps=8, seed=11)):
        if step == 0:
            np.testing.assert_array_equal(out, again)
            continue
        for x, y in zip(out[:3], again[:3]):  # obs, rewards, dones
            np.testing.assert_array_equal(x, y)


def test_the_file_holds_no_pickle_and_no_temp_file_is_left(tmp_path):
    venv = trained()
    path = tmp_path / "stats.npz"
    venv.save(path)
    venv.save(path)  # replaces
    assert os.listdir(tmp_path) == ["stats.npz"]
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    assert all(a.dtype != object for a in arrays.values())
    metadata = json.loads(str(arrays["metadata"]))
    assert metadata["format_version"] == vec_normalize.FORMAT_VERSION
    assert metadata["settings"]["gamma"] == 0.95
    assert metadata["observation_space"]["shape"] == [2, 3]
    np.testing.assert_array_equal(arrays["obs_rms.0.mean"], venv.obs_rms.mean)


def test_a_failed_save_keeps_the_old_file(tmp_path, monkeypatch):
    venv = trained()
    path = tmp_path / "stats.npz"
    venv.save(path)
    before = path.read_bytes()
    venv.step(np.zeros(N, np.int64))

    def broken_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(vec_normalize.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        venv.save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["stats.npz"]


def test_truncated_and_corrupt_files_are_clear_errors(tmp_path):
    path = tmp_path / "stats.npz"
    trained().save(path)
    data = path.read_bytes()
    for name, content in [("truncated", data[: len(data) // 2]), ("garbage", b"not a file" * 50),
                          ("empty", b"")]:
        bad = tmp_path / f"{name}.npz"
        bad.write_bytes(content)
        with pytest.raises(VecNormalizeFileError, match="truncated, corrupt, or was not written"):
            VecNormalize.load(bad, DummyVecEnv(scripted_fns()))
    pickled = tmp_path / "pickled.npy"
    np.save(pickled, np.array([{"mean": 0}], dtype=object), allow_pickle=True)
    with pytest.raises(VecNormalizeFileError, match="not a readable VecNormalize file"):
        VecNormalize.load(pickled, DummyVecEnv(scripted_fns()))


def rewrite(path, change):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    metadata = json.loads(str(arrays["metadata"]))
    change(metadata, arrays)
    arrays["metadata"] = np.array(json.dumps(metadata))
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def test_a_newer_format_version_is_a_clear_error(tmp_path):
    path = tmp_path / "stats.npz"
    trained().save(path)
    rewrite(path, lambda metadata, arrays: metadata.update(format_version=vec_normalize.FORMAT_VERSION + 1))
    with pytest.raises(VecNormalizeFileError, match=f"format version {vec_normalize.FORMAT_VERSION + 1}, newer"):
        VecNormalize.load(path, DummyVecEnv(scripted_fns()))


def test_missing_arrays_are_a_clear_error(tmp_path):
    path = tmp_path / "stats.npz"
    trained().save(path)
    rewrite(path, lambda metadata, arrays: arrays.pop("ret_rms.var"))
    with pytest.raises(VecNormalizeFileError, match="missing array 'ret_rms.var'"):
        VecNormalize.load(path, DummyVecEnv(scripted_fns()))


def test_a_file_for_another_observation_space_is_a_clear_error(tmp_path):
    path = tmp_path / "stats.npz"
    trained().save(path)
    with pytest.raises(VecNormalizeFileError,
                       match=r"statistics for observation space Box\(-inf, inf, \(2, 3\), float32\), but the "
                             r"venv passed to load\(\) has observation space Box\(-inf, inf, \(3,\), float32\)"):
        VecNormalize.load(path, DummyVecEnv(scripted_fns(shape=(3,))))
