"""Bad inputs to multi-agent VecEnvs get errors that name the agent, the env and the fix."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from mpe2 import simple_spread_v3

from tests.multiagent.parallel_envs import Latecomer, MixedSpaces, Relay
from vec_envs.multiagent import make_multiagent_vec_env


def test_heterogeneous_observation_spaces_name_the_agent_and_both_spaces() -> None:
    with pytest.raises(ValueError, match=r"agent 'blue' has Box\(0\.0, 1\.0, \(5,\), float32\), "
                                         r"agent 'red' has Box\(-inf, inf, \(3,\), float32\)"):
        make_multiagent_vec_env(MixedSpaces, 2)


def test_heterogeneous_spaces_in_a_worker_reach_the_parent() -> None:
    with pytest.raises(ValueError, match="same observation space"):  # our own check's class, as in process
        make_multiagent_vec_env(MixedSpaces, 2, vec_env_cls="subproc")


def test_an_aec_env_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match=r"returned a OrderEnforcingWrapper; expected a PettingZoo ParallelEnv "
                                        r"\(this is an AEC env: wrap it as .*aec_to_parallel"):
        make_multiagent_vec_env(simple_spread_v3.env, 1)


def test_a_factory_returning_something_else_is_refused() -> None:
    with pytest.raises(TypeError, match="returned a dict; expected a PettingZoo ParallelEnv"):
        make_multiagent_vec_env(dict, 1)


def test_wrong_action_count_says_one_per_row() -> None:
    with make_multiagent_vec_env(Relay, 2) as venv:
        venv.reset()
        with pytest.raises(ValueError, match=r"step_async\(\): expected 6 actions, one per row \(env-major: env e, "
                                             r"agent a is row e \* 3 \+ a, agents \['red', 'green', 'blue'\]\), "
                                             r"received 5"):
            venv.step(np.zeros(5, np.int64))
        venv.step(np.zeros(6, np.int64))  # still usable


def test_action_out_of_range_names_env_and_agent() -> None:
    with make_multiagent_vec_env(Relay, 2) as venv:
        venv.reset()
        actions = np.zeros(6, np.int64)
        actions[4] = 3
        with pytest.raises(ValueError, match=r"action 3 for row 4 \(env 1, agent 'green'\) is outside the "
                                             r"action space Discrete\(3\)"):
            venv.step(actions)


def test_send_with_part_of_an_env_names_the_env() -> None:
    with make_multiagent_vec_env(Relay, 2, vec_env_kwargs={"batch_size": 2}) as venv:
        venv.async_reset()
        rows = venv.recv()[4]
        with pytest.raises(ValueError, match=r"env_ids hold only some rows of envs \[1\]"):
            venv.send(np.zeros(5, np.int64), rows[:5])
        venv.send(np.zeros(6, np.int64), rows)  # nothing was sent: all rows go now
        assert venv.recv()[4].tolist() == rows.tolist()


def test_reset_single_env_explains_that_agents_reset_together() -> None:
    with make_multiagent_vec_env(Relay, 2) as venv:
        venv.reset()
        with pytest.raises(NotImplementedError, match="row 4 is agent 'green' of env 1, whose agents reset together"):
            venv.reset_single_env(4)


def test_bad_backend_name_is_refused() -> None:
    with pytest.raises(ValueError, match="vec_env_cls='threads' is not a backend name"):
        make_multiagent_vec_env(functools.partial(Relay), 1, vec_env_cls="threads")


@pytest.mark.parametrize("backend", ["dummy", "subproc"])
def test_rows_out_of_play_take_any_placeholder_action(backend) -> None:
    """The contract: actions of rows out of play are ignored, so a -1 placeholder there passes,
    while an active row's action out of range is still refused, naming the row."""
    with make_multiagent_vec_env(Latecomer, 2, vec_env_cls=backend) as venv:
        venv.reset()
        assert venv.active.tolist() == [True, True, False] * 2  # blue joins at step 2
        actions = np.where(venv.active, 1, -1)
        venv.step(actions)
        with pytest.raises(ValueError, match=r"step_async\(\): action -1 for row 0 \(env 0, agent 'red'\) is "
                                             r"outside the action space Discrete\(3\)"):
            venv.step(np.where(venv.active, -1, 0))
        venv.step(np.where(venv.active, 2, 7))  # refused before anything stepped: blue joins now
        assert venv.active[[2, 5]].tolist() == [True, True]


def test_sent_rows_out_of_play_take_any_placeholder_action() -> None:
    with make_multiagent_vec_env(Latecomer, 2, vec_env_kwargs={"batch_size": 1}) as venv:
        venv.async_reset()
        rows = venv.recv()[4]
        assert venv.active[rows].tolist() == [True, True, False]
        venv.send(np.array([0, 1, -5]), rows)
        assert len(venv.recv()[4]) == 3


@pytest.mark.parametrize("mode", ["next_step", "disabled"])
def test_next_step_and_disabled_are_refused_before_any_env_is_built(mode) -> None:
    def no_env():
        raise AssertionError("no env is built")

    with pytest.raises(ValueError, match=rf"make_multiagent_vec_env\(\): autoreset_mode='{mode}' is refused for "
                                         r"multi-agent rows: .*use autoreset_mode='same_step'"):
        make_multiagent_vec_env(no_env, 2, vec_env_kwargs={"autoreset_mode": mode})


def test_a_multi_agent_vec_env_over_a_next_step_vec_env_is_refused() -> None:
    from vec_envs import DummyVecEnv
    from vec_envs.multiagent import MultiAgentVecEnv
    from vec_envs.multiagent.parallel_env_adapter import ParallelEnvAdapter

    with DummyVecEnv([functools.partial(ParallelEnvAdapter, Relay)], autoreset_mode="next_step") as venv:
        with pytest.raises(ValueError, match=r"MultiAgentVecEnv: autoreset_mode='next_step' is refused"):
            MultiAgentVecEnv(venv, ["a"], venv.observation_space, venv.action_space)
