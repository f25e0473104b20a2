"""A seeded mutation fuzzer for the ONNX path: small models, mutated at the protobuf level
(attributes, shapes, dtypes, node inputs and op types, initializers, opsets, raw bytes), then
imported, built and run by us and by onnxruntime on the same random inputs.

Each case ends in one of these verdicts:
  match          both ran and the outputs agree;
  both refuse    onnxruntime refuses the model and so do we, with a UserError;
  we refuse      onnxruntime runs it but we refuse it with a UserError (listed, with our reason);
  oracle match   onnxruntime has no kernel for it (NOT_IMPLEMENTED), we ran it, and the numpy
                 reference executor agrees;
and anything else is a problem: an exception that is not a UserError (an internal error), a
mismatch, a model onnxruntime refuses as invalid that we run anyway, a hang or a signal (the
cases run in a worker process: nnvm/testing/isolated.py)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from nnvm.testing import onnx_models

ELEMENTWISE = ("Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Sqrt", "Erf", "Softplus")
BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow")
INTS = (-2, -1, 0, 1, 2, 3, 4, 7, 64, 1 << 20, 1 << 40)
DTYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32,
          TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.UINT8, 0, 99)  # fmt: skip
OPSETS = (1, 6, 7, 9, 11, 13, 17, 21, 99)


def _model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "fuzz", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name: str, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _init(name: str, array) -> TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def seed_models() -> list[onnx.ModelProto]:
    """Small models that between them use the common op families; each builds in ~0.1 s."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    conv = _model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("GlobalAveragePool", ["p"], ["g"]),
            helper.make_node("Flatten", ["g"], ["y"], axis=1),
        ],
        [_vi("x", [1, 3, 8, 8])],
        [_vi("y", [1, 4])],
        [_init("w", w), _init("b", rng.standard_normal(4).astype(np.float32))],
    )
    chain = _model(
        [
            helper.make_node("Add", ["x", "a"], ["s"]),
            helper.make_node("Sigmoid", ["s"], ["t"]),
            helper.make_node("Clip", ["t", "lo", "hi"], ["u"]),
            helper.make_node("Transpose", ["u"], ["v"], perm=[0, 2, 1]),
            helper.make_node("Reshape", ["v", "shape"], ["r"]),
            helper.make_node("Softmax", ["r"], ["y"], axis=-1),
        ],
        [_vi("x", [2, 3, 4])],
        [_vi("y", [2, 12])],
        [
            _init("a", rng.standard_normal((3, 4)).astype(np.float32)),
            _init("lo", np.float32(0.2)),
            _init("hi", np.float32(0.7)),
            _init("shape", np.array([2, 12], np.int64)),
        ],
    )
    reduce = _model(
        [
            helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1),
            helper.make_node("Sub", ["x", "m"], ["d"]),
            helper.make_node("Mul", ["d", "d"], ["q"]),
            helper.make_node("ReduceSum", ["q", "axes"], ["s"], keepdims=0),
            helper.make_node("Concat", ["s", "s"], ["y"], axis=0),
        ],
        [_vi("x", [3, 5])],
        [_vi("y", [6])],
        [_init("axes", np.array([1], np.int64))],
        opset=13,
    )
    matmul = _model(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Gemm", ["m", "w2", "b"], ["g"], transB=1, alpha=0.5),
            helper.make_node("Tanh", ["g"], ["y"]),
        ],
        [_vi("x", [2, 6])],
        [_vi("y", [2, 3])],
        [
            _init("w", rng.standard_normal((6, 5)).astype(np.float32)),
            _init("w2", rng.standard_normal((3, 5)).astype(np.float32)),
            _init("b", rng.standard_normal(3).astype(np.float32)),
        ],
    )
    gather = _model(
        [
            helper.make_node("Gather", ["table", "x"], ["e"], axis=0),
            helper.make_node("Slice", ["e", "starts", "ends", "axes"], ["s"]),
            helper.make_node("Unsqueeze", ["s", "uaxes"], ["y"]),
        ],
        [_vi("x", [2, 3], TensorProto.INT64)],
        [_vi("y", [1, 2, 3, 2])],
        [
            _init("table", rng.standard_normal((7, 4)).astype(np.float32)),
            _init("starts", np.array([1], np.int64)),
            _init("ends", np.array([3], np.int64)),
            _init("axes", np.array([2], np.int64)),
            _init("uaxes", np.array([0], np.int64)),
        ],
    )
    return [
        conv,
        chain,
        reduce,
        matmul,
        gather,
        onnx_models.mlp(sizes=(8, 6, 4)),
        onnx_models.resnet_like(image=8, width=4, stages=(1,)),
        onnx_models.transformer_encoder(layers=1, seq=4, hidden=8, heads=2, ffn=16),
        onnx_models.lstm_model(seq=3, input_size=4, hidden=5, num_classes=3),
    ]


