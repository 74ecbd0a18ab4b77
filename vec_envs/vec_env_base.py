"""VecEnvBase: the abstract batch of environments every backend and wrapper is."""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
from gymnasium import spaces

from vec_envs.arguments import (
    check_batch_size,
    check_timeout,
    resolve_autoreset_mode,
    resolve_index,
    resolve_indices,
    resolve_options,
    resolve_seeds,
)
from vec_envs.autoreset import AutoresetMode
from vec_envs.backend_hooks import BackendHooks
from vec_envs.call_guard import CallGuard, guard_methods
from vec_envs.env_states import EnvStates
from vec_envs.errors import (
    FORKED_COPY,
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    EnvTimeoutError,
    NoAsyncCallError,
    VecEnvError,
)
from vec_envs.failure_state import FailureState
from vec_envs.planning.batch_planning import check_one_state, check_states, run_step_batch
from vec_envs.rendering.frames import gather_frames
from vec_envs.rendering.tile_images import tile_images
from vec_envs.spaces.checks import check_actions, check_env_actions
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn

__all__ = ["VecEnvBase"]

T = TypeVar("T")

CLOSED = "{cls}.{method}() called after close(); make a new {cls} instead"
PENDING = ("{cls}.{method}() called while {pending}_async() still waits for its {pending}_wait(); "
           "call {pending}_wait() first")
NOTHING_PENDING = "{cls}.{method}() called with no {call}_async() pending; call {call}_async() first"
RENDER_MODES = ("human", "rgb_array")
UNKNOWN = object()  # a value not asked for yet


