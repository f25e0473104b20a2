"""`python -m nnvm.targets.accel.disasm FILE [--uops UOPFILE] [--ir]`: list an instruction stream
(whole 16-byte instructions; or an accel.program in a .mlir file) and its micro-ops (4-byte
words), one line each; `--ir` prints the accel dialect form instead."""

from __future__ import annotations

import argparse
import sys

from nnvm.support.errors import UserError
from nnvm.targets.accel.isa import decode_insns, decode_uops
from nnvm.targets.accel.printer import format_program
from nnvm.targets.accel.program_ir import parse_program, program_to_ir


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
    parser.add_argument("--ir", action="store_true", help="print the accel.program IR")
    args = parser.parse_args(argv)
    try:
        if args.file.endswith(".mlir"):
            try:
                text = _read(args.file).decode()
            except UnicodeDecodeError as err:
                raise UserError(f"not UTF-8 text at byte {err.start}") from None
            insns, uops = parse_program(text, args.file)
        else:
            insns = decode_insns(_read(args.file))
            uops = []
        if args.uops:
            uops += decode_uops(_read(args.uops))
    except UserError as err:
        if err.location:
            sys.stderr.write(err.format() + "\n")
        else:
            where = args.uops if "micro-op" in err.message else args.file
            sys.stderr.write(f"{where}: error: {err.message}\n")
        return 1
    if args.ir:
        sys.stdout.write(str(program_to_ir(insns, uops)) + "\n")
    else:
        sys.stdout.write(format_program(insns, uops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
