"""scripts/benchmark.py and its subcommands: smoke runs with tiny windows, and the report pieces on their own.

Nothing here is timed: the numbers only have to be numbers. The smoke runs start
together (each in its own process) and are awaited by the tests that read them.
"""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from vec_envs import DummyVecEnv
from vec_envs.cli.args import parse_args
from vec_envs.timing.steppers import RecvSendStepper

pytestmark = pytest.mark.slow  # times, probes or plots the benchmark

pytest.importorskip("psutil")
pytest.importorskip("matplotlib")

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:  # the harness imports as ``bench``, as when scripts/benchmark.py runs
    sys.path.insert(0, str(SCRIPTS))
benchmark = importlib.import_module("benchmark")
contenders = importlib.import_module("bench.contenders")
envs = importlib.import_module("bench.envs")
overhead = importlib.import_module("bench.overhead")
report = importlib.import_module("bench.report")
suite = importlib.import_module("bench.suite")
METHODS, WORKLOADS, unavailable = contenders.METHODS, envs.WORKLOADS, contenders.unavailable

WORKLOADS_RUN = ["W5"]
METHODS_RUN = ["ceiling", "dummy", "dummy-async", "subproc", "gym-sync"]
HEADER = ["method", "steps/s median (min-max)", "/ Sync", "% of ceiling", "steps per CPU s", "build s", "CPU %",
          "peak MB"]
NUMBER = r"\d[\d,]*(\.\d+)?"
RAY_LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
SMOKE = {  # name -> the subcommand of scripts/benchmark.py and its options
    "benchmark": ["workloads", "--workloads", ",".join(WORKLOADS_RUN), "--methods", ",".join(METHODS_RUN),
                  "--repeats", "1", "--window", "0.2", "--warmup", "0.05"],
    "wrappers": ["wrappers", "--env", "synthetic", "--backend", "subproc", "--steps", "2", "--rounds", "4"],
    "ale": ["ale", "--methods", "gym-sync,ale-engine", "--repeats", "1", "--window", "0.2", "--warmup", "0.05"],
    "multiagent": ["multiagent", "--repeats", "1", "--window", "0.2", "--warmup", "0.05"],
    "ray": ["ray", "--workloads", "cartpole", "--steps", "5", "--warmup", "1", "--repeats", "1", "--pings", "5"],
    "overhead": ["overhead", "--num-envs", "4", "--in-series", "2", "--envs", "zero", "--episode-length", "50",
                 "--seconds", "0.2", "--methods", "dummy,subproc,subproc-async,envpool", "--project-cores", "3,64"],
    "infos": ["infos", "--repeats", "1", "--window", "0.2", "--warmup", "0.05"],
    "autoreset": ["autoreset", "--workloads", "W1", "--methods", "subproc,subproc-next,subproc-gym,subproc-gym-next",
                  "--repeats", "1", "--window", "0.2", "--warmup", "0.05"],
    "fairness": ["fairness", "--methods", "fair-auto,fair-2", "--window", "0.5"],
    "step-path": ["step-path", "--num-envs", "4", "--warmup", "40", "--list-functions"],
}


