"""nnvm-tune: search schedules for a model's conv2d / dense / matmul kernels and log them.

    nnvm-tune model.onnx --trials 64 --log tune.jsonl             # tune, appending to the log
    nnvm-tune model.onnx --trials 64 --log tune.jsonl --resume    # carry on an interrupted run
    nnvm-compile model.onnx --tuning-log tune.jsonl --run         # build with the tuned schedules
    nnvm-tune show tune.jsonl                                     # what the log holds
    nnvm-tune best tune.jsonl -o best.jsonl                       # the best record per kernel
    nnvm-tune merge a.jsonl b.jsonl -o all.jsonl
    nnvm-tune model.onnx --log tune.jsonl --cluster tcp://10.0.0.2:8786   # measure on Dask workers
    nnvm-tune model.onnx --log tune.jsonl --rpc 10.0.0.7:9090 --target 'llvm -mcpu=...'
    nnvm-tune model.onnx --log tune.jsonl --quantize shift --calibration calib.npz --device accel
        # the accelerator's layers on its cycle model; build with the same --quantize,
        # --calibration and --device and --tuning-log tune.jsonl

Each trial is a line of the log, written as it is measured; Ctrl-C leaves a valid log (exit
130), and --resume measures nothing the log already has."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from nnvm.support.errors import UserError
from nnvm.tools.common import ArgumentParser, add_device_options, parse_shapes, run_tool
from nnvm.tools.quantize_options import add_quantize_options, quantize_from_args

SUBCOMMANDS = ("show", "best", "merge")


class TuneProgress:
    """A live line on a terminal (task, its trials, overall, best GFLOP/s), else one plain
    line per measured batch."""

    def __init__(self, n_tasks: int, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.n_tasks = n_tasks
        self.start = time.perf_counter()

    def __call__(self, state, done: int, budget: int) -> None:
        from nnvm.tune.tuner import TaskState

        assert isinstance(state, TaskState)
        best = state.best_s
        gflops = state.task.flops / best / 1e9 if best > 0 and best != float("inf") else 0.0
        speedup = state.default_s / best if best > 0 else float("nan")
        text = (
            f"[{done}/{budget} trials, {time.perf_counter() - self.start:.0f} s] "
            f"{state.task.describe()[:48]}: {len(state.measured)} trials, best "
            f"{best * 1e3:.3f} ms ({gflops:.1f} GFLOP/s, {speedup:.2f}x default)"
            f"{' done' if state.done else ''}"
        )
        if self.tty:
            self.stream.write("\r\033[K" + text)
            if done >= budget:
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def _positive(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _log_command(argv: Sequence[str]) -> int:
    from nnvm.support.tuning_log import read_log, write_log
    from nnvm.tune.log_tools import distilled, merged, read_logs, show

    command, rest = argv[0], list(argv[1:])
    parser = ArgumentParser(prog=f"nnvm-tune {command}")
    if command == "show":
        parser.add_argument("log")
        args = parser.parse_args(rest)
        print(show(read_log(args.log)))
        return 0
    parser.add_argument("logs", nargs="+" if command == "merge" else 1)
    parser.add_argument("-o", "--output", required=True, help="the log to write")
    args = parser.parse_args(rest)
    if args.output in args.logs:
        raise UserError(f"refusing to overwrite the input {args.output} (choose another -o)")
    logs = read_logs(args.logs)
    for log in logs:
        for w in log.warnings:
            sys.stderr.write(f"warning: {w}\n")
    lines = distilled(logs[0]) if command == "best" else merged(logs)
    write_log(args.output, lines)
    print(f"wrote {args.output}: {len(lines)} lines")
    return 0


def run(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return _log_command(argv)
    parser = ArgumentParser(prog="nnvm-tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="ONNX model")
    parser.add_argument("--log", required=True, metavar="LOG.jsonl", help="the tuning log")
    parser.add_argument("--resume", action="store_true", help="continue the log's run")
    parser.add_argument("--target", default="llvm", help="host target, e.g. 'llvm -mcpu=...'")
    add_device_options(
        parser,
        "a device target for the kernels it accepts, as nnvm-compile --device: its kernels "
        "are tuned on its cycle model (repeatable)",
    )
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...")
    parser.add_argument("--trials", type=_positive, default=64, help="trials per task")
    parser.add_argument("--tasks", type=_positive, help="tune only the N heaviest tasks")
    parser.add_argument("--search", default="evolution", choices=("evolution", "random", "grid"))
    parser.add_argument(
        "--cost-model",
        default="auto",
        choices=("auto", "xgboost", "numpy"),
        help="the evolutionary search's model (auto: xgboost where installed)",
    )
    parser.add_argument("--batch", type=_positive, default=8, help="candidates per round")
    parser.add_argument(
        "--early-stop", type=_positive, default=32, help="stop a task after N trials with no gain"
    )
    parser.add_argument("--threads", type=_positive, default=1, help="threads while timing")
    parser.add_argument("--repeat", type=_positive, default=5, help="timed rounds per trial")
    parser.add_argument(
        "--flush-cache",
        action="store_true",
        help="time each call with the kernel's weights flushed from the caches, as a model "
        "calls it (TVM's enable_cpu_cache_flush); x86 hosts, local or Dask measurement",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--confirm-rounds",
        type=int,
        default=3,
        help="re-measure each task's best against its default this many times (0: do not)",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="measure on the workers of this Dask scheduler (tcp://HOST:8786; the tune extra)",
    )
    parser.add_argument(
        "--rpc", metavar="HOST:PORT", help="measure on this nnvm-rpc server (a remote device)"
    )
    parser.add_argument("--rpc-token-file", metavar="FILE", help="the RPC server's token")
    parser.add_argument(
        "--history",
        action="append",
        default=[],
        metavar="LOG.jsonl",
        help="a log of another run (another model, same target): its kernels' measurements "
        "train the cost model before each task's own trials (repeatable)",
    )
    add_quantize_options(parser)
    args = parser.parse_args(argv)
    if args.rpc and args.cluster:
        raise UserError("--rpc and --cluster each name where to measure: give one")
    if args.flush_cache:
        from nnvm.support.target import parse_target
        from nnvm.tune.measure import can_flush_cache

        if args.rpc:
            raise UserError("--flush-cache times in this tool's measuring process: not over --rpc")
        if not can_flush_cache(parse_target(args.target)):
            raise UserError(f"--flush-cache needs an x86 host target, not {args.target!r}")
    from nnvm.tune.log_tools import read_logs

    history = read_logs(args.history)
    for path, log in zip(args.history, history, strict=True):
        for w in log.warnings:
            sys.stderr.write(f"warning: {path}: {w}\n")

    from nnvm.support.plugins import load_plugin_module
    from nnvm.tools.compile import _complete_shapes, _load_model
    from nnvm.tune.routed_runner import RoutedRunner
    from nnvm.tune.runner import LocalRunner, MeasureOptions
    from nnvm.tune.task import extract_tasks, tasks_by_weight
    from nnvm.tune.tuner import tune

    for plugin in args.load_plugin:
        load_plugin_module(plugin)
    model, name = _load_model(args.model)
    shapes = _complete_shapes(model, parse_shapes(args.shape))
    from nnvm.frontend import from_onnx

    module, params = from_onnx(model, shape=shapes or None)
    quantized = quantize_from_args(module, params, args)
    if quantized is not None:
        module, params = quantized.module, quantized.params
        print(quantized.summary)
    tasks = tasks_by_weight(extract_tasks(module, params, args.target, devices=args.device))
    if args.tasks:
        tasks = tasks[: args.tasks]
    if not tasks:
        print(f"{name}: no tunable kernels (conv2d, dense, matmul) for these targets")
        return 0
    RoutedRunner.check(tasks)
    on_devices = sum(not t.target.is_host for t in tasks)
    where = f" ({on_devices} on devices, measured on their cycle models)" if on_devices else ""
    print(f"{name}: {len(tasks)} tasks{where}, up to {args.trials} trials each -> {args.log}")
    options = MeasureOptions(repeat=args.repeat, threads=args.threads, flush_cache=args.flush_cache)
    if args.cluster:
        from nnvm.tune.dask_runner import DaskRunner

        runner = DaskRunner(args.cluster, options)
    elif args.rpc:
        from nnvm.tune.rpc_runner import RPCRunner

        token = None
        if args.rpc_token_file:
            try:
                token = open(args.rpc_token_file).read().strip()
            except OSError as err:
                raise UserError(
                    f"cannot read the token: {err.strerror}", args.rpc_token_file
                ) from None
        runner = RPCRunner(args.rpc, options, token=token)
    else:
        runner = LocalRunner(options)
    if on_devices:
        runner = RoutedRunner(runner, options)
    try:
        result = tune(
            tasks,
            runner,
            args.log,
            trials=args.trials,
            strategy=args.search,
            model=args.cost_model,
            batch=args.batch,
            early_stop=args.early_stop,
            resume=args.resume,
            seed=args.seed,
            progress=TuneProgress(len(tasks)),
            confirm_rounds=max(args.confirm_rounds, 0),
            history=history,
        )
    finally:
        runner.close()
    for row in result.summary():
        print(
            f"  {row['kernel'][:60]:60} x{row['weight']:<3} {row['trials']:>4} trials  "
            f"{row['default_ms']:9.3f} -> {row['best_ms']:9.3f} ms  {row['speedup']:.2f}x"
            f"  (confirmed {row['confirmed_speedup']:.2f}x)"
        )
    if result.interrupted:
        sys.stderr.write(f"interrupted: the log {args.log} is valid; --resume continues it\n")
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool("nnvm-tune", run, argv)


if __name__ == "__main__":
    sys.exit(main())
