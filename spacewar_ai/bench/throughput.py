"""`spacewar-ai --benchmark`: engine and pilot throughput, printed as a table of medians.

Every figure is the median of `repeats` timed runs after a warm-up (JIT compilation excluded), all
measured in one process on one core, so ratios between rows are meaningful on a noisy machine.
A "game-step" is one decision of both ships (frame_skip frames); frames/s is given beside it.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..config import GameConfig, mask_start
from ..game.environment import SpacewarEnv, SpacewarVectorEnv
from ..pilots.scripted import HeuristicPilot
from ..util.files import PACKAGE_DIR


def _median_rate(fn, work: int, repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        rates.append(work / (time.perf_counter() - t0))
    return statistics.median(rates)


def random_valid_actions(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform valid actions for observations (..., D), from their masks."""
    mask = obs[..., mask_start(obs.shape[-1]):] > 0.5
    scores = rng.random(mask.shape) * mask
    return scores.argmax(axis=-1)


def bench_single(steps: int, repeats: int, seed: int) -> float:
    env = SpacewarEnv(opponent=None)
    rng = np.random.default_rng(seed)
    acts = rng.integers(0, 6, size=(steps, 2))
    env.reset(seed=seed)
    state = {"env": env}

    def run():
        e = state["env"]
        for i in range(steps):
            _, _, term, trunc, _ = e.step_both(acts[i, 0], acts[i, 1])
            if term or trunc:
                e.reset()

    run()  # warm-up
    return _median_rate(run, steps, repeats)


def _stepping_rate(step, actions: np.ndarray, steps: int, repeats: int) -> float:
    """Steps a second of a vector env's `step` called `steps` times, cycling through
    `actions` (16, games, ...), after a warm-up run; each call steps every game."""

    def run():
        for i in range(steps):
            step(actions[i % len(actions)])

    run()
    return _median_rate(run, steps * actions.shape[1], repeats)


def bench_vector(num_games: int, steps: int, repeats: int, seed: int) -> float:
    env = SpacewarVectorEnv(num_games, opponent=None)
    env.reset_both(seed=seed)
    acts = np.random.default_rng(seed).integers(0, 6, size=(16, num_games, 2))
    return _stepping_rate(env.step_both, acts, steps, repeats)


def bench_opposed(num_games: int, steps: int, repeats: int, seed: int) -> float:
    """Game-steps/s of the vector env as a Gymnasium user steps it: one ship's random actions,
    the other flown by the env's default opponent (a scripted pilot, batched)."""
    env = SpacewarVectorEnv(num_games)
    env.reset(seed=seed)
    acts = np.random.default_rng(seed).integers(0, 6, size=(16, num_games))
    return _stepping_rate(env.step, acts, steps, repeats)


def bench_cartpole(num_envs: int, steps: int, repeats: int, seed: int) -> float:
    """Steps/s of Gymnasium's own NumPy-vectorized CartPole, the yardstick of a fast vector env."""
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    env = CartPoleVectorEnv(num_envs)
    env.reset(seed=seed)
    acts = np.random.default_rng(seed).integers(0, 2, size=(16, num_envs))
    return _stepping_rate(env.step, acts, steps, repeats)


def bench_pilot(num_games: int, calls: int, repeats: int, seed: int) -> float:
    env = SpacewarVectorEnv(num_games, opponent=None)
    obs, _ = env.reset_both(seed=seed)
    rng = np.random.default_rng(seed)
    # Observations from games in progress (torpedoes in flight), not just start positions.
    for _ in range(30):
        obs, *_ = env.step_both(random_valid_actions(obs, rng))
    views = np.ascontiguousarray(obs[:, 0])
    pilot = HeuristicPilot("hard")

    def run():
        for _ in range(calls):
            pilot.act(views)

    run()
    return _median_rate(run, calls * num_games, repeats)


