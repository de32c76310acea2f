"""Pilots trained outside this package: ONNX files and Stable-Baselines3 models.

- `onnx:PATH` (`OnnxPilot`): an ONNX model that takes observations float32 (N, 36), exactly as
  the environment gives them, as its first input, and whose first output is either actions
  (integers, (N,)) or scores (floats, (N, A): logits or Q-values; the masked actions are taken
  out before the argmax). `--export model.onnx` writes this package's models in that form; a
  model with a fixed batch of 1 is run a row at a time.
- `sb3:PATH.zip` (`SB3Pilot`): a Stable-Baselines3 or sb3-contrib model trained on
  `Spacewar-v0` (PPO, A2C, DQN, MaskablePPO, ...). It plays greedily with the action mask
  applied: MaskablePPO through its own masks, PPO and A2C through their logits, DQN through its
  Q-values.

Both play in every mode a pilot spec goes: evaluation, tournaments, demos, human play.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from .engine import OBS_MASK

NEG_INF = -1e9


def _masked_argmax(scores: np.ndarray, obs: np.ndarray) -> np.ndarray:
    mask = obs[:, OBS_MASK:OBS_MASK + scores.shape[1]] > 0.5
    mask[~mask.any(1), 0] = True  # a row with no valid action may still drift
    return np.where(mask, scores, NEG_INF).argmax(1).astype(np.int64)


def _file(spec: str, prefix: str, what: str) -> Path:
    path = Path(spec[len(prefix):])
    if not path.is_file():
        raise ValueError(f"player {spec!r}: no such {what} file {path}")
    return path


class OnnxPilot:
    """An ONNX model flying as a pilot (module docstring)."""

    def __init__(self, spec: str, identity: str):
        try:
            import onnxruntime as ort
        except ImportError:
            raise ValueError(f"player {spec!r}: ONNX models need onnxruntime: pip install -e "
                             "\".[onnx]\"") from None
        path = _file(spec, "onnx:", "ONNX")
        try:
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ValueError(f"player {spec!r}: not a readable ONNX model "
                             f"({type(exc).__name__})") from None
        inputs = self.session.get_inputs()
        self.input = inputs[0].name
        self.one_row = inputs[0].shape[0] == 1  # a model exported for a batch of one
        self.name = f"onnx:{path.name}"
        self.identity = identity

    def reset(self, mask=None, seeds=None) -> None:
        return None

    def act(self, obs: np.ndarray) -> np.ndarray:
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        if obs.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        if self.one_row:
            return np.concatenate([self.act(obs[i:i + 1]) for i in range(obs.shape[0])])
        out = np.asarray(self.session.run(None, {self.input: obs})[0])
        if out.dtype.kind in "iu":
            return out.reshape(-1).astype(np.int64)
        return _masked_argmax(out.reshape(obs.shape[0], -1), obs)


def _sb3_class(path: Path, spec: str):
    """The algorithm class an SB3 zip was saved by, read from its policy's module."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
    except (zipfile.BadZipFile, KeyError, ValueError):
        raise ValueError(f"player {spec!r}: not a Stable-Baselines3 model (a .zip saved by "
                         "model.save)") from None
    policy = json.dumps(data.get("policy_class", {}))
    if "maskable" in policy:
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    import stable_baselines3 as sb3

    if "dqn" in policy.lower() or "QNetwork" in policy:
        return sb3.DQN
    return sb3.PPO


class SB3Pilot:
    """A Stable-Baselines3 or sb3-contrib model flying as a pilot (module docstring)."""

    def __init__(self, spec: str, identity: str):
        try:
            import stable_baselines3  # noqa: F401
        except ImportError:
            raise ValueError(f"player {spec!r}: SB3 models need stable-baselines3: pip install "
                             "-e \".[ecosystem]\"") from None
        path = _file(spec, "sb3:", "model")
        cls = _sb3_class(path, spec)
        try:
            self.model = cls.load(str(path), device="cpu")
        except Exception as exc:  # SB3 raises many kinds on a wrong or partial file
            raise ValueError(f"player {spec!r}: {cls.__name__} could not load it "
                             f"({type(exc).__name__})") from None
        self.name = f"sb3:{path.stem}"
        self.identity = identity

    def reset(self, mask=None, seeds=None) -> None:
        return None

    def act(self, obs: np.ndarray) -> np.ndarray:
        import torch

        obs = np.ascontiguousarray(obs, dtype=np.float32)
        if obs.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        policy = self.model.policy
        with torch.no_grad():
            x = torch.as_tensor(obs)
            if hasattr(policy, "q_net"):
                scores = policy.q_net(x).numpy()
            else:
                scores = policy.get_distribution(x).distribution.logits.numpy()
        return _masked_argmax(scores, obs)


def outside_pilot(spec: str, identity: str):
    """The pilot an `onnx:` or `sb3:` spec names."""
    return (OnnxPilot if spec.lower().startswith("onnx:") else SB3Pilot)(spec, identity)
