"""ALEVecEnv: Atari stepped by ale-py's C++ vector engine, behind the VecEnvBase contract.

The engine (``ale_py.ALEVectorInterface``) runs the emulators and the DeepMind
preprocessing in C++ threads (no worker processes, the GIL released while it works)
and resets an env in the same step its episode ends, or at its next step: the engine's
own autoreset modes (``SameStep``, ``NextStep``) serve ``autoreset_mode`` "same_step" and
"next_step"; "disabled" runs it in ``NextStep`` and never steps an ended env before the
agent resets it. This module turns its batches into the baselines-style API: HWC
observations, ``terminal_observation``, real game scores in ``infos[i]["episode"]``,
``seed()``, timeouts and the recv/send batches.
"""
from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.ale.ale_options import AtariOptions
from vec_envs.ale.episode_tracker import INFO_KEYS, EpisodeTracker
from vec_envs.ale.games import import_ale, resolve_game
from vec_envs.arguments import check_batch_size, check_int, check_timeout, resolve_autoreset_mode
from vec_envs.autoreset import AutoresetMode
from vec_envs.errors import EngineLimitError, EnvTimeoutError
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["ALEVecEnv", "EngineLimitError"]

ALTERNATIVE = ("make_atari_env(game, n, vec_env_cls=SubprocVecEnv) runs the same preprocessing as "
               "Python envs that support it")
NO_ENV_OBJECTS = ("ALEVecEnv.{call}: the emulators live inside ale-py's C++ engine, there are no Python env "
                  "objects to reach (get_attr answers only {known}); " + ALTERNATIVE)
NO_OPTIONS = ("ALEVecEnv.set_options(): received options {options!r}, but ale-py's vector engine resets "
              "its emulators with a seed only (no Python env reads options); set the game up through "
              "ALEVecEnv's own arguments (ALEVecEnv(game, n, noop_max=..., ...)), or for envs whose reset() "
              "reads options: " + ALTERNATIVE)
NO_STATES = ("ALEVecEnv.{method}(): ale-py's vector engine exposes no emulator states, so "
             "ALEVecEnv cannot plan; " + ALTERNATIVE + " (states from ALE's cloneState)")
WHOLE_BATCHES = ("ALEVecEnv.{method}(): this ALEVecEnv was built with batch_size={batch_size} < "
                 "num_envs={num_envs}, and ale-py's engine then steps only the batches that finish "
                 "first: use async_reset() / recv() / send(), or build it with batch_size=None for "
                 "{method}()")
SEND_WHOLE_BATCH = ("ALEVecEnv.send(): ale-py's engine steps whole batches: send one action for each env "
                    "of the last recv(), env_ids {expected} (in any order); received env_ids {received}. "
                    "For per-env sends use " + ALTERNATIVE)
DISABLED_NEEDS = ("ALEVecEnv(autoreset_mode='disabled'): {why}; use autoreset_mode='next_step' (the engine "
                  "resets each ended env at its next step), or {fix}")
ENGINE_MODES = {AutoresetMode.SAME_STEP: "SameStep", AutoresetMode.NEXT_STEP: "NextStep",
                AutoresetMode.DISABLED: "NextStep"}
ENV_METADATA = {"render_modes": ["rgb_array"], "render_fps": 30}  # as ale-py's AtariEnv (which adds "human")
SEED_RANGE = 2**31  # the engine takes C ints; -1 keeps an env's own random stream


def _options(frame_stack: int, preprocessing: dict[str, Any]) -> AtariOptions:
    try:
        return AtariOptions(frame_stack=frame_stack, **preprocessing)
    except TypeError:
        valid = sorted(AtariOptions.__dataclass_fields__)
        unknown = sorted(set(preprocessing) - set(valid))
        raise TypeError(f"ALEVecEnv: unknown option(s) {unknown}; the options are {valid} (the names of "
                        f"make_atari / wrap_deepmind), plus seed, batch_size, num_threads, timeout, "
                        f"render_mode") from None


