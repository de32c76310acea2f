"""ONNX models a hostile visitor might upload, built here with onnx's helpers: each breaks one
rule of pilots/onnx_check.py, or passes them all and misbehaves when it runs."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
from onnx import TensorProto, helper

OPSET = 17


def _save(graph, path: Path, opset: int = OPSET, domain: str = "") -> Path:
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 8
    Path(path).write_bytes(model.SerializeToString())
    return Path(path)


def _obs():
    return helper.make_tensor_value_info("obs", TensorProto.FLOAT, [None, 36])


def _ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def _scores_from(nodes, inits, extra: str, path: Path, **kw) -> Path:
    """scores (N, 6) = the action mask + 0 * sum(extra): the model plays, after computing
    `extra` from the nodes given."""
    nodes = [*nodes,
             helper.make_node("Slice", ["obs", "s0", "s1", "ax"], ["mask"]),
             helper.make_node("ReduceSum", [extra], ["total"], keepdims=0),
             helper.make_node("Mul", ["total", "zero"], ["nothing"]),
             helper.make_node("Add", ["mask", "nothing"], ["scores"])]
    inits = [*inits, _ints("s0", [30]), _ints("s1", [36]), _ints("ax", [1]),
             helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])]
    out = helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, 6])
    return _save(helper.make_graph(nodes, "g", [_obs()], [out], inits), path, **kw)


def plain(path: Path) -> Path:
    """A model that keeps every rule and plays (the first valid action of the mask)."""
    return _scores_from([helper.make_node("Identity", ["obs"], ["copy"])], [], "copy", path)


def external_data(path: Path, location: str) -> Path:
    """Its weights "stored" at `location` (relative to the model, absolute, or a symlink)."""
    w = TensorProto()
    w.name, w.data_type = "w", TensorProto.FLOAT
    w.dims.extend([6])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "24")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return _scores_from([helper.make_node("Identity", ["w"], ["copy"])], [w], "copy", path)


def symlinked(path: Path, target: str) -> Path:
    """External data through a symlink beside the model that points at `target`."""
    link = Path(path).with_suffix(".bin")
    if not link.is_symlink():
        os.symlink(target, link)
    return external_data(path, link.name)


def custom_op(path: Path) -> Path:
    return _scores_from([helper.make_node("Steal", ["obs"], ["copy"], domain="com.evil")], [],
                        "copy", path, domain="com.evil")


def huge_tensor(path: Path) -> Path:
    """A Constant that declares a billion elements (and holds none)."""
    t = TensorProto()
    t.name, t.data_type = "big", TensorProto.FLOAT
    t.dims.extend([1000, 1000, 1000])
    return _scores_from([helper.make_node("Constant", [], ["copy"], value=t)], [], "copy", path)


def constant_of_shape(path: Path, n: int = 10**9) -> Path:
    """ConstantOfShape of n floats: the memory bomb the static check refuses by its operator."""
    return _scores_from([helper.make_node("ConstantOfShape", ["n"], ["copy"])], [_ints("n", [n])],
                        "copy", path)


def _from_obs(scale: float):
    """Nodes making `seed`, a float (1,) computed from the observations, so that the runtime
    cannot fold what follows into a constant when it loads the model."""
    return ([helper.make_node("ReduceSum", ["obs"], ["sum"], keepdims=0),
             helper.make_node("Mul", ["sum", "scale"], ["seed"])],
            [helper.make_tensor("scale", TensorProto.FLOAT, [1], [scale])])


def memory_bomb(path: Path, n: int = 10**9) -> Path:
    """Keeps every static rule, then asks for n floats at each decision (an Expand)."""
    nodes, inits = _from_obs(1.0)
    return _scores_from([*nodes, helper.make_node("Expand", ["seed", "n"], ["copy"])],
                        [*inits, _ints("n", [n])], "copy", path)


def fails(path: Path) -> Path:
    """Keeps every static rule and fails at each decision (a reshape that cannot be)."""
    nodes, inits = _from_obs(1.0)
    return _scores_from([*nodes, helper.make_node("Reshape", ["seed", "five"], ["copy"])],
                        [*inits, _ints("five", [5])], "copy", path)


def slow(path: Path, size: int = 768, steps: int = 200) -> Path:
    """Keeps every static rule; each decision multiplies size x size matrices `steps` times:
    many short operators, so a deadline stops it between two of them."""
    nodes, inits = _from_obs(1e-6)
    nodes.append(helper.make_node("Expand", ["seed", "shape"], ["m0"]))
    for k in range(steps):
        nodes.append(helper.make_node("MatMul", [f"m{k}", "m0"], [f"m{k + 1}"]))
    return _scores_from(nodes, [*inits, _ints("shape", [size, size])], f"m{steps}", path)


def one_long_operator(path: Path, size: int = 3500) -> Path:
    """Keeps every static rule; each decision is one MatMul of size x size integers, an
    operator the runtime cannot stop once it has begun, after inputs that take next to no time
    to fill (integers: far slower to multiply than floats, for the same memory)."""
    nodes, inits = _from_obs(1e-6)
    nodes += [helper.make_node("Cast", ["seed"], ["whole"], to=TensorProto.INT64),
              helper.make_node("Expand", ["whole", "shape"], ["m"]),
              helper.make_node("MatMul", ["m", "m"], ["product"]),
              helper.make_node("Cast", ["product"], ["floats"], to=TensorProto.FLOAT)]
    return _scores_from(nodes, [*inits, _ints("shape", [size, size])], "floats", path)


def actions(path: Path, value: int) -> Path:
    """Answers the action `value` (out of range, say) for every observation."""
    nodes = [helper.make_node("Slice", ["obs", "s0", "s1", "ax"], ["col"]),
             helper.make_node("Cast", ["col"], ["icol"], to=TensorProto.INT64),
             helper.make_node("Mul", ["icol", "zero"], ["z"]),
             helper.make_node("Add", ["z", "value"], ["both"]),
             helper.make_node("Squeeze", ["both", "ax"], ["action"])]
    inits = [_ints("s0", [0]), _ints("s1", [1]), _ints("ax", [1]),
             helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("value", TensorProto.INT64, [], [value])]
    out = helper.make_tensor_value_info("action", TensorProto.INT64, [None])
    return _save(helper.make_graph(nodes, "g", [_obs()], [out], inits), path)


def old_opset(path: Path) -> Path:
    return _scores_from([helper.make_node("Identity", ["obs"], ["copy"])], [], "copy", path,
                        opset=12)


__all__ = ["onnx", "plain", "external_data", "symlinked", "custom_op", "huge_tensor",
           "constant_of_shape", "memory_bomb", "fails", "slow", "one_long_operator", "actions",
           "old_opset"]


def slow_to_load(path: Path, inputs: int = 100_000) -> Path:
    """Keeps every static rule; one Concat of `inputs` inputs, which the runtime spends a long
    time planning when it builds the session, before any decision."""
    nodes, inits = _from_obs(1.0)
    nodes.append(helper.make_node("Concat", ["seed"] * inputs, ["copy"], axis=0))
    return _scores_from(nodes, inits, "copy", path)


def costly_to_refuse(path: Path, nodes: int = 60_000) -> Path:
    """Breaks a rule (a Tile, which no policy needs) only at the end of a chain of `nodes`
    Identity nodes: a model of some megabytes whose checker reads every node before it is
    refused."""
    chain = [helper.make_node("Identity", ["obs" if k == 0 else f"v{k - 1}"], [f"v{k}"])
             for k in range(nodes)]
    chain.append(helper.make_node("Tile", [f"v{nodes - 1}", "reps"], ["tiled"]))
    return _scores_from(chain, [_ints("reps", [1, 1])], "tiled", path)
