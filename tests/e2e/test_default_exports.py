"""Models as a new user exports them: torch's dynamo exporter with default arguments, random
weights, small configurations of three architectures whose exports need the wider ONNX
coverage (a BERT encoder without token_type_ids, a shifted-window transformer with its
ScatterND attention masks, a LLaMA-style decoder with RMSNorm, rotary embeddings and
grouped-query attention). Each imports, compiles and matches onnxruntime. Needs the `bench`
extra (torch, torchvision, transformers); full tier."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nnvm
import nnvm.compiler
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime

pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch", reason="default exports need torch (the bench extra)")
pytest.importorskip("onnxscript", reason="torch's dynamo exporter needs onnxscript")


class _Hidden(torch.nn.Module):
    """A transformers model called as most users call it: token ids and a mask, nothing else."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]


def _tokens(batch: int, seq: int, vocab: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    mask = np.ones((batch, seq), np.int64)
    mask[-1, seq - 3 :] = 0
    return {"input_ids": rng.integers(0, vocab, (batch, seq)), "attention_mask": mask}


def _bert():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=64,
    )  # fmt: skip
    return _Hidden(transformers.BertModel(config)), _tokens(2, 12, 500)


def _llama():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=500, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False,
    )  # fmt: skip
    return _Hidden(transformers.LlamaModel(config)), _tokens(1, 11, 500)


def _swin():
    models = pytest.importorskip("torchvision.models.swin_transformer")
    model = models.SwinTransformer(
        patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
        num_classes=10,
    )  # fmt: skip
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return model, {"x": x}


def _export(build, path: Path) -> dict[str, np.ndarray]:
    torch.manual_seed(0)
    model, inputs = build()
    model.eval()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    with torch.no_grad():
        program = torch.onnx.export(
            model, args, input_names=list(inputs), output_names=["y"], dynamo=True,
            verbose=False,
        )  # fmt: skip
    program.save(str(path))
    return inputs


@pytest.mark.parametrize(
    ("build", "needs"),
    [(_bert, "GatherElements"), (_swin, "ScatterND"), (_llama, "GatherND")],
    ids=["bert", "swin", "llama"],
)
def test_default_export_matches_onnxruntime(build, needs: str, tmp_path: Path) -> None:
    import onnx
    import onnxruntime as ort

    path = tmp_path / "model.onnx"
    inputs = _export(build, path)
    # the export uses the op this model is here for (else the test would prove nothing new)
    assert needs in {n.op_type for n in onnx.load(str(path)).graph.node}
    module, params = from_onnx(str(path), shape={k: v.shape for k, v in inputs.items()})
    graph, lib, params = nnvm.compiler.build(module, target="llvm", params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**inputs)
    got = m.get_output(0)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * float(np.abs(want).max()))