def bench_strategy(n: int, steps: int, repeats: int, seed: int) -> float:
    """Decisions per second of the example strategy file through the sandbox's pipe, one
    message per batch of n observations (what a match sends each decision step)."""

    from ..pilots.sandbox import StrategyPilot

    path = PACKAGE_DIR.parent / "examples" / "strategies" / "aim_and_fire.py"
    if not path.is_file():
        return float("nan")  # an installed copy without the examples folder
    env = SpacewarVectorEnv(n, GameConfig(), opponent="idle")
    obs, _ = env.reset(seed=seed)
    pilot = StrategyPilot(path)
    try:
        pilot.act(obs)  # start the child outside the timing
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(steps):
                pilot.act(obs)
            times.append(time.perf_counter() - t)
    finally:
        pilot.close()
    return n * steps / float(np.median(times))


def planner_game(spec: str, seed: int, opponent: str = "heuristic:hard"):
    """The planner `spec` flying ship 0 of one game against `opponent`: a function that plays
    one decision and returns the seconds the planner took over it (ValueError if a spec does
    not load)."""
    from ..game.engine import OVER, GameBatch
    from ..pilots.build import make_pilot

    pilot = make_pilot(spec, GameConfig(), seed)
    other = make_pilot(opponent, GameConfig(), seed + 1)
    games = GameBatch(1)
    games.reset(seeds=np.array([seed]))
    pilot.attach(games, 0)
    other.attach(games, 1)

    def decide() -> float:
        obs = games.observe()
        t = time.perf_counter()
        mine = pilot.act(obs[:, 0])
        took = time.perf_counter() - t
        games.step(np.stack([mine, other.act(obs[:, 1])], axis=1))
        if games.game_i[0, OVER]:
            games.reset()
            other.reset()
        return took
    return decide


def bench_planner(spec: str, decisions: int, repeats: int, seed: int,
                  opponent: str = "heuristic:hard") -> tuple[float, float]:
    """Decisions per second of the planner `spec` (search.py: `search:pretrained` or
    `adapt:pretrained`) flying one game against `opponent` (the hard pilot), torch on one
    thread, and its slowest decision in ms: human play asks for fps / frame_skip decisions a
    second (12.5 by default), and a decision slower than a frame (20 ms) is a frame late. Only
    the planner's own time counts, so an opponent that plans too costs it nothing."""
    import torch

    try:
        decide = planner_game(spec, seed, opponent)
    except ValueError:
        return float("nan"), float("nan")  # an installed copy without the shipped models
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(decisions):
            decide()  # the first decisions pay for warming up, which happens before play
        runs = [[decide() for _ in range(decisions)] for _ in range(repeats)]
        return (decisions / statistics.median(sum(run) for run in runs),
                max(max(run) for run in runs) * 1000)
    finally:
        torch.set_num_threads(threads)


