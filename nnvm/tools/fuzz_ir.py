"""A seeded mutation fuzzer for the IR tools: lit inputs, mutated (spans deleted, duplicated or
swapped, characters replaced, lines truncated), run through nnvm-opt with pipelines from every
pass family. Cases run in a worker process with a time limit each (nnvm/testing/isolated.py),
so a hang or a signal is caught; the contract is exit 0 or 1, never 2, a traceback, a hang or a
signal, and every error names the line and column it is about."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

PIPELINES = (
    "infer-shapes",
    "fuse,plan-memory",
    "nnvm-O3",
    "alter-layout{block=8},fold-constants",
    "simplify-inference,fold-scale-axis",
    "lower-to-te,apply-default-schedule",
    "lower-to-te,apply-default-schedule,lower-te-to-loops",
    "lower-te-to-loops,convert-to-llvm",
    "convert-to-llvm",
    "cse,dce,canonicalize",
    "accel-lower-layers",
    "lower-te-to-accel,accel-insert-tokens",
)
TOKENS = (
    '"',
    "{",
    "}",
    "(",
    ")",
    "<",
    ">",
    "[",
    "]",
    ":",
    ",",
    "=",
    "%",
    "@",
    "#",
    "x",
    "0",
    "-1",
    "f32",
    "i64",
    "tensor<",
    "\n",
)


@dataclass
class Finding:
    seed: int
    pipeline: str
    text: str
    problem: str

    def reproducer(self) -> str:
        return f"seed {self.seed}: nnvm-opt FILE -p '{self.pipeline}' ({self.problem})\n{self.text}"


def corpus(root: Path) -> list[str]:
    """The split-input chunks of the lit suite's .mlir files (not lit's Output/ scratch, which
    holds what RUN lines wrote: deliberately malformed files among them)."""
    chunks = []
    for path in sorted(root.rglob("*.mlir")):
        if "Output" in path.relative_to(root).parts:
            continue
        for chunk in path.read_text().split("// -----"):
            if chunk.strip():
                chunks.append(chunk)
    return chunks


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        if not text:
            break
        i = rng.randrange(len(text))
        j = min(len(text), i + rng.randint(1, 40))
        kind = rng.randrange(5)
        if kind == 0:
            text = text[:i] + text[j:]
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif kind == 2:
            text = text[:i] + rng.choice(TOKENS) + text[i + 1 :]
        elif kind == 3:
            k = rng.randrange(len(text))
            a, b = sorted((i, k))
            text = text[:a] + text[b:j] + text[a:b] + text[j:] if j > b else text
        else:
            text = text[:i]
    return text


def check_case(case: tuple[str, str]) -> str | None:
    """None when nnvm-opt kept its contract on this input; else what went wrong. Runs nnvm-opt
    in this process (the caller isolates it: nnvm/testing/isolated.py)."""
    import contextlib
    import io
    import os
    import tempfile

    from nnvm.tools.opt import main

    text, pipeline = case
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.mlir")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main([path, "-p", pipeline, "-o", os.path.join(tmp, "out.mlir")])
    stderr = err.getvalue()
    if "Traceback" in stderr:
        return "traceback"
    if code not in (0, 1):
        lines = stderr.strip().splitlines() or [""]
        return f"exit {code}: {lines[-1][:300]}"
    if code == 1 and not _located(stderr, path):
        return f"error without a location: {stderr.strip()[:300]}"
    return None


def _located(stderr: str, path: str) -> bool:
    """Every error about the input names the line and column in it."""
    import re

    lines = [line for line in stderr.splitlines() if "error" in line]
    pattern = re.compile(re.escape(path) + r":\d+:\d+")
    return all(pattern.search(line) for line in lines) if lines else False


def cases(root: Path, count: int, seed: int) -> list[tuple[int, str, str]]:
    """(case seed, text, pipeline) for `count` cases; each case rebuilds from its seed."""
    rng = random.Random(seed)
    inputs = corpus(root)
    out = []
    for _ in range(count):
        case_seed = rng.randrange(1 << 30)
        local = random.Random(case_seed)
        text = mutate(local.choice(inputs), local)
        out.append((case_seed, text, local.choice(PIPELINES)))
    return out


def fuzz(root: Path, count: int, seed: int = 0, timeout: float = 20.0) -> list[Finding]:
    from nnvm.testing.isolated import run_isolated

    todo = cases(root, count, seed)
    outcomes = run_isolated(
        "nnvm.tools.fuzz_ir:check_case", ((t, p) for _, t, p in todo), timeout=timeout
    )
    return [
        Finding(todo[o.index][0], todo[o.index][2], todo[o.index][1], o.problem)
        for o in outcomes
        if o.problem is not None
    ]