class VecEnvBase(BackendHooks):
    """``num_envs`` copies of one environment, stepped as a batch (baselines-style API).

    The base owns the control flow; a backend fills in the hooks of ``BackendHooks``
    (``vec_envs.backend_hooks``): ``_reset``, ``_step_async``, ``_step_wait``,
    ``_reset_single_env`` and the env-access methods, for asynchronous batches
    ``_async_reset``, ``_recv`` and ``_send``, for planning ``_get_states``,
    ``_set_states`` and ``_step_batch`` (the checks and packing of the planning calls
    live in ``vec_envs.planning.batch_planning``).
    ``step`` is ``step_async`` + ``step_wait``; ``close`` is idempotent and calls
    ``close_extras``; ``render`` tiles ``get_images()``.

    ``autoreset_mode`` (``"same_step"``, ``"next_step"`` or ``"disabled"``, or gymnasium's
    ``AutoresetMode``; see ``vec_envs.autoreset``) says what an env's rows are after its
    episode ends; the backend steps and resets its envs that way, and the base keeps which
    envs ended (``EnvStates``) for the other two modes. ``reset_envs`` resets some envs.

    Asynchronous batches (EnvPool-style): ``async_reset()`` starts every env, ``recv()``
    returns the first ``batch_size`` envs whose reset or step has finished, with their
    ``env_ids``, and ``send(actions, env_ids)`` steps those envs again. The base checks
    every call (which envs are in flight, which await their send) before a hook runs.

    A backend declares what it does beyond the contract in class attributes, so that
    adapters ask the VecEnv rather than test for a class: ``reports_whole_episodes``
    (False here) is True where the backend itself fills ``infos[i]["episode"] = {"r",
    "l", "t"}`` once per whole episode, as SB3's ``Monitor`` does, with no per-env
    wrapper to find (``ALEVecEnv``: once per game, not once per life).

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> with DummyVecEnv([lambda: gym.make("CartPole-v1")] * 4) as venv:
        ...     obs = venv.reset()
        ...     obs, rewards, dones, infos = venv.step(np.zeros(4, int))
        >>> obs.shape, rewards.dtype, dones.dtype
        ((4, 4), dtype('float32'), dtype('bool'))
    """

    metadata = {"render_modes": list(RENDER_MODES)}
    _call_guard: CallGuard | None = None  # made in __init__; until then calls are not guarded
    #: the process whose workers these are (worker backends); a forked copy refuses every call
    _owner_pid: int | None = None
    #: ``step`` runs ``step_async``'s and ``step_wait``'s bodies itself, unless a subclass
    #: overrides either (a wrapper): then it calls them, so the override runs
    _step_in_one: ClassVar[bool] = True
    #: the backend reports whole episodes in ``infos[i]["episode"]`` itself, as SB3's Monitor does
    reports_whole_episodes: ClassVar[bool] = False
    _render_mode: Any = UNKNOWN  # the envs' render mode, asked of them at the first read

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        guard_methods(cls)  # one caller at a time, whatever the subclass overrides
        cls._step_in_one = cls.step_async is VecEnvBase.step_async and cls.step_wait is VecEnvBase.step_wait

    def __init__(self, num_envs: int, observation_space: spaces.Space, action_space: spaces.Space,
                 batch_size: int | None = None, autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        self._call_guard = CallGuard()
        self.num_envs = num_envs
        self.batch_size = check_batch_size(batch_size, num_envs, type(self).__name__)
        self.autoreset_mode = resolve_autoreset_mode(autoreset_mode, type(self).__name__)
        self._states = EnvStates(type(self).__name__, num_envs, self.batch_size, self.autoreset_mode)
        self.observation_space = observation_space
        self.action_space = action_space
        self.reset_infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self.closed = False
        self._closing = False  # close() began and has not finished (a Ctrl-C stopped it)
        self._pending: str | None = None
        self._seeds: list[int | None] | None = None
        self._options: list[dict[str, Any]] | None = None  # from set_options(), for the next reset
        self._viewer: Any = None
        self._failure = FailureState(type(self).__name__)  # an env failed mid-batch: refuse until reset

    # ---------------------------------------------------------- control flow
    def reset(self) -> VecEnvObs:
        """Reset every env; returns the batched first observations (seeds from ``seed()``,
        options from ``set_options()``)."""
        self._check_idle("reset")
        seeds, options = self._take_reset_args()
        self._states.clear()
        try:
            obs = self._reset(seeds, options)
        except BaseException as exc:
            self._failure.fail(exc, "reset")
        self._failure.clear()
        self._states.reset_done()
        return obs

    def _take_reset_args(self) -> tuple[list[int | None] | None, list[dict[str, Any]] | None]:
        """The seeds and options for this reset; the next one has none unless set again."""
        seeds, self._seeds = self._seeds, None
        options, self._options = self._options, None
        return seeds, options

    def step_async(self, actions: Any) -> None:
        """Start a step with one action per env."""
        self._start_step(actions)

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        """Wait for the step started by ``step_async``: ``(obs, rewards, dones, infos)``."""
        self._check_pending("step_wait", "step")
        timeout = check_timeout(timeout, "step_wait(): timeout")
        result = self._finish_pending(self._step_wait, timeout)
        if self._states.ended is not None:
            self._states.after_rows(None, result[2], result[3], self.reset_infos)
        return result

    def step(self, actions: Any) -> VecEnvStepReturn:
        """``step_async(actions)`` then ``step_wait()``."""
        if not self._step_in_one:  # a subclass overrides step_async or step_wait: call them
            self.step_async(actions)
            return self.step_wait()
        self._start_step(actions)  # as step_async would, without a second trip through the guard
        result = self._finish_pending(self._step_wait, None)
        if self._states.ended is not None:  # next-step, disabled
            self._states.after_rows(None, result[2], result[3], self.reset_infos)
        return result

    def _start_step(self, actions: Any) -> None:
        """``step_async``: check the call and the actions, start the backend's step."""
        if self.closed or self._pending is not None or self._failure.error is not None or self._states.flying \
                or (self._owner_pid is not None and os.getpid() != self._owner_pid):  # closed, broken, forked, busy
            self._check_idle("step_async")  # raises, saying why
        actions = check_actions(self.action_space, actions, self.num_envs, "step_async", owner=self._action_owner,
                                ignored=functools.partial(self._ignored_actions, None))
        if self._states.ended is not None:
            self._states.check_step("step_async")
        if self._states.round:  # an async round ran: it is over
            self._states.clear()
        self._step_async(actions)
        self._pending = "step"

    def _finish_pending(self, wait: Callable[..., T], *args: Any) -> T:
        """Run ``wait(*args)`` for the pending call; it stays pending only after a timeout.

        An env failure leaves the VecEnv broken (see ``failure_state``); a finished reset
        mends it."""
        pending = self._pending or "step"
        try:
            result = wait(*args)
        except EnvTimeoutError:
            raise  # still pending: the caller may wait again
        except BaseException as exc:
            self._pending = None
            self._failure.fail(exc, pending)
        self._pending = None
        if pending == "reset":
            self._failure.clear()
        return result

    # ------------------------------------------------------- asynchronous batches
    def async_reset(self) -> None:
        """Start resetting every env (seeds from ``seed()``, options from ``set_options()``);
        ``recv`` returns them as they finish.

        Example:
            >>> import gymnasium as gym
            >>> from vec_envs import DummyVecEnv
            >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 4, batch_size=2)
            >>> venv.async_reset()
            >>> obs, rewards, dones, infos, env_ids = venv.recv()   # reset rows: reward 0
            >>> obs.shape, env_ids.tolist()
            ((2, 4), [0, 1])
            >>> venv.send(np.zeros(2, int), env_ids)                # step envs 0 and 1 again
            >>> venv.recv()[4].tolist()                             # the two sent longest ago
            [2, 3]
            >>> venv.close()
        """
        self._check_idle("async_reset")
        seeds, options = self._take_reset_args()
        self._states.clear()
        try:
            self._async_reset(seeds, options)
        except BaseException as exc:
            self._failure.fail(exc, "reset")
        self._failure.clear()
        self._states.reset_done()
        self._states.start_all()

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        """The first ``batch_size`` envs whose reset or step finished.

        Returns ``(obs, rewards, dones, infos, env_ids)``: rows in the order of
        ``env_ids`` (an int64 array); an env's first row after ``async_reset`` is its reset
        observation with reward 0, done False and its reset info. Auto-reset and infos
        are as in ``step``. Raises NoAsyncCallError at once when fewer than
        ``batch_size`` envs are in flight, EnvTimeoutError (naming the busy envs) after
        ``timeout`` seconds (None: no limit; the envs stay in flight).
        """
        if self.closed or self._pending is not None or self._failure.error is not None \
                or (self._owner_pid is not None and os.getpid() != self._owner_pid):  # closed, broken, forked, busy
            self._check_no_lockstep_call("recv")  # raises, saying why
        if timeout is not None:
            timeout = check_timeout(timeout, "recv(): timeout")
        if self._states.flying < self.batch_size:
            self._states.check_recv()  # raises, naming the envs in flight
        try:
            obs, rewards, dones, infos, env_ids = self._recv(self.batch_size, timeout)
        except EnvTimeoutError:
            raise  # still in flight: the caller may recv again
        except BaseException as exc:
            self._states.clear()  # the round is over: reset() or async_reset() starts anew
            self._failure.fail(exc, "recv")
        self._states.returned(env_ids)
        if self._states.ended is not None:  # next-step, disabled
            self._states.after_rows(env_ids, dones, infos, self.reset_infos)
        return obs, rewards, dones, infos, env_ids

    def send(self, actions: Any, env_ids: Any) -> None:
        """Step env ``env_ids[j]`` with ``actions[j]``; ``env_ids`` must be envs returned by
        ``recv`` and not sent to since (anything else raises ValueError naming them)."""
        if self.closed or self._pending is not None or self._failure.error is not None \
                or (self._owner_pid is not None and os.getpid() != self._owner_pid):  # closed, broken, forked, busy
            self._check_no_lockstep_call("send")  # raises, saying why
        ids = self._states.check_send(env_ids)
        actions = check_env_actions(self.action_space, actions, ids, "send", self._action_owner,
                                    functools.partial(self._ignored_actions, ids))
        if self._states.ended is not None:
            self._states.check_step("send", ids)
        self._states.sent(ids)  # before the hook: a backend may answer some at once (``EnvStates.answered``)
        try:
            self._send(actions, ids)
        except Exception:
            self._states.returned(ids)  # refused (a check of the backend's own): they wait for a send again
            raise

    def seed(self, seed: int | Sequence[int] | None = None) -> list[int | None]:
        """Seed the envs at the NEXT ``reset()``: env i gets ``seed + i`` (or ``seed[i]``).

        With ``seed=None`` a base seed is drawn at random. Returns the seeds.
        """
        self._check_open("seed")
        self._seeds = resolve_seeds(seed, self.num_envs)
        return list(self._seeds)

    def set_options(self, options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None) -> None:
        """Reset the envs with ``options`` at the NEXT ``reset()`` (or ``async_reset()``) only.

        One dict for every env, or a list of ``num_envs`` dicts (one per env); each env
        gets ``env.reset(options=...)``. As in Stable-Baselines3 the options apply to that
        one reset: the auto-resets after it, and later resets, get none.

        Example:
            >>> import gymnasium as gym
            >>> from vec_envs import DummyVecEnv
            >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
            >>> venv.set_options([{}, {"low": 0.0, "high": 0.0}])   # CartPole's start-state bounds
            >>> obs = venv.reset()
            >>> bool(obs[1].any()), bool(obs[0].any())
            (False, True)
            >>> venv.set_options([{}])
            Traceback (most recent call last):
            ValueError: set_options(): expected a dict for every env or a list of 2 (one per env), received a list of 1
            >>> venv.close()
        """
        self._check_open("set_options")
        self._options = resolve_options(options, self.num_envs)

    def reset_single_env(self, index: int) -> Any:
        """Reset env ``index`` alone; returns its (unbatched) first observation."""
        self._check_idle("reset_single_env")
        index = resolve_index(index, self.num_envs, "reset_single_env")
        seed = None
        if self._seeds is not None:
            seed, self._seeds[index] = self._seeds[index], None
        obs = self._reset_single_env(index, seed)
        self._states.reset_done([index])
        return obs

    def reset_envs(self, indices: VecEnvIndices = None, seed: int | Sequence[int | None] | None = None,
                   options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None) -> VecEnvObs:
        """Reset the envs named by ``indices`` (ids, or a boolean mask of ``num_envs``), the
        others left as they are; returns their first observations, row j env ``indices[j]``
        (the reset infos go to ``reset_infos``). Under ``autoreset_mode="disabled"`` this is
        how the agent resets the envs whose episode ended.

        ``seed``: an int (env i gets ``seed + i``, as ``seed()`` gives), one seed per env
        named, or None (the seeds ``seed()`` set for those envs, if any). ``options``: one
        dict for each env named, or one per env named.

        Example:
            >>> import gymnasium as gym
            >>> from vec_envs import DummyVecEnv
            >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 4, autoreset_mode="disabled")
            >>> obs = venv.reset()
            >>> venv.reset_envs([True, False, False, True], seed=0).shape   # envs 0 and 3
            (2, 4)
            >>> venv.close()
        """
        self._check_no_lockstep_call("reset_envs")
        ids = self._indices(indices, "reset_envs")
        self._states.check_none_in_flight("reset_envs", ids)  # the others may be: recv/send goes on
        if len(set(ids)) != len(ids):
            raise ValueError(f"reset_envs(): indices name envs more than once: {ids}")
        seeds = self._reset_envs_seeds(ids, seed)
        resolved = resolve_options(options, len(ids), "reset_envs")
        obs = self._reset_envs(ids, seeds, resolved)
        self._states.reset_done(ids)
        return obs

    def _reset_envs_seeds(self, ids: list[int], seed: Any) -> list[int | None]:
        """One seed per env of ``ids``: from ``seed`` (see ``reset_envs``), else those ``seed()`` set."""
        if seed is None:
            if self._seeds is None:
                return [None] * len(ids)
            seeds = [self._seeds[i] for i in ids]
            for i in ids:
                self._seeds[i] = None
            return seeds
        if isinstance(seed, (int, np.integer)):
            every = resolve_seeds(seed, self.num_envs, "reset_envs")
            return [every[i] for i in ids]
        return resolve_seeds(seed, len(ids), "reset_envs", "one per env named")

    # ------------------------------------------------------ states (planning)
    def get_states(self, indices: VecEnvIndices = None) -> list[Any]:
        """Snapshots of the envs named by ``indices`` (None = all), in index order.

        A state is opaque and picklable; it restores into an env made the same way
        (see ``vec_envs.planning.env_state`` for where it comes from).

        Example:
            >>> import gymnasium as gym
            >>> from vec_envs import DummyVecEnv
            >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
            >>> obs = venv.reset()
            >>> states = venv.get_states()
            >>> first = venv.step(np.ones(2, int))[0]
            >>> venv.set_states(states)                       # back where they were
            >>> bool((venv.step(np.ones(2, int))[0] == first).all())
            True
            >>> venv.close()
        """
        self._check_idle("get_states")
        return self._get_states(self._indices(indices, "get_states"))

    def set_states(self, states: Sequence[Any], indices: VecEnvIndices = None) -> None:
        """Restore ``states[j]`` into the j-th env named by ``indices`` (None = all)."""
        self._check_idle("set_states")
        indices = self._indices(indices, "set_states")
        self._set_states(check_states(states, len(indices), "set_states", "one per index"), indices)

    def sync_states(self, state: Any) -> None:
        """Restore the one ``state`` into every env."""
        self.set_states([check_one_state(state)] * self.num_envs)

    def step_batch(self, actions: Any, states: Sequence[Any] | None = None, dt: int | Sequence[int] = 1,
                   return_states: bool | None = None) -> tuple:
        """Step every env from a given state, for planning; no auto-reset.

        For each env i: restore ``states[i]`` (when ``states`` is given and the entry is
        not None), then apply ``actions[i]`` ``dt`` times (an int, or one per env),
        stopping early when the episode ends; rewards are summed (float32, like ``step``).

        Returns ``(new_states, obs, rewards, terminateds, truncateds, infos)`` when states
        are given or ``return_states=True``, else ``(obs, rewards, terminateds,
        truncateds, infos)``. An env whose episode ended is not reset: the caller owns
        the states (``set_states`` or ``reset`` before the next ``step``).

        Example:
            >>> import gymnasium as gym
            >>> from vec_envs import DummyVecEnv
            >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 4)
            >>> _ = venv.reset()
            >>> root = venv.get_states([0])[0]
            >>> states, obs, rewards, term, trunc, infos = venv.step_batch(
            ...     np.arange(venv.num_envs) % 2, states=[root] * venv.num_envs, dt=4)
            >>> obs.shape, rewards.tolist()                 # 4 steps from the same root, 2 actions
            ((4, 4), [4.0, 4.0, 4.0, 4.0])
            >>> venv.close()
        """
        self._check_idle("step_batch")
        actions = check_actions(self.action_space, actions, self.num_envs, "step_batch", owner=self._action_owner)
        return run_step_batch(self._step_batch, actions, states, dt, return_states, self.num_envs)

    @property
    def render_mode(self) -> str | None:
        """The envs' ``render_mode`` (``"rgb_array"``, ``"human"``, ...), as SB3's VecEnvs
        have it: asked of the envs at the first read, then kept; None when they have none
        or differ."""
        if self._render_mode is UNKNOWN:
            try:
                modes = self.get_attr("render_mode")
            except (AttributeError, VecEnvError):
                modes = [None]
            self._render_mode = modes[0] if all(mode == modes[0] for mode in modes) else None
        mode: str | None = self._render_mode
        return mode

    @render_mode.setter
    def render_mode(self, mode: str | None) -> None:
        self._render_mode = mode

    def has_attr(self, attr_name: str) -> bool:
        """Whether every env has ``attr_name``, looked up through its wrappers as ``get_attr``
        looks it up (SB3's ``has_attr``). Asked where the envs run: nothing is copied back,
        so an attribute that cannot be pickled is found too."""
        return all(self.env_method("has_wrapper_attr", attr_name))

    def render(self, mode: str | None = None) -> np.ndarray | None:
        """``rgb_array``: the tiled frames of all envs; ``human``: show them in one window
        (envs made with ``render_mode="human"`` draw their own: their ``render()`` is
        called). None, as in SB3: the envs' ``render_mode`` (``human`` for any other)."""
        if mode is not None and mode not in RENDER_MODES:
            raise ValueError(f"render(): mode must be one of {RENDER_MODES} or None, received {mode!r}")
        self._check_open("render")
        if mode is None:
            mode = "rgb_array" if self.render_mode == "rgb_array" else "human"
        if mode == "human" and self.render_mode == "human":
            self.env_method("render")
            return None
        if mode == "human" and self._viewer is None:
            from vec_envs.rendering.opencv_viewer import OpenCVViewer

            self._viewer = OpenCVViewer(f"vec_envs: {self.num_envs} envs")
        img = tile_images(gather_frames(self))
        if mode == "rgb_array":
            return img
        self._viewer.imshow(img)
        return None

    def close(self) -> None:
        """Close the envs and release everything; later calls raise ClosedEnvironmentError.

        Idempotent; a close that a Ctrl-C stopped part-way is ended at once by the next
        ``close()`` (``close_interrupted``: nothing is waited for then)."""
        if self.closed:
            if self._closing:
                self._closing = False
                self.close_interrupted()
            return
        self.closed = self._closing = True
        try:
            if self._viewer is not None:
                self._viewer.close()
        finally:
            self.close_extras()
        self._closing = False

    def _interrupted(self, exc: BaseException, method: str) -> None:
        """A Ctrl-C (``exc``) stopped ``method`` part-way: nothing is pending any more, and
        every call but a reset (or close) is refused until one (``failure_state``)."""
        if self.closed:
            return
        self._pending = None
        self._states.clear()
        self._failure.interrupt(exc, method)

    def __enter__(self) -> VecEnvBase:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def unwrapped(self) -> VecEnvBase:
        """The innermost VecEnvBase (this one, for a backend)."""
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_envs={self.num_envs})"

    # ---------------------------------------------------------------- checks
    def _check_open(self, method: str) -> None:
        if self.closed:
            raise ClosedEnvironmentError(CLOSED.format(cls=type(self).__name__, method=method))
        if self._failure.error is not None:
            self._failure.check(method)  # raises unless ``method`` resets the envs
        if self._owner_pid is not None and os.getpid() != self._owner_pid:
            raise VecEnvError(FORKED_COPY.format(cls=type(self).__name__, method=method, owner=self._owner_pid,
                                                 pid=os.getpid()))

    def _check_idle(self, method: str) -> None:
        self._check_open(method)
        if self._pending is not None:
            self._check_no_lockstep_call(method)  # raises, naming the pending call
        if self._states.flying:
            self._states.check_none_in_flight(method)  # raises, naming the envs in flight

    def _check_no_lockstep_call(self, method: str) -> None:
        self._check_open(method)
        if self._pending is not None:
            raise AlreadyPendingCallError(
                PENDING.format(cls=type(self).__name__, method=method, pending=self._pending))

    def _check_pending(self, method: str, call: str) -> None:
        self._check_open(method)
        if self._pending != call:
            raise NoAsyncCallError(NOTHING_PENDING.format(cls=type(self).__name__, method=method, call=call))

    def _indices(self, indices: VecEnvIndices, method: str) -> list[int]:
        return resolve_indices(indices, self.num_envs, method)


guard_methods(VecEnvBase)
