"""The CUDA target on a real NVIDIA GPU, in one run (needs only numpy and nnvm there):

    python bench/gpu_check.py                     # sm_90; all checks; a table at the end
    python bench/gpu_check.py --arch sm_80 --models mlp,resnet18 --sgemm 2048
    python bench/gpu_check.py --resnet50 resnet50.onnx   # an exported ResNet-50 instead
    python bench/gpu_check.py --emulate --sgemm 128 --models mlp --resnet50 none   # no GPU

1. te kernels with bind schedules (elementwise with a tail, row reduction, matmul, softmax) and
   graph ops through the GPU default schedules: each loaded from its PTX by the ctypes driver
   runner, run, compared with numpy.
2. SGEMM n^3 (default 4096) with the default GPU matmul schedule: GFLOP/s from CUDA events over
   repeated launches, against the device's FP32 peak (SMs x 128 lanes x 2 x clock) and cuBLAS
   where libcublas loads.
3. Models (bench/models.py, and ResNet-50: built here with seeded weights, or an ONNX file)
   built with every kernel on the GPU,
   outputs compared with the CPU target (rtol 1e-3, atol 1e-4), median ms of a run (inputs
   copied in, outputs out, one synchronization per kernel)."""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="sm_90", help="sm_80 | sm_86 | sm_89 | sm_90")
    p.add_argument("--device", type=int, default=0, help="CUDA device ordinal")
    p.add_argument("--sgemm", type=int, default=4096, help="SGEMM size n (0: skip)")
    p.add_argument("--models", default="mlp,resnet18,bert2", help="bench models, comma separated")
    p.add_argument(
        "--resnet50",
        default="built-in",
        help="ResNet-50 batch 1: 'built-in' (resnet50() below), an ONNX file, or 'none'",
    )
    p.add_argument("--repeat", type=int, default=20, help="timed runs per measurement")
    p.add_argument("--emulate", action="store_true", help="run on the host emulator (no GPU)")
    args = p.parse_args(argv)
    from nnvm.targets.gpu.cuda.ptx import ARCHES

    if args.arch not in ARCHES:
        p.error(f"--arch {args.arch}: known {', '.join(ARCHES)}")
    if args.sgemm < 0 or args.repeat < 1:
        p.error("--sgemm must be >= 0 and --repeat >= 1")
    args.model_list = [m for m in args.models.split(",") if m]
    known = set(bench_models())
    bad = [m for m in args.model_list if m not in known]
    if bad:
        p.error(f"unknown models {bad}; known: {', '.join(sorted(known))}")
    if args.resnet50 not in ("built-in", "none") and not Path(args.resnet50).is_file():
        p.error(f"--resnet50 {args.resnet50}: no such file")
    return args


