"""What ALEVecEnv adds on top of the engine's batches: which envs were reset, real
game scores, clipped rewards and the per-env info dicts.

The engine reports a lost life as ``terminated`` without resetting the game, and
overwrites a reset env's counters with the new episode's. Whether a row was reset is
read off the frame counters: stepping advances the emulator's frame counter and the
episode's frame counter alike, while a reset restarts the episode's counter, so for a
reset row ``frame_number - previous frame_number`` exceeds the episode's count. An engine
in ``NextStep`` mode resets an ended env at its next step (``step_later``): the game's
record goes with that reset row, the first row where the engine shows it reset the game.
"""
from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

__all__ = ["EpisodeTracker", "StepRows"]

#: the engine's per-env counters that every info dict carries, as in ale-py's AtariEnv
INFO_KEYS = ("lives", "episode_frame_number", "frame_number")


class StepRows(NamedTuple):
    """One batch of stepped rows, bookkept: rewards to hand out and the envs reset."""

    rewards: np.ndarray
    dones: np.ndarray
    reset: np.ndarray
    infos: list[dict[str, Any]]


class EpisodeTracker:
    """Per-env running score and frame counters of ``num_envs`` engine envs.

    Args:
        num_envs: envs of the engine.
        clip_rewards: hand out the sign of each reward (scores stay raw).

    Example:
        >>> tracker = EpisodeTracker(2, clip_rewards=True)
        >>> ids = np.array([0, 1])
        >>> counters = {"lives": np.array([5, 5]), "frame_number": np.array([10, 12]),
        ...             "episode_frame_number": np.array([10, 12])}
        >>> _ = tracker.start(ids, counters)
        >>> counters = {"lives": np.array([5, 5]), "frame_number": np.array([14, 40]),
        ...             "episode_frame_number": np.array([14, 7])}   # env 1 was reset
        >>> rows = tracker.step(ids, np.array([3, 2]), np.array([False, True]),
        ...                     np.array([False, False]), counters)
        >>> rows.rewards.tolist(), rows.reset.tolist(), rows.infos[1]["episode"]["r"]
        ([1.0, 1.0], [False, True], 2.0)
    """

    def __init__(self, num_envs: int, clip_rewards: bool) -> None:
        self.clip_rewards = clip_rewards
        self.t_start = time.time()
        self.scores = np.zeros(num_envs, np.float64)
        self.frame_number = np.zeros(num_envs, np.int64)
        self.episode_frames = np.zeros(num_envs, np.int64)

    def start(self, env_ids: np.ndarray, counters: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        """Envs ``env_ids`` were just reset; returns their reset info dicts."""
        self.scores[env_ids] = 0.0
        self.frame_number[env_ids] = counters["frame_number"]
        self.episode_frames[env_ids] = counters["episode_frame_number"]
        return _info_dicts(counters)

    def step(self, env_ids: np.ndarray, raw_rewards: np.ndarray, terminated: np.ndarray,
             truncated: np.ndarray, counters: dict[str, np.ndarray]) -> StepRows:
        """Bookkeep one stepped batch (rows in the order of ``env_ids``)."""
        frame_number = counters["frame_number"]
        episode_frames = counters["episode_frame_number"]
        self.scores[env_ids] += raw_rewards
        infos = _info_dicts(counters)
        dones = terminated | truncated
        reset = dones  # only a row whose episode ended can have been reset: all False here
        if dones.any():
            advanced = frame_number - self.frame_number[env_ids]
            reset = advanced != episode_frames - self.episode_frames[env_ids]
            if reset.any():
                self._end_games(env_ids, reset, advanced - episode_frames, infos)
        self.frame_number[env_ids] = frame_number
        self.episode_frames[env_ids] = episode_frames
        rewards = np.sign(raw_rewards) if self.clip_rewards else raw_rewards
        return StepRows(rewards.astype(np.float32), dones, reset, infos)

    def step_later(self, env_ids: np.ndarray, raw_rewards: np.ndarray, terminated: np.ndarray,
                   truncated: np.ndarray, counters: dict[str, np.ndarray], after_end: np.ndarray,
                   ends_are_games: bool) -> StepRows:
        """Bookkeep a batch of an engine that resets an ended env at its next step: rows
        ``after_end`` (their env ended at its previous row) are resets, and where the
        counters show a new game the old game's record goes with them; with
        ``ends_are_games`` (no lost life ends an episode, nothing resets without the agent)
        it goes with the row that ended the game instead."""
        frame_number, episode_frames = counters["frame_number"], counters["episode_frame_number"]
        self.scores[env_ids] += raw_rewards
        infos = _info_dicts(counters)
        dones = terminated | truncated
        reset = np.zeros(len(env_ids), np.bool_)
        if ends_are_games and dones.any():
            self._end_games(env_ids, dones, episode_frames - self.episode_frames[env_ids], infos)
        elif after_end.any():
            advanced = frame_number - self.frame_number[env_ids]
            reset = after_end & (advanced != episode_frames - self.episode_frames[env_ids])
            if reset.any():
                self._end_games(env_ids, reset, np.zeros(len(env_ids), np.int64), infos)
        self.frame_number[env_ids] = frame_number
        self.episode_frames[env_ids] = episode_frames
        rewards = np.sign(raw_rewards) if self.clip_rewards else raw_rewards
        return StepRows(rewards.astype(np.float32), dones, reset, infos)

    def _end_games(self, env_ids: np.ndarray, reset: np.ndarray, last_step_frames: np.ndarray,
                   infos: list[dict[str, Any]]) -> None:
        """``info["episode"]`` for each row whose game ended (and was reset) in this step."""
        elapsed = round(time.time() - self.t_start, 6)
        for row in np.flatnonzero(reset):
            env = env_ids[row]
            length = int(self.episode_frames[env] + last_step_frames[row])
            infos[row]["episode"] = {"r": round(float(self.scores[env]), 6), "l": length, "t": elapsed}
            self.scores[env] = 0.0


def _info_dicts(counters: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    columns = [counters[key].tolist() for key in INFO_KEYS]
    return [dict(zip(INFO_KEYS, row)) for row in zip(*columns)]
