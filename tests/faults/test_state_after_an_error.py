"""The table "The state after an error" of docs/contract.md holds on every backend: each call it
names is open or refused with ``BrokenVecEnvError`` as it says, after an env failure and
after a Ctrl-C part-way through a call, on DummyVecEnv, SubprocVecEnv (``in_series`` 1
and auto, shared memory on and off), RayVecEnv, ALEVecEnv (Ctrl-C only) and a
multi-agent VecEnv; each call that the table says starts the envs afresh clears it.

The table is read from docs/contract.md, so the document and the behaviour cannot drift apart."""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tests import backends
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import BrokenVecEnvError

pytestmark = pytest.mark.slow  # kills, interrupts or fuzzes worker processes many times over

N = 2
API = Path(__file__).resolve().parents[2] / "docs" / "contract.md"
SLOW_S = 0.6  # the slow step a Ctrl-C stops


def read_table() -> dict[str, tuple[str, str]]:
    """Call name -> (after an env failure, after a Ctrl-C), each "open", "readable" or "refused"."""
    text = API.read_text()
    section = text.split("## The state after an error\n", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        failure, ctrl_c = (cell.split()[0].rstrip(":") for cell in cells[1:])
        for name in re.findall(r"`(\w+)(?:\(\))?`", cells[0]):
            table[name] = (failure, ctrl_c)
    return table


TABLE = read_table()
CLEARING = ("reset", "reset_async", "async_reset")


class TableEnv(gym.Env):
    """Steps quietly, then at its second step after a reset fails (``fault="fail"``) or
    takes ``SLOW_S`` (``fault="slow"``)."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)
    metadata = {"render_modes": ["rgb_array"]}
    render_mode = "rgb_array"

    def __init__(self, fault: str) -> None:
        self.fault, self.t = fault, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        if self.t == 2 and self.fault == "fail":
            raise RuntimeError("TableEnv fails on purpose")
        if self.t == 2 and self.fault == "slow":
            time.sleep(SLOW_S)
        return np.zeros(2, np.float32), 1.0, False, False, {}

    def render(self) -> np.ndarray:
        return np.zeros((4, 4, 3), np.uint8)


def relay(fault: str) -> Any:
    """A PettingZoo Relay that fails or is slow as a TableEnv is."""
    from tests.multiagent.parallel_envs import Relay

    class TableRelay(Relay):
        def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
            self.steps = 0
            return super().reset(seed=seed, options=options)

        def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
            self.steps += 1
            if self.steps == 2 and fault == "fail":
                raise RuntimeError("TableRelay fails on purpose")
            if self.steps == 2 and fault == "slow":
                time.sleep(SLOW_S)
            return super().step(actions)

    return TableRelay(render_mode="rgb_array")


def multiagent(fault: str, vec_env_cls: str) -> Any:
    from vec_envs.multiagent import make_multiagent_vec_env

    return make_multiagent_vec_env(functools.partial(_relay_by_name, fault), N, vec_env_cls=vec_env_cls)


def _relay_by_name(fault: str) -> Any:
    return relay(fault)


def ale(fault: str) -> Any:
    from vec_envs import ALEVecEnv

    return ALEVecEnv("Pong", num_envs=N)


def made_of(make: Callable[..., Any]) -> Callable[[str], Any]:
    return lambda fault: make([functools.partial(TableEnv, fault)] * N)


BACKENDS = [
    pytest.param(made_of(DummyVecEnv), id="dummy"),
    pytest.param(made_of(functools.partial(SubprocVecEnv, in_series=1)), id="subproc-series1-shm"),
    pytest.param(made_of(functools.partial(SubprocVecEnv, in_series="auto")), id="subproc-auto-shm"),
    pytest.param(made_of(functools.partial(SubprocVecEnv, in_series=1, shared_memory=False)),
                 id="subproc-series1-pipes"),
    pytest.param(made_of(functools.partial(SubprocVecEnv, in_series="auto", shared_memory=False)),
                 id="subproc-auto-pipes"),
    pytest.param(made_of(functools.partial(backends.ray, in_series=1)), id="ray", marks=backends.ray_marks),
    pytest.param(functools.partial(multiagent, vec_env_cls="subproc"), id="multiagent-subproc"),
    pytest.param(functools.partial(multiagent, vec_env_cls="dummy"), id="multiagent-dummy"),
]


def calls(venv: Any) -> dict[str, Callable[[], Any]]:
    """One call per name of the table (the clearing ones aside)."""
    zeros = np.zeros(venv.num_envs, np.int64)
    return {
        "seed": lambda: venv.seed(3), "set_options": lambda: venv.set_options({}),
        "num_envs": lambda: venv.num_envs, "observation_space": lambda: venv.observation_space,
        "action_space": lambda: venv.action_space,
        "get_attr": lambda: venv.get_attr("render_mode"), "set_attr": lambda: venv.set_attr("probe", 1),
        "env_method": lambda: venv.env_method("render"), "env_is_wrapped": lambda: venv.env_is_wrapped(gym.Wrapper),
        "get_images": venv.get_images, "render": lambda: venv.render("rgb_array"),
        "step": lambda: venv.step(zeros), "step_async": lambda: venv.step_async(zeros), "step_wait": venv.step_wait,
        "recv": venv.recv, "send": lambda: venv.send(zeros, np.arange(venv.num_envs)),
        "reset_single_env": lambda: venv.reset_single_env(0),
        "get_states": venv.get_states, "set_states": lambda: venv.set_states([None] * venv.num_envs),
        "step_batch": lambda: venv.step_batch(zeros),
    }


def fail(venv: Any) -> None:
    """Reset, one step, then a step in which an env raises."""
    venv.reset()
    zeros = np.zeros(venv.num_envs, np.int64)
    venv.step(zeros)
    with pytest.raises(Exception, match="fails on purpose"):
        venv.step(zeros)


def interrupt(venv: Any) -> None:
    """Reset, one step, then a Ctrl-C (SIGINT to this process) while a slow step runs; for
    an engine too fast to be caught in one call, steps until one is caught part-way."""
    zeros = np.zeros(venv.num_envs, np.int64)
    for _ in range(50):
        venv.reset()
        venv.step(zeros)
        timer = threading.Timer(0.2 if venv.__class__.__name__ != "ALEVecEnv" else 0.01,
                                os.kill, (os.getpid(), signal.SIGINT))
        try:
            timer.start()
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                venv.step(zeros)
        except KeyboardInterrupt:
            pass
        finally:
            timer.cancel()
            timer.join()
        try:
            venv.step_async(zeros)  # refused when the Ctrl-C landed part-way through a call
        except BrokenVecEnvError:
            return
        venv.step_wait()
    raise AssertionError("no Ctrl-C landed part-way through a call in 50 tries")


def check_table(venv: Any, column: int) -> None:
    """Every non-clearing call of the table on a broken ``venv``, then each clearing call."""
    for name, call in calls(venv).items():
        expected = TABLE[name][column]
        if expected == "refused":
            with pytest.raises(BrokenVecEnvError, match=r"call reset\(\) to start every env afresh, or close\(\)"):
                call()
        else:
            try:
                call()
            except BrokenVecEnvError as exc:
                raise AssertionError(f"{name}() refused, the table says {expected}: {exc}") from exc
            except Exception:  # noqa: S110 - open: what the call does otherwise is not this test's business
                pass


def check_clears(venv: Any, provoke: Callable[[Any], None], name: str) -> None:
    provoke(venv)
    if name == "reset":
        venv.reset()
    elif name == "reset_async":
        venv.reset_async()
        venv.reset_wait()
    else:
        venv.async_reset()
        venv.recv()
    venv.reset()
    venv.step(np.zeros(venv.num_envs, np.int64))  # usable again


def test_the_table_names_every_call_once():
    with DummyVecEnv([functools.partial(TableEnv, "none")]) as venv:
        named = set(calls(venv)) | set(CLEARING) | {"reset_wait", "close"}
    assert set(TABLE) == named
    assert all(TABLE[name] == ("open", "open") for name in (*CLEARING, "reset_wait", "close", "seed", "set_options"))


@pytest.mark.timeout(240)
@pytest.mark.parametrize("make", BACKENDS)
@pytest.mark.parametrize("column, fault, provoke", [(0, "fail", fail), (1, "slow", interrupt)],
                         ids=["after-an-env-failure", "after-ctrl-c"])
def test_each_call_is_open_or_refused_as_the_table_says(make, column, fault, provoke, closing):
    venv = closing(make(fault))
    provoke(venv)
    check_table(venv, column)
    for name in CLEARING:
        if name == "reset_async" and not hasattr(venv, "reset_async"):
            continue
        check_clears(venv, provoke, name)
    venv.close()


@pytest.mark.timeout(240)
@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="ale-py is not installed")
def test_ale_vec_env_after_ctrl_c_is_open_or_refused_as_the_table_says(closing):
    venv = closing(ale("slow"))
    interrupt(venv)
    check_table(venv, 1)
    for name in ("reset", "async_reset"):
        check_clears(venv, interrupt, name)