def bench_models() -> dict:
    spec = importlib.util.spec_from_file_location("bench_models", ROOT / "bench" / "models.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.MODELS


def target_spec(args: argparse.Namespace) -> str:
    spec = f"cuda -arch={args.arch}"
    if args.device:
        spec += f" -device={args.device}"
    return spec + (" -emulate" if args.emulate else "")


# -- one te kernel through the target, run by hand ---------------------------------------------


class Runner:
    """Device buffers, launches and a clock: the driver (events) or the host emulator."""

    def __init__(self, args: argparse.Namespace):
        self.device = args.device
        self.host: dict[int, np.ndarray] = {}
        """The emulator's 'device' buffers, by address."""
        if args.emulate:
            self.driver = None
        else:
            from nnvm.targets.gpu.cuda.driver import CudaDriver

            self.driver = CudaDriver.get()
            self.driver.use(args.device)

    def upload(self, a: np.ndarray) -> int:
        a = np.array(a, order="C", copy=True)
        if self.driver is None:
            self.host[a.ctypes.data] = a
            return a.ctypes.data
        ptr = self.driver.alloc(a.nbytes)
        self.driver.copy_to_device(ptr, memoryview(a).cast("B"))
        return ptr

    def download(self, ptr: int, like: np.ndarray) -> np.ndarray:
        if self.driver is None:
            return self.host[ptr].copy()
        out = np.empty_like(like)
        self.driver.copy_from_device(memoryview(out).cast("B"), ptr)
        return out

    def kernel(self, blob: bytes, name: str):
        """A callable running one fused kernel's plan over device pointers."""
        if self.driver is None:
            from nnvm.targets.gpu.cuda.host_emulator import load_emulated, run_plan

            k = load_emulated(blob, name)
            return lambda ptrs: run_plan(k, ptrs)
        from nnvm.targets.gpu.cuda.runtime import CudaRuntime

        class OneBlob:
            def blob(self, _: str) -> bytes:
                return blob

        rt = CudaRuntime(OneBlob(), self.device, self.driver)
        return lambda ptrs: rt.enqueue(name, ptrs)

    def time_ms(self, fn, repeat: int) -> float:
        """Mean ms of `fn()` over `repeat` back-to-back calls (after one warm-up)."""
        fn()
        if self.driver is None:
            start = time.perf_counter()
            for _ in range(repeat):
                fn()
            return (time.perf_counter() - start) * 1e3 / repeat
        self.driver.synchronize()
        begin, end = self.driver.event(), self.driver.event()
        self.driver.record(begin)
        for _ in range(repeat):
            fn()
        self.driver.record(end)
        return self.driver.elapsed_ms(begin, end) / repeat


def compile_function(text: str, name: str, target) -> bytes:
    """A graph-level (nnvm dialect) or te function through the target's kernel passes."""
    from nnvm.registry import make_context
    from nnvm.support.diagnostics import parse_module

    ctx = make_context()
    module = parse_module(ctx, text, f"{name}.mlir")
    for p in target.kernel_passes():
        p.apply(ctx, module)
    return target.emit_kernel(module, name)


KERNELS = {
    # name: (function text, inputs' shapes, numpy reference)
    "exp tail 1000": (
        """func.func @k(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %y = te.compute "y" [i] = exp(%x[i]) : (tensor<1000xf32>) -> tensor<1000xf32>
  te.schedule {
    te.split "y" i by 256 -> (bx, tx)
    te.bind "y" bx to "blockIdx.x"
    te.bind "y" tx to "threadIdx.x"
  }
  func.return %y : tensor<1000xf32>
}""",
        [(1000,)],
        np.exp,
    ),
    "row sum 300x77": (
        """func.func @k(%x: tensor<300x77xf32>) -> tensor<300xf32> {
  %y = te.compute "y" [i] sum [k : 77] = %x[i, k] : (tensor<300x77xf32>) -> tensor<300xf32>
  te.schedule {
    te.split "y" i by 128 -> (b, t)
    te.bind "y" b to "blockIdx.x"
    te.bind "y" t to "threadIdx.x"
  }
  func.return %y : tensor<300xf32>
}""",
        [(300, 77)],
        lambda x: x.sum(axis=1),
    ),
    "softmax 64x1000 (default)": (
        """func.func private @k(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %y = nnvm.softmax %x : (tensor<64x1000xf32>) -> tensor<64x1000xf32>
  func.return %y : tensor<64x1000xf32>
}""",
        [(64, 1000)],
        lambda x: (
            np.exp(x - x.max(1, keepdims=True))
            / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)
        ),
    ),
    "dense 33x200.70x200 (default)": (
        """func.func private @k(%x: tensor<33x200xf32>, %w: tensor<70x200xf32>) -> tensor<33x70xf32> {
  %y = nnvm.dense %x, %w : (tensor<33x200xf32>, tensor<70x200xf32>) -> tensor<33x70xf32>
  func.return %y : tensor<33x70xf32>
}""",
        [(33, 200), (70, 200)],
        lambda x, w: x @ w.T,
    ),
}


def check_kernels(args, target, runner, rows: list[tuple[str, str, str]]) -> bool:
    ok = True
    rng = np.random.default_rng(0)
    for label, (text, shapes, ref) in KERNELS.items():
        try:
            run = runner.kernel(compile_function(text, "k", target), "k")
            xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
            want = ref(*xs).astype(np.float32)
            ptrs = [runner.upload(x) for x in xs]
            out = np.zeros_like(want)
            out_ptr = runner.upload(out)
            run([*ptrs, out_ptr])
            got = runner.download(out_ptr, out)
            err = float(np.max(np.abs(got - want) / (np.abs(want) + 1e-3)))
            good = bool(np.allclose(got, want, rtol=1e-4, atol=1e-5))
            rows.append((f"kernel {label}", "ok" if good else "MISMATCH", f"max rel err {err:.1e}"))
            ok &= good
        except Exception as e:  # one failing kernel must not hide the rest of the report
            rows.append((f"kernel {label}", "ERROR", f"{type(e).__name__}: {e}"[:120]))
            ok = False
    return ok


