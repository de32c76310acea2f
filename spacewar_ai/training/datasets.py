"""Datasets: recorded games as Minari datasets, for behaviour cloning and offline RL.

`spacewar-ai --datagen --players A,B --episodes N --dataset-id NAME` plays N games (sides
swapped, seeded) and writes them with Minari. Each game is two ordinary Spacewar-v0 episodes,
one per ship (episodes 2g and 2g + 1), with `infos["action_mask"]` and, in the rounds a teacher
labels (`labelled_round`: DAgger's, expert iteration's), `infos["teacher_action"]` (-1 where no
teacher was asked); `games.jsonl` and `spacewar.json`
beside the data hold each game's result and the recording's pilots, rewards, seed and config
(docs/datasets.md has the schema). Minari is written through its episode buffers, not its
DataCollector (which needs jax). `arrays()` flattens a dataset into the learners' transitions."""

from __future__ import annotations

import json
import re
import shlex
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import SELF, GameConfig, RewardConfig
from ..game.environment import MASK_DTYPE
from ..pilots.wrappers import Labelled
from ..util.errors import UserError
from ..util.workers import Where, map_jobs

META_FILE = "spacewar.json"
GAMES_FILE = "games.jsonl"
BATCH = 256  # games played at once
# infos key of a teacher's label at each state (DAgger), -1 where it was not asked.
TEACHER_KEY = "teacher_action"
# infos key of the teacher's policy at each state (soft targets), where a round asks for it.
TEACHER_POLICY_KEY = "teacher_policy"


def dataset_id(name: str) -> str:
    """Minari's form of a name: `namespace/name-vN` (`spacewar/` and `-v0` added if missing)."""
    name = name.strip()
    # Each part becomes a folder under Minari's root: none may be empty, "." or "..".
    if not all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", part) and ".." not in part
               for part in name.split("/")):
        raise UserError(f"--dataset-id {name[:80]!r}: use NAME or NAMESPACE/NAME, each of "
                        "letters, digits, '-', '_' and '.', starting with a letter or digit")
    if not re.search(r"-v\d+$", name):
        name += "-v0"
    return name if "/" in name else f"spacewar/{name}"


def _minari():
    try:
        import minari
    except ImportError:
        raise UserError("datasets need Minari with HDF5: pip install -e \".[datasets]\"") \
            from None
    return minari


def local_datasets() -> set[str]:
    """The ids of the datasets recorded on this machine."""
    return set(_minari().list_local_datasets())


def dataset_folder(did: str) -> Path:
    """Where Minari keeps dataset `did` (a `dataset_id`), whether it exists yet or not."""
    from minari.storage import get_dataset_path

    return Path(get_dataset_path(did))


@dataclass
class DatagenReport:
    dataset: str
    games: int
    steps: int  # decisions, both ships' views counted
    play_seconds: float  # the games: engine and pilots
    write_seconds: float  # Minari's writer
    folder: Path

    def summary(self) -> str:
        rate = self.steps / max(self.play_seconds + self.write_seconds, 1e-9)
        return (f"wrote {self.dataset}: {self.games} games, {self.steps:,} steps ({self.steps // 2:,} "
                f"decisions of each ship) in {self.play_seconds + self.write_seconds:.1f} s, "
                f"{rate:,.0f} steps/s; playing took {self.play_seconds:.1f} s "
                f"({self.steps / max(self.play_seconds, 1e-9):,.0f} steps/s), Minari's writer "
                f"{self.write_seconds:.1f} s\n  {self.folder}")


