"""What ``in_series="auto"`` should start, from what one env's step costs: one worker per CPU for
envs that compute (today's layout, the parent stepping a slice), more workers than CPUs, up to
a bound, for envs that mostly wait; and the probe that measures a step's wall and CPU time."""
from __future__ import annotations

import functools
import time

import gymnasium as gym
import numpy as np
import pytest

from vec_envs.worker_plan import (
    MAX_WORKERS_PER_CPU,
    MIN_WAIT_S,
    WAITING_BELOW,
    measure_step_cost,
    plan_workers,
    probe_step_cost,
)

MS = 1e-3


@pytest.mark.parametrize("num_envs, cpus, in_series, step_in_parent", [
    (8, 2, 4, True), (64, 2, 32, True), (64, 16, 4, True), (3, 8, 1, True), (1, 4, 1, False), (7, 2, 4, True),
], ids=["8-on-2", "64-on-2", "64-on-16", "fewer-envs-than-cpus", "one-env", "uneven"])
def test_envs_that_compute_keep_one_worker_per_cpu_and_a_slice_in_the_parent(num_envs, cpus, in_series,
                                                                             step_in_parent):
    plan = plan_workers(num_envs, cpus, wall_s=1 * MS, cpu_s=1 * MS)
    assert (plan.in_series, plan.step_in_parent, plan.waiting) == (in_series, step_in_parent, False)
    assert plan.workers == -(-num_envs // in_series)


def test_a_step_that_computes_at_least_half_the_time_keeps_todays_layout():
    assert not plan_workers(16, 2, wall_s=1 * MS, cpu_s=WAITING_BELOW * MS).waiting
    assert plan_workers(16, 2, wall_s=1 * MS, cpu_s=0.49 * MS).waiting


def test_a_short_step_keeps_todays_layout_however_little_it_computes():
    plan = plan_workers(16, 2, wall_s=MIN_WAIT_S / 2, cpu_s=0.0)
    assert (plan.in_series, plan.waiting) == (8, False)


def test_envs_that_wait_get_a_worker_per_env_when_the_cpus_allow():
    plan = plan_workers(16, 2, wall_s=1 * MS, cpu_s=0.02 * MS)  # W6: sleeps 0-2 ms
    assert (plan.in_series, plan.step_in_parent, plan.workers, plan.waiting) == (1, False, 16, True)


def test_envs_that_wait_part_of_the_time_get_cpus_over_busy_workers():
    plan = plan_workers(64, 4, wall_s=2 * MS, cpu_s=0.5 * MS)  # busy 1/4: 16 workers keep 4 CPUs busy
    assert (plan.workers, plan.in_series) == (16, 4)


def test_the_workers_are_bounded_per_cpu():
    plan = plan_workers(1000, 2, wall_s=10 * MS, cpu_s=0.0)
    assert plan.workers <= MAX_WORKERS_PER_CPU * 2
    assert plan.in_series == -(-1000 // (MAX_WORKERS_PER_CPU * 2))


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match=r"plan_workers\(\): cpus must be an int >= 1, received 0"):
        plan_workers(8, 0, 1e-3, 1e-3)
    with pytest.raises(ValueError, match="wall_s and cpu_s must be seconds >= 0"):
        plan_workers(8, 2, float("nan"), 1e-3)


class Sleeper(gym.Env):
    observation_space, action_space = gym.spaces.Box(0, 1, (1,), np.float32), gym.spaces.Discrete(2)

    def __init__(self, seconds: float) -> None:
        self.seconds, self.closed = seconds, False

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        time.sleep(self.seconds)
        return np.zeros(1, np.float32), 0.0, False, False, {}

    def close(self):
        self.closed = True


def test_the_probe_sees_a_sleeping_env_wait_and_a_computing_env_compute():
    made: list[Sleeper] = []
    sleeping = measure_step_cost(lambda: made.append(Sleeper(2e-3)) or made[-1], max_steps=10)
    assert sleeping.wall_s >= 2e-3 and sleeping.busy < WAITING_BELOW
    assert made[0].closed  # the throw-away env is closed
    computing = measure_step_cost(lambda: gym.make("CartPole-v1"))
    assert computing.busy > 0
    assert plan_workers(16, 2, sleeping.wall_s, sleeping.cpu_s).waiting


def test_the_probe_stops_at_its_time_budget_after_three_steps():
    started = time.perf_counter()
    cost = measure_step_cost(lambda: Sleeper(0.05), max_steps=50, max_seconds=0.01, warmup=0)
    assert cost.steps == 3
    assert time.perf_counter() - started < 1.0


def broken_env():
    raise RuntimeError("no display")


@pytest.mark.slow  # spawns the probe's process three times, once past its timeout
def test_the_probe_in_a_child_process_gives_none_when_the_env_fails_and_leaves_no_process():
    from tests.helpers import children

    before = {p.pid for p in children()}
    assert probe_step_cost(broken_env, "spawn", timeout=60) is None
    assert probe_step_cost(functools.partial(Sleeper, 5.0), "spawn", timeout=3) is None  # past its timeout: killed
    assert {p.pid for p in children()} - before == set()
    cost = probe_step_cost(functools.partial(Sleeper, 2e-3), "spawn", timeout=60)
    assert cost is not None and cost.busy < WAITING_BELOW