def _check_disabled(mode: AutoresetMode, options: AtariOptions, batch_size: int, num_envs: int) -> None:
    """Disabled autoreset needs what the agent's resets need of the engine."""
    if mode is not AutoresetMode.DISABLED:
        return
    if options.episode_life:
        raise ValueError(DISABLED_NEEDS.format(
            why="a lost life ends an episode under episode_life=True, and the engine resets the whole game when an "
                "env is reset", fix="episode_life=False (infos[i]['lives'] says when a life is lost)"))
    if batch_size != num_envs:
        raise ValueError(DISABLED_NEEDS.format(
            why=f"the engine resets some envs only when it steps whole batches, and batch_size={batch_size} < "
                f"num_envs={num_envs}", fix="batch_size=None"))


def _engine_seeds(seeds: list[int | None] | None, count: int) -> np.ndarray:
    if seeds is None:
        return np.full(count, -1, np.int32)
    return np.array([-1 if s is None else int(s) % SEED_RANGE for s in seeds], np.int32)


def _not_the_batch(expected: np.ndarray | None, env_ids: Any) -> EngineLimitError:
    return EngineLimitError(SEND_WHOLE_BATCH.format(expected=None if expected is None else expected.tolist(),
                                                    received=np.asarray(env_ids).tolist()))


def _to_hwc(obs: np.ndarray) -> np.ndarray:
    """Engine frames (b, stack, H, W[, 3]) as (b, H, W, stack * channels).

    Gray frames come back as a transposed view (no copy): ``VecTransposeImage`` turns
    it back into the engine's contiguous channel-first array for free."""
    if obs.ndim == 4:
        return obs.transpose(0, 2, 3, 1)
    batch, stack, height, width, channels = obs.shape
    return obs.transpose(0, 2, 3, 1, 4).reshape(batch, height, width, stack * channels)


