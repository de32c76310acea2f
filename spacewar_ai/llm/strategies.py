"""LLMs write Spacewar! strategies at training time; the strategies then play at game speed
(docs/strategies.md).

`LLMStrategyGenerator` asks for a strategy (`strategy_prompt`), validates it with the sandbox's
allow-list, smoke-tests it and feeds errors back for a bounded number of repairs.
`IterativeStrategyTrainer` (`--iterative`) runs generate -> evaluate -> feedback -> refine, each
prompt carrying the measured results and the best strategy so far, which joins the RL league
while the agent trains against it; everything is saved under `runs/<run>/llm/`.
`LLMExplorationGuide` (`--use-llm`) replaces a share of exploration actions with the strategy's;
`run_arena` (`--llm-arena`) plays strategies against each other and the scripted pilots."""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..config import GameConfig, mask_start
from ..game.environment import ACTION_DOC, OBSERVATION_DOC
from ..pilots.sandbox import (
    ALLOWED_BUILTINS,
    StrategyError,
    StrategyPilot,
    load_strategy_file,
    validate_source,
)
from ..rating.match import play_match
from ..util.errors import UserError
from ..util.files import atomic_write_bytes

SYSTEM_PROMPT = ("You are an expert game-AI programmer. You write small, fast, deterministic "
                 "Python pilots for the 1962 game Spacewar!. You answer with exactly one "
                 "```python code block holding the whole file.")


def strategy_prompt(config: GameConfig | None = None) -> str:
    """The task: the game, its constants, the tables, what wins, and the language's rules."""
    c = config if config is not None else GameConfig()
    return f"""Write a Spacewar! pilot as a Python strategy file.

## The game
Two ships on a {c.width:g} x {c.height:g} screen that wraps at the edges. A star at the centre pulls
both ships (inverse-square gravity, constant {c.gravity_constant:g}); touching it (radius
{c.star_radius:g}) destroys a ship. Each ship has {c.max_ammo} torpedoes (one every
{c.fire_cooldown} frames, each lives {c.torpedo_lifetime} frames, speed {c.torpedo_speed:g} plus
the ship's velocity) and {c.max_fuel} units of fuel for thrust. Ships collide if they touch.
A decision is held for {c.frame_skip} frames; a game lasts at most {c.max_episode_steps} frames
({c.fps} frames per second).

Winning: destroy the other ship with a torpedo. Falling into the star, colliding, or running out
of time without a kill are not wins (a collision or a timeout is a draw). Your own torpedoes can
hit you.
{OBSERVATION_DOC}
{ACTION_DOC}
## The file
Define `strategy(obs)`: `obs` is a tuple of the 36 floats above (your ship's point of view) and
the result must be an int 0..5. It is called for every decision, so keep it cheap: every
function call, loop iteration and range element counts one operation, and a decision may use
10,000 on average and 100,000 at most (a costlier, crashing or invalid answer forfeits the
game).

Allowed: module-level constants and helper functions, arithmetic, comparisons, boolean logic,
if/for/while, indexing and slicing, tuples/lists/dicts, comprehensions, `import math` (the only
import), and the builtins {", ".join(ALLOWED_BUILTINS)}.
Refused before the file runs: any other import, names or attributes starting with an underscore,
lambda, yield, class, global/nonlocal, with, try/except, raise, assert, decorators, eval, exec,
open, getattr, type and every builtin not listed. Do not keep state between calls (one file
plays many games at once).

Reply with one ```python block containing the whole file and nothing else of importance."""


_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(reply: str) -> str:
    """The strategy code in an LLM reply: the fenced block that defines strategy (the last one
    if several do), else the whole reply if it is code. Raises StrategyError otherwise."""
    blocks = _BLOCK.findall(reply)
    with_def = [b for b in blocks if "def strategy" in b]
    if with_def:
        return with_def[-1].strip() + "\n"
    if "def strategy" in reply and "```" not in reply:
        return reply.strip() + "\n"
    raise StrategyError("<reply>:0: the reply has no ```python block defining strategy(obs)")


@dataclass
class Candidate:
    """One generated strategy: where it is, whether it passed, and why not."""

    label: str
    path: str | None = None
    ok: bool = False
    error: str | None = None
    attempts: int = 0
    smoke: dict = field(default_factory=dict)
    score: float | None = None
    stats: dict = field(default_factory=dict)


