"""What an ONNX model must be before it flies: read as data, never run, held to what a policy needs.

A visitor's ONNX file is hostile: external data opens other files, custom domains ask for code,
shape-making and control-flow operators build tensors as large as they like. `onnx_problems`
parses the file with the `onnx` package (nothing executed, no other file opened) and lists what
breaks these rules: no external data; only `POLICY_OPS` in the default domain, no functions or
subgraphs; an opset in `OPSETS`; no tensor over `MAX_ELEMENTS`; a float (N, 36) first input (the
default game's observation; another game's width where it plays another) and
an output; then onnx's own checker. The arena refuses a submission with any problem before it is
queued and before it plays; on the command line the first problem is a warning."""

from __future__ import annotations

import math
from pathlib import Path

from ..util.errors import UserError

OBS_SIZE = 36
OPSETS = range(13, 24)  # the default domain's opset versions onnxruntime >= 1.25 runs
MAX_ELEMENTS = 2**22  # one tensor; the arena's submissions are at most a few MB in all
POLICY_OPS = frozenset("""
    Abs Acos Acosh Add And ArgMax ArgMin Asin Asinh Atan Atanh BatchNormalization Cast Ceil Celu
    Clip Concat Constant Cos Cosh Div Dropout Einsum Elu Equal Erf Exp Expand Flatten Floor
    Gather GatherElements Gelu Gemm Greater GreaterOrEqual HardSigmoid HardSwish Identity
    InstanceNormalization IsInf IsNaN LayerNormalization LeakyRelu Less LessOrEqual Log
    LogSoftmax MatMul Max Mean Min Mish Mod Mul Neg Not Or Pow PRelu Reciprocal ReduceL1 ReduceL2
    ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Relu
    Reshape Round Selu Shape Sigmoid Sign Sin Sinh Size Slice Softmax Softplus Softsign Split
    Sqrt Squeeze Sub Sum Tan Tanh TopK Transpose Unsqueeze Where Xor
""".split())
DEFAULT_DOMAINS = ("", "ai.onnx")


def _tensors(graph):
    """(where, TensorProto) of every tensor stored in the graph."""
    for t in graph.initializer:
        yield f"initializer {t.name!r}", t
    for s in graph.sparse_initializer:
        yield f"sparse initializer {s.values.name!r}", s.values
        yield f"sparse initializer {s.values.name!r}", s.indices
    for node in graph.node:
        for a in node.attribute:
            for t in ([a.t] if a.HasField("t") else []) + list(a.tensors):
                yield f"{node.op_type} node {node.name or node.output[0]!r}", t
            for s in ([a.sparse_tensor] if a.HasField("sparse_tensor") else []) + \
                    list(a.sparse_tensors):
                yield f"{node.op_type} node {node.name or node.output[0]!r}", s.values


def _declared(value_info) -> int:
    """The element count a value's declared shape promises (named dimensions count 1)."""
    shape = value_info.type.tensor_type.shape
    return math.prod(d.dim_value if d.HasField("dim_value") else 1 for d in shape.dim)


def _inputs(graph) -> list:
    """The graph's inputs that are fed, not initialized inside it."""
    initialized = {t.name for t in graph.initializer}
    return [v for v in graph.input if v.name not in initialized]


def input_width(data: bytes) -> int | None:
    """The observation width the serialized model's first input declares; None where it
    declares none or does not parse."""
    import onnx

    try:
        graph = onnx.ModelProto.FromString(data).graph
    except Exception:  # protobuf's DecodeError and friends
        return None
    inputs = _inputs(graph)
    dims = inputs[0].type.tensor_type.shape.dim if inputs else ()
    return dims[1].dim_value if len(dims) == 2 and dims[1].HasField("dim_value") else None


def onnx_problems(data: bytes, obs_size: int = OBS_SIZE) -> list[str]:
    """Every rule (module docstring) the serialized model `data` breaks; [] when it may fly.
    `obs_size`: the width of the game's observation (the arena's game: OBS_SIZE)."""
    import onnx

    try:
        model = onnx.ModelProto.FromString(data)
    except Exception:  # protobuf's DecodeError and friends
        return ["not an ONNX model (it does not parse)"]
    graph = model.graph
    if not graph.node:
        return ["not an ONNX model (it has no graph)"]
    problems = []
    for where, t in _tensors(graph):
        if t.data_location == onnx.TensorProto.EXTERNAL or len(t.external_data):
            problems.append(f"{where} keeps its data outside the file (external data); save "
                            "the model as one file")
        size = math.prod(t.dims)
        if size > MAX_ELEMENTS:
            problems.append(f"{where} declares {size:,} elements, over the limit of "
                            f"{MAX_ELEMENTS:,}")
    if model.functions:
        problems.append(f"it defines functions of its own ({model.functions[0].name!r}); a "
                        "policy needs only standard operators")
    if graph.sparse_initializer:
        problems.append("it has sparse initializers; a policy needs only dense tensors")
    for opset in model.opset_import:
        if opset.domain not in DEFAULT_DOMAINS:
            problems.append(f"it imports the operator domain {opset.domain[:40]!r}; only the "
                            "standard domain (ai.onnx) is run here")
        elif opset.version not in OPSETS:
            problems.append(f"opset {opset.version} is outside the supported "
                            f"{OPSETS.start}-{OPSETS.stop - 1}; export with an opset in range")
    for node in graph.node:
        if node.domain not in DEFAULT_DOMAINS:
            problems.append(f"operator {node.op_type[:40]!r} of domain {node.domain[:40]!r}: only "
                            "standard operators are run here")
        elif node.op_type not in POLICY_OPS:
            problems.append(f"operator {node.op_type[:40]!r} is not one a policy needs here (the "
                            "allowed ones are in spacewar_ai/pilots/onnx_check.py)")
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute):
            problems.append(f"{node.op_type[:40]} node holds a subgraph; a policy needs none")
    for v in [*graph.input, *graph.output, *graph.value_info]:
        if _declared(v) > MAX_ELEMENTS:
            problems.append(f"{v.name[:40]!r} declares {_declared(v):,} elements, over the limit "
                            f"of {MAX_ELEMENTS:,}")
    inputs = _inputs(graph)
    if not inputs or not graph.output:
        problems.append(f"it needs one input (observations, float32 (N, {obs_size})) and an "
                        "output")
    else:
        t = inputs[0].type.tensor_type
        dims = t.shape.dim
        if t.elem_type != onnx.TensorProto.FLOAT or len(dims) != 2 or (
                dims[1].HasField("dim_value") and dims[1].dim_value != obs_size):
            problems.append(f"its first input {inputs[0].name[:40]!r} is not float32 (N, "
                            f"{obs_size}) observations")
    if not problems:
        try:
            onnx.checker.check_model(model)
        except Exception as exc:  # onnx.checker.ValidationError and protobuf errors
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            problems.append(f"not a valid ONNX model ({first[:160]})")
    return problems


def check_onnx_file(path: str | Path, shown: str | None = None) -> bytes:
    """The file's bytes if it may fly; ValueError naming it (`shown`, default its file name) and
    its first problem otherwise."""
    shown = shown or Path(path).name
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise UserError(f"{shown}: ONNX models need the onnx package here: pip install -e "
                        "\".[onnx]\"") from None
    try:
        data = Path(path).read_bytes()
    except OSError:
        raise UserError(f"{shown}: no such ONNX file") from None
    problems = onnx_problems(data)
    if problems:
        raise UserError(f"{shown}: {problems[0]}")
    return data
