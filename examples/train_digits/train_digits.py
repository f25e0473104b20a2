"""Train a small CNN on scikit-learn's bundled digits (8x8 images, nothing downloaded) with
nnvm.symbol and the compiled train step, then export the trained model for the C runtime.

    pip install -e '.[train]'
    python examples/train_digits/train_digits.py --epochs 8 --out /tmp/digits
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import nnvm.symbol as sym
from nnvm.compiler import build
from nnvm.runtime import graph_runtime
from nnvm.train import Adam, TrainStep, fit

BATCH = 32


def network(batch: int) -> tuple[sym.Symbol, sym.Symbol, sym.Symbol]:
    """(logits, loss, labels) of conv-relu-pool, conv-relu, global pool, dense."""
    x = sym.Variable("x", shape=(batch, 1, 8, 8))
    labels = sym.Variable("labels", shape=(batch,), dtype="int64")
    h = sym.relu(
        sym.bias_add(
            sym.conv2d(x, sym.Variable("c1.w"), padding=[1, 1, 1, 1]), sym.Variable("c1.b")
        )
    )
    h = sym.max_pool2d(h, pool_size=[2, 2], strides=[2, 2])
    h = sym.relu(
        sym.bias_add(
            sym.conv2d(h, sym.Variable("c2.w"), padding=[1, 1, 1, 1]), sym.Variable("c2.b")
        )
    )
    h = sym.flatten(h)
    logits = sym.bias_add(sym.dense(h, sym.Variable("fc.w")), sym.Variable("fc.b"), axis=1)
    return logits, sym.softmax_cross_entropy(logits, labels), labels


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype("float32")

    return {
        "c1.w": he((8, 1, 3, 3), 9),
        "c1.b": np.zeros(8, "float32"),
        "c2.w": he((16, 8, 3, 3), 72),
        "c2.b": np.zeros(16, "float32"),
        "fc.w": he((10, 16 * 4 * 4), 256),
        "fc.b": np.zeros(10, "float32"),
    }


def load_digits(seed: int = 0):
    from sklearn.datasets import load_digits as sk_digits

    data = sk_digits()
    x = (data.images / 16.0).astype("float32")[:, None]
    y = data.target.astype("int64")
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    split = int(0.8 * len(y))
    return (x[:split], y[:split]), (x[split:], y[split:])


def train(epochs: int = 8, seed: int = 0, progress: bool = True) -> dict:
    (xtr, ytr), (xte, yte) = load_digits(seed)
    rng = np.random.default_rng(seed)
    logits, loss, _ = network(BATCH)
    step = TrainStep(loss, init_params(rng), Adam(lr=0.01))

    def batches(epoch: int):
        order = np.random.default_rng(seed + epoch).permutation(len(ytr))
        for i in range(0, len(order) - BATCH + 1, BATCH):
            idx = order[i : i + BATCH]
            yield {"x": xtr[idx], "labels": ytr[idx]}

    t0 = time.perf_counter()
    history = fit(step, batches, epochs=epochs, progress=progress)
    seconds = time.perf_counter() - t0
    # inference: the forward graph alone, at the test set's batch size, trained params folded in
    module, params = logits.to_module(shapes={"x": xte.shape}, params=step.params)
    graph, lib, params = build(module, params=params)
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    m.run(x=xte)
    accuracy = float((m.get_output(0).argmax(axis=1) == yte).mean())
    return {
        "history": history,
        "accuracy": accuracy,
        "seconds_per_epoch": seconds / max(epochs, 1),
        "compile_seconds": step.compile_seconds,
        "inference": (graph, lib, params),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--out", type=Path, default=None, help="export the trained model here")
    args = ap.parse_args()
    result = train(args.epochs)
    print("loss per epoch:", " ".join(f"{v:.4f}" for v in result["history"]))
    print(
        f"test accuracy {result['accuracy']:.4f}; {result['seconds_per_epoch']:.2f} s/epoch; "
        f"train step compiled in {result['compile_seconds']:.1f} s"
    )
    if args.out is not None:
        import nnvm.compiler

        graph, lib, params = result["inference"]
        args.out.mkdir(parents=True, exist_ok=True)
        lib.export_library(str(args.out / "libmodel.so"))
        lib.export_header(str(args.out / "nnvm_runtime.h"))
        (args.out / "graph.json").write_text(graph.to_json())
        (args.out / "model.params").write_bytes(
            nnvm.compiler.save_param_dict(params, graph.model_hash)
        )
        print(
            f"exported to {args.out}: libmodel.so, graph.json, model.params (see docs/deploy-c.md)"
        )


if __name__ == "__main__":
    main()
