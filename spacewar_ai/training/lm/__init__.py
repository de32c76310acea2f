"""The language model's trainers: supervised fine-tuning (sft.py), DAgger (dagger.py) and GRPO
(grpo.py) on what they share (run.py: the adapter, the run's folder and log), the scores of its
games (scoring.py), and the adapter for trl's own trainer (trl_adapter.py). The model, its
view and its pilot are spacewar_ai.lm's."""
