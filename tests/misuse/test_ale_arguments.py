"""ALEVecEnv checks ``timeout`` and ``num_threads`` with the checkers every backend uses."""
from __future__ import annotations

import pytest

pytest.importorskip("ale_py", reason="ALEVecEnv needs ale-py: pip install -e '.[atari]'")

from vec_envs import ALEVecEnv  # noqa: E402

TIMEOUT = r"ALEVecEnv: timeout must be a number of seconds >= 0 or None \(no limit\), received "
THREADS = r"ALEVecEnv: num_threads must be an int >= 1 or None \(min\(batch_size, CPU count\)\), received "


@pytest.mark.parametrize(("timeout", "error", "message"), [
    pytest.param(-1, ValueError, TIMEOUT + "-1$", id="negative"),
    pytest.param(float("nan"), ValueError, TIMEOUT + "nan", id="nan"),
    pytest.param("5", TypeError, TIMEOUT + r"'5' \(str\)", id="str"),
])
def test_bad_timeout(timeout, error, message):
    with pytest.raises(error, match=message):
        ALEVecEnv("Pong", 2, timeout=timeout)


@pytest.mark.parametrize("num_threads", [-5, 0, 2.7, True, "abc"])
def test_bad_num_threads(num_threads):
    with pytest.raises(ValueError, match=THREADS + repr(num_threads).replace(".", r"\.")):
        ALEVecEnv("Pong", 2, num_threads=num_threads)


def test_good_values_are_taken(closing):
    venv = closing(ALEVecEnv("Pong", 2, timeout=5, num_threads=1))
    assert venv.timeout == 5.0
    assert venv.reset().shape[0] == 2