# -- mutations ----------------------------------------------------------------------------------


def _mutate_attribute(model: onnx.ModelProto, rng: random.Random) -> str:
    nodes = [n for n in model.graph.node if n.attribute]
    if not nodes:
        return _mutate_node(model, rng)
    node = rng.choice(nodes)
    attr = rng.choice(node.attribute)
    what = rng.randrange(4)
    if what == 0:
        node.attribute.remove(attr)
        return f"drop attribute {node.op_type}.{attr.name}"
    if what == 1:
        node.attribute.append(helper.make_attribute(rng.choice(("bogus", attr.name)), 1))
        return f"add attribute to {node.op_type}"
    if attr.type == onnx.AttributeProto.INT:
        attr.i = rng.choice(INTS)
    elif attr.type == onnx.AttributeProto.INTS and attr.ints:
        k = rng.randrange(len(attr.ints))
        if rng.random() < 0.3:
            del attr.ints[k]
        else:
            attr.ints[k] = rng.choice(INTS)
    elif attr.type == onnx.AttributeProto.FLOAT:
        attr.f = rng.choice((0.0, -1.0, 1e30, float("nan"), 2.5))
    elif attr.type == onnx.AttributeProto.STRING:
        attr.s = rng.choice((b"", b"NOTSET", b"SAME_UPPER", b"\xff\xfe", b"x" * 100))
    else:
        attr.type = rng.choice((onnx.AttributeProto.INT, onnx.AttributeProto.FLOATS))
    return f"change attribute {node.op_type}.{attr.name}"


def _mutate_shape(model: onnx.ModelProto, rng: random.Random) -> str:
    values = list(model.graph.input) + list(model.graph.output)
    vi = rng.choice(values)
    t = vi.type.tensor_type
    what = rng.randrange(4)
    if what == 0 and t.shape.dim:
        dim = rng.choice(t.shape.dim)
        if rng.random() < 0.2:
            dim.dim_param = "n"
        else:
            dim.dim_value = rng.choice((0, 1, 2, 3, 5, 9))
    elif what == 1:
        t.elem_type = rng.choice(DTYPES)
    elif what == 2 and t.shape.dim:
        del t.shape.dim[rng.randrange(len(t.shape.dim))]
    else:
        t.shape.dim.add().dim_value = rng.choice((1, 2))
    return f"change the type of {vi.name}"


def _mutate_node(model: onnx.ModelProto, rng: random.Random) -> str:
    graph = model.graph
    if not graph.node:
        return "nothing"
    node = rng.choice(graph.node)
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    names += [o for n in graph.node for o in n.output]
    what = rng.randrange(6)
    if what == 0 and node.input:
        del node.input[rng.randrange(len(node.input))]
    elif what == 1:
        node.input.append(rng.choice(names))
    elif what == 2 and node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(names + ["missing", ""])
    elif what == 3:
        node.op_type = rng.choice(ELEMENTWISE + BINARY + ("Conv", "Reshape", "NoSuchOp"))
    elif what == 4:
        graph.node.remove(node)
    else:
        node.output[0] = rng.choice(names + ["dangling"])
    return f"change node {node.op_type}"


