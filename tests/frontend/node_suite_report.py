#!/usr/bin/env python
"""Per-op pass counts of the ONNX node tests through from_onnx + the reference executor (or,
with --compiled, through nnvm.compiler.build and the graph runtime), counted over the tests
onnxruntime itself passes (the issue's yardstick).

    python tests/frontend/node_suite_report.py              # the issue's ops, table
    python tests/frontend/node_suite_report.py -v           # plus each failure's reason
    python tests/frontend/node_suite_report.py --ops Conv,Relu --json out.json
    python tests/frontend/node_suite_report.py --compiled   # the whole compiler, machine code
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings
from typing import Any

import numpy as np


def _compare(got: Any, want: Any, rtol: float, atol: float) -> None:
    want = np.asarray(want)
    got = np.asarray(got)
    if got.shape != want.shape:
        raise AssertionError(f"shape {got.shape} != {want.shape}")
    if got.dtype != want.dtype:
        raise AssertionError(f"dtype {got.dtype} != {want.dtype}")
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, want)


def _array(value: Any) -> Any:
    """Test data may hold TensorProtos; copies, since a runtime may write into its inputs."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.array(value, copy=True) if isinstance(value, np.ndarray | np.generic) else value


def _run_case(run: Any, case: Any, rtol: float, atol: float) -> str | None:
    """None when the case passes, else a one-line reason."""
    try:
        rep = run(case.model)
        for inputs, expected in case.data_sets:
            outputs = [_array(v) for v in expected]
            got = rep.run([_array(v) for v in inputs])
            if len(got) != len(outputs):
                return f"{len(got)} outputs, expected {len(outputs)}"
            for g, w in zip(got, outputs, strict=True):
                _compare(g, w, rtol, atol)
    except AssertionError as err:
        return "mismatch: " + " ".join(str(err).split())[:200]
    except Exception as err:  # noqa: BLE001 - report, keep going
        return f"{type(err).__name__}: " + " ".join(str(err).split())[:300]
    return None


class _OrtRep:
    def __init__(self, model: Any):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 4
        self.sess = ort.InferenceSession(
            model.SerializeToString(), so, providers=["CPUExecutionProvider"]
        )

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        names = [i.name for i in self.sess.get_inputs()]
        return self.sess.run(None, dict(zip(names, inputs, strict=False)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--ops",
        help="comma-separated ONNX op types, or 'all' for every node test (default: the issue's list)",
    )
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("-k", help="only tests whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--json", help="write per-test results here")
    parser.add_argument("--compiled", action="store_true", help="build and run machine code")
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore")
    from onnx.backend.test.loader import load_model_tests

    from nnvm.frontend.onnx_backend import NNVMBackend, NNVMCompiledBackend
    from nnvm.testing.onnx_suite import ISSUE_OPS, node_test_ops

    op_of = node_test_ops()
    if args.ops == "all":
        ops = sorted({op or "(no single op)" for op in op_of.values()})
        op_of = {name: op or "(no single op)" for name, op in op_of.items()}
    else:
        ops = args.ops.split(",") if args.ops else list(ISSUE_OPS)
    cases = [
        c for c in load_model_tests(kind="node")
        if op_of.get(c.name) in ops and (not args.k or args.k in c.name)
    ]  # fmt: skip
    per_op: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    results: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for case in cases:
        op = op_of[case.name]
        ort_reason = _run_case(_OrtRep, case, args.rtol, args.atol)
        t0 = time.perf_counter()
        backend = NNVMCompiledBackend if args.compiled else NNVMBackend
        ours = _run_case(backend.prepare, case, args.rtol, args.atol)
        elapsed = time.perf_counter() - t0
        results[case.name] = {"op": op, "ort": ort_reason, "nnvm": ours, "seconds": elapsed}
        counts = per_op[op]
        counts[2] += 1
        if ort_reason is None:
            counts[1] += 1
            counts[0] += ours is None
        if args.verbose and ours is not None:
            flag = "" if ort_reason is None else "  [ort fails too]"
            print(f"FAIL {case.name}{flag}: {ours}", file=sys.stderr)

    print(f"{'op':<24}{'pass/ort-pass':>14}{'all tests':>11}")
    total = [0, 0, 0]
    for op in ops:
        p, t, a = per_op.get(op, [0, 0, 0])
        total = [total[0] + p, total[1] + t, total[2] + a]
        mark = "" if p == t else "  <"
        print(f"{op:<24}{f'{p}/{t}':>14}{a:>11}{mark}")
    pct = 100.0 * total[0] / max(total[1], 1)
    print(f"{'TOTAL':<24}{f'{total[0]}/{total[1]}':>14}{total[2]:>11}   {pct:.1f}%")
    elapsed = time.perf_counter() - started
    print(f"({len(cases)} tests in {elapsed:.1f} s, rtol={args.rtol} atol={args.atol})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