def sgemm(args, target, runner, rows) -> bool:
    n = args.sgemm
    text = f"""func.func private @k(%a: tensor<{n}x{n}xf32>, %b: tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32> {{
  %c = nnvm.dense %a, %b : (tensor<{n}x{n}xf32>, tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  func.return %c : tensor<{n}x{n}xf32>
}}"""
    start = time.perf_counter()
    run = runner.kernel(compile_function(text, "k", target), "k")
    build_s = time.perf_counter() - start
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)  # [N, K]: C = A B^T
    c = np.zeros((n, n), np.float32)
    pa, pb, pc = runner.upload(a), runner.upload(b), runner.upload(c)
    run([pa, pb, pc])
    got = runner.download(pc, c)
    rows_i = np.random.default_rng(2).choice(n, size=min(n, 64), replace=False)
    want = a[rows_i].astype(np.float64) @ b.T.astype(np.float64)
    good = bool(np.allclose(got[rows_i], want, rtol=1e-3, atol=1e-3 * np.sqrt(n)))
    ms = runner.time_ms(lambda: run([pa, pb, pc]), args.repeat)
    gflops = 2 * n**3 / (ms * 1e-3) / 1e9
    note = f"{ms:.3f} ms/launch; build {build_s:.1f} s"
    rows.append(
        (f"SGEMM {n}^3 (nnvm)", "ok" if good else "MISMATCH", f"{gflops:,.0f} GFLOP/s; {note}")
    )
    if runner.driver is not None:
        peak = fp32_peak_gflops(runner.driver, args.device)
        if peak:
            rows.append(
                (
                    "FP32 peak (SMs x 128 x 2 x clock)",
                    "",
                    f"{peak:,.0f} GFLOP/s; nnvm at {100 * gflops / peak:.1f}%",
                )
            )
        cublas = cublas_sgemm_gflops(runner, n, pa, pb, pc, args.repeat)
        rows.append(
            ("SGEMM cuBLAS", "", f"{cublas:,.0f} GFLOP/s" if cublas else "libcublas not found")
        )
    return good


def fp32_peak_gflops(driver, ordinal: int) -> float | None:
    from nnvm.targets.gpu.cuda import driver as d

    try:
        sms = driver.attribute(d.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ordinal)
        khz = driver.attribute(d.CU_DEVICE_ATTRIBUTE_CLOCK_RATE, ordinal)
    except Exception:
        return None
    return sms * 128 * 2 * khz * 1e3 / 1e9


def _wheel_libs(pattern: str) -> list[str]:
    """Libraries of the nvidia-* wheels (nvidia/<pkg>/lib/), where pip puts cuBLAS."""
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    return [str(p) for root in roots for p in sorted(Path(root).glob(f"*/lib/{pattern}"))]


def cublas_sgemm_gflops(runner, n: int, pa: int, pb: int, pc: int, repeat: int) -> float | None:
    lib = None
    for name in (
        *("libcublas.so.13", "libcublas.so.12", "libcublas.so"),
        *_wheel_libs("libcublas.so*"),
    ):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return None
    handle = ctypes.c_void_p()
    if lib.cublasCreate_v2(ctypes.byref(handle)) != 0:
        return None
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)

    def call():  # column-major C^T = B A^T, i.e. row-major C = A B^T; 1 = CUBLAS_OP_T
        code = lib.cublasSgemm_v2(
            handle, 1, 0, n, n, n, ctypes.byref(alpha), ctypes.c_uint64(pb), n,
            ctypes.c_uint64(pa), n, ctypes.byref(beta), ctypes.c_uint64(pc), n,
        )  # fmt: skip
        if code != 0:
            raise RuntimeError(f"cublasSgemm_v2 returned {code}")

    ms = runner.time_ms(call, repeat)
    lib.cublasDestroy_v2(handle)
    return 2 * n**3 / (ms * 1e-3) / 1e9


