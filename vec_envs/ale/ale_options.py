"""ALEVecEnv's options: the names of ``make_atari`` / ``wrap_deepmind``, mapped onto
the settings of ale-py's C++ vector engine (``ale_py.ALEVectorInterface``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vec_envs.arguments import check_int

__all__ = ["AtariOptions"]

RAW_FRAME = (210, 160)  # the Atari screen, height x width


@dataclass(frozen=True)
class AtariOptions:
    """The DeepMind preprocessing, with the argument names of ``make_atari`` and ``wrap_deepmind``.

    Attributes:
        noop_max: up to this many no-ops at reset (0: none).
        frame_skip: emulator frames per step, max-pooled over the last two.
        episode_life: a lost life ends the episode (``done``) but not the game: play goes
            on from the same frame; ``infos[i]["episode"]`` still comes once per game.
        fire_reset: press FIRE at reset when the game has it (None or True); False: never.
        clip_rewards: rewards become their sign (the episode scores stay unclipped).
        warp_frame: resize frames to ``screen_size`` squared; False: raw 210x160 RGB.
        screen_size: side of the warped frame.
        grayscale: one gray channel per frame (with ``warp_frame``), else RGB.
        frame_stack: frames stacked on the last axis, as ``VecFrameStack`` does.
        repeat_action_probability: sticky actions (0.25 as in ALE v5).
        full_action_space: all 18 actions instead of the game's minimal set.
        max_num_frames_per_episode: emulator frames before an episode is truncated.
    """

    noop_max: int = 30
    frame_skip: int = 4
    episode_life: bool = True
    fire_reset: bool | None = None
    clip_rewards: bool = True
    warp_frame: bool = True
    screen_size: int = 84
    grayscale: bool = True
    frame_stack: int = 1
    repeat_action_probability: float = 0.0
    full_action_space: bool = False
    max_num_frames_per_episode: int = 108_000

    def __post_init__(self) -> None:
        check_int("ALEVecEnv: noop_max", self.noop_max, minimum=0)
        check_int("ALEVecEnv: frame_skip", self.frame_skip, minimum=1)
        check_int("ALEVecEnv: screen_size", self.screen_size, minimum=1)
        check_int("ALEVecEnv: frame_stack", self.frame_stack, minimum=1)
        check_int("ALEVecEnv: max_num_frames_per_episode", self.max_num_frames_per_episode, minimum=1)
        if not 0.0 <= float(self.repeat_action_probability) <= 1.0:
            raise ValueError(f"ALEVecEnv: repeat_action_probability must be in [0, 1], "
                             f"received {self.repeat_action_probability!r}")

    @property
    def frame_size(self) -> tuple[int, int]:
        """The ``(height, width)`` of one preprocessed frame."""
        return (self.screen_size, self.screen_size) if self.warp_frame else RAW_FRAME

    @property
    def channels(self) -> int:
        """The channels of one frame, 1 (gray) or 3 (RGB)."""
        return 1 if self.grayscale and self.warp_frame else 3

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        """The shape ``(height, width, channels * frame_stack)``, as ``VecFrameStack`` gives it."""
        return (*self.frame_size, self.channels * self.frame_stack)

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``ale_py.ALEVectorInterface`` (all but the ROM and the
        batching). Rewards come raw (clipped by ALEVecEnv, which also sums the real
        score); a lost life is reported (``life_loss_info``), never a reset."""
        height, width = self.frame_size
        return {"frame_skip": self.frame_skip, "stack_num": self.frame_stack, "img_height": height,
                "img_width": width, "grayscale": self.channels == 1, "maxpool": self.frame_skip > 1,
                "noop_max": self.noop_max, "use_fire_reset": self.fire_reset is not False,
                "episodic_life": False, "life_loss_info": self.episode_life, "reward_clipping": False,
                "max_episode_steps": self.max_num_frames_per_episode,
                "repeat_action_probability": float(self.repeat_action_probability),
                "full_action_space": self.full_action_space}
