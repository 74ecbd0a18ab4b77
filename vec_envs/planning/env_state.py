"""Snapshots of one env's state, for planning: take one, step on, restore it, step again.

Where the state of an env comes from, in this order:

1. ``get_state()`` / ``set_state(state)`` on the env or on any wrapper of it: the
   outermost layer that defines both covers itself and everything it wraps;
2. an ALE emulator (``env.unwrapped.ale``): see ``vec_envs.ale.ale_snapshot`` (a restored
   state replays identically, sticky actions included), plus the env's NumPy generator
   (stochastic frame skips);
3. otherwise a deep copy of the unwrapped env's attributes (pure-Python envs such as
   CartPole), leaving out its spaces, spec and rendering resources.

Wrappers above that layer keep their plain-data attributes (numbers, strings, arrays,
NumPy generators and lists / tuples / deques / dicts of those) in the state too:
TimeLimit's elapsed steps, a frame stack's frames, EpisodicLifeEnv's lives. Other
wrapper attributes (files, recorders, statistics objects) are shared, not restored, and
so is the bookkeeping of gymnasium's PassiveEnvChecker (which checks ran).

A state only restores into an env built the same way (same wrapper classes, same
unwrapped class and spec id); anything else raises ``ValueError``. An env that cannot
be copied raises ``TypeError`` saying which attribute failed and what to provide.

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("CartPole-v1")
    >>> _ = env.reset(seed=0)
    >>> state = get_env_state(env)
    >>> first = env.step(1)[0]
    >>> set_env_state(env, state)                  # back where it was
    >>> bool((env.step(1)[0] == first).all())
    True
    >>> set_env_state(gym.make("MountainCar-v0"), state)
    Traceback (most recent call last):
    ValueError: ...
"""
from __future__ import annotations

import copy
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec
from gymnasium.wrappers import PassiveEnvChecker

from vec_envs.ale.ale_snapshot import clone_ale, restore_ale
from vec_envs.types import EnvState  # defined with the contract; made and restored here

__all__ = ["EnvState", "get_env_state", "set_env_state", "describe_env"]

#: attributes of an unwrapped env that hold rendering resources, not simulation state
RENDER_ATTRS = frozenset({"screen", "clock", "window", "viewer"})
#: attributes every gymnasium wrapper has that configure it rather than hold state
WRAPPER_CONFIG_ATTRS = frozenset({"env", "_action_space", "_observation_space", "_metadata",
                                  "_cached_spec", "_saved_kwargs", "_reward_range"})
#: wrappers whose attributes are bookkeeping, not state
STATELESS_WRAPPERS = (PassiveEnvChecker,)
_SCALARS = (type(None), bool, int, float, complex, str, bytes, np.generic)
_SKIP = object()


class _SelfReference:
    """Stands in a copied state for the env itself (back-references): restored as the live env."""

    def __reduce__(self) -> str:
        return "_SELF"  # pickles by name: the same object in every process


_SELF = _SelfReference()

CANNOT_COPY = ("{where}{env} cannot be snapshotted: its attribute {attr!r} could not be copied "
               "({error}). Give the env (or a wrapper of it) get_state() -> state and "
               "set_state(state) methods")
FOREIGN_STATE = ("{where}this state was taken from {source}, but the env is {env}; a state only "
                 "restores into an env made the same way")
NOT_A_STATE = ("{where}expected a state returned by get_states() / step_batch(), "
               "received {kind}")


def describe_env(env: Any) -> str:
    """The wrapper classes and unwrapped env of ``env``: ``TimeLimit>...>CartPoleEnv(CartPole-v1)``."""
    layers = _layers(env)
    spec = getattr(layers[-1], "spec", None)
    core = type(layers[-1]).__name__ + (f"({spec.id})" if isinstance(spec, EnvSpec) else "")
    return ">".join([type(layer).__name__ for layer in layers[:-1]] + [core])


def get_env_state(env: Any, env_index: int | None = None) -> EnvState:
    """Snapshot ``env`` (see the module docstring for where the state comes from)."""
    layers = _layers(env)
    top = _state_layer(layers)
    wrappers = tuple(_wrapper_data(layer) for layer in layers[:top])
    kind, core = _core_state(layers[top], top == len(layers) - 1, _where(env_index))
    return EnvState(describe_env(env), kind, core, wrappers)


