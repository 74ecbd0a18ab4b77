"""CloudpickleWrapper: ship lambdas and closures to worker processes."""
from __future__ import annotations

from typing import Any

import cloudpickle

__all__ = ["CloudpickleWrapper"]


class CloudpickleWrapper:
    """Pickles its payload with cloudpickle, so lambdas and closures survive ``pickle``.

    Example:
        >>> fn = CloudpickleWrapper(lambda: 42)
        >>> import pickle; pickle.loads(pickle.dumps(fn))()
        42
    """

    def __init__(self, x: Any) -> None:
        self.x = x

    def __getstate__(self) -> bytes:
        return cloudpickle.dumps(self.x)

    def __setstate__(self, state: bytes) -> None:
        self.x = cloudpickle.loads(state)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.x(*args, **kwargs)
