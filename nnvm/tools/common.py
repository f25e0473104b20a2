"""What every nnvm command-line tool shares: one error convention and safe output.

User errors (bad input, bad options) print `error: ...` (with a location when there is one)
and exit 1; a crash is an internal error, reported as a bug, exit 2, with the traceback only
under NNVM_DEBUG=1; outputs are written all at once at the end, so a failure leaves no file."""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from nnvm.support.errors import UserError


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the tools' convention for usage errors: `error: ...`, exit 1."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(1)


def add_device_options(parser: argparse.ArgumentParser, device_help: str) -> None:
    """--device (repeatable device targets) and --load-plugin, as nnvm-compile and nnvm-tune
    take them."""
    parser.add_argument("--device", action="append", default=[], metavar="TARGET", help=device_help)
    parser.add_argument(
        "--load-plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="load a plugin (targets, passes, dialects) that is not installed (repeatable)",
    )


def run_tool(prog: str, run: Callable[[Sequence[str] | None], int], argv=None) -> int:
    """Run a tool's body under the error convention; returns the exit code."""
    try:
        return run(argv)
    except UserError as err:
        sys.stderr.write(err.format() + "\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:  # last line of defence: a bug, reported as one
        if os.environ.get("NNVM_DEBUG"):
            traceback.print_exc()
        text = " ".join(str(err).split()) or type(err).__name__
        sys.stderr.write(
            f"{prog}: internal error: {type(err).__name__}: {text} "
            "(this is a bug in nnvm; NNVM_DEBUG=1 shows the traceback)\n"
        )
        return 2


class OutputFiles:
    """Collects outputs in memory and writes them all at the end (via temp files + rename), so
    a failure never leaves a partial or half-updated set of files."""

    def __init__(self, protect: Sequence[str] = ()) -> None:
        self.pending: list[tuple[str, bytes]] = []
        self.protect = [p for p in protect if p != "-"]
        """Inputs of the run: never overwritten, whatever `-o` says."""

    def add(self, path: str | os.PathLike[str], data: bytes | str) -> None:
        self.pending.append((os.fspath(path), data.encode() if isinstance(data, str) else data))

    def commit(self) -> None:
        for path, _ in self.pending:
            if path != "-" and any(_same_file(path, q) for q in self.protect):
                raise UserError(f"refusing to overwrite the input {path} (choose another -o)")
        temps: list[tuple[str, str]] = []
        try:
            for path, data in self.pending:
                if path == "-":
                    continue
                tmp = f"{path}.tmp{os.getpid()}"
                with open(tmp, "wb") as f:
                    f.write(data)
                temps.append((tmp, path))
            for tmp, path in temps:
                os.replace(tmp, path)
        except OSError as err:
            for tmp, _ in temps:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            raise UserError(f"cannot write {err.filename}: {err.strerror}") from None
        for path, data in self.pending:
            if path == "-":
                sys.stdout.write(data.decode())
                sys.stdout.flush()


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def commit_folder(out: Path, files: dict[str, bytes]) -> None:
    """Write `files` into a fresh folder beside `out`, then swap it in with one rename
    (renameat2 RENAME_EXCHANGE where the kernel has it), so a killed or failed run leaves the
    previous `out` whole; the old folder is removed after the swap."""
    if out.exists() and not out.is_dir():
        raise UserError(f"output {out} exists and is not a folder")
    parent = out.parent if str(out.parent) else Path(".")
    _remove_stale(parent, out.name)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=parent))
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror}") from None
    try:
        for name, data in files.items():
            with open(fresh / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        if not out.exists():
            os.rename(fresh, out)
            return
        if not _exchange(fresh, out):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=parent))
            os.rename(out, old / out.name)  # the previous build survives a kill right here
            os.rename(fresh, out)
            fresh = old
    except OSError as err:
        shutil.rmtree(fresh, ignore_errors=True)
        raise UserError(f"cannot write {out}: {err.strerror}") from None
    shutil.rmtree(fresh, ignore_errors=True)  # now the previous build


STALE_SECONDS = 600
"""A half-written folder of a killed run older than this is removed by the next commit."""


def _remove_stale(parent: Path, name: str) -> None:
    now = time.time()
    for prefix in (f".{name}.new-", f".{name}.old-"):
        for p in parent.glob(f"{glob.escape(prefix)}*"):
            try:
                if now - p.stat().st_mtime > STALE_SECONDS:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def read_input(path: str) -> tuple[str, str]:
    """The text of an input file ('-' is stdin) and the name diagnostics should use for it."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except OSError as err:
        raise UserError(f"cannot read input: {err.strerror}", path) from None
    except UnicodeDecodeError:
        raise UserError("input is not UTF-8 text", path) from None


def parse_shapes(specs: Sequence[str]) -> dict[str, list[int]]:
    """`--shape name=1,3,224,224` (repeatable; a scalar is `name=`)."""
    shapes: dict[str, list[int]] = {}
    for spec in specs:
        name, eq, dims = spec.rpartition("=")
        if not eq or not name:
            raise UserError(f"--shape expects NAME=D0,D1,..., got {spec!r}")
        try:
            shapes[name] = [int(d) for d in dims.split(",") if d.strip()] if dims.strip() else []
        except ValueError:
            raise UserError(f"--shape {spec!r}: dimensions must be integers") from None
        if any(d < 0 for d in shapes[name]):
            raise UserError(f"--shape {spec!r}: dimensions must be >= 0")
    return shapes