def set_env_state(env: Any, state: Any, env_index: int | None = None) -> None:
    """Restore ``state`` (from ``get_env_state`` on an env made the same way) into ``env``."""
    where = _where(env_index)
    if not isinstance(state, EnvState):
        raise TypeError(NOT_A_STATE.format(where=where, kind=type(state).__name__))
    if state.source != describe_env(env):
        raise ValueError(FOREIGN_STATE.format(where=where, source=state.source, env=describe_env(env)))
    layers = _layers(env)
    for layer, data in zip(layers, state.wrappers):
        vars(layer).update({name: _plain_copy(value) for name, value in data.items()})
    _restore_core(layers[len(state.wrappers)], state)


# ------------------------------------------------------------------ the layers
def _where(env_index: int | None) -> str:
    return "" if env_index is None else f"env {env_index}: "


def _layers(env: Any) -> list[Any]:
    """The env's wrapper chain, outermost first, the unwrapped env last."""
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    return layers


def _defines_state(layer: Any) -> bool:
    return callable(getattr(type(layer), "get_state", None)) and callable(getattr(type(layer), "set_state", None))


def _state_layer(layers: list[Any]) -> int:
    """Index of the layer whose state is the core: the outermost with get/set_state, else the last."""
    return next((i for i, layer in enumerate(layers) if _defines_state(layer)), len(layers) - 1)


# -------------------------------------------------------------------- the core
def _core_state(layer: Any, innermost: bool, where: str) -> tuple[str, Any]:
    if _defines_state(layer):
        return "custom", layer.get_state()
    ale = getattr(layer, "ale", None) if innermost else None
    if ale is not None and hasattr(ale, "cloneState"):
        return "ale", (clone_ale(layer), copy.deepcopy(getattr(layer, "_np_random", None)))
    return "copy", _copy_attributes(layer, where)


def _restore_core(layer: Any, state: EnvState) -> None:
    if state.kind == "custom":
        layer.set_state(state.core)
    elif state.kind == "ale":
        ale_state, np_random = state.core
        restore_ale(layer, ale_state)
        if np_random is not None:
            layer._np_random = copy.deepcopy(np_random)
    else:
        vars(layer).update(copy.deepcopy(state.core, {id(_SELF): layer}))


def _copy_attributes(env: Any, where: str) -> dict[str, Any]:
    """A deep copy of the env's attributes but its spaces, spec and rendering resources."""
    attrs = {name: value for name, value in vars(env).items()
             if name not in RENDER_ATTRS and not isinstance(value, (spaces.Space, EnvSpec))}
    try:
        return copy.deepcopy(attrs, {id(env): _SELF})
    except Exception:
        pass  # find the attribute to blame, then raise
    for name, value in attrs.items():
        try:
            copy.deepcopy(value, {id(env): _SELF})
        except Exception as exc:
            raise TypeError(CANNOT_COPY.format(where=where, env=type(env).__name__, attr=name,
                                               error=f"{type(exc).__name__}: {exc}")) from exc
    raise TypeError(CANNOT_COPY.format(where=where, env=type(env).__name__, attr="(several)",
                                       error="deepcopy failed"))


# ------------------------------------------------------------- wrapper data
def _wrapper_data(layer: Any) -> dict[str, Any]:
    """The wrapper's plain-data attributes, copied."""
    data: dict[str, Any] = {}
    if isinstance(layer, STATELESS_WRAPPERS):
        return data
    for name, value in vars(layer).items():
        if name not in WRAPPER_CONFIG_ATTRS:
            copied = _plain_copy(value)
            if copied is not _SKIP:
                data[name] = copied
    return data


def _plain_copy(value: Any) -> Any:
    """A copy of plain data (scalars, arrays, NumPy generators, containers of those), else _SKIP."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, np.ndarray):
        return _SKIP if value.dtype == object else value.copy()
    if isinstance(value, np.random.Generator):
        return copy.deepcopy(value)
    if type(value) is dict:
        items = {k: _plain_copy(v) for k, v in value.items()}
        return _SKIP if any(v is _SKIP for v in items.values()) else items
    if type(value) in (list, tuple, deque):
        elements = [_plain_copy(v) for v in value]
        if any(v is _SKIP for v in elements):
            return _SKIP
        return deque(elements, maxlen=value.maxlen) if type(value) is deque else type(value)(elements)
    return _SKIP
