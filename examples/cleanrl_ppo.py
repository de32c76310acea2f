"""PPO on Spacewar-v0 the CleanRL way: CleanRL's `ppo.py`, one file read top to bottom, with
invalid actions masked.

    python examples/cleanrl_ppo.py --total-timesteps 200000
    tensorboard --logdir runs

The environment is an ordinary Gymnasium env to this script; it knows nothing of spacewar_ai's
trainer. What differs from CleanRL's `ppo.py` (vwxyzjn/cleanrl, cleanrl/ppo.py), and why:

- **Autoreset in the same step.** Gymnasium 1.x vector envs reset a finished game on the *next*
  `step()` by default, ignoring that step's action and returning reward 0: a loop written for the
  old behaviour (CleanRL's) keeps that step in its batch and trains the last value of each game
  towards the next game's start. `autoreset_mode=SAME_STEP` restores the behaviour the loop was
  written for: the step that ends a game returns the next game's first observation, and every
  transition in the batch is a decision that was played.
- **Masked actions.** The observation's last six values are the valid actions (1.0 valid); the
  policy's logits of invalid ones are set to a large negative number before sampling and in the
  update, as masked-logits PPO does.
- **Rewards scaled by 0.01** (`--reward-scale`): a kill is worth 100 points, which a value head
  with CleanRL's initialisation learns slowly; returns logged are the game's own points.
- **argparse, not tyro**, so the example needs nothing beyond spacewar_ai's own dependencies; the
  flags keep CleanRL's names. `--opponent` picks the pilot flying the other ship.

`main()` takes two optional hooks, `on_rollout(iteration, batch)` and `on_minibatch(epoch,
indices)`, so a test (or a curious user) can look at exactly what the update trained on.
"""

import argparse
import random
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter

import spacewar_ai  # noqa: F401 (registers Spacewar-v0)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--exp-name", default="cleanrl_ppo")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--torch-deterministic", type=int, default=1, choices=(0, 1))
    p.add_argument("--cuda", type=int, default=1, choices=(0, 1))
    p.add_argument("--torch-threads", type=int, default=1,
                   help="CPU threads for torch; small networks lose time to more")
    p.add_argument("--env-id", default="spacewar_ai:Spacewar-v0")
    p.add_argument("--opponent", default="heuristic:easy")
    p.add_argument("--reward-scale", type=float, default=0.01)
    p.add_argument("--total-timesteps", type=int, default=200_000)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument("--anneal-lr", type=int, default=1, choices=(0, 1))
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--norm-adv", type=int, default=1, choices=(0, 1))
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--clip-vloss", type=int, default=1, choices=(0, 1))
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--target-kl", type=float, default=None)
    p.add_argument("--log-dir", default="runs")
    args = p.parse_args(argv)
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_iterations = args.total_timesteps // args.batch_size
    if args.minibatch_size < 1 or args.num_iterations < 1:
        p.exit(2, f"--total-timesteps {args.total_timesteps} gives no full batch of --num-envs "
                  f"x --num-steps = {args.batch_size} steps split into {args.num_minibatches} "
                  "minibatches; raise --total-timesteps or lower the others\n")
    return args


def make_env(env_id, opponent, reward_scale):
    def thunk():
        env = gym.make(env_id, opponent=opponent)
        env = gym.wrappers.RecordEpisodeStatistics(env)  # before the scale: the game's points
        return gym.wrappers.TransformReward(env, lambda r: reward_scale * r)
    return thunk


def layer_init(layer, std=2 ** 0.5, bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0))
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, n_actions), std=0.01))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, mask, action=None):
        logits = self.actor(x).masked_fill(~mask, -1e8)
        probs = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main(argv=None, *, on_rollout=None, on_minibatch=None):
    args = parse_args(argv)
    run_name = f"{args.exp_name}__{args.seed}__{int(time.time())}"
    writer = SummaryWriter(f"{args.log_dir}/{run_name}")
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(
        f"|{key}|{value}|" for key, value in vars(args).items()))

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = bool(args.torch_deterministic)
    torch.set_num_threads(args.torch_threads)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    envs = gym.vector.SyncVectorEnv(
        [make_env(args.env_id, args.opponent, args.reward_scale) for _ in range(args.num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    n_act = envs.single_action_space.n
    obs_shape = envs.single_observation_space.shape
    agent = Agent(obs_shape[0], n_act).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs) + obs_shape).to(device)
    masks = torch.zeros((args.num_steps, args.num_envs, n_act), dtype=torch.bool).to(device)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long).to(device)
    logprobs = torch.zeros((args.num_steps, args.num_envs)).to(device)
    rewards = torch.zeros((args.num_steps, args.num_envs)).to(device)
    dones = torch.zeros((args.num_steps, args.num_envs)).to(device)
    values = torch.zeros((args.num_steps, args.num_envs)).to(device)

    global_step = 0
    start_time = time.time()
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.Tensor(next_obs).to(device)
    next_done = torch.zeros(args.num_envs).to(device)

    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            dones[step] = next_done
            masks[step] = next_obs[:, -n_act:] > 0.5  # the observation ends with the action mask

            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, masks[step])
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
            next_done = np.logical_or(terminations, truncations)
            rewards[step] = torch.tensor(reward, dtype=torch.float32).to(device).view(-1)
            next_obs = torch.Tensor(next_obs).to(device)
            next_done = torch.Tensor(next_done).to(device)

            # Same-step autoreset puts a finished game's info (and its episode statistics)
            # under "final_info"; "_episode" marks the envs whose game just ended.
            final = infos.get("final_info", {})
            for i in np.flatnonzero(final.get("_episode", ())):
                writer.add_scalar("charts/episodic_return", final["episode"]["r"][i], global_step)
                writer.add_scalar("charts/episodic_length", final["episode"]["l"][i], global_step)

        with torch.no_grad():  # bootstrap the value if not done; generalized advantage estimation
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (
                    delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam)
            returns = advantages + values

        b_obs = obs.reshape((-1,) + obs_shape)
        b_masks = masks.reshape(-1, n_act)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        if on_rollout is not None:
            on_rollout(iteration, {"obs": obs, "masks": masks, "actions": actions,
                                   "rewards": rewards, "dones": dones, "values": values})

        b_inds = np.arange(args.batch_size)
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)  # each epoch sees every sample once
            for start in range(0, args.batch_size, args.minibatch_size):
                end = start + args.minibatch_size
                mb_inds = b_inds[start:end]
                if on_minibatch is not None:
                    on_minibatch(epoch, mb_inds.copy())

                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb_inds], b_masks[mb_inds], b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():  # http://joschu.net/blog/kl-approx.html
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = ((mb_advantages - mb_advantages.mean())
                                     / (mb_advantages.std() + 1e-8))

                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef,
                                                        1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef)
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", int(global_step / (time.time() - start_time)),
                          global_step)

    envs.close()
    writer.close()
    return global_step


if __name__ == "__main__":
    main()
