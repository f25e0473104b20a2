"""The Python runtime API a user meets after build(): saving and reloading a model from paths
(load_module, load_param_dict, create from a graph.json path, graph_runtime.load of a folder),
input and output metadata, and the debug runtime's profile table and Chrome trace."""

from __future__ import annotations

import collections
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest

import nnvm
from nnvm.compiler import build, load_param_dict, save_param_dict
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime, load_module
from nnvm.runtime import profile_report as profile_report_module
from nnvm.runtime.profile_report import ProfileReport
from nnvm.support.errors import UserError
from nnvm.testing import onnx_models

TRACE_KEYS = {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """A two-layer MLP (parallel matmul kernels of ~1 ms), built once into a private cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
    try:
        model = onnx_models.mlp(batch=128, sizes=(512, 512, 10), seed=1)
        module, params = from_onnx(model)
        graph, lib, params = build(module, target="llvm", params=params, opt_level=3)
    finally:
        mp.undo()
    inputs = onnx_models.random_inputs(model, seed=2)
    return model, graph, lib, params, inputs


@pytest.fixture(scope="module")
def saved(compiled, tmp_path_factory):
    """The three files of a deployment, as README's round trip writes them."""
    _, graph, lib, params, _ = compiled
    out = tmp_path_factory.mktemp("saved")
    lib.export_library(out / "model.so")
    (out / "model.params").write_bytes(save_param_dict(params, graph.model_hash))
    (out / "graph.json").write_text(graph.to_json())
    return out


@pytest.fixture
def threads():
    before = nnvm.get_num_threads()
    yield nnvm.set_num_threads
    nnvm.set_num_threads(before)


def _outputs(m, inputs):
    m.run(**inputs)
    return [m.get_output(k) for k in range(m.get_num_outputs())]


def _original(compiled):
    _, graph, lib, params, inputs = compiled
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    return _outputs(m, inputs)


def test_reloading_from_paths_gives_identical_outputs(compiled, saved):
    _, graph, _, params, inputs = compiled
    want = _original(compiled)

    lib = load_module(saved / "model.so")
    loaded = load_param_dict(saved / "model.params")
    assert loaded.keys() == params.keys()
    assert all(np.array_equal(loaded[k], params[k]) for k in params)
    assert load_param_dict(str(saved / "model.params")).keys() == params.keys()
    assert load_param_dict((saved / "model.params").read_bytes()).keys() == params.keys()

    m = graph_runtime.create(str(saved / "graph.json"), lib)
    m.set_input(**loaded)
    for got, expected in zip(_outputs(m, inputs), want, strict=True):
        np.testing.assert_array_equal(got, expected)

    # paths for everything, params set from their file by the module
    m = graph_runtime.create(saved / "graph.json", saved / "model.so")
    m.load_params(saved / "model.params")
    for got, expected in zip(_outputs(m, inputs), want, strict=True):
        np.testing.assert_array_equal(got, expected)

    # one call for the folder
    m = graph_runtime.load(saved)
    assert m.graph.model_hash == graph.model_hash
    for got, expected in zip(_outputs(m, inputs), want, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert isinstance(graph_runtime.load(str(saved), debug=True), graph_runtime.DebugGraphModule)


def test_create_takes_a_graph_its_json_or_a_path(compiled, saved):
    _, graph, lib, params, inputs = compiled
    want = _original(compiled)
    text = graph.to_json()
    for form in (graph, text, "\n " + text, text.encode(), saved / "graph.json"):
        m = graph_runtime.create(form, lib)
        m.set_input(**params)
        np.testing.assert_array_equal(_outputs(m, inputs)[0], want[0])


def test_bad_paths_are_clear_errors(compiled, saved, tmp_path):
    _, _, lib, _, _ = compiled
    with pytest.raises(UserError, match="neither the path of an existing file nor graph JSON"):
        graph_runtime.create("out/graph.jsn", lib)
    with pytest.raises(UserError, match="neither the path of an existing file nor graph JSON"):
        graph_runtime.create(tmp_path / "missing.json", lib)
    with pytest.raises(UserError, match="is a folder"):
        graph_runtime.create(saved, lib)
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(UserError, match="bad.json: graph JSON is malformed"):
        graph_runtime.create(tmp_path / "bad.json", lib)
    with pytest.raises(UserError, match="not a int"):
        graph_runtime.create(3, lib)

    with pytest.raises(UserError, match="no such library"):
        load_module(tmp_path / "missing.so")
    with pytest.raises(UserError, match="cannot load .* as a model library"):
        load_module(saved / "graph.json")
    with pytest.raises(UserError, match="is a folder"):
        load_module(saved)

    with pytest.raises(UserError, match="cannot read params file") as err:
        load_param_dict(tmp_path / "missing.params")
    assert "missing.params" in err.value.format()
    with pytest.raises(UserError, match="malformed params file") as err:
        load_param_dict(saved / "graph.json")
    assert "graph.json" in err.value.format()
    with pytest.raises(UserError, match="path or bytes, not a list"):
        load_param_dict([1, 2])
    m = graph_runtime.create(saved / "graph.json", lib)
    with pytest.raises(UserError, match="malformed params file") as err:
        m.load_params(saved / "graph.json")
    assert "graph.json" in err.value.format()

    with pytest.raises(UserError, match="no such folder"):
        graph_runtime.load(tmp_path / "nowhere")
    with pytest.raises(UserError, match="holds no graph.json"):
        graph_runtime.load(tmp_path)


def test_input_and_output_info_match_the_model(compiled):
    model, graph, lib, params, inputs = compiled
    m = graph_runtime.create(graph, lib)
    initializers = {i.name for i in model.graph.initializer}
    onnx_inputs = [i for i in model.graph.input if i.name not in initializers]
    assert m.get_num_inputs() == len(onnx_inputs) == 1
    info = m.get_input_info()
    assert [i.name for i in info] == [i.name for i in onnx_inputs] == ["input"]
    for spec, value in zip(info, onnx_inputs, strict=True):
        dims = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        assert spec.shape == dims == (128, 512)
        assert spec.dtype == np.dtype(dtype).name == "float32"
        assert spec.nbytes == 128 * 512 * 4
        assert inputs[spec.name].shape == spec.shape
    assert not {i.name for i in info} & set(params)  # params are not inputs

    outputs = m.get_output_info()
    assert m.get_num_outputs() == len(outputs) == len(model.graph.output)
    m.set_input(**params)
    m.run(**inputs)
    for k, spec in enumerate(outputs):
        assert spec.index == k
        assert spec.shape == m.get_output(k).shape == (128, 10)
        assert spec.dtype == m.get_output(k).dtype.name


def test_profile_returns_a_table_with_rows(compiled):
    _, graph, lib, params, inputs = compiled
    m = graph_runtime.create(graph, lib, debug=True)
    m.set_input(**params)
    m.run(**inputs)
    report = m.profile(number=2)
    assert isinstance(report, ProfileReport) and report.runs == 2 and report.trace is None
    lines = str(report).splitlines()
    assert repr(report) == str(report)
    assert lines[0].split() == ["kernel", "ms", "%"]
    assert len(lines) == len(graph.nodes) + 2 and lines[-1].split()[0] == "total"
    assert float(lines[-1].split()[1]) == pytest.approx(report.total_ms, abs=1e-3)
    shown = [float(line.split()[1]) for line in lines[1:-1]]
    assert shown == sorted(shown, reverse=True)  # the slowest kernel first

    rows = report.to_dicts()
    assert [r["kernel"] for r in rows] == [n.kernel for n in graph.nodes]  # graph order
    assert [r["index"] for r in rows] == list(range(len(graph.nodes)))
    assert report.total_ms == pytest.approx(sum(r["ms"] for r in rows))
    assert sum(r["percent"] for r in rows) == pytest.approx(100.0)
    assert all(r["ms"] > 0 for r in rows)
    assert rows[0]["ops"] == ["matmul", "bias_add", "relu"] and rows[1]["ops"] == [
        "matmul",
        "bias_add",
    ]
    first = graph.nodes[0]
    assert rows[0]["input_shapes"] == [i.shape for i in first.input_info]
    assert rows[0]["output_shapes"] == [[128, 512]]
    assert rows[0]["bytes"] == sum(i.nbytes for i in [*first.input_info, *first.output_info])
    assert json.loads(json.dumps(rows)) == rows
    with pytest.raises(UserError, match="at least 1"):
        m.profile(number=0)


def _trace(m, path: Path) -> tuple[dict, list[dict]]:
    report = m.profile(number=1, trace=path)
    assert report.trace == path
    data = json.loads(path.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    for e in spans:
        assert TRACE_KEYS <= e.keys(), e
        assert e["dur"] >= 0 and e["ts"] >= 0
    return data, spans


def _check_trace(graph, data, spans, threads: int) -> dict[int, int]:
    """Kernel spans match the graph; loop spans lie inside their kernel's span; no two spans of
    one track overlap. Returns the chunks each kernel's loops claimed (all threads together)."""
    kernels = [e for e in spans if e["cat"] == "kernel"]
    assert len(kernels) == len(graph.nodes)
    assert [e["name"] for e in kernels] == [n.kernel for n in graph.nodes]
    assert {e["tid"] for e in kernels} == {0}
    for e, node in zip(kernels, graph.nodes, strict=True):
        assert e["args"]["input_shapes"] == [i.shape for i in node.input_info]
        assert e["args"]["ops"][0] == "matmul" and e["args"]["bytes"] > 0
    by_track = collections.defaultdict(list)
    for e in spans:
        by_track[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for track in by_track.values():
        track.sort()
        for (_, end), (start, _) in zip(track, track[1:], strict=False):
            assert end <= start + 1e-6
    chunks: dict[int, int] = collections.Counter()
    for loop in (e for e in spans if e["cat"] == "parallel-loop"):
        kernel = kernels[loop["args"]["kernel_index"]]
        assert loop["name"] == kernel["name"]
        assert kernel["ts"] - 1e-6 <= loop["ts"]
        assert loop["ts"] + loop["dur"] <= kernel["ts"] + kernel["dur"] + 1e-6
        assert 1 <= loop["tid"] <= threads
        chunks[loop["args"]["kernel_index"]] += loop["args"]["chunks"]
    assert data["otherData"]["pool_threads_traced"] is True
    assert data["otherData"]["threads"] == threads
    named = {e["tid"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert named == set(by_track)
    return chunks


def test_profile_writes_a_chrome_trace_with_pool_threads(compiled, tmp_path, threads):
    _, graph, lib, params, inputs = compiled
    m = graph_runtime.create(graph, lib, debug=True)
    m.set_input(**params)
    m.run(**inputs)

    threads(1)
    data, spans = _trace(m, tmp_path / "t1.json")
    one = _check_trace(graph, data, spans, 1)
    assert {e["tid"] for e in spans if e["cat"] == "parallel-loop"} == {1}  # the caller alone
    assert len(one) == len(graph.nodes) and all(c > 0 for c in one.values())

    assert _check_trace(graph, *_trace(m, tmp_path / "t1b.json"), 1) == one  # none lost

    threads(2)
    seen_worker = False
    first = None
    for attempt in range(20):  # a worker joins a loop unless its core is busy the whole time
        path = tmp_path / "trace" / f"t2-{attempt}.json"
        data, spans = _trace(m, path)
        two = _check_trace(graph, data, spans, 2)
        first = first or two
        assert two == first  # the same chunks, however shared out: every one recorded
        if any(e["tid"] == 2 for e in spans):
            seen_worker = True
            break
    assert seen_worker, "no pool worker span in 20 traced runs on 2 threads"
    written = sorted(p.name for p in path.parent.iterdir())  # atomically: no temporary left
    assert written == sorted(f"t2-{k}.json" for k in range(attempt + 1))


def test_trace_of_a_library_without_pool_tracing(compiled, tmp_path, monkeypatch):
    _, graph, lib, params, inputs = compiled
    m = graph_runtime.create(graph, lib, debug=True)
    m.set_input(**params)
    m.run(**inputs)
    monkeypatch.setattr(profile_report_module.PoolTracer, "of", staticmethod(lambda lib: None))
    data, spans = _trace(m, tmp_path / "t.json")
    assert data["otherData"]["pool_threads_traced"] is False
    assert [e["cat"] for e in spans] == ["kernel"] * len(graph.nodes)


def test_profile_counts_the_thread_pools_stalls(compiled):
    """A model library exports its pool's stall count (waits on a worker another process
    descheduled); profile() reports the stalls during its runs, and its table names them."""
    _, graph, lib, params, inputs = compiled
    assert isinstance(lib.pool_stalls(), int)
    m = graph_runtime.create(graph, lib, debug=True)
    m.set_input(**params)
    m.run(**inputs)
    report = m.profile(2)
    assert report.stalls is not None and report.stalls >= 0
    assert "descheduled" in str(ProfileReport(report.rows, 2, stalls=2))
    assert "descheduled" not in str(ProfileReport(report.rows, 2, stalls=0))


def test_a_library_rebuilt_at_the_same_path_loads_as_the_new_one(tmp_path):
    """export_library twice to one path, loading after each: the second load_module is the
    second build (the dynamic loader alone would hand back the first), and runs as it does."""
    path = tmp_path / "m.so"
    for seed, hidden in ((1, 8), (2, 12)):
        model = onnx_models.mlp(batch=2, sizes=(16, hidden, 4), seed=seed)
        module, params = from_onnx(model)
        graph, lib, params = build(module, target="llvm", params=params)
        lib.export_library(path)
        loaded = load_module(path)
        assert loaded.model_hash == lib.model_hash
        inputs = onnx_models.random_inputs(model, seed=3)
        m = graph_runtime.create(graph, loaded)
        m.set_input(**params)
        m.run(**inputs)
        expected = graph_runtime.create(graph, lib)
        expected.set_input(**params)
        expected.run(**inputs)
        np.testing.assert_array_equal(m.get_output(0), expected.get_output(0))
    assert load_module(path).model_hash == lib.model_hash  # loaded again unchanged: the same
    # the copy the second build was loaded through is gone: a loaded library needs no file
    left = [
        f
        for f in os.listdir(tempfile.gettempdir())
        if f.startswith(f"nnvm-reloaded-{os.getpid()}-")
    ]
    assert left == []
