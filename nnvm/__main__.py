"""`python -m nnvm`: the main job. Build a built-in model with seeded weights, import it, run the
graph pipeline, execute it, compare with onnxruntime on the same random input, print timing.

Exit code 0 when the outputs agree (rtol 1e-3, atol 1e-4), 1 otherwise."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

MODELS = ("resnet", "mobilenet", "transformer", "lstm", "mlp")


def _median_ms(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), result


def build_model(name: str):
    from nnvm.testing import onnx_models

    builders = {
        "resnet": onnx_models.resnet_like,
        "mobilenet": onnx_models.mobilenet_like,
        "transformer": onnx_models.transformer_encoder,
        "lstm": onnx_models.lstm_model,
        "mlp": onnx_models.mlp,
    }
    return builders[name]()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nnvm", description=__doc__)
    parser.add_argument("--model", choices=MODELS, default="resnet")
    parser.add_argument("--opt-level", type=int, choices=(0, 1, 2, 3), default=3)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (median reported)")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    from xdsl.dialects.builtin import ModuleOp

    from nnvm.frontend import from_onnx
    from nnvm.param_store import attach_params, params_of
    from nnvm.passes.pipelines import pipeline_passes
    from nnvm.pass_statistics import statistics_of
    from nnvm.reference import run_reference
    from nnvm.registry import make_context
    from nnvm.testing.onnx_models import random_inputs

    model = build_model(args.model)
    inputs = random_inputs(model, seed=0)
    shapes = ", ".join(f"{k} {'x'.join(map(str, v.shape))}" for k, v in inputs.items())
    print(f"nnvm main job: {args.model} ({shapes}), opt_level {args.opt_level}")

    start = time.perf_counter()
    module, params = from_onnx(model)
    import_ms = (time.perf_counter() - start) * 1e3
    n_ops = sum(1 for _ in module.walk()) - 1
    print(f"  import ONNX -> nnvm        {import_ms:9.1f} ms   {n_ops} ops, {len(params)} params")

    attach_params(module, params)
    start = time.perf_counter()
    ctx = make_context()
    for p in pipeline_passes(args.opt_level):
        p.apply(ctx, module)
    module.verify()
    pipeline_ms = (time.perf_counter() - start) * 1e3
    stats = statistics_of(module)
    kernels = stats.get("fuse", {}).get("kernels")
    arena = stats.get("plan-memory", {})
    summary = []
    if kernels is not None:
        summary.append(f"{kernels.value} kernels")
    if "planned-bytes" in arena:
        summary.append(
            f"arena {arena['planned-bytes'].value / 1e6:.2f} MB "
            f"(naive {arena['naive-bytes'].value / 1e6:.2f} MB)"
        )
    print(f"  graph pipeline O{args.opt_level}          {pipeline_ms:9.1f} ms   {', '.join(summary)}")

    assert isinstance(module, ModuleOp)
    ours_ms, ours = _median_ms(
        lambda: run_reference(module, params_of(module), inputs), args.repeat
    )
    print(f"  run (reference executor)   {ours_ms:9.1f} ms   median of {args.repeat}")

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ort_ms, expected = _median_ms(lambda: session.run(None, inputs), args.repeat)
    print(f"  onnxruntime                {ort_ms:9.1f} ms   median of {args.repeat}")

    ok = True
    for k, (got, want) in enumerate(zip(ours, expected, strict=True)):  # type: ignore[arg-type]
        err = float(np.max(np.abs(got - want))) if got.size else 0.0
        close = got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-4)
        ok &= close
        print(f"  output {k}: shape {list(got.shape)}, max abs error {err:.2e}: "
              f"{'matches' if close else 'DIFFERS FROM'} onnxruntime")
    print("OK" if ok else "FAILED: outputs differ from onnxruntime (rtol 1e-3, atol 1e-4)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