class LLMStrategyGenerator:
    """Asks `client` for strategies and repairs them until they validate and survive a smoke
    test (`max_repairs` extra rounds); every prompt and reply is written to `out_dir`."""

    def __init__(self, client, out_dir, config: GameConfig | None = None, max_repairs: int = 2,
                 smoke_games: int = 4, smoke_opponents=("idle", "heuristic:easy"),
                 redact=None, max_tokens: int = 2048, temperature: float = 0.7):
        self.client = client
        self.out_dir = Path(out_dir)
        self.config = config if config is not None else GameConfig()
        self.max_repairs = int(max_repairs)
        self.smoke_games = int(smoke_games)
        self.smoke_opponents = tuple(smoke_opponents)
        self.redact = redact or (lambda s: s)
        self.max_tokens = max_tokens
        self.temperature = temperature

    def base_messages(self) -> list[dict]:
        return [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": strategy_prompt(self.config)}]

    def generate(self, label: str, messages: list[dict] | None = None) -> Candidate:
        messages = list(messages) if messages is not None else self.base_messages()
        cand = Candidate(label)
        folder = self.out_dir / label
        folder.mkdir(parents=True, exist_ok=True)
        for attempt in range(self.max_repairs + 1):
            cand.attempts = attempt + 1
            # Redacted as it arrives: the code, the refusals quoting it, the repair prompts and
            # every file and line made from them come from this text, so no key can reach them.
            reply = self.redact(self.client.generate(messages, max_tokens=self.max_tokens,
                                                     temperature=self.temperature))
            _write_json(folder / f"attempt{attempt}.json",
                        {"provider": getattr(self.client, "provider", "?"),
                         "model": getattr(self.client, "model", "?"),
                         "messages": [{"role": m["role"], "content": self.redact(m["content"])}
                                      for m in messages], "reply": reply})
            error = None
            try:
                source = extract_code(reply)
                path = folder / "strategy.py"
                validate_source(source, path.name)
                _write_text(path, source)
                cand.path = str(path)
                cand.smoke = self._smoke(path)
                if cand.smoke["forfeits"]:
                    error = (f"the strategy forfeited {cand.smoke['forfeits']} of "
                             f"{cand.smoke['games']} smoke-test games: "
                             + "; ".join(cand.smoke["reasons"]))
            except StrategyError as exc:
                error = f"the file was refused: {exc}"
            if error is None:
                cand.ok, cand.error = True, None
                return cand
            cand.error = error
            messages = messages + [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": f"{error}\nFix this and reply with the whole "
                                            "corrected file in one ```python block."}]
        cand.ok = False  # the last attempt's file, if one was written, stays for the audit
        return cand

    def _smoke(self, path: Path) -> dict:
        pilot = StrategyPilot(path, n_actions=self.config.num_actions)
        games = forfeits = 0
        reasons: set[str] = set()
        try:
            for k, opp in enumerate(self.smoke_opponents):
                r = play_match(pilot, opp, self.smoke_games, seed=90_000 + k, config=self.config)
                games += r.n
                for g in r.games:
                    if g.forfeit_of("a") is not None:
                        forfeits += 1
                        reasons.add(g.forfeit_of("a"))
        finally:
            pilot.close()
        return {"games": games, "forfeits": forfeits, "reasons": sorted(reasons)[:3]}


def evaluate_strategy(path, opponents, games: int, config: GameConfig, seed: int = 0) -> dict:
    """Measured results of a strategy against each opponent (pilot specs or pilots): the score
    used to rank strategies is the mean torpedo-win rate over the opponents."""
    from ..pilots.build import make_pilot

    per = {}
    totals = {"games": 0, "wins": 0, "shots": 0, "hits": 0, "frames": 0, "fuel_used": 0.0,
              "torpedoes_used": 0, "deaths": {}}
    pilot = StrategyPilot(path, n_actions=config.num_actions)
    try:
        for k, opp in enumerate(opponents):
            opp_pilot = make_pilot(opp, config, seed) if isinstance(opp, str) else opp
            name = opp if isinstance(opp, str) else getattr(opp, "name", str(opp))
            r = play_match(pilot, opp_pilot, games, seed=seed + 1000 * k, config=config)
            per[name] = {"win_rate": r.win_rate_a(), "losses": r.wins_b, "draws": r.draws,
                         "accuracy": r.accuracy("a"), "deaths": _nonzero(r.causes("a")),
                         "mean_frames": r.mean_frames()}
            totals["games"] += r.n
            totals["wins"] += r.wins_a
            for g in r.games:
                totals["shots"] += g.shots_a
                totals["hits"] += g.hits_a
                totals["frames"] += g.frames
            for c, v in r.causes("a").items():
                totals["deaths"][c] = totals["deaths"].get(c, 0) + v
    finally:
        pilot.close()
    score = float(np.mean([v["win_rate"] for v in per.values()])) if per else 0.0
    n = max(totals["games"], 1)
    return {"score": score, "per_opponent": per,
            "accuracy": totals["hits"] / totals["shots"] if totals["shots"] else 0.0,
            "torpedoes_fired_per_game": totals["shots"] / n,
            "mean_frames": totals["frames"] / n, "deaths": _nonzero(totals["deaths"])}