def _mutate_initializer(model: onnx.ModelProto, rng: random.Random) -> str:
    inits = list(model.graph.initializer)
    if not inits:
        return _mutate_shape(model, rng)
    t = rng.choice(inits)
    what = rng.randrange(5)
    if what == 0 and t.dims:
        t.dims[rng.randrange(len(t.dims))] = rng.choice((0, 1, 2, 5, 1 << 33))
    elif what == 1:
        t.data_type = rng.choice(DTYPES)
    elif what == 2 and t.raw_data:
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]
    elif what == 3:
        try:
            array = numpy_helper.to_array(t).copy()
        except Exception:  # an earlier mutation made it unreadable
            return f"keep initializer {t.name}"
        if array.size and array.dtype.kind == "f":
            # finite values only: with NaN, runtimes legitimately differ (NaN * 0 on a skipped
            # product: onnxruntime leaves out the recurrent GEMM at the first LSTM step)
            array.flat[rng.randrange(array.size)] = rng.choice((0.0, -7.5, 3.0))
        elif array.size:
            array.flat[rng.randrange(array.size)] = rng.choice((-1, 0, 99, -(1 << 40)))
        t.CopyFrom(numpy_helper.from_array(array, t.name))
    else:
        t.dims.append(1)
    return f"change initializer {t.name}"


def _mutate_opset(model: onnx.ModelProto, rng: random.Random) -> str:
    if rng.random() < 0.2 or not model.opset_import:
        del model.opset_import[:]
        return "drop the opset import"
    model.opset_import[0].version = rng.choice(OPSETS)
    return f"opset {model.opset_import[0].version}"


MUTATIONS = (_mutate_attribute, _mutate_shape, _mutate_node, _mutate_initializer, _mutate_opset)


def mutate(model: onnx.ModelProto, rng: random.Random) -> tuple[bytes, list[str]]:
    """A mutated copy, serialized, and what was done to it."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    done = [rng.choice(MUTATIONS)(model, rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    blob = model.SerializeToString()
    if rng.random() < 0.1:  # a few raw byte flips on top
        data = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        blob = bytes(data)
        done.append("flip bytes")
    return blob, done


# -- one case (runs in the worker) --------------------------------------------------------------


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray] | None:
    """Random inputs for the declared graph inputs, or None where they are not concrete."""
    rng = np.random.default_rng(seed)
    initialized = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in initialized:
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
        if any(d < 0 for d in shape) or np.prod(shape, dtype=np.int64) > 1 << 20:
            return None
        try:
            dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        except (KeyError, ValueError):
            return None
        if dtype.kind == "f":
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            feeds[vi.name] = rng.integers(0, 3, shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[vi.name] = rng.random(shape) < 0.5
        else:
            return None
    return feeds


def _onnxruntime(blob: bytes, feeds) -> tuple[str, object]:
    """("ok", outputs) | ("refused", reason) | ("no kernel", reason)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    # the plain kernels: onnxruntime's own fusions are not always right (with LayerNormalization
    # over two axes after an Add, its SkipLayerNormalization fusion normalizes over one)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
        if feeds is None:
            return "refused", "inputs are not concrete"
        return "ok", session.run(None, feeds)
    except Exception as err:  # onnxruntime's own exception types
        text = " ".join(str(err).split())[:300]
        return ("no kernel" if "NOT_IMPLEMENTED" in text else "refused"), text


def _ours(blob: bytes, feeds) -> tuple[str, object]:
    """("ok", outputs) | ("refused", UserError text); any other exception propagates."""
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime
    from nnvm.support.errors import UserError

    try:
        module, params = from_onnx(blob)
        graph, lib, p = build(module, params=params)
        m = graph_runtime.create(graph, lib, nnvm.cpu(0))
        m.set_input(**p)
        if feeds is None:
            return "refused", "inputs are not concrete"
        m.run(**feeds)
        return "ok", [m.get_output(i) for i in range(m.get_num_outputs())]
    except UserError as err:
        return "refused", err.format()[:300]


