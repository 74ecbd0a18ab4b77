"""Infos a VecEnv would spoil or cannot send: keys that collide with the ones a VecEnv, its
wrappers and adapters write into an env's info, and infos that cannot be pickled (every
worker backend pickles an env's info to send it to the parent).

Example:
    >>> [p.text for p in info_problems({"terminal_observation": 0, "lives": 3})]
    ["key 'terminal_observation': the VecEnv writes the ended episode's last observation there (same-step autoreset)"]
    >>> import threading
    >>> [p.kind for p in info_problems({"lock": threading.Lock()})]
    ['unpicklable']
"""
from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

from vec_envs.checking.values import Problem

__all__ = ["RESERVED_KEYS", "INFO_FIXES", "info_problems"]

#: the info keys a VecEnv, its wrappers and adapters write, and who writes each
RESERVED_KEYS = {
    "terminal_observation": "the VecEnv writes the ended episode's last observation there (same-step autoreset)",
    "TimeLimit.truncated": "the VecEnv writes whether the episode was truncated there",
    "episode": "VecMonitor (and SB3's Monitor, which SB3's helpers trust) writes the episode's return, length "
               "and time there",
    "final_obs": "to_gymnasium writes the ended episode's last observation there (gymnasium's same-step API)",
    "final_info": "to_gymnasium writes the ended episode's last info there (gymnasium's same-step API)",
    "_final_obs": "to_gymnasium writes the mask of final_obs there",
    "_final_info": "to_gymnasium writes the mask of final_info there",
    "env_restarted": "SubprocVecEnv(on_error='restart') marks an env whose worker was replaced there",
    "error": "SubprocVecEnv(on_error='restart') writes the failure of a replaced worker there",
    "active": "the multi-agent rows (vec_envs.multiagent) mark an agent out of play there",
}
#: what to change, per kind of problem
INFO_FIXES = {
    "reserved": "rename the key (e.g. prefix it with the env's name): the VecEnv or a wrapper overwrites it, "
                "or reads the env's value as its own",
    "unpicklable": "put plain data in infos (numbers, strings, arrays, dicts and lists of those): "
                   "SubprocVecEnv and RayVecEnv pickle each info to send it to the parent",
}


def info_problems(info: Any, ignore: Iterable[str] = ()) -> list[Problem]:
    """Reserved keys of ``info`` (but ``ignore``), and whether it pickles."""
    if not isinstance(info, dict):
        return [Problem("unpicklable", f"info is a {type(info).__name__}, not a dict")]
    skip = set(ignore)
    found = [Problem("reserved", f"key {key!r}: {RESERVED_KEYS[key]}") for key in info
             if key in RESERVED_KEYS and key not in skip]
    try:
        pickle.dumps(info)
    except Exception as exc:  # noqa: BLE001 (any failure to pickle is the finding)
        found.append(Problem("unpicklable", f"info cannot be pickled{_culprit(info)}: {type(exc).__name__}: "
                                            f"{str(exc).splitlines()[0] if str(exc) else ''}"))
    return found


def _culprit(info: dict[Any, Any]) -> str:
    """`` (key 'k')``: the first key whose value does not pickle ("" when none alone)."""
    for key, value in info.items():
        try:
            pickle.dumps(value)
        except Exception:  # noqa: BLE001
            return f" (key {key!r})"
    return ""
