"""Soak SubprocVecEnv: random calls and faults for a set time, every untouched env checked.

For ``--seconds`` the script drives a SubprocVecEnv (``on_error="restart"``) with random
lock-step steps, recv/send rounds, resets, and faults: ``kill -9`` of a worker (the
library restarts it), ``SIGSTOP`` of a worker during a call with a timeout (the call times
out, the worker is continued, the call is waited for again and must lose nothing), Ctrl-C
part-way through a call (the VecEnv is reset) and, now and then, a rebuild of the whole
VecEnv with another ``in_series`` and shared memory on or off. Each env's rows are checked
against the same env stepped alone in a DummyVecEnv with the same seed and actions; an env
a fault touched (restarted by a kill, or everything after a Ctrl-C) is left out until the
next reset. At the end it prints what it did and survived, and the processes and file
descriptors at the start and the end, naming each descriptor open at the end that was not
at the start.

    python scripts/soak.py --seconds 600
    python scripts/soak.py --seconds 5 --num-envs 4    # a smoke run

Exit status: 0 when every checked row matched and nothing leaked, 1 otherwise.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.cli.args import parse_args
from vec_envs.errors import EnvTimeoutError
from vec_envs.extras import install_hint

if TYPE_CHECKING:
    import psutil

__all__ = ["Args", "SoakEnv", "Soak", "main"]


class SoakEnv(gym.Env):
    """A deterministic env whose episodes have random lengths; it knows its worker's pid."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self.pid = os.getpid()
        self.rng = np.random.default_rng()
        self.t, self.length = 0, 1

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.length = 0, int(self.rng.integers(3, 40))
        return self.rng.uniform(-1, 1, 4).astype(np.float32), {"length": self.length}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        if self.rng.random() < 0.02:
            time.sleep(0.002)  # now and then slow: completion order varies
        obs = (self.rng.uniform(-1, 1, 4) + int(action)).astype(np.float32)
        ended = self.t >= self.length
        return obs, float(self.rng.normal() + int(action)), ended and self.t % 2 == 0, ended and self.t % 2 == 1, \
            {"t": self.t}


@dataclass
class Args:
    """Soak SubprocVecEnv: random calls and faults for a set time, every untouched env checked."""

    seconds: float = field(default=600.0, metadata={"help": "how long to run"})
    num_envs: int = field(default=8, metadata={"help": "envs of the SubprocVecEnv"})
    batch_size: int = field(default=4, metadata={"help": "recv/send batch (must divide --num-envs)"})
    seed: int = field(default=0, metadata={"help": "seeds the choices and the envs"})

    def __post_init__(self) -> None:
        if self.num_envs < 2 or self.batch_size < 1 or self.num_envs % self.batch_size:
            raise ValueError(f"--batch-size must divide --num-envs (>= 2), received {self.batch_size} and "
                             f"{self.num_envs}")


def first_row(obs: Any) -> np.ndarray:
    """The first row of a batch of Box observations."""
    return np.asarray(obs)[0]


def descendants() -> list[psutil.Process]:
    """Every process below this one (psutil, of the ``bench`` extra, is imported when a soak runs)."""
    import psutil

    return psutil.Process().children(recursive=True)


def helper(process: psutil.Process) -> bool:
    """multiprocessing's fork server or resource tracker (they live as long as this process)."""
    import psutil

    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return False
    return "forkserver" in command or "resource_tracker" in command


def tree() -> tuple[int, int]:
    """Processes below this one (multiprocessing's helpers aside) and this process's open file descriptors."""
    import psutil

    return len([p for p in descendants() if not helper(p)]), psutil.Process().num_fds()


