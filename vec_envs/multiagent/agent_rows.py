"""AgentRows: the layout of agent rows over a batch of packed multi-agent envs.

Row ``e * A + a`` is agent ``a`` (in ``possible_agents`` order) of env ``e``. ``unpack``
turns what a backend returns for a batch of ParallelEnvAdapters (a Dict of ``(batch, A,
...)`` arrays, per-env dones and infos) into per-row observations, rewards, dones and
infos, with reshapes only; Python touches just the rows that have something to say.

Example:
    >>> layout = AgentRows(["a", "b"], n_envs=3)
    >>> layout.rows_of(np.array([2, 0])).tolist()
    [4, 5, 0, 1]
    >>> layout.row_agents[3]
    (1, 'b')
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vec_envs.multiagent.parallel_env_adapter import ACTIVE, DONE, REWARD, STATUS_COLUMNS, TRUNCATED
from vec_envs.types import Info

__all__ = ["AgentRows", "RowBatch", "first_infos"]

#: (obs, rewards float32, dones bool, active bool, infos, reset infos {row: info}) per row
RowBatch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[Info], dict[int, Info]]

#: Keys of the adapter's own info (per-agent infos); any other key is the backend's and goes
#: to every row of the env.
AGENT_INFO_KEYS = ("agent_infos", "reset_agent_infos")


class AgentRows:
    """Which env and agent each row is, and the per-row view of a packed batch.

    Args:
        agents: the agent names, in ``possible_agents`` order.
        n_envs: how many envs.
    """

    def __init__(self, agents: Sequence[str], n_envs: int) -> None:
        self.agents = list(agents)
        self.n_agents = len(self.agents)
        self.n_envs = n_envs
        self.row_agents = [(e, agent) for e in range(n_envs) for agent in self.agents]
        self._offsets = np.arange(self.n_agents, dtype=np.int64)

    def rows_of(self, env_ids: np.ndarray) -> np.ndarray:
        """The rows of envs ``env_ids``, env-major (int64)."""
        return (env_ids[:, None] * self.n_agents + self._offsets).reshape(-1)

    def envs_of(self, rows: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
        """``(env_ids, order)``: the envs that ``rows`` cover whole, and the permutation that
        puts ``rows`` env-major in agent order; ValueError naming the envs sent in part."""
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        envs = ordered // self.n_agents
        whole = len(rows) % self.n_agents == 0
        if whole:
            grid = ordered.reshape(-1, self.n_agents)
            whole = bool((grid == self.rows_of(grid[:, 0] // self.n_agents).reshape(grid.shape)).all())
        if not whole:
            counts = np.bincount(envs, minlength=self.n_envs)
            partial = np.flatnonzero((counts > 0) & (counts < self.n_agents)).tolist()
            raise ValueError(f"{method}(): every row of an env travels together (rows {self.n_agents} "
                             f"per env: {self.agents}); env_ids hold only some rows of envs {partial}")
        return envs[:: self.n_agents], order

    def unpack(self, packed: dict[str, np.ndarray], env_dones: np.ndarray, env_infos: list[Info],
               env_ids: np.ndarray | None) -> RowBatch:
        """Per-row results of the envs ``env_ids`` (None: every env), rows env-major."""
        count = len(env_infos) * self.n_agents
        shape = packed["obs"].shape[2:]
        obs = packed["obs"].reshape(count, *shape)
        status = packed["status"].reshape(count, len(STATUS_COLUMNS))
        rewards = status[:, REWARD].copy()
        flags = status[:, DONE:] != 0  # done, truncated, active: one comparison for the three
        dones, active = flags[:, 0].copy(), flags[:, ACTIVE - DONE]
        infos: list[Info] = [{} for _ in range(count)]
        reset_infos: dict[int, Info] = {}
        if np.count_nonzero(dones) or np.count_nonzero(active) < count:  # count_nonzero: the cheapest test
            self._flag_infos(flags, packed["terminal_obs"].reshape(count, *shape), infos)
        if any(env_infos):
            for j, info in enumerate(env_infos):
                if info:
                    self._env_info(j, info, infos, reset_infos)
        if np.count_nonzero(env_dones):  # the backend ended the env (a restarted worker): all its rows end
            dones |= np.repeat(env_dones, self.n_agents)
        if env_ids is not None and reset_infos:
            rows = self.rows_of(env_ids)
            reset_infos = {int(rows[i]): info for i, info in reset_infos.items()}
        return obs, rewards, dones, active, infos, reset_infos

    @staticmethod
    def _flag_infos(flags: np.ndarray, terminal: np.ndarray, infos: list[Info]) -> None:
        """The infos of rows whose agent left (terminal observation, truncation) or is out of play."""
        dones, truncated, active = flags[:, 0], flags[:, TRUNCATED - DONE], flags[:, ACTIVE - DONE]
        for i in np.flatnonzero(dones).tolist():
            infos[i]["terminal_observation"] = terminal[i].copy()
            infos[i]["TimeLimit.truncated"] = bool(truncated[i])
        for i in np.flatnonzero(~(active | dones)).tolist():
            infos[i]["active"] = False

    def _env_info(self, j: int, info: Info, infos: list[Info], reset_infos: dict[int, Info]) -> None:
        """Env ``j``'s info (``j``: its place in the batch) into its rows."""
        first = j * self.n_agents
        slot = {agent: first + a for a, agent in enumerate(self.agents)}
        for agent, agent_info in info.get("agent_infos", {}).items():
            infos[slot[agent]].update(agent_info)
        for agent, agent_info in info.get("reset_agent_infos", {}).items():
            reset_infos[slot[agent]] = agent_info
        shared = {key: value for key, value in info.items() if key not in AGENT_INFO_KEYS}
        if shared:
            for i in range(first, first + self.n_agents):
                infos[i].update(shared)


def first_infos(layout: AgentRows, env_infos: Sequence[Info]) -> list[Info]:
    """Per-row reset infos from the adapters' reset infos (one per env)."""
    infos: list[Info] = [{} for _ in range(len(env_infos) * layout.n_agents)]
    for j, info in enumerate(env_infos):
        for agent, agent_info in info.get("agent_infos", {}).items():
            infos[j * layout.n_agents + layout.agents.index(agent)] = dict(agent_info)
    return infos

