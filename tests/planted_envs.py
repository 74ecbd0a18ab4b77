"""An env that returns from its next step what a test planted in it, built afresh in its
own process (module level, so spawned workers and Ray actors import it).

A test plants results with ``venv.set_attr("plan", {env_index: Planted(...)})``; each env
takes its own entry at its next step (once) and builds it there: an observation from a
recipe (``("array", values, dtype, layout)``: its memory layout survives no pickling, so
it is made where the env runs), the reward and flags as they came, an info from a
recipe (a dict, a dict subclass whose method raises, or any other value). With no entry
a step is quiet: observation ``[t, index]``, reward 1.0, no episode end, an empty info.
"""
from __future__ import annotations

import os
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["ACTION_SPACES", "RAISING_INFOS", "ActionEnv", "Planted", "PlantedEnv", "build_info", "build_obs"]

OBS_SPACE = spaces.Box(-np.inf, np.inf, (2,), np.float32)


class Planted(NamedTuple):
    """One step's result, as recipes (see the module's docstring)."""

    obs: tuple = ("quiet",)
    reward: Any = 1.0
    terminated: Any = False
    truncated: Any = False
    info: tuple = ("dict", {})


def build_obs(recipe: tuple, quiet: np.ndarray) -> Any:
    """The observation ``recipe`` describes: ``("quiet",)``, ``("value", x)`` (as it came),
    or ``("array", values, dtype, layout)`` with layout ``C``, ``F`` (a row of a
    Fortran array), ``strided``, ``readonly``, ``big-endian`` or ``0-stride``."""
    kind = recipe[0]
    if kind == "quiet":
        return quiet
    if kind == "value":
        return recipe[1]
    _, values, dtype, layout = recipe
    with np.errstate(over="ignore", invalid="ignore"):  # the recipe may ask for a value its dtype cannot hold
        arr = np.asarray(values, dtype=dtype)
    if layout == "F":
        return np.asfortranarray(np.stack([arr, arr]))[0]  # a row of a Fortran array: strided
    if layout == "strided":
        return np.repeat(arr, 2)[::2] if arr.ndim == 1 else arr
    if layout == "readonly":
        arr.flags.writeable = False
        return arr
    if layout == "big-endian":
        return arr.astype(arr.dtype.newbyteorder(">")) if arr.dtype.kind in "iufc" else arr
    if layout == "0-stride":
        return np.broadcast_to(arr[:1], arr.shape) if arr.size else arr
    return arr


def _raises(method: str) -> Any:
    def broken(self: dict, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"info.{method}() raised on purpose")
    return broken


class LenRaises(dict):
    __len__ = _raises("__len__")


class KeysRaises(dict):
    keys = _raises("keys")


class IterRaises(dict):
    __iter__ = _raises("__iter__")


class GetitemRaises(dict):
    __getitem__ = _raises("__getitem__")


class ReprRaises(dict):
    __repr__ = _raises("__repr__")


#: dicts whose method (the key) raises
RAISING_INFOS = {"__len__": LenRaises, "keys": KeysRaises, "__iter__": IterRaises, "__getitem__": GetitemRaises,
                 "__repr__": ReprRaises}


class SubclassInfo(dict):
    """An ordinary dict subclass."""


class ReduceRaises:
    """A value whose pickling raises something other than a PicklingError."""

    def __reduce__(self) -> Any:
        raise RuntimeError("this value refuses to be pickled")


def build_info(recipe: tuple) -> Any:
    """The info ``recipe`` describes: ``("dict", d)``, ``("subclass", d)``, ``("raising",
    method, d)`` (a dict whose ``method`` raises), ``("unpicklable",)`` (a dict holding a
    value whose pickling raises) or ``("value", x)`` (as it came)."""
    kind = recipe[0]
    if kind == "dict":
        return dict(recipe[1])
    if kind == "subclass":
        return SubclassInfo(recipe[1])
    if kind == "raising":
        return RAISING_INFOS[recipe[1]](recipe[2])
    if kind == "unpicklable":
        return {"callback": ReduceRaises()}
    return recipe[1]


class PlantedEnv(gym.Env):
    """Steps quietly unless a result is planted for it (``plan``: env index -> ``Planted``);
    an ended episode resets to ``[0, index]``."""

    observation_space = OBS_SPACE
    action_space = spaces.Discrete(2)

    def __init__(self, index: int = 0) -> None:
        self.index, self.t, self.plan = index, 0, {}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return np.array([0.0, self.index], np.float32), {}

    def pid(self) -> int:
        """The process this env runs in."""
        return os.getpid()

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        self.t += 1
        planted, self.plan = self.plan.get(self.index), {}
        quiet = np.array([self.t, self.index], np.float32)
        if planted is None:
            return quiet, 1.0, False, False, {}
        return (build_obs(planted.obs, quiet), planted.reward, planted.terminated, planted.truncated,
                build_info(planted.info))


#: the action spaces an ``ActionEnv`` takes, by name
ACTION_SPACES = {
    "discrete": spaces.Discrete(3),
    "discrete-start": spaces.Discrete(3, start=-1),
    "multi-discrete": spaces.MultiDiscrete([2, 3], start=[1, 0]),
    "multi-binary": spaces.MultiBinary(3),
    "box": spaces.Box(-1.0, 1.0, (2, 1), np.float32),
}


class ActionEnv(gym.Env):
    """Records every action it is given (``actions``); observation: its step count."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float32)

    def __init__(self, space: str = "discrete") -> None:
        self.action_space = ACTION_SPACES[space]
        self.actions: list = []

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.actions = []
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.actions.append(np.asarray(action).tolist())
        return np.array([len(self.actions)], np.float32), 1.0, False, False, {}