def _nonzero(d: dict) -> dict:
    return {k.lower(): v for k, v in d.items() if v}


def feedback_text(stats: dict, best: dict | None) -> str:
    """What the LLM is told about its last strategy, and the best one so far."""
    lines = ["Results of your last strategy (sides swapped, torpedo wins only):"]
    for name, v in stats["per_opponent"].items():
        lines.append(f"- vs {name}: win rate {v['win_rate']:.0%}, losses {v['losses']}, draws "
                     f"{v['draws']}, accuracy {v['accuracy']:.0%}, your deaths {v['deaths'] or 'none'}"
                     f", mean game length {v['mean_frames']:.0f} frames")
    lines.append(f"Overall: score {stats['score']:.0%}, accuracy {stats['accuracy']:.0%}, "
                 f"{stats['torpedoes_fired_per_game']:.1f} torpedoes fired per game, deaths "
                 f"{stats['deaths'] or 'none'}.")
    if best is not None:
        lines.append(f"\nThe best strategy so far scored {best['score']:.0%}:\n```python\n"
                     f"{best['source']}```")
    lines.append("\nWrite an improved strategy: keep what works, fix what kills you (the death "
                 "causes above), and raise the win rate. Reply with the whole file.")
    return "\n".join(lines)


class IterativeStrategyTrainer:
    """generate -> evaluate -> feedback -> refine for `iterations` rounds or until
    `target_win_rate`; see the module docstring. `trainer` (training.Trainer) is optional: with
    it, the best strategy joins its league and the agent trains `train_steps` decisions (or
    `train_games` games) between rounds."""

    def __init__(self, client, run_dir, config: GameConfig | None = None, iterations: int = 5,
                 episodes_per_iteration: int = 20, samples_per_round: int = 1,
                 target_win_rate: float = 0.9, opponents=("heuristic:easy", "heuristic:medium",
                                                         "heuristic:hard"),
                 trainer=None, train_steps: int = 0, train_games: int = 0, redact=None,
                 max_repairs: int = 2,
                 agent_opponent=None, seed: int = 0, log=print):
        if iterations < 1 or episodes_per_iteration < 2 or samples_per_round < 1:
            raise UserError("iterations >= 1, episodes_per_iteration >= 2 and "
                            "samples_per_round >= 1 are needed")
        self.client = client
        self.run_dir = Path(run_dir)
        self.llm_dir = self.run_dir / "llm"
        self.config = config if config is not None else GameConfig()
        self.iterations = int(iterations)
        self.games = int(episodes_per_iteration) + int(episodes_per_iteration) % 2
        self.samples = int(samples_per_round)
        self.target = float(target_win_rate)
        self.opponents = list(opponents)
        self.trainer = trainer
        self.train_steps = int(train_steps)
        self.train_games = int(train_games)
        self.agent_opponent = agent_opponent
        self.seed = seed
        self.log = log
        self.generator = LLMStrategyGenerator(client, self.llm_dir, self.config,
                                              max_repairs=max_repairs, redact=redact)
        self.state = {"iteration": 0, "best": None, "history": []}
        state_path = self.llm_dir / "state.json"
        if state_path.is_file():  # resume
            self.state = json.loads(state_path.read_text())

    def _opponents(self) -> list:
        opps = list(self.opponents)
        if self.trainer is not None:
            from ..pilots.build import AgentPilot

            opps.append(AgentPilot(self.trainer.agent.play_copy(), "learner",
                                   deterministic=True))
        elif self.agent_opponent is not None:
            opps.append(self.agent_opponent)
        return opps

    def run(self) -> dict:
        best = self.state["best"]
        while self.state["iteration"] < self.iterations:
            it = self.state["iteration"]
            messages = self.generator.base_messages()
            if self.state["history"]:
                last = self.state["history"][-1]
                stats = last.get("stats")
                if stats:
                    messages.append({"role": "user", "content": feedback_text(stats, best)})
                elif best is not None:
                    messages.append({"role": "user", "content": feedback_text(best["stats"],
                                                                              best)})
            opponents = self._opponents()
            round_best = None
            for j in range(self.samples):
                cand = self.generator.generate(f"iter{it:03d}/sample{j}", messages)
                if cand.ok:
                    stats = evaluate_strategy(cand.path, opponents, self.games, self.config,
                                              seed=self.seed + 7919 * it)
                    cand.score, cand.stats = stats["score"], stats
                entry = asdict(cand)
                self.log(f"iteration {it + 1}/{self.iterations} sample {j + 1}: "
                         + (f"score {cand.score:.0%} ({cand.attempts} attempt(s))" if cand.ok
                            else f"rejected after {cand.attempts} attempt(s): {cand.error}"))
                if cand.ok and (round_best is None or cand.score > round_best["score"]):
                    round_best = entry
            record = {"iteration": it, "stats": round_best["stats"] if round_best else None,
                      "score": round_best["score"] if round_best else None,
                      "path": round_best["path"] if round_best else None,
                      "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
            self.state["history"].append(record)
            if round_best is not None and (best is None or round_best["score"] > best["score"]):
                source = Path(round_best["path"]).read_text()
                best_path = self.llm_dir / "best_strategy.py"
                _write_text(best_path, source)
                best = {"score": round_best["score"], "stats": round_best["stats"],
                        "source": source, "path": str(best_path), "iteration": it}
                self.state["best"] = best
                self._update_competitor(best_path)
            self.state["iteration"] = it + 1
            self._save_state()
            if self.trainer is not None and (self.train_steps or self.train_games) \
                    and best is not None:
                self.trainer.train_more(self.train_steps, self.train_games)
            if best is not None and best["score"] >= self.target:
                self.log(f"target win rate {self.target:.0%} reached")
                break
        return self.state

    def _update_competitor(self, path: Path) -> None:
        """The original design's "update competitor": the best strategy joins the league. A copy
        per improvement, so the league keeps the strategy it was given."""
        if self.trainer is None:
            return
        league = self.trainer.league
        stamp = self.llm_dir / f"competitor_{self.state['iteration']:03d}.py"
        _write_text(stamp, Path(path).read_text())
        key = league.add_fixed(stamp)
        self.log(f"league: added {key}")

    def _save_state(self) -> None:
        payload = json.dumps(self.state, indent=1).encode()
        atomic_write_bytes(self.llm_dir / "state.json", lambda f: f.write(payload))


class LLMExplorationGuide:
    """Replaces a share of the learner's exploration actions with the strategy's own choice.

    For DQN the exploring rows are the epsilon-random ones, so the share applies to epsilon x
    share of the rows; for PPO (which explores by sampling) to `share` of the rows. Actions the
    mask forbids are left as the agent chose them."""

    def __init__(self, strategy_path, share: float = 0.1, seed: int = 0, n_actions: int = 6):
        if not 0.0 <= share <= 1.0:
            raise UserError(f"LLM exploration share {share} is invalid: use 0..1")
        self.path = Path(strategy_path)
        self.share = float(share)
        self.pilot = StrategyPilot(self.path, n_actions=n_actions)
        self.rng = np.random.default_rng(seed + 4242)
        self.used = 0

    def mix(self, obs: np.ndarray, actions: np.ndarray, rate: float = 1.0) -> np.ndarray:
        rows = np.flatnonzero(self.rng.random(actions.shape[0]) < self.share * rate)
        if rows.size == 0:
            return actions
        guided = self.pilot.act(obs[rows])
        start = mask_start(obs.shape[1])
        mask = obs[rows, start:start + self.pilot.n_actions] > 0.5
        ok = mask[np.arange(rows.size), guided]
        out = actions.copy()
        out[rows[ok]] = guided[ok]
        self.used += int(ok.sum())
        return out

    def close(self) -> None:
        self.pilot.close()


def exploration_guide(strategy: str, client, cfg) -> LLMExplorationGuide:
    """The --use-llm guide: a strategy file as given, or ("generate") one written now by
    `client`. A file or an LLM that gives nothing usable is one ValueError."""
    if strategy != "generate":
        load_strategy_file(strategy)  # a StrategyError (ValueError) names the problem
        path = strategy
    else:
        out = Path(cfg.train.log_dir) / (cfg.train.run_name or "llm-guide") / "llm" / "guide"
        cand = LLMStrategyGenerator(client, out.parent, cfg.game,
                                    redact=client.keys.redact).generate(out.name)
        if not cand.ok:
            raise UserError(f"the LLM did not produce a usable strategy: {cand.error}")
        path = cand.path
    print(f"LLM exploration guide: {path} (about 10% of exploration actions)")
    return LLMExplorationGuide(path, 0.1, cfg.train.seed, cfg.game.num_actions)


def run_iterative(client, cfg, iterations: int, games: int, samples: int,
                  train_games: int = 0, resume=None, start_from=None, render: bool = False,
                  quiet: bool = False, guide=None, seed: int = 0) -> dict:
    """The --iterative mode: strategy rounds with the RL agent trained between them (the
    config's step budget per round, or `train_games` games); prints where it all went. The
    agent's run takes the training modes' options (a model to start from, rendering, an
    exploration guide)."""
    from ..pilots.build import spec_path
    from ..training.online.trainer import Trainer

    init = spec_path(start_from) if start_from else None
    trainer = Trainer(cfg, resume=resume, init_weights=init, render=render, quiet=quiet,
                      guide=guide)
    loop = IterativeStrategyTrainer(client, trainer.log_dir, cfg.game, iterations, games, samples,
                                    trainer=trainer, train_steps=cfg.train.total_timesteps,
                                    train_games=train_games, redact=client.keys.redact,
                                    seed=seed)
    try:
        state = loop.run()
    finally:
        if guide is not None:
            guide.close()
    best = state.get("best")
    print(f"LLM log: {loop.llm_dir}")
    if best:
        print(f"best strategy: {best['path']} (score {best['score']:.0%}, iteration "
              f"{best['iteration'] + 1}); agent checkpoints: {trainer.run_dir}")
    else:
        print("no usable strategy was produced; see the attempts under " + str(loop.llm_dir))
    for line in getattr(client, "failures", []):
        print(f"provider failure: {line}", file=sys.stderr)
    return state


ARENA_SCRIPTED = ("heuristic:easy", "heuristic:medium", "heuristic:hard")


def run_arena(client, samples: int, games: int, seed: int = 0,
              out_root: str | Path = Path("runs") / "llm-arena") -> Path:
    """The --llm-arena mode: `samples` strategies from each provider of `client`, then a round
    robin of them and the scripted pilots (ARENA_SCRIPTED), reported like any tournament under
    `out_root`; returns the report's folder."""
    from ..rating.tournament import run_tournament
    from .clients import LLMError
    from .failover import FailoverClient

    out = Path(out_root) / time.strftime("%Y%m%d-%H%M%S")
    paths, failed = [], []
    for c in client.clients:
        gen = LLMStrategyGenerator(FailoverClient([c], client.keys.redact), out,
                                   redact=client.keys.redact)
        for k in range(samples):
            label = f"{c.provider}-{k}"
            try:
                cand = gen.generate(label)
            except LLMError as exc:
                print(f"{label}: failed ({exc})")
                failed.append(str(exc))
                break
            print(f"{label}: " + (f"ok ({cand.attempts} attempt(s))" if cand.ok
                                  else f"rejected: {cand.error}"))
            if cand.ok:
                named = out / f"{label}.py"
                named.write_bytes(Path(cand.path).read_bytes())
                paths.append(str(named))
    if not paths:
        why = " | ".join(failed) if failed else f"every reply was rejected (see {out})"
        raise LLMError(f"no LLM produced a usable strategy: {why}")
    specs = [f"strategy:{p}" for p in paths] + list(ARENA_SCRIPTED)
    report = run_tournament(specs, "round_robin", games + games % 2, seed, into=out)
    print(report.summary())
    return report.folder


def _write_text(path: Path, text: str) -> None:
    data = text.encode()
    atomic_write_bytes(path, lambda f: f.write(data))


def _write_json(path: Path, data) -> None:
    payload = json.dumps(data, indent=1).encode()
    atomic_write_bytes(path, lambda f: f.write(payload))
