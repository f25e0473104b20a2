"""`python -m nnvm.targets.accel.disasm FILE [--uops UOPFILE]`: print an instruction stream
(whole 16-byte instructions) and optionally a micro-op stream (4-byte micro-ops), one line each."""

from __future__ import annotations

import argparse
import sys

from nnvm.support.errors import UserError
from nnvm.targets.accel.isa import decode_insns, decode_uops
from nnvm.targets.accel.printer import format_program


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nnvm.targets.accel.disasm", description=__doc__
    )
    parser.add_argument("file", help="instruction stream")
    parser.add_argument("--uops", help="micro-op stream")
    args = parser.parse_args(argv)
    try:
        insns = decode_insns(_read(args.file))
        uops = decode_uops(_read(args.uops)) if args.uops else []
    except UserError as err:
        where = args.file if "micro-op" not in err.message else args.uops
        sys.stderr.write(f"{where}: error: {err.message}\n")
        return 1
    sys.stdout.write(format_program(insns, uops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
