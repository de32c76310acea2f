"""Pilots trained outside this package: ONNX files and Stable-Baselines3 models.

- `onnx:PATH` (`OnnxPilot`): a model whose first input is observations float32 (N, 36) and
  whose first output is actions (N,) or scores (N, A), masked before the argmax; a model with a
  fixed batch of 1 is run a row at a time.
- `sb3:PATH.zip` (`SB3Pilot`): a Stable-Baselines3 or sb3-contrib model trained on
  `Spacewar-v0` (the algorithm read from the zip), greedy with the mask applied to its logits
  or Q-values; a recurrent model keeps its state per game."""

from __future__ import annotations

import json
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np

from ..config import mask_start
from ..game.pilot import Pilot
from ..util.errors import UserError
from ..util.files import printable
from .spec import Spec, outside_file, parse_spec

NEG_INF = -1e9


def _masked_argmax(scores: np.ndarray, obs: np.ndarray) -> np.ndarray:
    start = mask_start(obs.shape[1])
    mask = obs[:, start:start + scores.shape[1]] > 0.5
    mask[~mask.any(1), 0] = True  # a row with no valid action may still drift
    return np.where(mask, scores, NEG_INF).argmax(1).astype(np.int64)


class OnnxPilot(Pilot):
    """An ONNX model flying as a pilot (module docstring). The model is checked first
    (onnx_check.onnx_problems): here a problem is a warning, for the file is the user's own; the
    arena and the browser refuse it before it gets this far.

    `confine(seconds, on_stuck)` gives every decision a deadline (the arena's): a call over it
    is stopped and the decision forfeited (every ship it flies drifts), and after
    `MAX_SLOW_DECISIONS` of them, or once the model fails while deciding, the pilot gives up
    (`gave_up` says why) and forfeits every game it plays from then on. The runtime stops a run
    only between operators, so one long operator (a huge MatMul) would run on: if the call has
    not returned a grace period after its deadline, `on_stuck(why)` is called from a timer
    thread, and must end the call's process (the arena's pairing child sends the refusal and
    exits). An action outside its game's actions forfeits the game, as a strategy file's does,
    and is recorded as a drift so that the game's replay loads."""

    MAX_SLOW_DECISIONS = 1

    def __init__(self, spec: str | Spec, identity: str, n_actions: int = 6, obs_size: int = 36):
        parsed = parse_spec(spec)
        spec = parsed.text
        try:
            import onnxruntime as ort
        except ImportError:
            raise UserError(f"player {spec!r}: ONNX models need onnxruntime: pip install -e "
                            "\".[onnx]\"") from None
        path = outside_file(parsed)
        data = path.read_bytes()
        problems = _problems(data, obs_size)
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.log_severity_level = 4  # onnxruntime's own console lines would follow our one
        try:
            # From bytes when it may be: the runtime then has no folder to look for files in.
            self.session = ort.InferenceSession(str(path) if problems else data, options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise UserError(f"player {spec!r}: not a readable ONNX model "
                            f"({type(exc).__name__})") from None
        if problems:
            print(f"warning: {spec}: {problems[0]} (the arena would refuse this model)",
                  file=sys.stderr)
        inputs = self.session.get_inputs()
        self.input = inputs[0].name
        self.one_row = inputs[0].shape[0] == 1  # a model exported for a batch of one
        self.name = printable(f"onnx:{path.name}", 120)  # the file's name is its author's
        self.identity = identity
        self.n_actions = int(n_actions)
        self.decision_seconds: float | None = None
        self.on_stuck = None
        self.slow_decisions = 0
        self.gave_up: str | None = None
        self._dead = np.zeros(0, dtype=bool)
        self._new_forfeits: dict[int, str] = {}

    def confine(self, decision_seconds: float, on_stuck=None) -> None:
        self.decision_seconds = float(decision_seconds)
        self.on_stuck = on_stuck

    def reset(self, mask=None, seeds=None) -> None:
        if mask is None:
            return
        mask = np.asarray(mask, dtype=bool)
        if mask.shape[0] != self._dead.shape[0]:
            self._dead = np.zeros(mask.shape[0], dtype=bool)
        self._dead[mask] = False

    def forfeits(self) -> dict[int, str]:
        return self._new_forfeits

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        n = obs.shape[0]
        out = np.zeros(n, dtype=np.int64)
        self._new_forfeits = {}
        if self._dead.shape[0] != n:
            self._dead = np.zeros(n, dtype=bool)
        ask = np.ones(n, dtype=bool) if active is None else np.asarray(active, dtype=bool).copy()
        rows = np.flatnonzero(ask & ~self._dead)
        if rows.size == 0:
            return out
        if self.gave_up is None:
            try:
                answer = self._decide(obs[rows])
            except _TooSlow:
                self.slow_decisions += 1
                if self.slow_decisions < self.MAX_SLOW_DECISIONS:
                    return out  # this decision forfeited: every ship drifts
                self.gave_up = self._over_limit()
            except Exception as exc:  # anything the runtime raises: out of memory, bad shapes
                self.gave_up = f"the model failed while deciding ({_reason(exc)})"
        if self.gave_up is not None:
            for r in rows:
                self._forfeit(int(r), self.gave_up)
            return out
        valid = (answer >= 0) & (answer < self.n_actions)
        out[rows[valid]] = answer[valid]
        for r, a in zip(rows[~valid], answer[~valid]):
            self._forfeit(int(r), f"answered action {int(a)}, not one of 0..{self.n_actions - 1}")
        return out

    def _forfeit(self, row: int, reason: str) -> None:
        self._new_forfeits[row] = reason
        self._dead[row] = True

    def _over_limit(self) -> str:
        ms = f"{self.decision_seconds * 1000:.0f} ms"
        if self.slow_decisions == 1:
            return f"a decision over the limit of {ms}"
        return f"{self.slow_decisions} decisions over the limit of {ms}"

    def _decide(self, obs: np.ndarray) -> np.ndarray:
        """Actions of the rows of `obs` (an ndarray of ints, any values the model gives)."""
        if self.one_row and obs.shape[0] > 1:
            return np.concatenate([self._decide_rows(obs[i:i + 1]) for i in range(obs.shape[0])])
        return self._decide_rows(obs)

    def _decide_rows(self, obs: np.ndarray) -> np.ndarray:
        out = np.asarray(self._run(obs))
        n = obs.shape[0]
        if out.dtype.kind in "iu":
            if out.size != n:
                raise UserError(f"answered {out.size} actions for {n} observations")
            return out.reshape(-1).astype(np.int64)
        if out.dtype.kind != "f" or out.size != n * self.n_actions:
            raise UserError(f"answered {out.dtype} of shape {out.shape}, not actions (N,) or "
                            f"scores (N, {self.n_actions})")
        return _masked_argmax(out.reshape(n, self.n_actions), obs)

    def _run(self, obs: np.ndarray):
        if self.decision_seconds is None:
            return self.session.run(None, {self.input: obs})[0]
        import onnxruntime as ort

        # onnxruntime stops a run whose options' terminate flag another thread sets.
        options = ort.RunOptions()
        timers = [threading.Timer(self.decision_seconds, setattr, (options, "terminate", True))]
        if self.on_stuck is not None:
            # The run releases the GIL, so this thread runs while one operator computes.
            grace = self.decision_seconds + max(self.decision_seconds, STUCK_GRACE)
            timers.append(threading.Timer(grace, self.on_stuck, (
                f"a decision ran past the limit of {self.decision_seconds * 1000:.0f} ms and "
                f"was stopped at {grace * 1000:.0f} ms",)))
        for timer in timers:
            timer.daemon = True
            timer.start()
        try:
            return self.session.run(None, {self.input: obs}, options)[0]
        except Exception:
            if options.terminate:
                raise _TooSlow() from None
            raise
        finally:
            for timer in timers:
                timer.cancel()


# After its deadline, how long a decision may still take to stop before its process is ended.
STUCK_GRACE = 0.25


class _TooSlow(Exception):
    """A decision stopped at its deadline."""


def _reason(exc: BaseException) -> str:
    """An exception in a few words: its class, or our own one-line message."""
    return str(exc)[:120] if isinstance(exc, ValueError) else type(exc).__name__


def _problems(data: bytes, obs_size: int) -> list[str]:
    try:
        from .onnx_check import onnx_problems

        return onnx_problems(data, obs_size)
    except ImportError:  # without the onnx package only onnxruntime's own checks stand
        return []


# What each algorithm's saved data holds and no other algorithm's does. SB3's zip names the
# policy's class, not the algorithm's, so A2C, PPO and TRPO (one policy class) are told apart by
# their own settings. (module of the policy class, a setting it must have, package, class)
SB3_ALGORITHMS = (
    ("sb3_contrib.qrdqn.", None, "sb3_contrib", "QRDQN"),
    ("stable_baselines3.dqn.", None, "stable_baselines3", "DQN"),
    ("sb3_contrib.common.recurrent.", None, "sb3_contrib", "RecurrentPPO"),
    ("sb3_contrib.common.maskable.", None, "sb3_contrib", "MaskablePPO"),
    ("stable_baselines3.common.policies", "cg_max_steps", "sb3_contrib", "TRPO"),
    ("stable_baselines3.common.policies", "clip_range", "stable_baselines3", "PPO"),
    ("stable_baselines3.common.policies", "n_steps", "stable_baselines3", "A2C"),
)


def _sb3_class(path: Path, spec: str):
    """The algorithm class an SB3 zip was saved by, read from what the zip's data names: its
    policy's class and the algorithm's own settings (SB3_ALGORITHMS)."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
        module = str(data["policy_class"].get("__module__", ""))
    except (zipfile.BadZipFile, KeyError, ValueError, AttributeError, TypeError):
        raise UserError(f"player {spec!r}: not a Stable-Baselines3 model (a .zip saved by "
                        "model.save)") from None
    for prefix, setting, package, name in SB3_ALGORITHMS:
        if module.startswith(prefix) and (setting is None or setting in data):
            try:
                import importlib

                return getattr(importlib.import_module(package), name)
            except ImportError:
                raise UserError(f"player {spec!r}: a {name} model needs {package}: pip install "
                                "-e \".[ecosystem]\"") from None
    raise UserError(f"player {spec!r}: a model of policy {module or 'unknown'}, which flies no "
                    "Discrete(6) ship here; sb3: plays DQN, QR-DQN, PPO, A2C, TRPO, MaskablePPO "
                    "and RecurrentPPO models")


class SB3Pilot(Pilot):
    """A Stable-Baselines3 or sb3-contrib model flying as a pilot (module docstring). A
    recurrent policy keeps its LSTM state per game, cleared when the game starts."""

    def __init__(self, spec: str | Spec, identity: str):
        parsed = parse_spec(spec)
        spec = parsed.text
        try:
            import stable_baselines3  # noqa: F401
        except ImportError:
            raise UserError(f"player {spec!r}: SB3 models need stable-baselines3: pip install "
                            "-e \".[ecosystem]\"") from None
        path = outside_file(parsed)
        cls = _sb3_class(path, spec)
        try:
            self.model = cls.load(str(path), device="cpu")
        except Exception as exc:  # SB3 raises many kinds on a wrong or partial file
            raise UserError(f"player {spec!r}: {cls.__name__} could not load it "
                            f"({type(exc).__name__})") from None
        self.name = printable(f"sb3:{path.stem}", 120)
        self.identity = identity
        self.recurrent = hasattr(self.model.policy, "lstm_hidden_state_shape")
        self._lstm = None  # (h, c) of the actor, one row per game
        self._starts = np.zeros(0, dtype=bool)

    def reset(self, mask=None, seeds=None) -> None:
        if mask is None or not self.recurrent:
            return
        mask = np.asarray(mask, dtype=bool)
        if mask.shape[0] != self._starts.shape[0]:
            self._lstm, self._starts = None, np.ones(mask.shape[0], dtype=bool)
        self._starts |= mask

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        import torch

        obs = np.ascontiguousarray(obs, dtype=np.float32)
        if obs.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        policy = self.model.policy
        with torch.no_grad():
            x = torch.as_tensor(obs)
            if hasattr(policy, "q_net"):
                scores = policy.q_net(x).numpy()
            elif hasattr(policy, "quantile_net"):  # QR-DQN: the mean over its quantiles
                scores = policy.quantile_net(x).mean(dim=1).numpy()
            elif self.recurrent:
                scores = self._recurrent_logits(policy, x)
            else:
                scores = policy.get_distribution(x).distribution.logits.numpy()
        return _masked_argmax(scores, obs)

    def _recurrent_logits(self, policy, x):
        import torch

        n = x.shape[0]
        if self._lstm is None or self._starts.shape[0] != n:
            layers, _, size = policy.lstm_hidden_state_shape
            self._lstm = (torch.zeros(layers, n, size), torch.zeros(layers, n, size))
            self._starts = np.ones(n, dtype=bool)
        starts = torch.as_tensor(self._starts, dtype=torch.float32)
        dist, self._lstm = policy.get_distribution(x, self._lstm, starts)
        self._starts[:] = False
        return dist.distribution.logits.numpy()


def outside_pilot(spec, identity: str, config=None):
    """The pilot an `onnx:` or `sb3:` Spec names; an ONNX model reads the observation of the
    game `config` (default the default game) and answers one of its actions."""
    if spec.kind == "onnx":
        if config is None:
            return OnnxPilot(spec, identity)
        return OnnxPilot(spec, identity, config.num_actions, config.obs_dim)
    return SB3Pilot(spec, identity)