def generate(pairs: list[tuple[str, str]], games: int, name: str, seed: int = 0,
             reward: RewardConfig | None = None, config: GameConfig | None = None,
             quiet: bool = False, overwrite: bool = False,
             where: Where = Where()) -> DatagenReport:
    """Record `games` games of every pair of pilot specs (sides swapped) as one dataset. The
    games are played in chunks of BATCH wherever `where` says (util.workers): the same games
    wherever; Minari writes on this machine."""
    minari = _minari()
    from ..pilots.build import SpecTravel, absolute_spec
    from ..pilots.spec import check_spec
    from ..util.progress import Progress

    did = dataset_id(name)
    if games < 2 or games % 2:
        raise UserError(f"--episodes {games}: a dataset records games in pairs with sides "
                        "swapped: give an even number >= 2")
    reward = reward if reward is not None else RewardConfig()
    config = config if config is not None else GameConfig()
    if did in minari.list_local_datasets():
        if not overwrite:
            raise UserError(f"dataset {did} exists already; choose another --dataset-id (or "
                            f"delete it: python -c \"import minari; "
                            f"minari.delete_dataset('{did}')\")")
        minari.delete_dataset(did)
    for a, b in pairs:  # every spec checked before a game is played
        for spec in (a, b):
            check_spec(spec)
    jobs = [(absolute_spec(a), absolute_spec(b), min(BATCH, games - start),
             seed + 1_000_003 * p + start, config.to_dict(), reward.to_dict())
            for p, (a, b) in enumerate(pairs) for start in range(0, games, BATCH)]
    where.start()
    begun = time.perf_counter()
    with Progress(games * len(pairs), "datagen", "game", quiet) as progress:
        chunks = map_jobs(record_chunk, jobs, where, progress, [job[2] for job in jobs],
                          SpecTravel((0, 1)))
    play = time.perf_counter() - begun
    begun = time.perf_counter()
    folder, steps = write_games(
        did, chunks, reward, config, "spacewar-ai --datagen",
        f"Spacewar! games: {', '.join(f'{a} vs {b}' for a, b in pairs)}",
        {"pairs": pairs, "games_per_pair": games, "seed": seed})
    write = time.perf_counter() - begun
    return DatagenReport(did, games * len(pairs), steps, play, write, folder)


