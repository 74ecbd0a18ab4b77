"""RayVecEnv: envs in Ray actors, on this machine or across a Ray cluster.

Importing this module does not import Ray; building a ``RayVecEnv`` does.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from vec_envs.arguments import check_env_fns
from vec_envs.autoreset import AutoresetMode
from vec_envs.extras import install_hint
from vec_envs.types import EnvFn
from vec_envs.workers.worker_vec_env import WorkerVecEnv, resolve_in_series

if TYPE_CHECKING:  # imports Ray, which only building a RayVecEnv may do
    from vec_envs.ray.ray_worker import RayWorker

__all__ = ["RayVecEnv", "import_ray", "connect_ray"]

RAY_MISSING = f"RayVecEnv needs Ray, which is not installed: {install_hint('ray')}"
SCHEDULING = ("spread", "pack")
RESOURCE_KEYWORDS = {"CPU": "num_cpus", "GPU": "num_gpus", "memory": "memory"}
CPU_GRANULARITY = 10_000  # Ray counts resources in units of 1e-4
ACTOR_START_TIMEOUT_S = 60.0  # an actor may wait for a worker process, a node, an autoscaler


def import_ray() -> ModuleType:
    """The ``ray`` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(RAY_MISSING) from exc
    return ray


def connect_ray(address: str | None) -> bool:
    """Use this process's Ray runtime if it has one, else connect to ``address``.

    ``None`` (or ``"local"``) starts a new local runtime, without the dashboard. Returns
    True when this call started a runtime: it is kept, for later RayVecEnvs to reuse,
    until the process exits (Ray shuts it down then); the library never shuts a runtime
    down.
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    if address in (None, "local"):
        ray.init(address="local", include_dashboard=False)
        return True
    ray.init(address=address)
    return False


def default_cpus_per_worker(num_workers: int) -> float:
    """``1 / num_workers`` (rounded down to Ray's 1e-4): the whole VecEnv asks one CPU."""
    return max(1, CPU_GRANULARITY // num_workers) / CPU_GRANULARITY


class RayVecEnv(WorkerVecEnv):
    """Envs in Ray actors; actor k builds and steps a contiguous slice of envs in series.

    Each actor receives the env factories (cloudpickled, never envs) and builds its envs
    itself; a step is one remote call per actor, gathered with one ``ray.wait``. Replies
    travel through Ray's object store and are copied into the VecEnv's own buffers, so
    ``copy=`` means what it means for SubprocVecEnv. An env's exception, a dead actor or
    a lost node raises ``EnvWorkerError``; a wait past ``timeout`` raises
    ``EnvTimeoutError``; ``close()`` kills the actors, never the Ray runtime.

    Each step costs a Ray round trip (a millisecond or more; several once observations
    go through the object store): worth it for slow envs and for envs spread over many
    machines, not for CartPole on one machine (use SubprocVecEnv there).

    Args:
        env_fns: one zero-argument factory per env; their modules must be importable on
            every node that runs an actor.
        in_series: envs per actor: an int, or "auto" for about one actor per CPU of the
            Ray cluster.
        address: None joins this process's Ray runtime, else starts a local one (kept
            until the process exits); "auto" or "ray://host:port" joins a cluster.
        num_cpus_per_worker: CPUs Ray reserves per actor; None asks ``1 / num_actors``,
            one CPU for the whole VecEnv, so it never waits forever for free CPUs.
        resources_per_worker: more Ray resources per actor, e.g. ``{"GPU": 0.25}`` or a
            custom ``{"atari_node": 1}``.
        scheduling: "spread" places actors on as many nodes as possible (Ray's SPREAD);
            "pack" on this process's node while it has room, elsewhere once it is full.
        timeout: default seconds a wait may take (None: no limit); starting actors may
            take at least ``ACTOR_START_TIMEOUT_S`` (60 s).
        on_error: "raise", or "restart" to replace a failed actor and go on; its envs
            then report ``done=True`` and ``infos[i]["env_restarted"] = True``.
        max_restarts: restarts allowed over the life of the VecEnv before raising.
        copy: return fresh arrays (True) or views valid until the next step (False).
        batch_size: envs per ``recv`` (None: all). ``send`` makes one remote call per actor
            for the envs sent to it (envs sent while the actor is busy go in its next call);
            ``recv`` waits on the calls out with one ``ray.wait``.
        autoreset_mode: ``"same_step"`` (default), ``"next_step"`` or ``"disabled"`` (or
            gymnasium's ``AutoresetMode``): what an env's rows are after its episode ends
            (``vec_envs.autoreset``).

    Example:
        >>> import gymnasium as gym
        >>> import ray
        >>> with RayVecEnv([lambda: gym.make("CartPole-v1")] * 8, in_series=4) as venv:
        ...     venv.reset().shape
        (8, 4)
        >>> ray.shutdown()   # this process started Ray: stop it
    """

    _worker_class: type[RayWorker]
    start_timeout_s = property(lambda self: ACTOR_START_TIMEOUT_S)  # an actor may wait for a node, an autoscaler

    def __init__(self, env_fns: Sequence[EnvFn], in_series: int | str = 1, address: str | None = None,
                 num_cpus_per_worker: float | None = None, resources_per_worker: Mapping[str, float] | None = None,
                 scheduling: str = "spread", timeout: float | None = None, on_error: str = "raise",
                 max_restarts: int = 10, copy: bool = True, batch_size: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        env_fns = check_env_fns(env_fns, "RayVecEnv", picklable=True)  # before Ray starts
        if scheduling not in SCHEDULING:
            raise ValueError(f"scheduling must be one of {SCHEDULING}, received {scheduling!r}")
        if num_cpus_per_worker is not None and not num_cpus_per_worker >= 0:
            raise ValueError(f"num_cpus_per_worker must be a number >= 0 or None, received {num_cpus_per_worker!r}")
        self._ray = import_ray()
        from vec_envs.ray.ray_worker import RayWorker

        self._worker_class = RayWorker
        self.address, self.scheduling = address, scheduling
        self.num_cpus_per_worker = num_cpus_per_worker
        self.resources_per_worker = dict(resources_per_worker or {})
        self.started_ray = False
        if in_series == "auto":
            self._connect()
            in_series = resolve_in_series("auto", len(env_fns), int(self._ray.cluster_resources().get("CPU", 0)))
        super().__init__(env_fns, in_series=in_series, copy=copy, timeout=timeout,
                         on_error=on_error, max_restarts=max_restarts, batch_size=batch_size,
                         autoreset_mode=autoreset_mode)

    def _connect(self) -> None:
        self.started_ray = connect_ray(self.address) or self.started_ray

    def _actor_options(self) -> dict[str, Any]:
        num_workers = math.ceil(len(self._env_fns) / self.in_series)
        options: dict[str, Any] = {
            "num_cpus": default_cpus_per_worker(num_workers) if self.num_cpus_per_worker is None
            else self.num_cpus_per_worker,
            "max_restarts": 0,  # WorkerVecEnv restarts actors itself (on_error="restart")
            "scheduling_strategy": self._scheduling_strategy(),
        }
        resources = dict(self.resources_per_worker)
        for key, keyword in RESOURCE_KEYWORDS.items():
            if key in resources:
                options[keyword] = resources.pop(key)
        if resources:
            options["resources"] = resources
        return options

    def _scheduling_strategy(self) -> Any:
        if self.scheduling == "spread":
            return "SPREAD"
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = self._ray.get_runtime_context().get_node_id()
        return NodeAffinitySchedulingStrategy(node_id=here, soft=True)

    def _start_worker(self, w: int, first: int, stop: int, pending: bool) -> RayWorker:
        self._connect()
        return self._worker_class(w, self._env_fns[first:stop], first, stop, self._actor_options(), self._deferred,
                                  pending)
