"""``in_series="auto"`` counts the CPUs this process may use: an override, a container's
quota, the affinity mask."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from vec_envs.cpus import CPUS_VARIABLE, available_cpus, cgroup_cpu_quota
from vec_envs.workers.worker_vec_env import resolve_in_series

AFFINITY = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cgroup(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    return tmp_path


def test_the_variable_overrides_everything(monkeypatch, tmp_path):
    monkeypatch.setenv(CPUS_VARIABLE, "5")
    assert available_cpus(cgroup_root=cgroup(tmp_path, {"cpu.max": "100000 100000"})) == 5
    assert resolve_in_series("auto", 20) == 4  # 5 workers of 4 envs


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", ""])
def test_a_bad_variable_is_refused_naming_it_and_the_value(monkeypatch, value):
    monkeypatch.setenv(CPUS_VARIABLE, value)
    with pytest.raises(ValueError, match=rf"VEC_ENVS_CPUS must be an int >= 1 .*received {value!r}"):
        available_cpus()


@pytest.mark.parametrize("text,cpus", [("150000 100000", 2), ("100000 100000", 1), ("50000 100000", 1),
                                       ("max 100000", None), ("400000", 4)],
                         ids=["1.5", "1", "0.5", "max", "no-period"])
def test_cgroup_v2_quota_is_rounded_up(tmp_path, text, cpus):
    assert cgroup_cpu_quota(cgroup(tmp_path, {"cpu.max": text})) == cpus


def test_cgroup_v1_quota_and_period(tmp_path):
    root = cgroup(tmp_path, {"cpu/cpu.cfs_quota_us": "250000", "cpu/cpu.cfs_period_us": "100000"})
    assert cgroup_cpu_quota(root) == 3
    assert cgroup_cpu_quota(cgroup(tmp_path / "unlimited", {"cpu.cfs_quota_us": "-1",
                                                            "cpu.cfs_period_us": "100000"})) is None


def test_no_cgroup_files_means_no_quota(tmp_path):
    assert cgroup_cpu_quota(tmp_path) is None
    assert available_cpus(environ={}, cgroup_root=tmp_path) == AFFINITY


def test_the_quota_caps_the_affinity_and_never_raises_it(tmp_path):
    assert available_cpus(environ={}, cgroup_root=cgroup(tmp_path / "one", {"cpu.max": "100000 100000"})) == 1
    big = cgroup(tmp_path / "big", {"cpu.max": f"{100000 * (AFFINITY + 8)} 100000"})
    assert available_cpus(environ={}, cgroup_root=big) == AFFINITY
