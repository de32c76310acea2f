"""The on-policy and value-based run (PPO, DQN): the Trainer (trainer.py) and its loops
(loops.py), the rollouts and their workers (rollouts.py, on util.workers), the league of
self-play opponents (league.py), warm starts (warm_start.py) and the files a run keeps
(run_files.py)."""
