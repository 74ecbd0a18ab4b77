"""check_env finds each fault an env can bring into a VecEnv, one test per fault, naming the env,
the step and the value where there is one, with what to change; and it finds nothing on envs
that vectorize well (CartPole, Pong, a PettingZoo env through the multi-agent rows)."""
from __future__ import annotations

import functools
import re

import pytest

from tests.checking import bad_envs
from vec_envs import check_env
from vec_envs.checking import CheckReport
from vec_envs.make_vec_env import make_env

STEPS = 30


def findings(report: CheckReport, check: str) -> list[str]:
    """The problems found by ``check`` (every check whose name starts with it)."""
    return [f.problem for f in report.findings if f.check.startswith(check)]


def results(report: CheckReport) -> dict[str, str]:
    return {row.check: row.result for row in report.rows}


def test_a_value_a_uint8_box_cannot_hold_is_named_with_its_env_step_and_value():
    report = check_env(bad_envs.WrapsUint8, steps=STEPS)
    assert findings(report, "spaces: observations") == [
        "env 0, step 4: obs[1] = 300 (int64) does not fit uint8: the VecEnv raises at this step (2 more results "
        "like it)"]
    assert "dtype that holds these values" in report.findings[0].fix
    assert report.exit_status == 1


def test_float64_observations_beyond_float32s_range_are_found():
    report = check_env(bad_envs.BeyondFloat32, steps=STEPS)
    found = findings(report, "spaces: observations")
    assert found and found[0].startswith("env 0, step 2: obs[2] = 1e+39 (float64) does not fit float32"), found
    assert "dtype=np.float64" in report.findings[0].fix


def test_float64_observations_rounded_into_a_float32_box_are_found():
    report = check_env(bad_envs.RoundedToFloat32, steps=STEPS)
    found = findings(report, "spaces: observations")
    pattern = r"env 0, step 0 \(its reset\): obs\[0\] = \S+ \(float64\) is stored as \S+ \(float32\), rounded"
    assert len(found) == 1 and re.fullmatch(pattern + r" \(\d+ more results like it\)", found[0]), found


def test_an_env_drawing_from_the_global_numpy_generator_is_blamed_and_backends_disagree():
    report = check_env(bad_envs.GlobalRandom, steps=STEPS)
    [determinism] = findings(report, "determinism")
    assert "it draws from NumPy's global generator" in determinism
    assert "self.np_random" in next(f.fix for f in report.findings if f.check == "determinism")
    differing = [f.check for f in report.findings if f.check.startswith("backends: SubprocVecEnv")]
    assert differing, report.text()  # a worker process draws other values than this one


def test_a_factory_returning_one_shared_instance_is_found_and_nothing_else_runs():
    env = bad_envs.CountingEnv()
    report = check_env(lambda: env, steps=STEPS)
    assert findings(report, "factory: a new env per call") == [
        "two calls of the factory returned the same CountingEnv object"]
    assert results(report) == {"factory: a new env per call": "FOUND", "the other checks": "skipped"}


def test_a_factory_that_cannot_be_pickled_for_spawned_workers_is_found():
    report = check_env(bad_envs.unpicklable_factory(), steps=STEPS)
    [problem] = findings(report, "factory: picklable")
    assert "cannot pickle '_thread.lock' object" in problem
    spawned = [row for row in report.rows if "spawn" in row.check or "kernels off" in row.check]
    assert spawned and all(row.result == "skipped" for row in spawned)
    assert report.exit_status == 1 and len(report.findings) == 1


def test_an_env_putting_terminal_observation_in_its_own_info_is_found():
    report = check_env(bad_envs.OwnTerminalObservation, steps=STEPS)
    assert findings(report, "infos: keys") == [
        "env 0, step 10: key 'terminal_observation': the VecEnv writes the ended episode's last observation there "
        "(same-step autoreset) (2 more results like it)"]
    assert len(report.findings) == 1, report.text()


def test_an_info_that_cannot_be_pickled_is_found():
    report = check_env(bad_envs.UnpicklableInfo, steps=STEPS)
    [problem] = findings(report, "infos: picklable")
    assert problem.startswith("env 0, step 1: info cannot be pickled (key 'lock'): TypeError: cannot pickle "
                              "'_thread.lock' object")
    assert len(report.findings) == 1, report.text()


def test_a_healthy_env_gives_nothing_and_every_check_runs():
    report = check_env(bad_envs.CountingEnv, steps=STEPS)
    assert report.findings == [], report.text()
    assert set(results(report).values()) == {"ok"}, report.text()
    assert report.exit_status == 0
    assert report.text().startswith("check_env(tests.checking.bad_envs:CountingEnv): 2 envs, 30 steps each, seed 0:")


@pytest.mark.parametrize("env_id", ["CartPole-v1", pytest.param("ALE/Pong-v5", marks=pytest.mark.slow)])  # (emulators)
def test_nothing_is_found_on_cartpole_and_pong(env_id):
    pytest.importorskip("ale_py")
    report = check_env(functools.partial(make_env, env_id), steps=STEPS)
    assert report.findings == [], report.text()
    assert results(report)["backends: DummyVecEnv, C kernels off"] == "ok"


def test_nothing_is_found_on_a_pettingzoo_env_through_the_multi_agent_rows():
    simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3")
    report = check_env(simple_spread_v3.parallel_env, steps=STEPS)
    assert report.findings == [], report.text()
    assert results(report)["backends: multi-agent rows, SubprocVecEnv, spawn"] == "ok"


def test_bad_arguments_are_refused_before_any_env_is_made():
    made = []
    with pytest.raises(ValueError, match=r"check_env\(\): steps must be an int >= 1, received 0"):
        check_env(lambda: made.append(1), steps=0)
    with pytest.raises(TypeError, match="env_fn must be a zero-argument env factory"):
        check_env(bad_envs.CountingEnv())
    assert made == []


def test_frames_tile_images_cannot_use_are_found_and_good_ones_pass():
    report = check_env(bad_envs.FloatFrames, steps=STEPS)
    assert findings(report, "render") == [
        "render() returned a (4, 6, 3) float64 array; tile_images and render('human') need (H, W, 3) uint8 frames"]
    good = check_env(functools.partial(make_env, "CartPole-v1", render_mode="rgb_array"), steps=STEPS)
    assert next(row.detail for row in good.rows if row.check == "render").startswith(
        "render_mode rgb_array: a (400, 600, 3) uint8 frame per env")
    assert good.findings == [], good.text()
