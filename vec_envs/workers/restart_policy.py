"""RestartPolicy: whether a failed worker is replaced, and how many times.

Example:
    >>> from vec_envs.errors import EnvWorkerError
    >>> policy = RestartPolicy("restart", max_restarts=1)
    >>> failure = EnvWorkerError("env 3 (worker 1) raised in step(): ValueError: boom", env_index=3,
    ...                          worker_index=1, method="step")
    >>> policy.admit(failure, "step"); policy.restarts
    1
    >>> policy.admit(failure, "step")
    Traceback (most recent call last):
    ...
    vec_envs.errors.EnvWorkerError: env 3 (worker 1) raised in step(): ValueError: boom (max_restarts=1 reached)
"""
from __future__ import annotations

from vec_envs.errors import EnvWorkerError

__all__ = ["ON_ERROR", "RestartPolicy"]

ON_ERROR = ("raise", "restart")


class RestartPolicy:
    """``on_error="raise"`` raises every worker failure; ``"restart"`` replaces the worker,
    at most ``max_restarts`` times over the life of the VecEnv.

    Args:
        on_error: "raise" or "restart".
        max_restarts: restarts allowed before a failure raises anyway.
    """

    def __init__(self, on_error: str, max_restarts: int) -> None:
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, received {on_error!r}")
        self.on_error = on_error
        self.max_restarts = max_restarts
        self.restarts = 0

    def admit(self, error: EnvWorkerError, method: str) -> None:
        """Count one restart for ``error`` (raised during ``method``), or raise: ``error``
        itself under "raise", an error saying so once ``max_restarts`` were used."""
        if self.on_error != "restart":
            raise error
        if self.restarts >= self.max_restarts:
            raise EnvWorkerError(f"{error} (max_restarts={self.max_restarts} reached)",
                                 env_index=error.env_index, worker_index=error.worker_index,
                                 method=method, remote_traceback=error.remote_traceback) from error
        self.restarts += 1
