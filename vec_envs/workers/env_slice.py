"""EnvSlice: a run of envs built in one process and stepped in series, with autoreset.

The one place envs are stepped and reset: DummyVecEnv holds one slice of every env, each
worker of SubprocVecEnv / RayVecEnv one slice. A slice writes observations, rewards and dones
into ``BatchBuffers`` (local arrays or shared memory) and returns only the infos (copies). Env
results are checked here; an env's exception or a failed check leaves as ``EnvCallFailed``
naming the env's global index and the method.

Autoreset: same-step resets an ended env at once; deferred (next-step, disabled) keeps its last
observation in its row and resets it at its next step (reward 0, done False, the reset info as
info). ``TimeLimit.truncated`` and (same-step) ``terminal_observation`` go into the info, or into
the buffers' terminal rows where there are some (``ended_infos`` and ``with_terminal`` read them).
Where built, a C loop (``_step_kernel.c``) stores the usual results itself and hands the rest, and
any exception, to the Python path; both store the same bits.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs import kernels
from vec_envs.errors import EnvCallFailed, is_own_check
from vec_envs.interop.single_env import as_gymnasium_env
from vec_envs.spaces.batching import BatchBuffers, ObservationError, copy_obs, copy_row, get_row, make_writer
from vec_envs.types import EnvFn, Info
from vec_envs.workers.env_output import USUAL_REWARDS, check_reset_result, check_step_result

_kernel = kernels.load("step")  # None: not built, or VEC_ENVS_KERNELS=0

__all__ = ["EnvSlice", "ended_infos", "spaces_mismatch", "step_envs", "with_terminal"]

#: the spaces whose observations are arrays the C loop can copy into a row as they are
_ARRAY_SPACES = (spaces.Box, spaces.MultiBinary, spaces.MultiDiscrete)
SHARED_INSTANCE = ("env_fns {first} and {k} returned the same env object: each call of a factory must build a "
                   "new env (e.g. lambda: gym.make(...)), not return one shared instance")


def spaces_mismatch(env: Any, first: Any, index: int, first_index: int) -> str | None:
    """Why env ``index`` cannot be batched with env ``first_index``, if its spaces differ."""
    for name in ("observation_space", "action_space"):
        if getattr(env, name) != getattr(first, name):
            return (f"env {index} has {name} {getattr(env, name)}, but env {first_index} has {getattr(first, name)}: "
                    "every env of a VecEnv must have the same spaces")
    return None


class EnvSlice:
    """Envs ``first_index, first_index + 1, ...`` stepped in series into ``buffers``.

    Args:
        env_fns: one factory per env.
        first_index: the global index of the first env (errors name global indices).
        deferred: next-step and disabled autoreset (an ended env is reset at its next step).
        pending: with ``deferred``, every env's next step is its reset (envs never reset yet).
    """

    def __init__(self, env_fns: Sequence[EnvFn], first_index: int = 0, deferred: bool = False,
                 pending: bool = False) -> None:
        self.first_index = first_index
        self.running: Any = None  # an int view: 1 + the env being called (see track_running)
        self.envs = [self.call(k, "__init__", lambda: as_gymnasium_env(fn())) for k, fn in enumerate(env_fns)]
        self.observation_space, self.action_space = self.envs[0].observation_space, self.envs[0].action_space
        firsts: dict[int, int] = {}
        for k, env in enumerate(self.envs):  # every env a new object, with the spaces of the first
            first = firsts.setdefault(id(env), k)
            if first != k:
                err = ValueError(SHARED_INSTANCE.format(k=first_index + k, first=first_index + first))
                raise EnvCallFailed(first_index + k, "__init__", ours=True) from err
            mismatch = spaces_mismatch(env, self, first_index + k, first_index)
            if mismatch is not None:
                raise EnvCallFailed(first_index + k, "__init__", ours=True) from ValueError(mismatch)
        self.reset_infos: list[Info] = [{} for _ in self.envs]
        #: envs whose next step is their reset (None: resets in the same step)
        self.pending = np.full(len(self.envs), pending, np.bool_) if deferred else None
        self.attach(BatchBuffers.allocate(self.observation_space, len(self.envs)))

    def track_running(self, slot: Any) -> None:
        """Keep ``slot[0]`` at 1 + the global index of the env in a call, else 0 (read if the process dies)."""
        self.running = slot
        self._rows = self._kernel_rows()

    def call(self, k: int, method: str, fn: Callable[[], Any]) -> Any:
        """``fn()``, a call into env ``k``: its exception leaves as ``EnvCallFailed``."""
        running = self.running
        if running is not None:
            running[0] = self.first_index + k + 1
        try:
            return fn()
        except Exception as exc:
            raise EnvCallFailed(self.first_index + k, method, is_own_check(exc)) from exc
        finally:
            if running is not None:
                running[0] = 0

    def attach(self, buffers: BatchBuffers) -> None:
        """Write results into ``buffers`` (rows 0..len-1 are this slice's envs)."""
        self.buffers = buffers
        self._write_row = make_writer(self.observation_space, buffers.obs)
        self._rewards, self._dones = buffers.rewards, buffers.dones
        self._rows = self._kernel_rows()

    def _kernel_rows(self) -> tuple | None:
        """What the C loop writes into; None where it cannot (no kernel, unusual spaces or buffers)."""
        buffers = getattr(self, "buffers", None)
        if _kernel is None or buffers is None or not isinstance(self.observation_space, _ARRAY_SPACES):
            return None
        arrays = (buffers.obs, buffers.rewards, buffers.dones, buffers.terminal_obs, buffers.time_limit_truncated)
        fit = [type(a) is np.ndarray and a.flags.c_contiguous and a.flags.writeable for a in arrays]
        if not all(fit[:3]) or buffers.rewards.dtype != np.float32 or buffers.dones.dtype != np.bool_:
            return None
        terminal = arrays[3:] if all(fit[3:]) else (None, None)
        return (self.envs, buffers.obs, buffers.rewards, buffers.dones, *terminal, self.reset_infos, self.running,
                self.first_index, tuple(USUAL_REWARDS), np.ndarray, self.pending)

    def reset(self, seeds: Sequence[int | None] | None = None,
              options: Sequence[dict | None] | None = None) -> list[Info]:
        """Reset every env (env k with ``seeds[k]`` and ``options[k]``); the reset infos."""
        for k in range(len(self.envs)):
            self.reset_env(k, None if seeds is None else seeds[k], None if options is None else options[k])
        return self.reset_infos

    def reset_env(self, k: int, seed: int | None = None, options: dict | None = None) -> Info:
        """Reset env ``k`` into its row (reward 0, done False); its reset info."""
        self._store_reset(k, self.call(k, "reset", lambda: self.envs[k].reset(seed=seed, options=options)))
        self._rewards[k], self._dones[k] = 0.0, False
        if self.pending is not None:
            self.pending[k] = False
        return self.reset_infos[k]

    def _store_reset(self, k: int, result: Any) -> None:
        """Check env ``k``'s reset ``result``, store its observation and its reset info."""
        obs, info = self.call(k, "reset", lambda: check_reset_result(result, self.first_index + k))
        self._write(k, obs, "reset")
        self.reset_infos[k] = self.call(k, "reset", lambda: dict(info))

    def _write(self, k: int, obs: Any, method: str) -> None:
        """Write env ``k``'s observation from ``method`` into its row: one that does not fit is the env's failure."""
        try:
            self._write_row(k, obs)
        except ObservationError as exc:
            error = ObservationError(f"env {self.first_index + k} returned from {method}(): {exc}")
            raise EnvCallFailed(self.first_index + k, method) from error

    def step(self, actions: Sequence[Any], ks: Sequence[int] | range | None = None, infos: list[Info] | None = None,
             said: list[int] | None = None, done: tuple[Callable[[int], None], Any] | None = None) -> list[Info]:
        """Step env ``ks[j]`` (None: every env) with ``actions[j]``, appending each info to ``infos``
        (on ``EnvCallFailed`` it holds the infos of the envs before). With ``said`` and ``done``
        (``(call, capsule)``: ``call(k)``, or its C twin in a ``vec_envs.on_done`` capsule): an env with
        nothing to say (empty info; empty reset info if it ended) is reported done once its rows are
        written, any other's ``k`` appended to ``said``."""
        infos = [] if infos is None else infos
        ks = range(len(self.envs)) if ks is None else ks
        if type(ks) is range:  # one run
            self._step_run(actions, ks.start, ks.stop, infos, said, done)
            return infos
        j = 0
        while j < len(ks):  # runs of consecutive envs: one loop each
            stop = j + 1
            while stop < len(ks) and ks[stop] == ks[stop - 1] + 1:
                stop += 1
            self._step_run(actions[j:stop], ks[j], ks[j] + stop - j, infos, said, done)
            j = stop
        return infos

    def _step_run(self, actions: Sequence[Any], start: int, stop: int, infos: list[Info], said: list[int] | None,
                  done: tuple[Callable[[int], None], Any] | None) -> None:
        """Envs ``start:stop`` (env k with ``actions[k - start]``), their infos appended."""
        rows, k = self._rows, start
        hook = None if done is None else (done[0] if done[1] is None else done[1])
        while k < stop:
            if rows is None:
                info = self.step_env(k, actions[k - start])
            else:  # the C loop stores the usual results: k is the first it hands back
                k, result, error, resetting, step_info = _kernel.step_quiet(  # type: ignore[union-attr]
                    rows, actions, start, k, stop, infos, hook, said)
                if k == stop:
                    return
                info = self._settle_reset(k, result, error, step_info) if resetting else self._settle(k, result, error)
            infos.append(info)
            if said is not None and done is not None:
                if info or (self._dones[k] and self.pending is None and self.reset_infos[k]):
                    said.append(k)
                else:
                    done[0](k)
            k += 1

    def step_env(self, k: int, action: Any) -> Info:
        """Step env ``k`` into its row (the Python path), autoreset if its episode ended; its info."""
        if self.pending is not None and self.pending[k]:  # its episode ended: this step is its reset
            return dict(self.reset_env(k))
        if self.running is not None:
            self.running[0] = self.first_index + k + 1
        try:
            result = self.envs[k].step(action)
        except Exception as exc:
            raise EnvCallFailed(self.first_index + k, "step") from exc
        return self._settle(k, result, None)

    def _settle(self, k: int, result: Any, error: BaseException | None) -> Info:
        """Check and store env ``k``'s step ``result`` (or raise ``error``), autoreset; its info."""
        index = self.first_index + k
        if error is not None:
            raise EnvCallFailed(index, "step") from error
        try:  # whatever the result makes fail (a broken info's __len__) is the env's failure
            obs, reward, terminated, truncated, info = check_step_result(result, index)
            self._write(k, obs, "step")
            info = dict(info) if info else {}  # the caller's own (an env may reuse its dict)
            self._rewards[k] = reward
        except EnvCallFailed:
            raise
        except Exception as exc:
            raise EnvCallFailed(index, "step") from exc
        self._dones[k] = ended = terminated or truncated
        if ended:
            self._ended(k, info, truncated and not terminated)
        if self.running is not None:
            self.running[0] = 0
        return info

    def _settle_reset(self, k: int, result: Any, error: BaseException | None, step_info: Info | None) -> Info:
        """Store the reset the C loop handed back (or raise ``error``); env ``k``'s info."""
        if error is not None:
            raise EnvCallFailed(self.first_index + k, "reset") from error
        self._store_reset(k, result)
        if self.running is not None:
            self.running[0] = 0
        if self.pending is not None and self.pending[k]:  # a reset in place of a step: its row is the reset's
            self._rewards[k], self._dones[k], self.pending[k] = 0.0, False, False
            return dict(self.reset_infos[k])
        return step_info if step_info is not None else {}

    def _ended(self, k: int, info: Info, time_limit_truncated: bool) -> None:
        """Same-step: keep env ``k``'s last observation (terminal rows, else ``info``), reset it; deferred: mark it."""
        buffers = self.buffers
        terminal = buffers.terminal_obs is not None and buffers.time_limit_truncated is not None
        if terminal:
            buffers.time_limit_truncated[k] = time_limit_truncated  # type: ignore[index]
        else:
            info["TimeLimit.truncated"] = time_limit_truncated
        if self.pending is not None:
            self.pending[k] = True
            return
        if terminal:
            copy_row(buffers.terminal_obs, buffers.obs, k)  # type: ignore[arg-type]
        else:
            info["terminal_observation"] = copy_obs(get_row(buffers.obs, k))
        self._store_reset(k, self.call(k, "reset", lambda: self.envs[k].reset()))

    def step_from(self, k: int, state: Any, action: Any, dt: int, return_state: bool) -> tuple:
        """Planning: restore ``state`` (unless None), step ``action`` up to ``dt`` times until the episode
        ends (no autoreset), into row ``k``. ``(new state or None, summed reward, terminated, truncated, info)``."""
        env, index = self.envs[k], self.first_index + k
        if state is not None:
            self.set_state(k, state)
        total, obs, terminated, truncated, info = 0.0, None, False, False, {}
        for _ in range(dt):
            obs, reward, terminated, truncated, info = self.call(k, "step", lambda: check_step_result(
                env.step(action), index))
            total += float(reward)
            if terminated or truncated:
                break
        self._write(k, obs, "step")
        new_state = self.get_state(k) if return_state else None
        return new_state, total, terminated, truncated, self.call(k, "step", lambda: dict(info))

    def get_state(self, k: int) -> Any:
        """Env ``k``'s state, for planning (``vec_envs.planning.env_state``)."""
        from vec_envs.planning.env_state import get_env_state
        return self.call(k, "get_state", lambda: get_env_state(self.envs[k], self.first_index + k))

    def set_state(self, k: int, state: Any) -> None:
        from vec_envs.planning.env_state import set_env_state
        self.call(k, "set_state", lambda: set_env_state(self.envs[k], state, self.first_index + k))

    def image(self, k: int) -> np.ndarray:
        """Env ``k``'s frame (``render()``), which must be an image."""
        env = self.envs[k]
        frame = self.call(k, "render", env.render)
        if frame is None or not hasattr(frame, "shape"):
            err = ValueError(f"env {self.first_index + k} returned {type(frame).__name__} from render() "
                             f"(render_mode={getattr(env, 'render_mode', None)!r}); get_images() needs envs made "
                             "with render_mode='rgb_array', e.g. env_kwargs={'render_mode': 'rgb_array'}")
            raise EnvCallFailed(self.first_index + k, "render") from err
        return np.asarray(frame)

    def close(self) -> None:
        """Close every env; the first failure is raised after all were tried."""
        failure = None
        for k in range(len(self.envs)):
            try:
                self.call(k, "close", self.envs[k].close)
            except EnvCallFailed as exc:
                failure = failure or exc
        if failure is not None:
            raise failure


_NO_ENDS = np.zeros(0, np.bool_)


def step_envs(envs: EnvSlice, ks: list[int] | range, actions: Any, said: list[int] | None = None,
              done: tuple[Callable[[int], None], Any] | None = None) -> tuple[list[Info], dict[int, EnvCallFailed]]:
    """Step env ``ks[j]`` with ``actions[j]``, going on past a failed env (``said``, ``done``: as in
    ``EnvSlice.step``; a failed env is said); the infos (``{}`` for a failed env) and the failures."""
    infos: list[Info] = []
    failures: dict[int, EnvCallFailed] = {}
    while len(infos) < len(ks):
        j = len(infos)
        try:  # from the first env not stepped yet (one run: its loop at once)
            if type(ks) is range:
                envs._step_run(actions[j:] if j else actions, ks.start + j, ks.stop, infos, said, done)
            else:
                envs.step(actions[j:] if j else actions, ks[j:] if j else ks, infos, said, done)
        except EnvCallFailed as exc:
            failures[exc.env_index] = exc
            if envs.running is not None:
                envs.running[0] = 0
            infos.append({})
            if said is not None:
                said.append(ks[len(infos) - 1])
    return infos, failures


def with_terminal(buffers: BatchBuffers, i: int, info: Info, deferred: bool = False) -> Info:
    """A copy of ended env ``i``'s ``info`` with the ``TimeLimit.truncated`` and (unless
    ``deferred``) a copy of the ``terminal_observation`` its slice left in the terminal rows."""
    info = dict(info)
    if not deferred:
        info["terminal_observation"] = copy_obs(get_row(buffers.terminal_obs, i))  # type: ignore[arg-type]
    info["TimeLimit.truncated"] = bool(buffers.time_limit_truncated[i])  # type: ignore[index]
    return info


def ended_infos(buffers: BatchBuffers, dones: np.ndarray, env_ids: np.ndarray | None,
                reset_infos: list[Info], deferred: bool = False) -> list[Info]:
    """The infos of envs ``env_ids`` (None: all), ``dones`` theirs, with nothing to say: empty, but an ended
    env's gets its terminal rows (``with_terminal``) and, unless ``deferred``, an empty reset info."""
    ended = dones.nonzero()[0]
    if _kernel is not None and not len(ended):  # the usual batch: nothing to gather
        return _kernel.ended_infos(len(dones), ended, ended, None, _NO_ENDS, reset_infos)
    ids = ended if env_ids is None else env_ids[ended]
    if _kernel is not None and type(buffers.terminal_obs) is np.ndarray:  # one leaf: one gather, one C pass
        rows = None if deferred else buffers.terminal_obs[ids]
        truncated = buffers.time_limit_truncated[ids]  # type: ignore[index]
        return _kernel.ended_infos(len(dones), ended, ids, rows, truncated, None if deferred else reset_infos)
    infos: list[Info] = [{} for _ in range(len(dones))]
    for place, i in zip(ended.tolist(), ids.tolist()):
        infos[place] = with_terminal(buffers, i, {}, deferred)
        if not deferred:
            reset_infos[i] = {}
    return infos
