"""The seed's remote snippet over loopback: a model exported, uploaded, loaded and run remotely
gives the local run's outputs; files, arrays and time_evaluator work through the session."""

from __future__ import annotations

import numpy as np
import pytest

from nnvm import rpc
from nnvm.compiler import save_param_dict
from nnvm.runtime import graph_runtime


def _local(model):
    graph, lib, params, inputs, _ = model
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    m.run(**inputs)
    return [m.get_output(k) for k in range(m.get_num_outputs())]


def test_seed_snippet_matches_the_local_run(server, model):
    graph, _lib, params, inputs, path = model
    remote = rpc.connect("127.0.0.1", server.port)
    remote.upload(path)
    rlib = remote.load_module("mylib.so")
    m = graph_runtime.create(graph, rlib, remote.cpu(0))
    m.set_input(**params)
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    expected = _local(model)
    for k, want in enumerate(expected):
        np.testing.assert_array_equal(m.get_output(k), want)
    timing = m.time_evaluator(number=3, repeat=2, min_repeat_ms=5)()
    assert len(timing.results) == 2 and all(t > 0 for t in timing.results)
    assert timing.number >= 3
    remote.close()


def test_files_arrays_and_params_by_upload(server, model, tmp_path):
    graph, _lib, params, inputs, path = model
    with rpc.connect("127.0.0.1", server.port) as remote:
        remote.upload(path, target_name="other.so")
        pfile = tmp_path / "model.params"
        pfile.write_bytes(save_param_dict(params, graph.model_hash))
        remote.upload(pfile)
        assert sorted(remote.listdir()) == ["model.params", "other.so"]
        assert remote.download("model.params") == pfile.read_bytes()
        m = graph_runtime.create(graph, remote.load_module("other.so"), remote.cpu(0))
        m.load_params("model.params")
        arrays = {k: remote.array(v) for k, v in inputs.items()}
        for k, a in arrays.items():
            np.testing.assert_array_equal(a.numpy(), inputs[k])
            m.set_input(k, a)
        m.run()
        np.testing.assert_array_equal(m.get_output(0), _local(model)[0])
        remote.remove("other.so")
        assert remote.listdir() == ["model.params"]
        with pytest.raises(rpc.RPCRemoteError, match="no file"):
            remote.remove("other.so")


def test_model_errors_come_back_as_remote_errors(server, model):
    graph, _lib, params, inputs, path = model
    with rpc.connect("127.0.0.1", server.port) as remote:
        remote.upload(path)
        m = graph_runtime.create(graph, remote.load_module("mylib.so"), remote.cpu(0))
        with pytest.raises(rpc.RPCRemoteError, match="params not set"):
            m.run(**inputs)
        name = next(iter(inputs))
        with pytest.raises(rpc.RPCRemoteError, match="must have shape"):
            m.set_input(name, np.zeros((1, 1), np.float32))
        with pytest.raises(rpc.RPCRemoteError, match="no cuda device"):
            remote.cuda(0)
        with pytest.raises(rpc.RPCRemoteError, match="remote session"):
            graph_runtime.create(graph, remote.load_module("mylib.so"), graph_runtime.cpu(0))
        with pytest.raises(rpc.RPCRemoteError, match="not an nnvm model library|cannot load"):
            (path.parent / "junk.so").write_bytes(b"not an elf")
            remote.upload(path.parent / "junk.so")
            remote.load_module("junk.so")
        # the session is still usable after each refusal
        m.set_input(**params)
        m.run(**inputs)
        np.testing.assert_array_equal(m.get_output(0), _local(model)[0])


def test_a_name_uploaded_again_loads_the_new_library(server, model, tmp_path):
    """One session uploads two different models under one name, loading each: the second load
    is the second model, not the library the server's loader already holds for that path (as a
    tuner's runner uploading candidate after candidate does)."""
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.testing import onnx_models

    graph, lib, _params, _inputs, path = model
    other_model = onnx_models.mlp(batch=4, sizes=(64, 16, 10), seed=5)
    module, other_params = from_onnx(other_model)
    other_graph, other_lib, other_params = build(module, params=other_params)
    other_path = tmp_path / "other.so"
    other_lib.export_library(other_path)
    with rpc.connect("127.0.0.1", server.port) as remote:
        for g, built, p in ((graph, lib, path), (other_graph, other_lib, other_path)):
            remote.upload(p, target_name="same.so")
            rlib = remote.load_module("same.so")
            assert rlib.model_hash == built.model_hash
            graph_runtime.create(g, rlib, remote.cpu(0))  # the graph and library agree
            remote.remove("same.so")
