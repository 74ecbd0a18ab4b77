"""Run Atari end to end: preprocessed envs on a backend, a policy, live progress, a summary.

The envs are ``vec_envs.ale.make_atari_env`` (DeepMind preprocessing, 84x84 gray,
frame skip 4) with ``VecFrameStack`` on top. The policy is random unless ``--policy``
names your own ``callable(obs) -> actions``. Scores are real game scores (unclipped,
all lives of a game).

    vec-envs-run-atari                                        # the installed command; or:
    python scripts/run_atari.py                               # Breakout, 8 envs, subproc
    python scripts/run_atari.py --env-id Pong --backend dummy --steps 10000
    python scripts/run_atari.py --num-envs 16 --batch-size 8  # recv/send: the first 8 ready envs
    python scripts/run_atari.py --render                      # live tiled window of all envs
    python scripts/run_atari.py --video videos/               # MP4 clips
    python scripts/run_atari.py --policy my_agent:act         # my_agent.py in the current dir
    python scripts/run_atari.py --backend ale                 # ale-py's C++ engine (ALEVecEnv)

Exit codes: 0 done; 2 a bad command line (one line on stderr); 1 a setup the command
cannot run with: an unknown game, an unwritable folder, a policy that does not import, a
missing extra or display (one line on stderr); 130 interrupted (Ctrl-C; the summary so
far is printed and the workers and video files are closed).
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
from gymnasium.spaces import Discrete
from tqdm import tqdm

import vec_envs
from vec_envs import VecEnvBase
from vec_envs.ale import make_atari_env, resolve_game
from vec_envs.cli.args import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    check_writable_dir,
    in_series_arg,
    parse_args,
    positive_int,
)
from vec_envs.errors import VecEnvError
from vec_envs.extras import install_hint
from vec_envs.rendering.opencv_viewer import check_display
from vec_envs.wrappers import VecFrameStack, VecVideoRecorder

Policy = Callable[[Any], Any]  # observations of every env (or of a batch) -> one action each

__all__ = ["Args", "main"]


#: the most envs one command runs: each holds an Atari emulator in memory; start several commands for more
MAX_ENVS = 4096


def env_count(text: str) -> int:
    """``text`` as a number of envs: a positive int up to ``MAX_ENVS``."""
    value = positive_int(text)
    if value > MAX_ENVS:
        raise argparse.ArgumentTypeError(f"expected a positive int up to {MAX_ENVS}, received {text!r} (each env "
                                         "holds an Atari emulator in memory; start several commands for more)")
    return value


class UsageError(Exception):
    """A bad command line (values that do not fit together): one line on stderr, exit code 2.
    A setup the command cannot run with is a ``CommandError``: one line, exit code 1."""


@dataclass
class Args:
    """Run Atari end to end: preprocessed envs on a backend, a policy, live progress, a summary."""

    env_id: str = field(default="Breakout", metadata={
        "help": "game: 'Breakout', 'BreakoutNoFrameskip-v4' or 'ALE/Breakout-v5'"})
    num_envs: int = field(default=8, metadata={"help": f"envs stepped as one batch (at most {MAX_ENVS})",
                                               "type": env_count})
    backend: Literal["dummy", "subproc", "ray", "ale"] = field(default="subproc", metadata={
        "help": "dummy: all envs in this process; subproc: worker processes; ray: Ray actors; ale: ale-py's C++ "
                "vector engine (threads, preprocessing and frame stack in C++)"})
    in_series: int | str = field(default="auto", metadata={
        "help": "envs per worker for subproc / ray: an int or 'auto'", "type": in_series_arg})
    batch_size: int | None = field(default=None, metadata={
        "help": "asynchronous batches: act on the first K envs ready (recv/send) while the others keep stepping; "
                "K <= --num-envs (default: lock-step steps of all envs)", "type": positive_int, "metavar": "K"})
    steps: int = field(default=24_000, metadata={
        "help": "env steps in total, over all envs; one step is 4 emulator frames", "type": positive_int})
    frame_stack: int = field(default=4, metadata={
        "help": "observations stacked by VecFrameStack; 1 = no stacking", "type": positive_int})
    seed: int = field(default=0, metadata={"help": "env i gets seed + i; also seeds the random policy"})
    sticky_actions: float = field(default=0.0, metadata={
        "help": "repeat_action_probability of the emulator; 0.25 as in ALE v5", "metavar": "PROB"})
    render: bool = field(default=False, metadata={"help": "show all envs tiled in one live window (needs a display)"})
    video: str | None = field(default=None, metadata={
        "help": "record MP4 clips of all envs (tiled) into DIR", "metavar": "DIR"})
    video_length: int = field(default=200, metadata={"help": "batch steps per clip", "type": positive_int})
    video_interval: int = field(default=1000, metadata={
        "help": "a clip starts every this many batch steps, the first at step 0", "type": positive_int})
    monitor_dir: str | None = field(default=None, metadata={
        "help": "write one SB3-format monitor CSV per env (DIR/<i>.monitor.csv)", "metavar": "DIR"})
    policy: str | None = field(default=None, metadata={
        "help": "your policy: callable(obs) -> one action per row of obs (every env, or the K of a --batch-size "
                "batch); MODULE is imported from the current directory or sys.path (default: uniform random "
                "actions)", "metavar": "MODULE:CALLABLE"})


# ------------------------------------------------------------------ checks
def load_policy(spec: str) -> Policy:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--policy expects MODULE:CALLABLE (e.g. my_agent:act), received {spec!r}")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"--policy: cannot import module {module_name!r}: {exc}") from None
    finally:
        sys.path.pop(0)
    policy = getattr(module, attr, None)
    if not callable(policy):
        raise CommandError(f"--policy: {module_name} has no callable {attr!r}")
    return policy


def backend_class(name: str) -> type[VecEnvBase]:
    cls_name = {"dummy": "DummyVecEnv", "subproc": "SubprocVecEnv", "ray": "RayVecEnv", "ale": "ALEVecEnv"}[name]
    cls = getattr(vec_envs, cls_name, None)
    if cls is None:
        raise UsageError(f"--backend {name}: this version of vec_envs has no {cls_name}; "
                         f"use --backend dummy or subproc")
    return cls


def check_args(args: Args) -> str:
    """Everything that can be checked before building envs; returns the game's gymnasium id."""
    if not 0.0 <= args.sticky_actions <= 1.0:
        raise UsageError(f"--sticky-actions must be in [0, 1], received {args.sticky_actions}")
    try:
        env_id = resolve_game(args.env_id).env_id
    except (ImportError, ValueError) as exc:  # ale-py missing; an unknown game
        raise CommandError(f"--env-id: {exc}") from None
    backend_class(args.backend)
    if args.batch_size is not None:
        check_batch_size(args, args.batch_size)
    if args.render:
        try:
            check_display()
        except VecEnvError as exc:
            reason = str(exc).split(". Use ")[0]
            raise CommandError(f"--render: {reason}; run under a virtual display (xvfb-run -a python "
                             f"scripts/run_atari.py --render) or record with --video DIR instead") from None
    if args.video is not None:
        try:
            import imageio  # noqa: F401
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise CommandError(f"--video needs imageio and imageio-ffmpeg: {install_hint('video')}") from None
        check_writable_dir(args.video, "--video")
    if args.monitor_dir is not None:
        check_writable_dir(args.monitor_dir, "--monitor-dir")
    return env_id


