"""PPO on Spacewar-v0 the CleanRL way: Gymnasium's own SyncVectorEnv, one file, top to bottom.

    python examples/cleanrl_ppo.py --total-timesteps 200000
    tensorboard --logdir runs

The environment is an ordinary Gymnasium env to this script: it knows nothing of spacewar_ai's
trainer. Invalid actions are masked with the env's `action_masks()` (the observation's last six
values), as a masked-logits PPO does.
"""

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter

import spacewar_ai  # noqa: F401 (registers Spacewar-v0)


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--total-timesteps", type=int, default=200_000)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--opponent", default="heuristic:easy")
    p.add_argument("--log-dir", default="runs")
    return p.parse_args(argv)


def make_env(opponent):
    def thunk():
        return gym.wrappers.RecordEpisodeStatistics(gym.make("spacewar_ai:Spacewar-v0", opponent=opponent))
    return thunk


def layer(i, o, std=np.sqrt(2)):
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.critic = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(),
                                    layer(64, 1, 1.0))
        self.actor = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(),
                                   layer(64, n_actions, 0.01))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, mask, action=None):
        logits = self.actor(x).masked_fill(~mask, -1e9)
        probs = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main(argv=None):
    args = parse_args(argv)
    run_name = f"cleanrl_ppo__{args.seed}__{int(time.time())}"
    writer = SummaryWriter(f"{args.log_dir}/{run_name}")
    torch.manual_seed(args.seed)
    envs = gym.vector.SyncVectorEnv([make_env(args.opponent) for _ in range(args.num_envs)])
    n_act = envs.single_action_space.n
    agent = Agent(envs.single_observation_space.shape[0], n_act)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    obs = torch.zeros((args.num_steps, args.num_envs) + envs.single_observation_space.shape)
    masks = torch.zeros((args.num_steps, args.num_envs, n_act), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros((args.num_steps, args.num_envs))
                                        for _ in range(4))

    global_step, start_time = 0, time.time()
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.Tensor(next_obs)
    next_done = torch.zeros(args.num_envs)
    for iteration in range(1, args.total_timesteps // batch_size + 1):
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], dones[step] = next_obs, next_done
            masks[step] = next_obs[:, -n_act:] > 0.5  # the observation ends with the action mask
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, masks[step])
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs, reward, term, trunc, infos = envs.step(action.numpy())
            rewards[step] = torch.tensor(reward * 0.01, dtype=torch.float32)  # kills are 100
            next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(np.logical_or(term, trunc))
            if "episode" in infos:
                for i in np.flatnonzero(infos["_episode"]):
                    writer.add_scalar("charts/episodic_return", infos["episode"]["r"][i],
                                      global_step)
                    writer.add_scalar("charts/episodic_length", infos["episode"]["l"][i],
                                      global_step)

        with torch.no_grad():  # generalized advantage estimation
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                nextnonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                nextvalues = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (delta + args.gamma * args.gae_lambda
                                              * nextnonterminal * lastgaelam)
            returns = advantages + values

        b_obs, b_masks = obs.reshape(batch_size, -1), masks.reshape(batch_size, -1)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_adv, b_ret = advantages.reshape(-1), returns.reshape(-1)
        for _ in range(args.update_epochs):
            for start in range(0, batch_size, minibatch_size):
                mb = torch.randperm(batch_size)[:minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                adv = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * torch.clamp(
                    ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_ret[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("charts/SPS", int(global_step / (time.time() - start_time)), global_step)
    envs.close()
    writer.close()
    return global_step


if __name__ == "__main__":
    main()