RUNNING_AT_ONCE = 4  # more smoke runs at once than this starve each other (Ray's start-up times out)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], tuple]]:
    """Start the smoke runs, a few at once; ``smoke(name)`` waits for one: ``(CompletedProcess, cache dir)``.

    Each run has a user cache of its own: runs that end in the same second would write their
    results to the same folder of a shared one (its name is the time, to the second)."""
    caches = {name: tmp_path_factory.mktemp(f"cache-{name}") for name in SMOKE}
    procs: dict[str, subprocess.Popen] = {}
    done: dict = {}

    def start(name: str) -> None:
        env = {**os.environ, "XDG_CACHE_HOME": str(caches[name]), **RAY_LOOPBACK}
        procs[name] = subprocess.Popen([sys.executable, str(SCRIPTS / "benchmark.py"), *SMOKE[name]],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)

    def fill() -> None:
        waiting = [name for name in SMOKE if name not in procs]
        for name in waiting[:max(0, RUNNING_AT_ONCE - sum(name not in done for name in procs))]:
            start(name)

    def result(name: str) -> tuple[subprocess.CompletedProcess, Path]:
        if name not in procs:
            start(name)
        if name not in done:
            out, err = procs[name].communicate(timeout=220)
            done[name] = subprocess.CompletedProcess(procs[name].args, procs[name].returncode, out, err)
            fill()
        return done[name], caches[name]

    fill()
    yield result
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def cells(line: str) -> list[str]:
    """The cells of one Markdown table row."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def workload_tables(stdout: str) -> dict[str, list[list[str]]]:
    """``{heading: rows}`` for every method table of the report (header and separator checked)."""
    tables, lines = {}, stdout.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("| method |"):
            continue
        heading = next(lines[j] for j in range(i - 1, -1, -1) if lines[j].startswith("## "))
        assert cells(line) == HEADER, f"unexpected header in {heading}: {line}"
        assert re.fullmatch(r"\|(-+:?\|)+", lines[i + 1].strip()), f"bad separator: {lines[i + 1]}"
        rows = []
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            rows.append(cells(row))
        tables[heading] = rows
    return tables


# ---------------------------------------------------------------- benchmark.py end to end
@pytest.mark.timeout(240)
def test_benchmark_writes_its_results_to_the_user_cache(smoke):
    run, cache = smoke("benchmark")
    assert run.returncode == 0, run.stderr[-3000:]
    written = re.search(r"results written to (\S+)/ ", run.stderr)
    assert written, run.stderr[-1000:]
    out = Path(written.group(1))
    assert out.is_relative_to(cache / "vec_envs" / "bench")
    assert not out.is_relative_to(REPO)
    for name in ("results.md", "cells.json"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "results.md").read_text(encoding="utf-8") == run.stdout.rstrip("\n") + "\n"


@pytest.mark.timeout(240)
def test_benchmark_reports_every_method_or_why_it_could_not_run(smoke):
    run, _ = smoke("benchmark")
    assert "Machine:" in run.stdout
    assert "Settings: `python scripts/benchmark.py workloads --workloads W5 " in run.stdout
    tables = workload_tables(run.stdout)
    assert [h.split(":")[0] for h in tables] == [f"## {w}" for w in WORKLOADS_RUN]
    for w, (heading, rows) in zip(WORKLOADS_RUN, tables.items(), strict=True):
        ran = [METHODS[k].label for k in METHODS_RUN if unavailable(METHODS[k], WORKLOADS[w]) is None]
        assert [r[0] for r in rows] == ran, heading
        for row in rows:
            assert re.fullmatch(rf"{NUMBER} \({NUMBER}-{NUMBER}\)", row[1]), (heading, row)
            assert all(re.fullmatch(rf"{NUMBER}(x| %)?|n/a", c) for c in row[2:]), (heading, row)
        ceiling = next(r for r in rows if r[0].startswith("machine ceiling"))
        assert ceiling[3] == "100 %", ceiling
        for k in METHODS_RUN:
            why = unavailable(METHODS[k], WORKLOADS[w])
            assert why is None or f"- {why}" in run.stdout, why


@pytest.mark.timeout(240)
def test_benchmark_marks_each_target(smoke):
    run, _ = smoke("benchmark")
    targets = run.stdout.split("## Targets", 1)[1]
    assert re.search(r"\| W5 \| best of ours / gymnasium SyncVectorEnv \(.+\) \| [\d.]+x \| >= 2.0x \| "
                     r"(met|\*\*missed\*\*) \|", targets), targets
    assert re.search(r"\| W5 \| SubprocVecEnv\(\) / DummyVecEnv \| [\d.]+x \| >= 1.0x \| (met|\*\*missed\*\*) \|",
                     targets), targets


def test_benchmark_without_psutil_says_which_extra_to_install(tmp_path):
    stub = tmp_path / "psutil"  # an installed psutil is hidden behind a package that fails to import
    stub.mkdir()
    (stub / "__init__.py").write_text("raise ImportError('No module named psutil (hidden by the test)')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(SCRIPTS / "benchmark.py"), "workloads", "--quick"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == ('benchmark.py: error: needs psutil: pip install -e ".[bench]" (from a checkout) or '
                           'pip install "vec_envs[bench]"\n')
    assert done.stdout == ""


def test_benchmark_rejects_bad_arguments_in_one_line(capsys):
    done = subprocess.run([sys.executable, str(SCRIPTS / "benchmark.py"), "workloads", "--workloads", "W9"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "error: --workloads: unknown ['W9']; expected a comma-separated subset of ['W1'" in done.stderr
    with pytest.raises(SystemExit) as exited:
        benchmark.main(["workloads", "--repeats", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "benchmark.py workloads: error: --repeats must be >= 1, --window and --cell-timeout > 0, --warmup >= 0; "
        "received 0, 5.0, 300.0, 1.0 (see --help)")


# ---------------------------------------------------------------- the other subcommands
@pytest.mark.timeout(240)
@pytest.mark.parametrize("name,pattern", [
    ("wrappers", rf"\| wrappers add \(median of paired rounds\) \| [+-]{NUMBER} \|.*\noverhead: [+-]{NUMBER} % "
                 rf"\((meets|misses) the < 15 % target\)"),
    ("ray", rf"\| CartPole-v1 x 64 \| RayVecEnv \| \d+ \| {NUMBER} \| {NUMBER} \({NUMBER}\) \| {NUMBER} \|.*"
            rf"bare Ray round trip \(no-op actor call\): {NUMBER} ms median"),
    ("ale", rf"## W4: .*\| ale-py AtariVectorEnv \(the C\+\+ engine under ALEVecEnv\) \| "
            rf"{NUMBER} \({NUMBER}-{NUMBER}\) \| {NUMBER}x \|"),
], ids=["wrappers", "ray", "ale"])
def test_each_subcommand_prints_its_table(smoke, name, pattern):
    done, _ = smoke(name)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(pattern, done.stdout, re.S), done.stdout


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name,workload,labels", [
    ("infos", "I1", ["DummyVecEnv", "SubprocVecEnv()"]),
    ("autoreset", "W1", ["SubprocVecEnv()", "SubprocVecEnv(autoreset_mode='next_step')",
                         "to_gymnasium(SubprocVecEnv())", "to_gymnasium(SubprocVecEnv(autoreset_mode='next_step'))"]),
    ("multiagent", "MA", ["raw loop (ParallelEnv.step in series)", "DummyVecEnv", "SubprocVecEnv()",
                          "SubprocVecEnv(in_series=2)", "SuperSuit concat_vec_envs_v1, num_cpus=0",
                          "SuperSuit concat_vec_envs_v1, num_cpus=2"]),
], ids=["infos", "autoreset", "multiagent"])
def test_each_preset_is_a_workloads_run_of_its_methods(smoke, name, workload, labels):
    done, _ = smoke(name)
    assert done.returncode == 0, done.stderr[-3000:]
    tables = workload_tables(done.stdout)
    [rows] = [rows for heading, rows in tables.items() if heading.startswith(f"## {workload}:")]
    assert [row[0] for row in rows] == labels
    assert all(re.fullmatch(rf"{NUMBER} \({NUMBER}-{NUMBER}\)", row[1]) for row in rows), rows


@pytest.mark.timeout(240)
def test_fairness_gives_the_fewest_and_the_most_steps_per_env(smoke):
    done, _ = smoke("fairness")
    assert done.returncode == 0, done.stderr[-3000:]
    for label in ("SubprocVecEnv() recv/send, batch_size num_envs/4", "SubprocVecEnv(in_series=2) recv/send, "
                                                                        "batch_size num_envs/4"):
        found = re.search(rf"^- {re.escape(label)}: steps per env: min (\d+), max (\d+); in_series resolved to \d+$",
                          done.stdout, re.M)
        assert found, done.stdout
        assert 0 < int(found.group(1)) <= int(found.group(2))


STEP_PATH_CELLS = [f"in_series={k}: {call}, {infos}" for k in ("'auto'", "2")
                   for call in ("step()", "recv() + send()") for infos in ("empty infos", "info every step")]


@pytest.mark.timeout(240)
def test_step_path_counts_the_files_and_functions_of_each_call_on_each_side(smoke):
    done, _ = smoke("step-path")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {cells(line)[0]: cells(line)[1:] for line in done.stdout.splitlines() if line.startswith("| in_series")}
    assert list(rows) == STEP_PATH_CELLS
    for cell, counts in rows.items():
        assert min(int(n) for n in counts) > 0, cell  # parent and worker files and functions, each traced
    assert re.search(r"^  vec_envs/\S+\.py: \w+", done.stdout, re.M), done.stdout  # listed by file, whatever its name


def test_no_benchmark_replaces_a_private_name():
    """The benchmark measures vec_envs as it is: switches and stats hooks, never a private name swapped."""
    for script in [*(SCRIPTS / "bench").glob("*.py"), SCRIPTS / "benchmark.py"]:
        text = script.read_text(encoding="utf-8")
        assert not re.search(r"(?<!self)\._[a-z]\w*\s*=(?!=)|setattr\(|monkeypatch", text), script.name


# ---------------------------------------------------------------- the pieces
def test_markdown_table_aligns_and_rejects_ragged_rows():
    from vec_envs.timing.tables import markdown_table

    assert markdown_table(["a", "b"], [["x", "1"]]) == ["| a | b |", "|---|---:|", "| x | 1 |"]
    assert markdown_table(["a", "b"], [], "ll")[1] == "|---|---|"
    with pytest.raises(ValueError, match=r"row \['x'\] has 1 cells, the header 2"):
        markdown_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="align 'l' has 1 columns, the header 2"):
        markdown_table(["a", "b"], [], "l")


def test_summary_takes_medians_and_keeps_failures():
    records = [{"workload": "W1", "method": "dummy", "steps_per_s": r, "build_s": 0.1, "peak_mb": 50.0,
                "cpu_pct": 100.0, "note": "n"} for r in (3.0, 1.0, 2.0)]
    records.append({"workload": "W1", "method": "subproc", "error": "EnvWorkerError: boom"})
    sums = report.summarize(records)
    assert (sums["W1", "dummy"].rate, sums["W1", "dummy"].low, sums["W1", "dummy"].high) == (2.0, 1.0, 3.0)
    assert sums["W1", "dummy"].notes == {"n"}
    assert not sums["W1", "subproc"].ran
    assert sums["W1", "subproc"].errors == ["EnvWorkerError: boom"]


def test_targets_are_marked_met_missed_or_not_measured():
    sums = {("W5", "gym-sync"): report.Summary(rate=100.0), ("W5", "dummy"): report.Summary(rate=90.0),
            ("W5", "subproc"): report.Summary(rate=150.0), ("W5", "subproc-async"): report.Summary(rate=210.0)}
    rows = {row[1]: row[2:] for row in report.checks("W5", sums)}
    assert rows["best of ours / gymnasium SyncVectorEnv (SubprocVecEnv() recv/send, batch_size num_envs/2)"] \
        == ["2.10x", ">= 2.0x", "met"]
    assert rows["best recv/send of ours / best lock-step of ours (SubprocVecEnv() recv/send, batch_size "
                "num_envs/2 / SubprocVecEnv())"] == ["1.40x", ">= 1.1x", "met"]
    assert rows["SubprocVecEnv() / DummyVecEnv"] == ["1.67x", ">= 1.0x", "met"]
    m3 = {row[1].split(" (")[0]: row[2:] for row in report.checks("M3", {
        ("M3", "ceiling"): report.Summary(rate=100.0), ("M3", "subproc"): report.Summary(rate=50.0)})}
    assert m3["best lock-step of ours / machine ceiling"] == ["0.50x", ">= 0.6x", "**missed**"]
    assert m3["best recv/send of ours / machine ceiling"] == ["n/a", ">= 0.8x", "n/a"]


def test_frame_stacker_follows_env_ids():
    frames = np.arange(1, 5, dtype=np.uint8).reshape(4, 1, 1, 1)
    inner = SimpleNamespace(num_envs=4, steps_per_call=4, action_space=None, note="")  # only its sizes are read
    lockstep, by_ids = contenders.Stacked(inner, 3), contenders.Stacked(inner, 3)
    expected = lockstep.push(frames, np.zeros(4, bool))
    by_ids.push(frames[[2, 0]], np.zeros(2, bool), np.array([2, 0]))
    by_ids.push(frames[[3, 1]], np.zeros(2, bool), np.array([3, 1]))
    np.testing.assert_array_equal(by_ids.stacked, expected)
    after = by_ids.push(frames[[1]] + 10, np.array([True]), np.array([1]))
    np.testing.assert_array_equal(after.ravel(), [0, 0, 12])


def test_plan_rotates_methods_and_lists_what_cannot_run():
    args = suite.WorkloadsArgs(repeats=2, window=0.1, warmup=0.0)
    methods = [METHODS[k] for k in ("raw", "dummy", "envpool")]
    cells, skipped = suite.plan_cells(args, [WORKLOADS["W5"]], methods, spin=1000)
    assert [(c.repeat, c.method) for c in cells] == [(0, "raw"), (0, "dummy"), (1, "dummy"), (1, "raw")]
    assert skipped == [("W5", "envpool", "EnvPool (sync) cannot run W5")]


def test_workload_groups_and_unknown_names():
    assert [w.key for w in suite.select("M", WORKLOADS, "workloads", suite.GROUPS)] == ["M1", "M3", "M4", "M5"]
    assert [w.key for w in suite.select("W2,M1", WORKLOADS, "workloads", suite.GROUPS)] == ["W2", "M1"]
    with pytest.raises(ValueError, match=r"--methods: unknown \['nope'\]"):
        suite.select("raw,nope", METHODS, "methods")


def test_default_out_is_in_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert suite.default_out().parent == tmp_path / "vec_envs" / "bench"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert suite.default_out().is_relative_to(Path.home() / ".cache")


def test_quick_sets_the_short_run():
    args = parse_args(suite.WorkloadsArgs, ["--out", "/tmp/x", "--quick"])
    assert (args.out, args.repeats, args.window, args.warmup) == ("/tmp/x", 1, 1.0, 0.25)


def test_a_failing_ceiling_loop_says_why_at_once():
    marks: list = []
    with pytest.raises(RuntimeError, match=r"the machine ceiling of nope: loop \d: ValueError: make_env\(\): "
                                           r"unknown env 'nope'"):
        contenders.measure_ceiling("nope", 1000, 0, 0.0, 0.1, lambda: marks.append("start"),
                                   lambda: marks.append("end"))
    assert marks == []


def test_recv_send_stepper_times_steps_not_resets():
    venv = DummyVecEnv([partial(envs.make_env, "busy", i, 10) for i in range(4)], batch_size=2)
    stepper = RecvSendStepper(venv)
    try:
        assert stepper.start(seed=0) is None
        assert stepper.steps_per_call == 2
        obs, dones, env_ids = stepper.step(np.zeros(4, np.int64))
        assert sorted(env_ids.tolist()) in ([0, 1], [2, 3])
        assert not dones.any()
        np.testing.assert_array_equal(obs, np.ones((2, 4)))  # each env's first step (t = 1), not its reset (0)
    finally:
        stepper.close()


# ---------------------------------------------------------------- overhead
@pytest.mark.timeout(240)
def test_overhead_reports_p_and_o_per_method_and_the_projection(smoke):
    run, _ = smoke("overhead")
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {r[0].split(" (")[0]: r for r in (cells(line) for line in run.stdout.splitlines()
                                             if line.startswith("| ") and not line.startswith("| method")
                                             and not line.startswith("| C "))}
    assert "## zero-cost env x 4, episodes of 50 steps: e = " in run.stdout
    assert set(rows) >= {"DummyVecEnv", "SubprocVecEnv lock-step", "SubprocVecEnv recv/send 2"}, rows
    for name in ("SubprocVecEnv lock-step", "SubprocVecEnv recv/send 2"):
        steps_per_s, p, p_net, p_work, o, o_net, o_work = (float(c.replace(",", "")) for c in rows[name][1:8])
        assert steps_per_s > 0, rows[name]
        assert p >= p_net >= p_work, rows[name]
        assert o >= o_net >= o_work, rows[name]
    envpool_installed = importlib.util.find_spec("envpool") is not None
    assert envpool_installed or "- envpool: not installed (skipped)" in run.stdout
    assert "model: lock-step batch time = N*p + N/(C-1)*(e+o) + L; async throughput = min(1/p, (C-1)/(e+o)); " \
           "ceiling = C/e" in run.stdout
    assert re.search(rf"^\| 64( \| {NUMBER}){{6}} \|$", run.stdout, re.M), run.stdout


def test_the_model_projects_lock_step_async_and_ceiling():
    costs = overhead.Costs(p=1e-6, o=2e-6, e=4e-6, latency=10e-6)
    at_8 = overhead.project(costs, num_envs=16, cores=8.0)
    assert at_8.lockstep_batch_s == pytest.approx(16e-6 + 16 / 7 * 6e-6 + 10e-6)
    assert at_8.async_steps_per_s == pytest.approx(min(1e6, 7 / 6e-6))
    assert at_8.ceiling_steps_per_s == pytest.approx(8 / 4e-6)
    assert overhead.project(costs, 16, 64.0).async_steps_per_s == pytest.approx(1e6)  # the parent bounds it


def test_cpus_option_plans_auto_in_series_for_that_many_cpus():
    from vec_envs.workers.worker_vec_env import resolve_in_series

    with overhead.planned_cpus(4):
        assert os.environ["VEC_ENVS_CPUS"] == "4"
        assert resolve_in_series("auto", 64) == 16
    assert "VEC_ENVS_CPUS" not in os.environ or os.environ["VEC_ENVS_CPUS"] != "4"


def test_overhead_rejects_bad_arguments_in_one_line():
    done = subprocess.run([sys.executable, str(SCRIPTS / "benchmark.py"), "overhead", "--project-cores", "1,64"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == ("benchmark.py overhead: error: --project-cores must be comma-separated numbers > 1; "
                           "received '1,64' (see --help)\n")