def check_batch_size(args: Args, batch_size: int) -> None:
    if batch_size > args.num_envs:
        raise UsageError(f"--batch-size must be at most --num-envs ({args.num_envs}), received {batch_size}")
    for option, used in (("--render", args.render), ("--video", args.video)):
        if used:
            raise UsageError(f"{option} shows all envs at one step, which needs lock-step batches; "
                             f"drop --batch-size or {option}")


# ------------------------------------------------------------------ envs
def make_venv(args: Args, env_id: str) -> VecEnvBase:
    env_kwargs: dict[str, Any] = {"repeat_action_probability": args.sticky_actions}
    if args.render or args.video:
        env_kwargs["render_mode"] = "rgb_array"
    vec_env_kwargs = backend_kwargs(args)
    if args.batch_size is not None:
        vec_env_kwargs["batch_size"] = args.batch_size
    try:
        venv = make_atari_env(env_id, args.num_envs, seed=args.seed, vec_env_cls=backend_class(args.backend),
                              vec_env_kwargs=vec_env_kwargs, env_kwargs=env_kwargs,
                              monitor_dir=args.monitor_dir)
    except ImportError as exc:  # RayVecEnv without ray
        raise CommandError(f"--backend {args.backend}: {exc}") from None
    except ValueError as exc:  # ALEVecEnv with --monitor-dir
        raise UsageError(f"--backend {args.backend}: {exc}") from None
    if args.frame_stack > 1 and args.backend != "ale":  # ALEVecEnv stacks in C++
        venv = VecFrameStack(venv, n_stack=args.frame_stack)
    if args.video:
        interval, last_step = args.video_interval, -(-args.steps // args.num_envs)  # batch steps of the run
        venv = VecVideoRecorder(venv, args.video,  # no clip starts after the last step (it would hold 1 frame)
                                record_video_trigger=lambda step: step % interval == 0 and step < last_step,
                                video_length=args.video_length, name_prefix=env_id.replace("/", "-"))
    return venv


def backend_kwargs(args: Args) -> dict[str, Any]:
    """The backend's own keyword arguments."""
    if args.backend == "ale":
        return {"frame_stack": args.frame_stack}
    return {} if args.backend == "dummy" else {"in_series": args.in_series}


def random_policy(venv: VecEnvBase, seed: int) -> Policy:
    rng = np.random.default_rng(seed)
    n_actions = int(cast(Discrete, venv.action_space).n)
    return lambda obs: rng.integers(0, n_actions, size=len(obs))


# ------------------------------------------------------------------ the run
@dataclass
class Stats:
    """What the run did so far."""

    steps: int = 0
    scores: list[float] = field(default_factory=list)
    t_start: float = field(default_factory=time.perf_counter)
    t_end: float | None = None

    def wall(self) -> float:
        return (self.t_end or time.perf_counter()) - self.t_start

    def summary(self) -> str:
        wall = self.wall()
        line = (f"steps {self.steps} | wall time {wall:.1f} s | {self.steps / max(wall, 1e-9):.0f} steps/s"
                f" | episodes {len(self.scores)}")
        if self.scores:
            line += (f" | score mean {statistics.fmean(self.scores):.2f} median "
                     f"{statistics.median(self.scores):g} max {max(self.scores):g}")
        return line


def progress_bar(args: Args) -> tqdm:
    return tqdm(total=args.steps, unit="step", unit_scale=True, dynamic_ncols=True, mininterval=0.5,
                smoothing=0.1)


def record(stats: Stats, bar: tqdm, steps: int, infos: list[dict[str, Any]]) -> None:
    """Count ``steps`` env steps and the episodes that ``infos`` finish."""
    stats.steps += steps
    bar.update(steps)
    finished = [info["episode"]["r"] for info in infos if "episode" in info]
    if finished:
        stats.scores.extend(finished)
        mean_score = f"{statistics.fmean(stats.scores):.1f}"
        bar.set_postfix(episodes=len(stats.scores), mean_score=mean_score, refresh=False)


def run(venv: VecEnvBase, policy: Policy, args: Args, stats: Stats) -> None:
    """Lock-step: every env steps in each batch."""
    obs = venv.reset()
    with progress_bar(args) as bar:
        while stats.steps < args.steps:
            obs, _, _, infos = venv.step(policy(obs))
            record(stats, bar, venv.num_envs, infos)
            if args.render:
                venv.render(mode="human")


def run_async(venv: VecEnvBase, policy: Policy, args: Args, stats: Stats) -> None:
    """Asynchronous batches: act on the first ``--batch-size`` envs ready, by env id.

    An env's first row after ``async_reset`` is its reset observation, not a step: only
    the rows of envs that were sent an action count as steps.
    """
    venv.async_reset()
    stepping = np.zeros(venv.num_envs, np.bool_)  # env ids that were sent an action
    with progress_bar(args) as bar:
        while stats.steps < args.steps:
            obs, _, _, infos, env_ids = venv.recv()
            record(stats, bar, int(stepping[env_ids].sum()), infos)
            stepping[env_ids] = True
            venv.send(policy(obs), env_ids)


def prog() -> str:
    """The command's name, as argparse writes it: ``run_atari.py`` or ``vec-envs-run-atari``."""
    return os.path.basename(sys.argv[0])


def close_quietly(venv: VecEnvBase | None) -> None:
    if venv is None:
        return
    try:
        venv.close()
    except Exception as exc:  # report, but still print the summary
        print(f"{prog()}: warning: closing the envs failed: {exc}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    args = parse_args(Args, argv, __doc__.split("\n\n")[0])
    venv = None
    stats = Stats()
    interrupted = False
    try:
        env_id = check_args(args)
        policy = load_policy(args.policy) if args.policy else None
        t_build = time.perf_counter()
        venv = make_venv(args, env_id)
        batches = "" if args.batch_size is None else f" in async batches of {args.batch_size}"
        print(f"{env_id}: {args.num_envs} envs on {args.backend}{batches}, obs {venv.observation_space.shape}, "
              f"{args.steps} steps (envs ready in {time.perf_counter() - t_build:.1f} s)", flush=True)
        stats = Stats()
        loop = run if args.batch_size is None else run_async
        loop(venv, policy or random_policy(venv, args.seed), args, stats)
    except (UsageError, CommandError) as exc:
        print(f"{prog()}: error: {exc}", file=sys.stderr)
        close_quietly(venv)
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILED
    except KeyboardInterrupt:
        interrupted = True
    stats.t_end = time.perf_counter()
    close_quietly(venv)
    print(("interrupted: " if interrupted else "summary: ") + stats.summary(), flush=True)
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