def _agree(got, want, rtol=1e-3, atol=1e-4) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} outputs, onnxruntime has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        w = np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i}: {g.dtype}{list(g.shape)}, onnxruntime {w.dtype}{list(w.shape)}"
        if w.dtype.kind in "fc":
            if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
                worst = np.nanmax(np.abs(g.astype(np.float64) - w)) if g.size else 0
                return f"output {i} differs (max abs error {worst:.3g})"
        elif not np.array_equal(g, w):
            return f"output {i} differs"
    return None


def _reference(blob: bytes, feeds):
    from nnvm.frontend import from_onnx
    from nnvm.reference import run_reference

    module, params = from_onnx(blob)
    return list(run_reference(module, params, feeds))


def check_case(blob: bytes) -> tuple[str, str | None]:
    """(verdict, detail) for one serialized model; see the module docstring."""
    try:
        model = onnx.ModelProto.FromString(blob)
    except Exception:  # not even a protobuf: both sides must refuse it
        model = None
    feeds = _feeds(model, 0) if model is not None else None
    ort_state, ort_out = _onnxruntime(blob, feeds)
    try:
        state, out = _ours(blob, feeds)
    except Exception as err:
        return (
            "problem",
            f"internal error: {type(err).__name__}: {' '.join(str(err).split())[:300]}",
        )
    if state == "refused":
        return ("we refuse", str(out)) if ort_state == "ok" else ("both refuse", None)
    if ort_state == "ok":
        bad = _agree(out, ort_out)
        return ("problem", f"mismatch: {bad}") if bad else ("match", None)
    if ort_state == "no kernel":
        try:
            bad = _agree(out, _reference(blob, feeds))
        except Exception as err:
            return "problem", f"reference failed on what we ran: {type(err).__name__}: {err}"
        return ("problem", f"reference mismatch: {bad}") if bad else ("oracle match", None)
    return "problem", f"onnxruntime refuses it but we run it: {ort_out}"


@dataclass
class Report:
    verdicts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    """Cases onnxruntime runs and we refuse, with our reason."""


def _verdict_check(blob: bytes) -> str:
    """The isolated runner's form of check_case (it always answers; the verdict is in front)."""
    verdict, detail = check_case(blob)
    return f"{verdict}\t{detail or ''}"


def one_case(case_seed: int, seeds: list[onnx.ModelProto] | None = None) -> tuple[bytes, list[str]]:
    """The mutated model a case seed stands for (a finding's reproducer)."""
    local = random.Random(case_seed)
    return mutate(local.choice(seeds or seed_models()), local)


def cases(count: int, seed: int) -> list[tuple[int, bytes, list[str]]]:
    rng = random.Random(seed)
    seeds = seed_models()
    return [(s, *one_case(s, seeds)) for s in (rng.randrange(1 << 30) for _ in range(count))]


def fuzz(count: int, seed: int = 0, timeout: float = 60.0) -> Report:
    from nnvm.testing.isolated import run_isolated

    todo = cases(count, seed)
    report = Report()
    for o in run_isolated(
        "nnvm.testing.fuzz_onnx:_verdict_check", (b for _, b, _ in todo), timeout
    ):
        case_seed, _, done = todo[o.index]
        verdict, _, detail = (o.problem or "problem\tno answer").partition("\t")
        if verdict not in ("match", "both refuse", "we refuse", "oracle match"):
            verdict, detail = "problem", o.problem or ""
        report.verdicts[verdict] += 1
        where = f"case {case_seed} ({'; '.join(done)}; rebuild: fuzz_onnx.one_case({case_seed}))"
        if verdict == "problem":
            report.problems.append(f"{where}: {detail}")
        elif verdict == "we refuse":
            report.refusals.append(f"{where}: {detail}")
    return report