class ALEVecEnv(VecEnvBase):
    """``num_envs`` Atari games stepped by ale-py's C++ vector engine, in threads.

    Same contract as every backend (docs/contract.md), with the DeepMind preprocessing done
    in C++. Observations are ``(num_envs, H, W, channels * frame_stack)`` uint8, as
    ``VecFrameStack(make_atari_env(...), frame_stack)`` gives; rewards are clipped
    (``clip_rewards``) while ``infos[i]["episode"] = {"r", "l", "t"}`` carries the
    real game score (all lives), the game's emulator frames and the seconds since
    construction, once per game over. Infos also carry ``lives``,
    ``episode_frame_number`` and ``frame_number`` (a reset row's: the new episode's).

    Args:
        game: a game name or Atari env id, by the rules of ``vec_envs.ale.games.resolve_game``:
            ``"Breakout"``, ``"ms_pacman"``, ``"BreakoutNoFrameskip-v4"``, ``"ALE/Breakout-v5"``.
        num_envs: number of games.
        seed: as ``seed(seed)`` before the first reset: env i gets ``seed + i`` (taken
            modulo 2**31: the engine's seeds are C ints).
        batch_size: envs per ``recv()`` (None: all). Below ``num_envs`` only the
            asynchronous ``async_reset`` / ``recv`` / ``send`` API is available.
        num_threads: engine threads (None: ``min(batch_size, CPU count)``).
        frame_stack: frames stacked on the last axis (1: none).
        timeout: default seconds for ``step_wait`` / ``recv`` (None: no limit).
        autoreset_mode: ``"same_step"`` (default), ``"next_step"`` (the engine's
            ``NextStep``: an ended env's row is its last frame, its next row its reset, and
            the game's ``infos[i]["episode"]`` comes with that reset row, when the engine
            has reset the game) or ``"disabled"`` (needs ``episode_life=False`` and
            ``batch_size=None``: the agent resets ended games with ``reset_envs``).
        render_mode: None or ``"rgb_array"``; either way ``get_images`` gives the
            preprocessed frames (the engine keeps no RGB screens).
        **preprocessing: ``noop_max``, ``frame_skip``, ``episode_life``, ``fire_reset``,
            ``clip_rewards``, ``warp_frame``, ``screen_size``, ``grayscale``,
            ``repeat_action_probability``, ``full_action_space``,
            ``max_num_frames_per_episode`` (see ``AtariOptions``).

    What the engine cannot do raises ``EngineLimitError`` naming the alternative:
    ``set_attr`` / ``env_method`` and ``get_attr`` beyond ``render_mode``, ``spec``,
    ``metadata`` and the spaces (no Python env objects), reset options
    (``set_options`` takes only empty ones), states for planning, ``send`` to
    part of a batch, ``reset`` / ``step`` with ``batch_size < num_envs``. A lost
    life under ``episode_life`` sets ``done`` but play goes on from the same frame
    (``terminal_observation`` is that frame).

    Example:
        >>> venv = ALEVecEnv("Breakout", num_envs=2, frame_stack=4, seed=0)
        >>> with venv:
        ...     obs = venv.reset()
        ...     obs, rewards, dones, infos = venv.step(np.ones(2, np.int64))
        >>> obs.shape, obs.dtype, sorted(infos[0])
        ((2, 84, 84, 4), dtype('uint8'), ['episode_frame_number', 'frame_number', 'lives'])
    """

    #: ``make_atari_env(..., vec_env_cls=ALEVecEnv)`` hands it the options, not env factories
    preprocesses_atari = True
    #: ``infos[i]["episode"]`` comes once per game, with its real score: what SB3's Monitor reports
    reports_whole_episodes = True

    def __init__(self, game: str, num_envs: int, *, seed: int | None = None, batch_size: int | None = None,
                 num_threads: int | None = None, frame_stack: int = 1, timeout: float | None = None,
                 render_mode: str | None = None, autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
                 **preprocessing: Any) -> None:
        check_int("ALEVecEnv: num_envs", num_envs)
        mode = resolve_autoreset_mode(autoreset_mode, "ALEVecEnv")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"ALEVecEnv: render_mode must be None or 'rgb_array', received {render_mode!r}; "
                             f"render(mode='human') shows the envs tiled in one window")
        self.options = _options(frame_stack, preprocessing)
        self.game = resolve_game(game).rom
        self.render_mode = render_mode
        self.timeout = check_timeout(timeout, "ALEVecEnv: timeout")
        self._rom_path = import_ale().roms.get_rom_path(self.game)
        self._num_threads = 0 if num_threads is None else check_int(
            "ALEVecEnv: num_threads", num_threads, alternatives="or None (min(batch_size, CPU count))")
        self.batch_size = check_batch_size(batch_size, int(num_envs), "ALEVecEnv")  # the engine needs it first
        _check_disabled(mode, self.options, self.batch_size, int(num_envs))
        self._engine_mode = ENGINE_MODES[mode]
        self._init_batching(int(num_envs))
        self._engine = self._build_engine()
        observation_space = spaces.Box(0, 255, self.options.observation_shape, np.uint8)
        action_space = spaces.Discrete(len(self._engine.get_action_set()))
        super().__init__(int(num_envs), observation_space, action_space, batch_size, mode)
        self._after_end = np.zeros(self.num_envs, np.bool_)  # next-step: the env's next row is its reset
        self.tracker = EpisodeTracker(self.num_envs, self.options.clip_rewards)
        self._frames: list[tuple[np.ndarray, int] | None] = [None] * self.num_envs
        if seed is not None:
            self.seed(seed)

    def _init_batching(self, num_envs: int) -> None:
        self._engine_envs = num_envs
        self._ordered = self.batch_size == num_envs  # the engine returns every env, in env order
        self._paddles = np.ones(self.batch_size, np.float32)
        self._awaiting: np.ndarray | None = None  # env ids of the last recv, awaiting their send
        self._stash: tuple | None = None  # the first batch of an async_reset, until recv()
        self._in_engine = 0  # envs whose reset / step result the engine has not handed out
        self._waiting: concurrent.futures.Future | None = None  # an engine recv past its timeout
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def _build_engine(self) -> Any:
        return import_ale().ALEVectorInterface(
            rom_path=self._rom_path, num_envs=self._engine_envs, batch_size=0 if self._ordered else self.batch_size,
            num_threads=self._num_threads, thread_affinity_offset=-1, autoreset_mode=self._engine_mode,
            **self.options.engine_kwargs())

    # ------------------------------------------------------------ lock-step
    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        self._check_ordered("reset")
        self._drain("reset")
        env_ids = np.arange(self.num_envs)
        obs, counters = self._engine.reset(env_ids, _engine_seeds(seeds, self.num_envs))
        self.reset_infos = self.tracker.start(counters["env_id"], counters)
        self._after_end[:] = False
        self._awaiting = None
        return self._remember(_to_hwc(obs), counters["env_id"])

    def _step_async(self, actions: Any) -> None:
        self._check_ordered("step_async")
        self._engine.send(actions, self._paddles)
        self._in_engine, self._awaiting = self.num_envs, None

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        obs, rewards, dones, infos, _ = self._stepped(self._engine_recv(timeout, "step_wait"))
        return obs, rewards, dones, infos

    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        return self._reset_some([index], [seed], "reset_single_env")[0]

    def _reset_envs(self, indices: list[int], seeds: list[int | None], options: list[dict[str, Any]]) -> VecEnvObs:
        if any(options):
            raise EngineLimitError(NO_OPTIONS.format(options=options))
        return self._reset_some(indices, seeds, "reset_envs")

    def _reset_some(self, indices: list[int], seeds: list[int | None], method: str) -> np.ndarray:
        """Reset envs ``indices`` alone; their frames, in that order."""
        self._check_ordered(method)
        self._drain(method)
        obs, counters = self._engine.reset(np.array(indices), _engine_seeds(seeds, len(indices)))
        rows = np.empty(len(indices), np.int64)
        for j, index in enumerate(indices):
            rows[j] = np.flatnonzero(counters["env_id"] == index)[0]
        mine = {key: counters[key][rows] for key in ("env_id", *INFO_KEYS)}
        for index, info in zip(indices, self.tracker.start(mine["env_id"], mine)):
            self.reset_infos[index] = info
        self._after_end[indices] = False
        frames = _to_hwc(obs[rows])
        self._remember(frames, mine["env_id"])
        return frames

    # ---------------------------------------------------------- async batches
    def _async_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self._drain("async_reset")
        obs, counters = self._engine.reset(np.arange(self.num_envs), _engine_seeds(seeds, self.num_envs))
        env_ids = counters["env_id"]
        infos = self.tracker.start(env_ids, counters)
        self._after_end[:] = False
        for row, env in enumerate(env_ids.tolist()):
            self.reset_infos[env] = dict(infos[row])
        count = len(env_ids)
        self._in_engine, self._awaiting = self.num_envs - count, None
        self._stash = (self._remember(_to_hwc(obs), env_ids), np.zeros(count, np.float32),
                       np.zeros(count, np.bool_), infos, env_ids.astype(np.int64))

    def _recv(self, count: int, timeout: float | None) -> tuple:
        if count != self.batch_size:
            raise EngineLimitError(f"ALEVecEnv.recv(): ale-py's engine hands out batches of exactly "
                                   f"batch_size={self.batch_size} envs, asked for {count}")
        if self._stash is not None:
            result, self._stash = self._stash, None
        else:
            result = self._stepped(self._engine_recv(timeout, "recv"))
        self._awaiting = result[4]
        return result

    def _send(self, actions: Any, env_ids: np.ndarray) -> None:
        expected = self._awaiting
        if expected is None:
            raise _not_the_batch(None, env_ids)
        if len(env_ids) != len(expected) or not (env_ids == expected).all():
            actions = self._in_batch_order(actions, env_ids, expected)
        self._engine.send(actions, self._paddles)
        self._in_engine += len(expected)
        self._awaiting = None

    def _in_batch_order(self, actions: Any, env_ids: np.ndarray, expected: np.ndarray) -> np.ndarray:
        """``actions`` reordered as the engine's last batch ``expected``; EngineLimitError
        unless ``env_ids`` are that batch's envs."""
        if len(env_ids) != len(expected) or set(env_ids.tolist()) != set(expected.tolist()):
            raise _not_the_batch(expected, env_ids)
        position = np.empty(self.num_envs, np.int64)
        position[env_ids] = np.arange(len(env_ids))
        return np.asarray(actions)[position[expected]]

    # ------------------------------------------------------------- batches
    def _engine_recv(self, timeout: float | None, method: str) -> tuple:
        """The engine's next batch; past ``timeout`` an EnvTimeoutError (the batch is
        still collected by the next call)."""
        timeout = self.timeout if timeout is None else timeout
        if timeout is None and self._waiting is None:
            result = self._engine.recv()
        else:
            if self._waiting is None:
                if self._executor is None:
                    self._executor = concurrent.futures.ThreadPoolExecutor(1, "ALEVecEnv-recv")
                self._waiting = self._executor.submit(self._engine.recv)
            try:
                result = self._waiting.result(timeout)
            except concurrent.futures.TimeoutError:
                busy = self._busy_envs()
                raise EnvTimeoutError(f"ALEVecEnv.{method}(): no batch of {self.batch_size} envs finished "
                                      f"within {timeout} s; envs still busy: {busy}",
                                      env_indices=busy, method=method, timeout=float(timeout or 0.0)) from None
            self._waiting = None
        self._in_engine -= self.batch_size
        return result

    def _busy_envs(self) -> list[int]:
        idle = set() if self._awaiting is None else set(self._awaiting.tolist())
        return [env for env in range(self.num_envs) if env not in idle]

    def _stepped(self, result: tuple) -> tuple:
        """An engine batch as ``(obs, rewards, dones, infos, env_ids)``, bookkept."""
        obs, raw_rewards, terminated, truncated, counters = result
        env_ids = counters["env_id"]
        if self._engine_mode == "NextStep":
            return self._stepped_later(obs, raw_rewards, terminated, truncated, counters, env_ids)
        rows = self.tracker.step(env_ids, raw_rewards, terminated, truncated, counters)
        obs = self._remember(_to_hwc(obs), env_ids)
        if rows.dones.any():
            final = counters.get("final_obs")
            final_obs = None if final is None else _to_hwc(final)
            for row in np.flatnonzero(rows.dones).tolist():
                info = rows.infos[row]
                if rows.reset[row]:
                    self.reset_infos[int(env_ids[row])] = {key: info[key] for key in INFO_KEYS}
                terminal = final_obs if rows.reset[row] and final_obs is not None else obs
                info["terminal_observation"] = np.array(terminal[row])
                info["TimeLimit.truncated"] = bool(truncated[row] and not terminated[row])
        return obs, rows.rewards, rows.dones, rows.infos, env_ids.astype(np.int64)

    def _stepped_later(self, obs: np.ndarray, raw_rewards: np.ndarray, terminated: np.ndarray,
                       truncated: np.ndarray, counters: dict[str, np.ndarray], env_ids: np.ndarray) -> tuple:
        """An engine batch in ``NextStep`` mode: an ended env's row is its last frame (its info
        with ``TimeLimit.truncated``), its next row the engine's reset of it; a game's
        ``episode`` comes with the row where the engine reset the game (next-step), or
        with its last row (disabled: every end is a game's, the agent resets it)."""
        after_end = self._after_end[env_ids]
        rows = self.tracker.step_later(env_ids, raw_rewards, terminated, truncated, counters, after_end,
                                       self.autoreset_mode is AutoresetMode.DISABLED)
        self._after_end[env_ids] = rows.dones
        for row in np.flatnonzero(rows.dones).tolist():
            rows.infos[row]["TimeLimit.truncated"] = bool(truncated[row] and not terminated[row])
        return self._remember(_to_hwc(obs), env_ids), rows.rewards, rows.dones, rows.infos, env_ids.astype(np.int64)

    def _remember(self, obs: np.ndarray, env_ids: np.ndarray) -> np.ndarray:
        """Keep where each env's latest frame is, for ``get_images``."""
        for row, env in enumerate(env_ids.tolist()):
            self._frames[env] = (obs, row)
        return obs

    def _interrupted(self, exc: BaseException, method: str) -> None:
        """A Ctrl-C stopped ``method`` part-way: the engine's state is unknown (a batch sent
        and not counted, or received and not read): the next reset rebuilds it."""
        super()._interrupted(exc, method)
        self._in_engine = max(self._in_engine, 1)

    def _drain(self, method: str) -> None:
        """Before a reset: an engine with envs still in flight (or in an unknown state) is
        rebuilt (its batches cannot be told apart from the new episode's)."""
        if self._waiting is not None:
            self._waiting.result()
            self._waiting = None
        if self._in_engine:
            self._engine = None
            self._engine = self._build_engine()
            self._in_engine = 0
        self._stash = None

    # -------------------------------------------------------------- checks
    def _check_ordered(self, method: str) -> None:
        if not self._ordered:
            raise EngineLimitError(WHOLE_BATCHES.format(method=method, batch_size=self.batch_size,
                                                        num_envs=self.num_envs))

    # ---------------------------------------------------- what it cannot do
    def set_options(self, options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None) -> None:
        """Only empty options (the engine resets with a seed alone): any other is an EngineLimitError."""
        super().set_options(options)
        if any(self._options or ()):
            self._options = None
            raise EngineLimitError(NO_OPTIONS.format(options=options))

    def _env_attributes(self) -> dict[str, Any]:
        """What every env of the engine is known to have, as a gymnasium env would."""
        return {"render_mode": self.render_mode, "spec": None, "metadata": dict(ENV_METADATA),
                "observation_space": self.observation_space, "action_space": self.action_space}

    def has_attr(self, attr_name: str) -> bool:
        """Whether the envs have ``attr_name``: only those ``get_attr`` answers."""
        self._check_open("has_attr")
        return attr_name in self._env_attributes()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``render_mode``, ``spec`` (None), ``metadata``, ``observation_space`` and
        ``action_space`` of the envs (what SB3 and the wrappers ask); anything else is an
        EngineLimitError: the envs are C++ emulators."""
        self._check_open("get_attr")
        known = self._env_attributes()
        if attr_name not in known:
            raise EngineLimitError(NO_ENV_OBJECTS.format(call=f"get_attr({attr_name!r})", known=sorted(known)))
        return [known[attr_name]] * len(self._indices(indices, "get_attr"))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._check_open("set_attr")
        known = sorted(self._env_attributes())
        raise EngineLimitError(NO_ENV_OBJECTS.format(call=f"set_attr({attr_name!r})", known=known))

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        self._check_open("env_method")
        known = sorted(self._env_attributes())
        raise EngineLimitError(NO_ENV_OBJECTS.format(call=f"env_method({method_name!r})", known=known))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """False for every env: the engine's envs are no gymnasium envs, so nothing wraps them."""
        self._check_open("env_is_wrapped")
        return [False] * len(self._indices(indices, "env_is_wrapped"))

    def _get_states(self, indices: list[int]) -> list[Any]:
        raise EngineLimitError(NO_STATES.format(method="get_states"))

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        raise EngineLimitError(NO_STATES.format(method="set_states"))

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        raise EngineLimitError(NO_STATES.format(method="step_batch"))

    # ------------------------------------------------------------ rendering
    def get_images(self) -> list[np.ndarray]:
        """Each env's latest preprocessed frame as (H, W, 3) uint8 (gray repeated):
        the engine keeps no RGB screens."""
        self._check_open("get_images")
        if any(source is None for source in self._frames):
            raise EngineLimitError("ALEVecEnv.get_images(): no frames yet; call reset() first")
        return [self._image(obs[row]) for obs, row in self._frames]  # type: ignore[misc]

    def _image(self, frames: np.ndarray) -> np.ndarray:
        if self.options.channels == 1:
            return np.repeat(frames[..., -1:], 3, axis=2)
        return np.ascontiguousarray(frames[..., -3:])

    def close_extras(self) -> None:
        if self._waiting is not None:
            self._waiting.result()  # an Atari step always finishes; then the engine can go
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._engine = None  # the engine joins its threads as it goes
        self._frames = [None] * self.num_envs

    def __repr__(self) -> str:
        return (f"ALEVecEnv({self.game!r}, num_envs={self.num_envs}, batch_size={self.batch_size}, "
                f"frame_stack={self.options.frame_stack})")
