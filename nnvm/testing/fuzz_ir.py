"""A seeded mutation fuzzer for the IR tools: lit inputs, mutated (spans deleted, duplicated or
swapped, characters replaced, lines truncated), run through nnvm-opt with pipelines from every
pass family. Each case runs in a child process with a time limit, so a hang or a signal is
caught; the contract is exit 0 or 1, never 2, a traceback, a hang or a signal."""

from __future__ import annotations

import random
import subprocess
import sys
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
    chunks = []
    for path in sorted(root.rglob("*.mlir")):
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


def run_case(text: str, pipeline: str, timeout: float = 20.0) -> str | None:
    """None when nnvm-opt kept its contract on this input; else what went wrong."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "nnvm.tools.opt", "-", "-p", pipeline],
            input=text,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"hang (> {timeout:.0f} s)"
    if proc.returncode < 0:
        return f"signal {-proc.returncode}"
    if "Traceback" in proc.stderr:
        return "traceback"
    if proc.returncode not in (0, 1):
        return f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1][:200]}"
    return None


def fuzz(root: Path, count: int, seed: int = 0) -> list[Finding]:
    rng = random.Random(seed)
    inputs = corpus(root)
    findings = []
    for _ in range(count):
        case_seed = rng.randrange(1 << 30)
        local = random.Random(case_seed)
        text = mutate(local.choice(inputs), local)
        pipeline = local.choice(PIPELINES)
        problem = run_case(text, pipeline)
        if problem is not None:
            findings.append(Finding(case_seed, pipeline, text, problem))
    return findings