def write_games(did: str, chunks, reward: RewardConfig, config: GameConfig, algorithm: str,
                description: str, meta: dict) -> tuple[Path, int]:
    """Write recorded games as Minari dataset `did` with games.jsonl and spacewar.json beside it:
    `chunks` are (MatchResult, [[ship 0's episode, ship 1's] per game]) as record_chunk returns,
    `meta` what spacewar.json says of how they were played. Returns (folder, steps)."""
    minari = _minari()
    from minari.data_collector import EpisodeBuffer

    from ..game.environment import SpacewarEnv

    buffers, lines = [], []
    for r, episodes in chunks:
        for g, game in enumerate(r.games):
            first = len(buffers)
            for ship in (0, 1):
                buffers.append(EpisodeBuffer(id=len(buffers), seed=game.seed,
                                             **episodes[g][ship]))
            who = {"a": r.name_a, "b": r.name_b}
            ships = [who["a"], who["b"]] if game.a_side == 0 else [who["b"], who["a"]]
            lines.append({**game.to_dict(), "a": r.name_a, "b": r.name_b,
                          "episodes": [first, first + 1], "pilots": ships,
                          "score_a": game.score("a", reward, config),
                          "score_b": game.score("b", reward, config)})
    env = SpacewarEnv(config, reward, opponent=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Minari asks for authors and permalinks we do not have
        minari.create_dataset_from_buffers(
            did, buffers, env="Spacewar-v0", observation_space=env.observation_space,
            action_space=env.action_space, algorithm_name=algorithm, author="spacewar-ai",
            description=description, data_format="hdf5")
    folder = dataset_folder(did)
    with open(folder / GAMES_FILE, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    (folder / META_FILE).write_text(json.dumps(
        {**meta, "reward": reward.to_dict(), "game": config.to_dict(), "obs_dim": config.obs_dim,
         "actions": config.num_actions}, indent=1))
    return folder, sum(len(b.rewards) for b in buffers)


def record_chunk(job):
    """Play one chunk of games (a, b, games, seed, game config, reward table as dicts) and cut
    it into episodes: (MatchResult, [[ship 0's episode, ship 1's] per game]), each episode the
    arrays of an EpisodeBuffer. A pure function of its job: a Ray task plays it alike."""
    from ..rating.match import play_match

    a, b, n, seed, cfg, rew = job
    recorder = Recorder(n)
    r = play_match(a, b, n, seed, GameConfig.from_dict(cfg), RewardConfig.from_dict(rew),
                   on_step=recorder.step)
    return r, [[recorder.episode(g, ship) for ship in (0, 1)] for g in range(n)]


class Recorder:
    """Collects both ships' views, actions, rewards and ends of a batch of games, step by step
    (play_match's on_step), and cuts them into episodes."""

    def __init__(self, n: int):
        self.obs: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.rewards: list[np.ndarray] = []
        self.running: list[np.ndarray] = []
        self.last = None
        self.mask_columns = slice(None)  # the batch's, once it is seen
        self.term = np.zeros(n, dtype=bool)
        self.trunc = np.zeros(n, dtype=bool)

    def step(self, obs, actions, batch, running) -> None:
        self.obs.append(obs)
        self.actions.append(actions.copy())
        self.rewards.append(batch.reward.copy())
        self.running.append(running)
        self.term |= batch.terminated & running
        self.trunc |= batch.truncated & running
        self.last = batch.obs.copy()  # games over keep their final observation
        self.mask_columns = batch.mask_columns

    def steps(self, g: int) -> list[int]:
        """The steps at which game `g` was running: its decisions."""
        return [t for t, r in enumerate(self.running) if r[g]]

    def episode(self, g: int, ship: int) -> dict[str, np.ndarray]:
        steps = self.steps(g)
        obs = np.stack([self.obs[t][g, ship] for t in steps] + [self.last[g, ship]])
        terms = np.zeros(len(steps), dtype=bool)
        truncs = np.zeros(len(steps), dtype=bool)
        terms[-1], truncs[-1] = self.term[g], self.trunc[g] or not self.term[g]
        return {"observations": obs.astype(np.float32),
                "actions": np.array([self.actions[t][g, ship] for t in steps], dtype=np.int64),
                "rewards": np.array([self.rewards[t][g, ship] for t in steps], dtype=np.float64),
                "terminations": terms, "truncations": truncs,
                "infos": {"action_mask": obs[:, self.mask_columns].astype(MASK_DTYPE)}}


def labelled_round(make_student, opponents: tuple, teacher, games: int, seed: int,
                   config: GameConfig, reward: RewardConfig, progress=None, decided=None,
                   temperature: float = 0.0):
    """A student's games of one round of DAgger or expert iteration, labelled by its teacher:
    [(opponent spec, MatchResult, episodes)] with episodes as record_chunk cuts them ([ship 0's,
    ship 1's] per game), the student's holding the teacher's labels (`teacher` and each opponent
    a spec or its `Spec`, "self" the student). `make_student(seed)` builds the student's pilot;
    `progress` hears of each game's end, and `decided(n)` of the student's n decisions at each
    step of the games. With temperature > 0 the student's episodes also hold the teacher's
    policy at each state (TEACHER_POLICY_KEY)."""
    from ..pilots.build import make_pilot
    from ..rating.match import play_match

    each = games // len(opponents)
    out = []
    for j, spec in enumerate(opponents):
        start = seed + 1_000 * j
        a = Labelled(make_student(start), make_pilot(teacher, config, start), temperature)
        b = Labelled(make_student(start + 1), make_pilot(teacher, config, start + 1), temperature) \
            if spec == SELF else make_pilot(spec, config, start + 1)
        recorder = Recorder(each)
        flown = 2 if spec == SELF else 1  # the student's ships in each game

        def step(obs, actions, batch, running, recorder=recorder, flown=flown):
            recorder.step(obs, actions, batch, running)
            if decided is not None:
                decided(flown * int(np.count_nonzero(running)))

        try:
            result = play_match(a, b, each, start, config, reward, on_step=step,
                                progress=progress)
        finally:
            for pilot in (a, b):
                pilot.close()
        episodes = []
        for g in range(each):
            steps = recorder.steps(g)
            pair = []
            for ship in (0, 1):
                episode = recorder.episode(g, ship)
                flyer = a if ship == result.games[g].a_side else b
                labels = np.full(len(steps) + 1, -1, dtype=np.int64)
                if isinstance(flyer, Labelled):
                    labels[:-1] = [flyer.labels[t][g] for t in steps]
                episode["infos"][TEACHER_KEY] = labels
                if temperature > 0:
                    # Every episode has the same infos (a dataset's schema); the opponent's
                    # policy rows stay zero.
                    policy = np.zeros((len(steps) + 1, config.num_actions), np.float32)
                    if isinstance(flyer, Labelled):
                        policy[:-1] = [flyer.policies[t][g] for t in steps]
                    episode["infos"][TEACHER_POLICY_KEY] = policy
                pair.append(episode)
            episodes.append(pair)
        out.append((spec, result, episodes))
    return out


def labelled_decisions(played):
    """(observations, actions played, teacher's labels, teacher's policies (N, A), None when
    labelled_round recorded none: a temperature of 0) of every labelled decision of a round."""
    obs, acts, labels, policies = [], [], [], []
    for _, _, episodes in played:
        for pair in episodes:
            for e in pair:
                known = e["infos"][TEACHER_KEY][:-1] >= 0
                obs.append(e["observations"][:-1][known])
                acts.append(e["actions"][known])
                labels.append(e["infos"][TEACHER_KEY][:-1][known])
                if TEACHER_POLICY_KEY in e["infos"]:
                    policies.append(e["infos"][TEACHER_POLICY_KEY][:-1][known])
    return (np.concatenate(obs), np.concatenate(acts), np.concatenate(labels),
            np.concatenate(policies) if policies else None)


def load(name: str, config: GameConfig | None = None):
    """A recorded dataset, checked against the game: (dataset, its spacewar.json metadata).
    One ValueError names an unknown dataset or one of another observation size or action
    count."""
    minari = _minari()
    did = dataset_id(name)
    if did not in minari.list_local_datasets():
        known = ", ".join(sorted(minari.list_local_datasets())) or "none yet"
        raise UserError(f"dataset {did} does not exist (recorded here: {known}); record one "
                        "with spacewar-ai --datagen --players A,B --dataset-id "
                        f"{shlex.quote(name)}")
    data = minari.load_dataset(did)
    meta_path = dataset_folder(did) / META_FILE
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    cfg = config if config is not None else GameConfig()
    shape = data.observation_space.shape
    if shape != (cfg.obs_dim,) or getattr(data.action_space, "n", None) != cfg.num_actions:
        raise UserError(f"dataset {did}: its observations have shape {shape} and "
                        f"{getattr(data.action_space, 'n', '?')} actions, this game "
                        f"({cfg.obs_dim},) and {cfg.num_actions}: record it again with this "
                        "game's config, or train with the config it was recorded with")
    return data, meta


def _episodes(data, pilot: str | None, name: str):
    """The episodes to learn from: all, or those flown by `pilot` (its name in games.jsonl)."""
    if pilot is None:
        return list(data.iterate_episodes())
    games = [json.loads(x) for x in (dataset_folder(data.id) / GAMES_FILE).read_text().splitlines()]
    wanted = [g["episodes"][ship] for g in games for ship in (0, 1) if g["pilots"][ship] == pilot]
    if not wanted:
        names = sorted({p for g in games for p in g["pilots"]})
        raise UserError(f"dataset {data.id}: no episodes flown by {pilot!r}; its pilots are "
                        f"{', '.join(names)}")
    return list(data.iterate_episodes(wanted))


def arrays(name: str, pilot: str | None = None, config: GameConfig | None = None,
           teacher: bool = False):
    """Observations (M, D) and actions (M,) of every decision in a dataset (or of one pilot's
    episodes): what behaviour cloning learns from. With `teacher`, the actions are the labels a
    teacher gave at those states (`infos["teacher_action"]`, as DAgger records them) instead of
    the actions played, and the decisions it was not asked about (-1) are left out."""
    data, _ = load(name, config)
    eps = _episodes(data, pilot, name)
    obs = np.concatenate([e.observations[:-1] for e in eps]).astype(np.float32)
    if not teacher:
        return obs, np.concatenate([e.actions for e in eps]).astype(np.int64)
    if any(TEACHER_KEY not in e.infos for e in eps):
        raise UserError(f"dataset {data.id} holds no teacher's labels; those come from "
                        "--algorithm dagger's rounds")
    labels = np.concatenate([e.infos[TEACHER_KEY][:-1] for e in eps]).astype(np.int64)
    return obs[labels >= 0], labels[labels >= 0]


def transitions(name: str, n_step: int, gamma: float, pilot: str | None = None,
                config: GameConfig | None = None) -> dict[str, np.ndarray]:
    """n-step transitions of a dataset for offline RL: obs, action, the discounted sum of the
    next n rewards (fewer at an episode's end), next obs (n decisions on, or the last), the
    discount to apply to it (gamma ** decisions summed) and whether the episode terminated
    there (no bootstrap)."""
    data, _ = load(name, config)
    out = {k: [] for k in ("obs", "action", "ret", "next", "discount", "terminated")}
    for e in _episodes(data, pilot, name):
        r = np.asarray(e.rewards, dtype=np.float64)
        t_len = len(r)
        idx = np.arange(t_len)
        end = np.minimum(idx + n_step, t_len)
        powers = gamma ** np.arange(n_step)
        padded = np.concatenate([r, np.zeros(n_step)])
        ret = np.stack([padded[i:i + n_step] for i in range(t_len)]) @ powers if t_len else r
        out["obs"].append(e.observations[:-1])
        out["action"].append(e.actions)
        out["ret"].append(ret)
        out["next"].append(e.observations[end])
        out["discount"].append(gamma ** (end - idx).astype(np.float64))
        out["terminated"].append((end == t_len) & bool(e.terminations[-1]))
    return {k: np.concatenate(v) for k, v in out.items()}


def info(name: str) -> str:
    """The dataset card: pilots, size, win rates and score summary."""
    data, meta = load(name, GameConfig.from_dict(_meta_game(name)))
    games = [json.loads(x) for x in (dataset_folder(data.id) / GAMES_FILE).read_text().splitlines()]
    lines = [f"dataset {data.id}: {data.total_episodes} episodes ({len(games)} games, each as "
             f"both ships' views), {data.total_steps:,} steps",
             f"  recorded {meta.get('games_per_pair', '?')} games per pair, seed "
             f"{meta.get('seed', '?')}, reward table "
             f"{meta.get('reward', {}).get('personality', 'standard')}",
             f"  observations {data.observation_space.shape}, actions "
             f"{getattr(data.action_space, 'n', '?')}; folder {dataset_folder(data.id)}"]
    for a, b in sorted({(g["a"], g["b"]) for g in games}):
        mine = [g for g in games if (g["a"], g["b"]) == (a, b)]
        wins = sum(g["real_winner"] == "a" for g in mine)
        losses = sum(g["real_winner"] == "b" for g in mine)
        scores = [(g.get("score_a"), g.get("score_b")) for g in mine if g.get("score_a") is not None]
        sa = np.mean([s[0] for s in scores]) if scores else float("nan")
        sb = np.mean([s[1] for s in scores]) if scores else float("nan")
        lines.append(f"  {a} vs {b}: {len(mine)} games, {a} won {wins / len(mine):.0%}, lost "
                     f"{losses / len(mine):.0%}; mean score {sa:.1f} against {sb:.1f}; mean "
                     f"length {np.mean([g['frames'] for g in mine]):.0f} frames")
    return "\n".join(lines)


def _meta_game(name: str) -> dict:
    path = dataset_folder(dataset_id(name)) / META_FILE
    return json.loads(path.read_text()).get("game", {}) if path.is_file() else {}