def fd_targets() -> dict[str, str]:
    """This process's open file descriptors and what each is (Linux's /proc; empty elsewhere)."""
    targets = {}
    for fd in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
        try:
            targets[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass  # the listing's own descriptor, closed since
    return targets


class Soak:
    """One soak run: a SubprocVecEnv, its references and the counts of what happened."""

    def __init__(self, args: Args) -> None:
        self.args, self.n = args, args.num_envs
        self.rng = np.random.default_rng(args.seed)
        self.did: Counter[str] = Counter()
        self.mismatches: list[str] = []
        self.refs = [DummyVecEnv([SoakEnv]) for _ in range(self.n)]
        self.venv: SubprocVecEnv | None = None
        self.touched: set[int] = set()
        self.expected: dict[int, tuple[np.ndarray, float, bool]] = {}
        self.build()

    # ---------------------------------------------------------------- building and resetting
    def build(self) -> None:
        if self.venv is not None:
            self.venv.close()
            self.did["rebuilds"] += 1
        in_series: int | str = ("auto", 1, 2)[int(self.rng.integers(3))]
        shared = bool(self.rng.integers(2))
        self.venv = SubprocVecEnv([SoakEnv] * self.n, in_series=in_series, shared_memory=shared,
                                  on_error="restart", max_restarts=10**9, batch_size=self.args.batch_size)
        self.did[f"built in_series={in_series} shared_memory={shared}"] += 1
        self.reset()

    def reseed(self) -> int:
        seed = int(self.rng.integers(2**31))
        assert self.venv is not None
        self.venv.seed(seed)
        for i, ref in enumerate(self.refs):
            ref.seed(seed + i)
        self.touched.clear()
        return seed

    def reset(self) -> None:
        assert self.venv is not None
        self.reseed()
        obs = np.asarray(self.venv.reset())
        self.did["reset"] += 1
        for i, ref in enumerate(self.refs):
            self.check(i, "reset", obs[i], first_row(ref.reset()))

    def pids(self) -> list[int]:
        assert self.venv is not None
        return list(self.venv.get_attr("pid"))

    # ---------------------------------------------------------------- checking
    def check(self, i: int, what: str, got: Any, want: Any) -> None:
        self.did["rows checked"] += 1
        if not np.array_equal(np.asarray(got), np.asarray(want)):
            self.mismatches.append(f"env {i} {what}: {got!r} != {want!r}")

    def check_rows(self, ids: Any, obs: Any, rewards: Any, dones: Any, infos: Any) -> None:
        for j, i in enumerate(ids):
            if infos[j].get("env_restarted"):
                self.touched.add(int(i))
                self.did["rows of restarted envs"] += 1
            if int(i) in self.touched:
                continue
            want_obs, want_reward, want_done = self.expected.pop(int(i))
            self.check(int(i), "obs", obs[j], want_obs)
            self.check(int(i), "reward", rewards[j], want_reward)
            self.check(int(i), "done", dones[j], want_done)

    def expect_step(self, i: int, action: int) -> None:
        if i not in self.touched:
            obs, rewards, dones, _ = self.refs[i].step(np.array([action]))
            self.expected[i] = (first_row(obs), rewards[0], dones[0])

    # ---------------------------------------------------------------- lock-step moves
    def actions(self) -> np.ndarray:
        return self.rng.integers(0, 3, self.n)

    def step(self) -> None:
        assert self.venv is not None
        actions = self.actions()
        for i in range(self.n):
            self.expect_step(i, int(actions[i]))
        obs, rewards, dones, infos = self.venv.step(actions)
        self.did["step"] += 1
        self.check_rows(range(self.n), obs, rewards, dones, infos)

    def kill(self) -> None:
        """``kill -9`` of a random worker, if it is still this process's descendant."""
        pid = self.pids()[int(self.rng.integers(self.n))]
        if pid in {p.pid for p in descendants()}:
            os.kill(pid, signal.SIGKILL)
            self.did["kill -9"] += 1
        for _ in range(int(self.rng.integers(1, 4))):
            self.step()

    def stop_during_timeout(self) -> None:
        """SIGSTOP a worker, time a step out, continue it, wait again: nothing may be lost."""
        assert self.venv is not None
        pid = self.pids()[int(self.rng.integers(self.n))]
        if pid not in {p.pid for p in descendants()}:
            self.step()  # an env of the parent's own slice: stopping it would stop this process
            return
        actions = self.actions()
        for i in range(self.n):
            self.expect_step(i, int(actions[i]))
        os.kill(pid, signal.SIGSTOP)
        self.did["SIGSTOP"] += 1
        try:
            self.venv.step_async(actions)
            try:
                result = self.venv.step_wait(timeout=float(self.rng.uniform(0.05, 0.3)))
            except EnvTimeoutError:
                self.did["timeouts"] += 1
                os.kill(pid, signal.SIGCONT)
                result = self.venv.step_wait(timeout=30.0)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.check_rows(range(self.n), *result)

    def ctrl_c(self) -> None:
        """A Ctrl-C part-way through lock-step calls; then every env is reset."""
        assert self.venv is not None
        timer = threading.Timer(float(self.rng.uniform(0.0, 0.05)), os.kill, (os.getpid(), signal.SIGINT))
        actions = self.actions()
        try:
            timer.start()
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                self.venv.step(actions)
        except KeyboardInterrupt:
            self.did["Ctrl-C"] += 1
        finally:
            timer.cancel()
        for _ in range(3):
            try:  # a loaded machine may deliver the Ctrl-C only after the calls above
                timer.join()
                time.sleep(0.01)
                break
            except KeyboardInterrupt:
                self.did["Ctrl-C"] += 1
        self.expected.clear()
        self.reset()

    # ---------------------------------------------------------------- recv/send
    def async_phase(self) -> None:
        """``async_reset``, random recv/send rounds, then every env received (lock-step may follow)."""
        assert self.venv is not None
        self.reseed()
        self.venv.async_reset()
        self.did["async_reset"] += 1
        for i, ref in enumerate(self.refs):
            self.expected[i] = (first_row(ref.reset()), 0.0, False)
        for _ in range(int(self.rng.integers(1, 30))):
            ids = self.recv()
            if self.rng.random() < 0.05:
                self.kill_any()
            actions = self.rng.integers(0, 3, len(ids))
            for i, action in zip(ids, actions):
                self.expect_step(int(i), int(action))
            self.venv.send(actions, ids)
            self.did["send"] += 1
        for _ in range(self.n // self.args.batch_size):
            self.recv()

    def recv(self) -> np.ndarray:
        assert self.venv is not None
        obs, rewards, dones, infos, ids = self.venv.recv(timeout=30.0)
        self.did["recv"] += 1
        self.check_rows(ids, obs, rewards, dones, infos)
        return ids

    def kill_any(self) -> None:
        """``kill -9`` of a random worker of the VecEnv (envs in flight: found in the process tree)."""
        workers = [p for p in descendants() if not helper(p)]
        if workers:
            os.kill(workers[int(self.rng.integers(len(workers)))].pid, signal.SIGKILL)
            self.did["kill -9"] += 1

    # ---------------------------------------------------------------- the run
    MOVES = ("step", "step", "step", "step", "async_phase", "reset", "kill", "stop_during_timeout", "ctrl_c",
             "build")
    WEIGHTS = (0.5, 0.1, 0.1, 0.1, 0.1, 0.03, 0.03, 0.02, 0.015, 0.005)

    def run(self, seconds: float) -> None:
        start = last = time.monotonic()
        p = np.array(self.WEIGHTS) / sum(self.WEIGHTS)
        while time.monotonic() - start < seconds:
            getattr(self, self.MOVES[int(self.rng.choice(len(self.MOVES), p=p))])()
            if time.monotonic() - last >= 60.0:
                last = time.monotonic()
                print(f"[{last - start:5.0f} s] {self.line()}", flush=True)

    def line(self) -> str:
        keys = ("step", "recv", "send", "reset", "async_reset", "kill -9", "SIGSTOP", "timeouts", "Ctrl-C",
                "rebuilds", "rows checked", "rows of restarted envs")
        return ", ".join(f"{key} {self.did[key]}" for key in keys) + f", mismatches {len(self.mismatches)}"

    def close(self) -> None:
        if self.venv is not None:
            self.venv.close()
        for ref in self.refs:
            ref.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__.split("\n\n")[0])
    if importlib.util.find_spec("psutil") is None:
        print(f"soak.py needs psutil: {install_hint('bench')}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGINT, signal.default_int_handler)  # started in the background, SIGINT may be ignored
    SubprocVecEnv([SoakEnv]).close()  # starts multiprocessing's helpers, which outlive every VecEnv
    before, fds_before = tree(), fd_targets()
    print(f"soak: {args.num_envs} envs, recv/send batches of {args.batch_size}, {args.seconds:g} s, seed "
          f"{args.seed}; at start {before[0]} processes below this one, {before[1]} fds", flush=True)
    started = time.monotonic()
    soak = Soak(args)
    try:
        soak.run(args.seconds)
    finally:
        soak.close()
    after, deadline = tree(), time.monotonic() + 5.0
    while (after[0] > before[0] or after[1] > before[1]) and time.monotonic() < deadline:
        time.sleep(0.2)  # closed workers still being reaped, their pipes closing
        after = tree()
    print(f"done in {time.monotonic() - started:.0f} s: {soak.line()}")
    print("configurations: " + ", ".join(f"{k.removeprefix('built ')} x{v}" for k, v in sorted(soak.did.items())
                                        if k.startswith("built ")))
    print(f"at end {after[0]} processes below this one, {after[1]} fds (start: {before[0]}, {before[1]})")
    for fd, target in sorted(fd_targets().items()):
        if fds_before.get(fd) != target:
            print(f"OPEN AT END fd {fd}: {target}")
    for line in soak.mismatches[:20]:
        print("MISMATCH " + line)
    leaked = after[0] > before[0] or after[1] > before[1]
    return 1 if soak.mismatches or leaked else 0


if __name__ == "__main__":
    sys.exit(main())
