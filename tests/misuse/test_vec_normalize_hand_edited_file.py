"""VecNormalize.load refuses a saved setting of the wrong type or out of range, naming it
(a hand-edited file would otherwise load and quietly misbehave)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.envs import SeededEnv
from vec_envs import DummyVecEnv
from vec_envs.wrappers.vec_normalize import VecNormalize, VecNormalizeFileError


def edited(tmp_path, name, value):
    """A file saved by VecNormalize.save, with setting ``name`` rewritten as JSON ``value``."""
    path = tmp_path / "stats.npz"
    with DummyVecEnv([SeededEnv] * 2) as venv:
        VecNormalize(venv).save(path)
    with np.load(path) as npz:
        arrays = {key: npz[key] for key in npz.files}
    metadata = json.loads(str(arrays["metadata"][()]))
    text = json.dumps(metadata).replace(f'"{name}": {json.dumps(metadata["settings"][name])}', f'"{name}": {value}')
    arrays["metadata"] = np.array(text)
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(("name", "value", "message"), [
    pytest.param("epsilon", "Infinity", r"setting 'epsilon' must be a finite number > 0, found inf \(float\)",
                 id="epsilon-infinite"),
    pytest.param("epsilon", "NaN", r"setting 'epsilon' must be a finite number > 0, found nan", id="epsilon-nan"),
    pytest.param("training", '"false"', r"setting 'training' must be true or false \(a JSON boolean\), found "
                                        r"'false' \(str\)", id="training-str"),
    pytest.param("norm_obs", "1", r"setting 'norm_obs' must be true or false .*found 1 \(int\)", id="norm-obs-int"),
    pytest.param("clip_obs", "-1", r"setting 'clip_obs' must be a finite number > 0, found -1", id="clip-negative"),
    pytest.param("clip_reward", '"10"', r"setting 'clip_reward' must be a finite number > 0, found '10' \(str\)",
                 id="clip-str"),
    pytest.param("gamma", "1.5", r"setting 'gamma' must be a number in \[0, 1\], found 1.5", id="gamma-above-1"),
    pytest.param("gamma", "true", r"setting 'gamma' must be a number in \[0, 1\], found True \(bool\)",
                 id="gamma-bool"),
    pytest.param("norm_obs_keys", '"obs"', r"setting 'norm_obs_keys' must be null or a list of strings, found "
                                           r"'obs' \(str\)", id="keys-str"),
])
def test_a_bad_setting_is_named(tmp_path, name, value, message):
    path = edited(tmp_path, name, value)
    with DummyVecEnv([SeededEnv] * 2) as venv:
        with pytest.raises(VecNormalizeFileError, match=r"VecNormalize.load\(\): .*stats.npz .*" + message):
            VecNormalize.load(path, venv)


def test_an_unknown_setting_is_named(tmp_path):
    path = edited(tmp_path, "gamma", '0.9, "gama": 0.9')
    with DummyVecEnv([SeededEnv] * 2) as venv:
        with pytest.raises(VecNormalizeFileError, match=r"unknown setting 'gama'; the settings are \['clip_obs'"):
            VecNormalize.load(path, venv)


def test_an_untouched_file_loads(tmp_path):
    path = edited(tmp_path, "gamma", "0.9")
    with DummyVecEnv([SeededEnv] * 2) as venv:
        loaded = VecNormalize.load(path, venv)
        assert loaded.gamma == 0.9
        assert loaded.training is True
