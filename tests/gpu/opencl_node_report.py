#!/usr/bin/env python
"""The ONNX node tests of given ops compiled for the CPU alone and with devices=["opencl"]
(every kernel the OpenCL target accepts on the device), counted over the tests onnxruntime
passes: the two pass counts, and each test that passes on one and not the other, with why.

    python tests/gpu/opencl_node_report.py                   # the core ops (CORE_OPS)
    python tests/gpu/opencl_node_report.py --ops Conv,Relu -v
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "frontend"))


def _opencl_rep(model: Any) -> Any:
    from nnvm.compiler import build
    from nnvm.frontend.onnx_backend import NNVMBackendRep
    from nnvm.runtime import graph_runtime

    class OpenCLRep(NNVMBackendRep):
        def _runtime_for(self, module, params):  # noqa: ANN001, ANN202
            runtime = self._runtimes.get(id(module))
            if runtime is None:
                graph, lib, p = build(module, params=params, devices=["opencl"])
                runtime = graph_runtime.create(graph, lib)
                runtime.set_input(**p)
                self._runtimes[id(module)] = runtime
            return runtime

    return OpenCLRep(model, compiled=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ops", help="comma-separated ONNX op types (default: CORE_OPS)")
    parser.add_argument("-k", help="only tests whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from node_suite_report import _OrtRep, _run_case
    from onnx.backend.test.loader import load_model_tests

    from nnvm.frontend.onnx_backend import NNVMCompiledBackend
    from nnvm.testing.backend_suite import TOLERANCE
    from nnvm.testing.onnx_suite import CORE_OPS, node_test_ops

    op_of = node_test_ops()
    ops = set(args.ops.split(",")) if args.ops else set(CORE_OPS)
    cases = [
        c for c in load_model_tests(kind="node")
        if op_of.get(c.name) in ops and (not args.k or args.k in c.name)
    ]  # fmt: skip
    rtol, atol = TOLERANCE["rtol"], TOLERANCE["atol"]
    counted = cpu_pass = cl_pass = 0
    differ: list[str] = []
    start = time.perf_counter()
    for case in cases:
        if _run_case(_OrtRep, case, rtol, atol) is not None:
            continue
        counted += 1
        cpu = _run_case(NNVMCompiledBackend.prepare, case, rtol, atol)
        ocl = _run_case(_opencl_rep, case, rtol, atol)
        cpu_pass += cpu is None
        cl_pass += ocl is None
        if (cpu is None) != (ocl is None):
            differ.append(f"{case.name}: cpu {cpu or 'pass'} | opencl {ocl or 'pass'}")
        if args.verbose:
            print(f"{case.name}: cpu {cpu or 'pass'} | opencl {ocl or 'pass'}", file=sys.stderr)
    took = time.perf_counter() - start
    print(f"{counted} node tests onnxruntime passes ({len(ops)} ops), {took:.0f} s")
    print(f"compiled for the CPU: {cpu_pass} pass; with devices=['opencl']: {cl_pass} pass")
    for line in differ:
        print("  differs:", line)
    return 0 if cpu_pass == cl_pass and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
