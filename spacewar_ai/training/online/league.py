"""The league: the self-play pool, and who flies ship 1 in each of the learner's games.

Each game's opponent is drawn when the game starts:
- with probability `scripted_share`, the current curriculum stage (idle -> easy -> medium -> hard;
  the learner moves on when its torpedo-win rate against the stage reaches the threshold);
- otherwise self-play: a past snapshot of the learner (`past_share`, weighted by how often it beats
  the learner when `pfsp` is on) or the current learner itself (frozen for the rollout).
Fixed opponents (champions) can be added; they are drawn like snapshots.

Snapshots are files under the run folder (atomic writes), so a resumed run gets its league back.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np

from ...agents.ppo import PolicyStack, PPOAgent
from ...agents.saved import load_agent
from ...config import GameConfig, LeagueConfig
from ...pilots.build import AgentPilot, make_pilot

SELF = "self"


class League:
    """The pool and its draws (module docstring); `act` flies ship 1 of every game."""

    def __init__(self, config: LeagueConfig, game_config: GameConfig, num_envs: int,
                 seed: int = 0, snapshot_dir: str | Path | None = None):
        self.config = config
        self.game_config = game_config
        self.num_envs = num_envs
        self.rng = np.random.default_rng(seed + 7)
        self.snapshot_dir = Path(snapshot_dir) if snapshot_dir else None
        self.stage = 0
        self.stage_results: collections.deque = collections.deque(maxlen=config.curriculum_window)
        self.scripted = {spec: make_pilot(spec, game_config, seed) for spec in config.curriculum}
        self.pilots: dict[str, Any] = {}  # key -> pilot (network opponents)
        self.snapshot_keys: list[str] = []  # in age order
        self.fixed_keys: list[str] = []  # champions: never evicted
        self.files: dict[str, str] = {}
        self.results: dict[str, collections.deque] = collections.defaultdict(
            lambda: collections.deque(maxlen=200))
        self.assignment = np.array([self.stage_spec] * num_envs, dtype=object)
        self._self_pilot: AgentPilot | None = None
        self._stack: tuple[dict[str, int], Any] | None = None  # built on demand by act()
        self.replica = False  # a rollout worker's copy (follow): the learner records the games

    # --- opponents ----------------------------------------------------------------------------
    @property
    def stage_spec(self) -> str:
        return self.config.curriculum[self.stage]

    def set_learner(self, agent) -> None:
        """The current learner, played (without learning) in self-play games."""
        if self._self_pilot is None:
            self._self_pilot = AgentPilot(agent.play_copy(), SELF, deterministic=False)
        else:
            # Only what plays: copying the optimizer's state every update is wasted work.
            self._self_pilot.agent.load_state_dict(agent.play_state())
        self.pilots[SELF] = self._self_pilot
        self._stack = None

    def add_snapshot(self, agent, tag: str) -> str:
        key = f"snapshot:{tag}"
        pilot = AgentPilot(agent.play_copy(), key, deterministic=False)
        self.pilots[key] = pilot
        self.snapshot_keys.append(key)
        self._stack = None
        if self.snapshot_dir is not None:
            path = self.snapshot_dir / f"{tag}.pt"
            agent.save(path, {"league_snapshot": tag})
            self.files[key] = str(path)
        while len(self.snapshot_keys) > self.config.pool_size:
            old = self.snapshot_keys.pop(0)
            self.pilots.pop(old, None)
            self.files.pop(old, None)
            # Games in progress against the evicted snapshot get a new opponent now.
            self.assign(self.assignment == old)
        return key

    def add_fixed(self, path: str | Path, device: str = "cpu") -> str:
        """A fixed opponent (never evicted): a checkpoint (a champion) or a strategy file
        (.py, run in the sandbox; LLM-written strategies join the league this way)."""
        key = self._fixed_key(Path(path))
        if key in self.fixed_keys:
            return key  # already in (a resumed run's champions come back with its league)
        self.pilots[key] = self._fixed_pilot(Path(path), key, device)
        self._stack = None
        self.fixed_keys.append(key)
        self.files[key] = str(path)
        return key

    @staticmethod
    def _fixed_key(path: Path) -> str:
        if path.suffix == ".py":
            return f"strategy:{path.stem}"
        # The run folder too: every run's best.pt has the same stem.
        return f"champion:{path.parent.name}/{path.stem}" if path.parent.name else \
            f"champion:{path.stem}"

    def _fixed_pilot(self, path: Path, key: str, device: str):
        if path.suffix == ".py":
            from ...pilots.sandbox import StrategyPilot

            return StrategyPilot(path, name=key, n_actions=self.game_config.num_actions)
        agent, _ = load_agent(path, device, expect_obs_dim=self.game_config.obs_dim)
        return AgentPilot(agent, key, deterministic=False)

    def _draw(self, k: int) -> np.ndarray:
        c = self.config
        out = np.empty(k, dtype=object)
        pool = self.snapshot_keys + self.fixed_keys
        for i in range(k):
            u = self.rng.random()
            if u < c.scripted_share or SELF not in self.pilots:
                out[i] = self.stage_spec
            elif pool and self.rng.random() < c.past_share:
                out[i] = pool[self._pick(pool)]
            else:
                out[i] = SELF
        return out

    def _pick(self, pool: list[str]) -> int:
        if not self.config.pfsp:
            return int(self.rng.integers(len(pool)))
        # Prioritized fictitious self-play: favour opponents the learner does not yet beat.
        w = np.array([(1.0 - self.win_rate(k, default=0.5)) ** 2 + 0.05 for k in pool])
        return int(self.rng.choice(len(pool), p=w / w.sum()))

    def assign(self, mask: np.ndarray | None = None) -> None:
        """Draw opponents for the games in mask (all games by default)."""
        idx = np.arange(self.num_envs) if mask is None else np.flatnonzero(mask)
        if len(idx):
            self.assignment[idx] = self._draw(len(idx))

    def reset_pilots(self, mask: np.ndarray, seeds: np.ndarray) -> None:
        for pilot in self.scripted.values():
            pilot.reset(mask, seeds)

    def _policy_stack(self):
        """PPO opponents that can share one batched pass, stacked (rebuilt after the pool or the
        current self changes, i.e. at most once per update). Networks stack when everything that
        shapes their pass agrees: sizes, activation, view and the view's game constants (models
        of older versions read the game with other constants). The commonest such shape, the
        learner's unless champions of another outnumber it, is stacked; the others play one pass
        each."""
        if self._stack is None:
            keys, agents = [], []
            for key, pilot in self.pilots.items():
                agent = pilot.agent if isinstance(pilot, AgentPilot) else None
                if isinstance(agent, PPOAgent) and not pilot.deterministic:
                    keys.append(key)
                    agents.append(agent)
            shapes = [(a.state_dim, a.action_dim, tuple(sorted(a.architecture.items())),
                       tuple(sorted(a.view_constants.items()))) for a in agents]
            common = collections.Counter(shapes).most_common(1)[0][0] if agents else None
            same = [k for k, sh in zip(keys, shapes) if sh == common]
            index = {k: i for i, k in enumerate(same)}
            self._stack = (index, PolicyStack([agents[keys.index(k)] for k in same])
                           if same else None)
        return self._stack

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Ship 1's actions for every game, each from its game's opponent."""
        n = obs.shape[0]
        out = np.zeros(n, dtype=np.int64)
        stacked_rows, stacked_which = [], []
        index, stack = self._policy_stack()
        # Sorted: the order of network calls draws on the torch RNG, and a set of strings has
        # a different order in every process.
        for key in sorted(set(self.assignment.tolist())):
            rows = np.flatnonzero(self.assignment == key)
            if key in self.scripted:
                # Scripted pilots see the whole batch every step: some keep per-game history.
                out[rows] = self.scripted[key].act(obs)[rows]
            elif key in index:
                stacked_rows.append(rows)
                stacked_which.append(np.full(len(rows), index[key]))
            else:
                out[rows] = self.pilots[key].act(obs[rows])
        if stacked_rows:
            rows = np.concatenate(stacked_rows)
            out[rows] = stack.act(obs[rows], np.concatenate(stacked_which))
        for key, pilot in self.scripted.items():
            if getattr(pilot, "delay", 0) and key not in self.assignment:
                pilot.act(obs)  # keep its reaction-delay history current
        return out

    # --- results ------------------------------------------------------------------------------
    def end_games(self, rows: np.ndarray, learner_score: np.ndarray, done: np.ndarray,
                  seeds: np.ndarray) -> list[str]:
        """Games `rows` ended with the learner's scores: their opponents' keys, the results
        recorded (unless this is a replica: its learner records them), new opponents drawn for
        the `done` games and their scripted pilots reset."""
        keys = self.assignment[rows].tolist()
        if not self.replica:
            self.record(keys, learner_score)
        self.assign(done)
        self.reset_pilots(done, seeds)
        return keys

    def record(self, keys: list[str], learner_score) -> bool:
        """Record finished games, named by their opponents' keys (score 1 win, 0.5 draw, 0 loss
        for the learner); returns True when the curriculum moved to the next stage."""
        advanced = False
        for key, score in zip(keys, learner_score):
            self.results[key].append(float(score))
            if key == self.stage_spec:
                self.stage_results.append(1.0 if score == 1.0 else 0.0)
        c = self.config
        if (self.stage + 1 < len(c.curriculum) and len(self.stage_results) >= c.curriculum_window
                and np.mean(self.stage_results) >= c.curriculum_threshold):
            self.stage += 1
            self.stage_results.clear()
            advanced = True
        return advanced

    def win_rate(self, key: str, default: float = 0.0) -> float:
        r = self.results.get(key)
        return float(np.mean([1.0 if s == 1.0 else 0.0 for s in r])) if r else default

    def mix(self) -> dict[str, float]:
        keys, counts = np.unique(self.assignment.astype(str), return_counts=True)
        return {k: c / self.num_envs for k, c in zip(keys, counts)}

    # --- replicas: the league of a rollout worker (rollouts.py) -------------------------------
    def view(self) -> dict[str, Any]:
        """What a replica draws opponents by: the stage, the results PFSP weighs, the pool."""
        return {"stage": self.stage, "results": {k: list(v) for k, v in self.results.items()},
                "snapshots": list(self.snapshot_keys), "fixed": list(self.fixed_keys)}

    def follow(self, view: dict[str, Any], files: dict[str, Path], device: str = "cpu") -> None:
        """Become the league `view` describes (a learner's `view()`): its stage and results, and
        its pool, new members loaded from `files` (key -> path), members it evicted dropped and
        the games against them given new opponents. The learner records the games; a replica
        only draws."""
        self.replica = True
        self.stage = int(view["stage"])
        self.results.clear()
        for key, scores in view["results"].items():
            self.results[key].extend(scores)
        pool = view["snapshots"] + view["fixed"]
        gone = [k for k in self.snapshot_keys + self.fixed_keys if k not in pool]
        for key in gone:
            self.pilots.pop(key, None)
        for key in pool:
            if key not in self.pilots:
                if key in view["fixed"]:
                    self.pilots[key] = self._fixed_pilot(Path(files[key]), key, device)
                else:
                    agent, _ = load_agent(files[key], device)
                    self.pilots[key] = AgentPilot(agent, key, deterministic=False)
                self._stack = None
        self.snapshot_keys, self.fixed_keys = list(view["snapshots"]), list(view["fixed"])
        if gone:
            self._stack = None
            self.assign(np.isin(self.assignment, gone))

    # --- persistence --------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"stage": self.stage, "stage_results": list(self.stage_results),
                "snapshots": [[k, self.files.get(k, "")] for k in self.snapshot_keys],
                "fixed": [[k, self.files.get(k, "")] for k in self.fixed_keys],
                "results": {k: list(v) for k, v in self.results.items()}}

    def load_state(self, state: dict[str, Any], device: str = "cpu") -> None:
        self.stage = int(state.get("stage", 0))
        self.stage_results.extend(state.get("stage_results", []))
        for key, path in state.get("snapshots", []):
            if path and Path(path).is_file():
                agent, _ = load_agent(path, device)
                self.pilots[key] = AgentPilot(agent, key, deterministic=False)
                self.snapshot_keys.append(key)
                self._stack = None
                self.files[key] = path
        for key, path in state.get("fixed", []):
            if path and Path(path).is_file() and key not in self.fixed_keys:
                self.add_fixed(path, device)
        for k, v in state.get("results", {}).items():
            self.results[k].extend(v)


# The original design's name for the league.
SelfPlayManager = League