def bench_video(games: int, seed: int) -> float:
    """Seconds to make one evaluation video (replays.game_gif, training's eval/video) of the
    shipped network's games against the hard pilot: the median over `games` games."""
    from ..game.replays import game_gif
    from ..pilots.build import make_pilot
    from ..rating.match import play_match

    try:
        pilot = make_pilot("pretrained", GameConfig(), seed)
    except ValueError:
        return float("nan")  # an installed copy without the shipped models
    config = GameConfig()
    match = play_match(pilot, HeuristicPilot("hard"), games, seed, keep_actions=games)
    times = []
    for game in match.games:
        t = time.perf_counter()
        game_gif(config, game.seed, game.actions)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def run_benchmark(repeats: int = 5, seed: int = 0, quick: bool = False,
                  lm_spec: str = "smollm2") -> dict[str, float]:
    """Measure and print; returns the figures (game-steps/s, decisions/s)."""
    skip = GameConfig().frame_skip
    scale = 0.1 if quick else 1.0
    repeats = 1 if quick else repeats  # a check that it runs times each row once
    rows: list[tuple[str, float, str]] = []
    figures: dict[str, float] = {}
    timed = "one run each (--quick)" if quick else f"medians of {repeats} runs"
    print(f"Spacewar! AI benchmark: {timed}, one process, frame_skip={skip}")
    v = bench_single(int(20000 * scale), repeats, seed)
    figures["single_step_both"] = v
    rows.append(("single env step_both", v, "steps/s"))
    for n, steps in ((1, 20000), (64, 2000), (1024, 200), (4096, 60)):
        v = bench_vector(n, max(5, int(steps * scale)), repeats, seed)
        figures[f"vector_{n}"] = v
        rows.append((f"vector env, {n} games, random actions", v, "game-steps/s"))
    opposed_steps = max(5, int(200 * scale))
    v = bench_opposed(1024, opposed_steps, repeats, seed)
    figures["vector_1024_opposed"] = v
    rows.append(("vector env, 1024 games, against its default opponent", v, "game-steps/s"))
    v = bench_cartpole(1024, opposed_steps, repeats, seed)
    figures["cartpole_1024"] = v
    rows.append(("Gymnasium CartPoleVectorEnv, 1024 envs", v,
                 f"steps/s   (the line above is {figures['vector_1024_opposed'] / v:.2f}x)"))
    v = bench_pilot(4096, max(2, int(50 * scale)), repeats, seed)
    figures["hard_pilot"] = v
    rows.append(("hard pilot, batch of 4096", v, "decisions/s"))
    v = bench_strategy(256, max(5, int(100 * scale)), repeats, seed)
    figures["strategy_sandbox"] = v
    rows.append(("strategy file in the sandbox, batch of 256", v, "decisions/s"))
    for spec, key in (("search:pretrained", "planner"), ("adapt:pretrained", "adapting_planner")):
        v, slowest = bench_planner(spec, max(3, int(30 * scale)), repeats, seed)
        figures[key], figures[f"{key}_slowest_ms"] = v, slowest
        rows.append((f"{spec}, one game, torch on 1 thread", v,
                     f"decisions/s   (slowest {slowest:.1f} ms)"))
    v = bench_video(max(2, int(10 * scale)) // 2 * 2, seed)
    figures["eval_video_seconds"] = v
    rows.append(("evaluation video (last 100 decisions, 192 px GIF)", v * 1000, "ms each"))
    width = max(len(r[0]) for r in rows)
    for name, value, unit in rows:
        extra = ""
        if unit == "game-steps/s":
            extra = f"   ({value * skip:,.0f} frames/s)"
        print(f"  {name:<{width}}  {value:>14,.0f} {unit}{extra}")
    figures.update(bench_lm(seed, quick, lm_spec))
    figures.update(bench_ray(seed, quick))
    return figures


def bench_lm(seed: int = 0, quick: bool = False, spec: str = "smollm2") -> dict[str, float]:
    """The LM pilot's decisions/s at a batch of 1 and 64 games, in float32 and bfloat16, with
    the process's torch threads; not measured (one line why) without transformers or the
    model."""
    import torch

    from ..lm.models import LMError
    from ..pilots.build import make_pilot

    try:
        pilots = {dtype: make_pilot(f"lm:{spec}@{dtype}") for dtype in ("fp32", "bf16")}
    except LMError as exc:
        print(f"LM pilot: not measured ({exc})")
        return {}
    env = SpacewarVectorEnv(64)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(20):  # into the game: torpedoes out, the star's pull felt
        obs, *_ = env.step(random_valid_actions(obs, rng))
    repeats = 1 if quick else 3
    figures = {}
    print(f"LM pilot lm:{spec}, one forward pass a decision, torch on "
          f"{torch.get_num_threads()} threads, medians of {repeats}:")
    for dtype, pilot in pilots.items():
        for n in (1, 64):
            pilot.act(obs[:n])  # the preamble's cache and the first call's allocations
            v = _median_rate(lambda p=pilot, k=n: p.act(obs[:k]), n, repeats)
            figures[f"lm_{dtype}_{n}"] = v
            print(f"  {dtype}, batch of {n:>2} games  {v:>8,.1f} decisions/s")
    del pilots
    figures.update(bench_lm_training(env.batch.state_dict(), obs, spec, repeats))
    return figures


def bench_lm_training(states: dict, obs: np.ndarray, spec: str, repeats: int) -> dict[str, float]:
    """SFT's examples/s and GRPO's states/s at the training defaults ([sft] and [grpo]: LoRA rank
    and layers, bfloat16, 16 a step), on the 64 mid-game observations `obs` of the games `states`.
    A GRPO state's cost here is its scoring by the engine, the start's and the reference's
    answers and two update passes; the iteration's own games cost what the pilot's
    decisions/s says."""
    import torch

    from ..config import GameConfig, GRPOConfig, RewardConfig, SFTConfig
    from ..lm.models import add_lora, load_base
    from ..lm.pilot import PromptCoder, autocast, pilot_device, prompt_logits
    from ..pilots.build import make_pilot
    from ..training.lm.grpo import answer_log_probs, group_advantages, grpo_update
    from ..training.lm.scoring import action_scores

    s, g, cfg = SFTConfig(), GRPOConfig(), GameConfig()
    device = pilot_device(None)  # where the pilot measured above ran: CUDA where there is one
    model, tokenizer = load_base(spec, device)
    coder = PromptCoder(tokenizer, cfg.num_actions, s.view)
    model = add_lora(model, s.lora_rank, s.lora_layers)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    rng = np.random.default_rng(0)
    # Any valid action as the teacher's.
    targets = torch.as_tensor(obs[:, cfg.mask_start:].argmax(1), device=device)

    def sft_step():
        rows = rng.choice(len(obs), s.batch_size, replace=False)
        with autocast(device, s.bf16):
            logits = prompt_logits(model, coder, obs[rows])
        loss = torch.nn.functional.cross_entropy(logits.float(), targets[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        float(loss.detach())  # waits for a GPU to finish the step, so that its time is counted

    def grpo_iteration():
        scores = action_scores(states, obs, np.zeros(len(obs), dtype=np.int64),
                               make_pilot(g.rollout_pilot, cfg),
                               make_pilot(g.opponents[0], cfg),
                               cfg, RewardConfig(), g.horizon)
        adv, useful = group_advantages(scores)
        old = answer_log_probs(model, coder, obs, g.bf16)
        ref = answer_log_probs(model, coder, obs, g.bf16)  # a second model's cost
        grpo_update(model, optimizer, coder, obs, adv, old, ref, g.epochs, g.batch_size,
                    g.clip, g.kl, rng, g.bf16)

    model.train()
    sft_step()  # first-call allocations
    sft = _median_rate(sft_step, s.batch_size, max(3, repeats))
    grpo = _median_rate(grpo_iteration, len(obs), 1)
    print(f"  SFT (LoRA on the top {s.lora_layers} layers, bf16, {s.batch_size} a step, on "
          f"{device}) {sft:>8,.1f} examples/s")
    print(f"  GRPO (64 states: scoring, answers, {g.epochs} update passes) "
          f"{grpo:>8,.1f} states/s")
    return {"lm_sft_examples_per_s": sft, "lm_grpo_states_per_s": grpo}


RAY_PLAYERS = ("pretrained", "heuristic:hard", "heuristic:medium", "heuristic:easy", "random")


def bench_ray(seed: int = 0, quick: bool = False, address: str | None = None) -> dict[str, float]:
    """The same round robin (RAY_PLAYERS) on the local process pool and as Ray tasks, one after
    the other, and the overheads docs/scaling.md projects a cluster from: a task's round trip,
    moving a policy's weights through Ray's object store, and the size of a pairing's result."""
    import os
    import pickle

    try:
        from ..util.cluster import connect
        ray = connect(address)
    except ValueError as exc:
        print(f"Ray backend: not measured ({exc})")
        return {}
    from ..agents.checkpoints import load_checkpoint
    from ..pilots.build import PRETRAINED_PATH
    from ..rating.tournament import play_round_robin, resolve_entrants
    from ..util.workers import Where

    games = 20 if quick else 100
    entrants = resolve_entrants(list(RAY_PLAYERS))
    cpus = int(ray.cluster_resources().get("CPU", 1))
    rows, figures = [], {}
    for key, name, where in (
            ("tournament_pool", f"local process pool, {os.cpu_count()} workers",
             Where("local", os.cpu_count() or 1)),
            ("tournament_ray", f"Ray tasks, {cpus} CPUs", Where("ray", address=address))):
        began = time.perf_counter()
        result = play_round_robin(entrants, games, seed, where=where)
        took = time.perf_counter() - began
        figures[key] = len(result.matches) * games / took
        rows.append((f"tournament games, {name}", len(result.matches) * games / took, "games/s"))

    noop = ray.remote(num_cpus=1)(lambda: None)
    ray.get([noop.remote() for _ in range(cpus)])  # workers started outside the timing
    times = []
    for _ in range(20 if quick else 200):
        began = time.perf_counter()
        ray.get(noop.remote())
        times.append(time.perf_counter() - began)
    figures["ray_task_ms"] = 1000 * statistics.median(times)
    weights = load_checkpoint(PRETRAINED_PATH)
    blob = pickle.dumps(weights)
    size = ray.remote(num_cpus=1)(lambda x: len(pickle.dumps(x)))
    times = []
    for _ in range(5 if quick else 20):
        began = time.perf_counter()
        ray.get(size.remote(ray.put(weights)))
        times.append(time.perf_counter() - began)
    figures["ray_policy_ms"] = 1000 * statistics.median(times)
    figures["policy_mb"] = len(blob) / 1e6
    figures["pairing_result_kb"] = len(pickle.dumps(result.matches[0])) / 1e3
    print(f"Ray backend on this machine ({cpus} CPUs), the same round robin of {len(entrants)} "
          f"players, {games} games per pairing, one after the other:")
    width = max(len(r[0]) for r in rows)
    for name, value, unit in rows:
        print(f"  {name:<{width}}  {value:>10,.0f} {unit}")
    print(f"  a Ray task's round trip (no work), median   {figures['ray_task_ms']:.2f} ms")
    print(f"  the shipped policy ({figures['policy_mb']:.2f} MB) put and read by a task, median  "
          f"{figures['ray_policy_ms']:.1f} ms")
    print(f"  one pairing's result ({games} games), pickled   "
          f"{figures['pairing_result_kb']:.1f} kB")
    return figures


def sb3_activation():
    """The torch module of our PPO default activation, for SB3's policy_kwargs."""
    import torch

    from ..config import PPOConfig

    return {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[PPOConfig().activation]


def sb3_quiet(model):
    """`model` with a logger that writes nowhere: SB3 otherwise makes a folder in the temp dir
    (SB3-<time>) at every learn(), even at verbose=0, and what we compare we measure ourselves."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(None, []))
    return model


def run_training_benchmark(seconds: float = 60.0, seed: int = 0, quick: bool = False,
                           opponent: str = "heuristic:medium") -> dict[str, float]:
    """Where a run's time goes, per part (profile.py), then PPO training throughput end to end
    (rollouts + updates), ours and Stable-Baselines3's, on the same environment with the same
    network (actor and critic MLPs 256-256, our activation), each for about `seconds`, one after
    the other in this process, both with torch on the default threads (threads.py)."""
    import torch

    from ..agents.base import learner_dtype
    from ..config import LeagueConfig, RunConfig, TrainConfig
    from ..training.online.trainer import Trainer
    from ..util.threads import available_cores, use_torch_threads
    from .profile import run_profile

    if quick:  # a check that it runs: every run still ends at an update
        seconds = 3.0
    began = time.perf_counter()
    figures: dict[str, float] = run_profile(seed=seed, quick=quick)
    use_torch_threads()
    print(f"PPO training throughput: trainers one after another (ours, by default and in "
          f"step; ours without the opponent model; ours with a full league; "
          f"Stable-Baselines3's), each timed over {seconds:.0f} s of training after its start-up "
          f"(a rollout worker's process start included); learner torch threads "
          f"{torch.get_num_threads()}, opponent {opponent}", flush=True)

    import tempfile

    def ours(league: LeagueConfig, full_pool: bool, opponent_model: bool = True,
             rollout_workers: int | str = "auto", precision: str = "auto") -> float:
        with tempfile.TemporaryDirectory() as tmp:
            # A budget no host reaches in `seconds`: the clock, not the default 3M steps (50 s on
            # a fast host), ends the run, so every trainer is timed for as long as promised.
            # Judged against the benchmark's opponent (no evaluation runs in `seconds`), so the
            # opponent model watches its games as a default run watches the hard pilot's.
            cfg = RunConfig(train=TrainConfig(checkpoint_dir=tmp, log_dir=tmp, run_name="bench",
                                              eval_interval=10**6, save_interval=10**6,
                                              total_timesteps=10**10, max_minutes=seconds / 60,
                                              seed=seed, eval_opponent=opponent,
                                              opponent_model=opponent_model,
                                              rollout_workers=rollout_workers,
                                              precision=precision), league=league)
            trainer = Trainer(cfg, quiet=True)
            if full_pool:
                # A run in its steady state: the pool full of snapshots, the curriculum at medium.
                for k in range(league.pool_size):
                    trainer.league.add_snapshot(trainer.agent, f"bench{k}")
                trainer.league.stage = league.curriculum.index(opponent)
                trainer.league.assign()
            start = time.perf_counter()
            trainer.run()
            return trainer.counters.global_step / (time.perf_counter() - start)

    scripted = ours(LeagueConfig(curriculum=(opponent,), scripted_share=1.0), False)
    figures["ours"] = scripted
    ahead = TrainConfig().with_rollouts(available_cores()).async_rollouts
    how = "one rollout worker playing ahead" if ahead else "in step: one core here"
    dtype = str(learner_dtype("auto", torch.device("cpu"))).removeprefix("torch.")
    print(f"  spacewar-ai PPO, defaults ({how}; the learner in {dtype}), every game against "
          f"{opponent}   {scripted:>10,.0f} steps/s")
    if dtype != "float32":
        fp32 = ours(LeagueConfig(curriculum=(opponent,), scripted_share=1.0), False,
                    precision="float32")
        figures["ours_float32"] = fp32
        print(f"  the same, the learner in float32 (--precision float32)   "
              f"{fp32:>10,.0f} steps/s ({scripted / fp32:.2f}x)")
    if ahead:
        in_step = ours(LeagueConfig(curriculum=(opponent,), scripted_share=1.0), False,
                       rollout_workers=0)
        figures["ours_in_step"] = in_step
        print(f"  the same in step, the learner playing its games (--rollout-workers 0)   "
              f"{in_step:>10,.0f} steps/s ({scripted / in_step:.2f}x)")
    unmodelled = ours(LeagueConfig(curriculum=(opponent,), scripted_share=1.0), False, False)
    figures["ours_no_opponent_model"] = unmodelled
    print(f"  the same without the opponent model ([train] opponent_model = false)   "
          f"{unmodelled:>10,.0f} steps/s")
    league = LeagueConfig()
    if opponent in league.curriculum:
        full = ours(league, True)
        figures["ours_league"] = full
        print(f"  spacewar-ai PPO, defaults, league full ({league.pool_size} snapshots + self in "
              f"{1 - league.scripted_share:.0%} of games)   {full:>10,.0f} steps/s")

    try:
        from stable_baselines3 import PPO, __version__ as sb3_version
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env
    except ImportError:
        print("  Stable-Baselines3 is not installed (pip install -e '.[dev]'): no comparison")
        return figures
    from ..game.environment import SpacewarEnv

    class _StopAfter(BaseCallback):
        def _on_step(self) -> bool:
            return time.perf_counter() - t0 < seconds

    venv = make_vec_env(lambda: SpacewarEnv(opponent=opponent), n_envs=8, seed=seed)
    model = sb3_quiet(PPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0,
                          policy_kwargs={"net_arch": {"pi": [256, 256], "vf": [256, 256]},
                                         "activation_fn": sb3_activation()}))
    t0 = time.perf_counter()
    model.learn(total_timesteps=10**9, callback=_StopAfter())
    sb3 = model.num_timesteps / (time.perf_counter() - t0)
    figures["sb3"] = sb3
    # Its version, since its speed moves between versions as ours does between commits.
    print(f"  Stable-Baselines3 {sb3_version} PPO (its defaults, 8 envs, same network)  "
          f"{sb3:>10,.0f} steps/s")
    print(f"  ratio: {scripted / sb3:.1f}x (same opponent)")
    print(f"  the benchmark took {(time.perf_counter() - began) / 60:.1f} minutes in all")
    return figures
