"""What a space is: an image or not, and a fingerprint that tells equal spaces apart.

Example:
    >>> import numpy as np
    >>> is_image_space(spaces.Box(0, 255, (84, 84, 4), np.uint8)), is_image_space(spaces.Box(0, 1, (4,)))
    (True, False)
    >>> space_fingerprint(spaces.Discrete(3))
    {'type': 'Discrete', 'text': 'Discrete(3)'}
"""
from __future__ import annotations

import hashlib
from typing import Any, TypeGuard

import numpy as np
from gymnasium import spaces

__all__ = ["is_image_space", "space_fingerprint"]


def is_image_space(space: spaces.Space) -> TypeGuard[spaces.Box]:
    """A uint8 Box of rank 3 with bounds 0..255."""
    return (isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3
            and bool(np.all(space.low == 0)) and bool(np.all(space.high == 255)))


def space_fingerprint(space: spaces.Space) -> dict[str, Any]:
    """A JSON-able description of ``space``: equal for equal spaces, different otherwise.

    Dict and Tuple spaces nest their parts' fingerprints under their type's name (the
    format saved VecNormalize statistics compare against: keep it).
    """
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_fingerprint(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_fingerprint(s) for s in space.spaces]}
    if isinstance(space, spaces.Box):
        bounds = np.ascontiguousarray(space.low).tobytes() + np.ascontiguousarray(space.high).tobytes()
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "bounds_sha256": hashlib.sha256(bounds).hexdigest()}
    return {"type": type(space).__name__, "text": str(space)}