def resnet50(image: int = 224, width: int = 64, seed: int = 0):
    """ResNet-50 v1.5 (bottleneck blocks 3-4-6-3, stride on the 3x3) batch 1, seeded He-scaled
    weights with BatchNorm folded into each conv's bias: the timing shape of torchvision's,
    without torch."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = [0]

    def conv(x: str, c_in: int, c_out: int, k: int, stride: int, relu: bool) -> str:
        count[0] += 1
        n = f"c{count[0]}"
        w = rng.standard_normal((c_out, c_in, k, k)) * np.sqrt(2.0 / (c_in * k * k))
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{n}.w"))
        inits.append(
            numpy_helper.from_array(
                (rng.standard_normal(c_out) * 0.01).astype(np.float32), f"{n}.b"
            )
        )
        nodes.append(helper.make_node(
            "Conv", [x, f"{n}.w", f"{n}.b"], [n], kernel_shape=[k, k], strides=[stride] * 2,
            pads=[k // 2] * 4,
        ))  # fmt: skip
        if not relu:
            return n
        nodes.append(helper.make_node("Relu", [n], [f"{n}.r"]))
        return f"{n}.r"

    x = conv("input", 3, width, 7, 2, True)
    nodes.append(
        helper.make_node(
            "MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        )
    )
    x, c_in = "pool", width
    for s, blocks in enumerate((3, 4, 6, 3)):
        mid = width * 2**s
        for b in range(blocks):
            stride = 2 if s > 0 and b == 0 else 1
            y = conv(x, c_in, mid, 1, 1, True)
            y = conv(y, mid, mid, 3, stride, True)
            y = conv(y, mid, mid * 4, 1, 1, False)
            short = conv(x, c_in, mid * 4, 1, stride, False) if b == 0 else x
            count[0] += 1
            nodes.append(helper.make_node("Add", [y, short], [f"a{count[0]}"]))
            nodes.append(helper.make_node("Relu", [f"a{count[0]}"], [f"r{count[0]}"]))
            x, c_in = f"r{count[0]}", mid * 4
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    fc = rng.standard_normal((1000, c_in)) * np.sqrt(1.0 / c_in)
    inits.append(numpy_helper.from_array(fc.astype(np.float32), "fc.w"))
    inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc.b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["output"], transB=1))
    graph = helper.make_graph(
        nodes, "resnet50",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, image, image])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1000])], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def check_model(label: str, model, args, rows) -> bool:
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime
    from nnvm.testing.onnx_models import random_inputs

    inputs = random_inputs(model, seed=0)
    module, params = from_onnx(model)
    outs = {}
    times = {}
    for where, devices in (("gpu", [target_spec(args)]), ("cpu", [])):
        start = time.perf_counter()
        graph, lib, p = build(module, params=params, devices=devices)
        built = time.perf_counter() - start
        if where == "gpu":
            placed = sum(1 for node in graph.nodes if node.device)
            rows.append(
                (
                    f"{label} build",
                    "",
                    f"{built:.1f} s, {placed}/{len(graph.nodes)} kernels on the GPU",
                )
            )
        m = graph_runtime.create(graph, lib, nnvm.cpu(0))
        m.set_input(**p)
        m.run(**inputs)
        outs[where] = [m.get_output(k) for k in range(m.get_num_outputs())]
        samples = []
        for _ in range(args.repeat if where == "gpu" else 3):
            t = time.perf_counter()
            m.run(**inputs)
            samples.append((time.perf_counter() - t) * 1e3)
        times[where] = statistics.median(samples)
    good = all(
        np.allclose(g, c, rtol=1e-3, atol=1e-4)
        for g, c in zip(outs["gpu"], outs["cpu"], strict=True)
    )
    err = max(float(np.max(np.abs(g - c))) for g, c in zip(outs["gpu"], outs["cpu"], strict=True))
    rows.append(
        (f"{label} batch 1", "ok" if good else "MISMATCH",
         f"GPU {times['gpu']:.2f} ms, CPU {times['cpu']:.2f} ms (median); max abs diff {err:.1e}")
    )  # fmt: skip
    return good


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from nnvm.support.target import parse_target

    target = parse_target(target_spec(args))
    rows: list[tuple[str, str, str]] = []
    runner = Runner(args)
    if runner.driver is not None:
        name = runner.driver.device_name(args.device)
        rows.append(("device", "", f"{name} (ordinal {args.device}), target {target.description}"))
    else:
        rows.append(("device", "", f"host emulator (no GPU), target {target.description}"))
    ok = check_kernels(args, target, runner, rows)
    if args.sgemm:
        ok &= sgemm(args, target, runner, rows)
    models = bench_models()
    for name in args.model_list:
        ok &= check_model(name, models[name](), args, rows)
    if args.resnet50 == "built-in":
        ok &= check_model("resnet50", resnet50(), args, rows)
    elif args.resnet50 != "none":
        import onnx

        ok &= check_model("resnet50 (file)", onnx.load(args.resnet50), args, rows)
    width = max(len(r[0]) for r in rows)
    for what, status, detail in rows:
        print(f"{what:<{width}}  {status:<8}  {detail}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
