"""`python -m nnvm.targets.gpu.opencl [FILE|-]`: print the OpenCL C of the gpu.modules of a
module lowered by lower-te-to-gpu (what the opencl target ships; the lit tests check it)."""

from __future__ import annotations

import sys

from nnvm.support.diagnostics import DiagnosticError, parse_module
from nnvm.support.errors import UserError


def main(argv: list[str]) -> int:
    from xdsl.context import Context
    from xdsl.dialects import arith, builtin, func, gpu, math, memref, scf, vector

    from nnvm.targets.gpu.opencl.print_opencl_c import print_opencl_c

    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, math.Math, memref.MemRef, scf.Scf):
        ctx.load_dialect(dialect)
    ctx.load_dialect(gpu.GPU)
    ctx.load_dialect(vector.Vector)

    path = argv[0] if argv else "-"
    try:
        text = sys.stdin.read() if path == "-" else open(path).read()
        module = parse_module(ctx, text, "<stdin>" if path == "-" else path)
        kernels = [op for op in module.walk() if isinstance(op, gpu.ModuleOp)]
        if not kernels:
            raise UserError("no gpu.module in the input (run lower-te-to-gpu first)")
        sys.stdout.write("".join(print_opencl_c(k) for k in kernels))
    except (UserError, DiagnosticError, OSError) as err:
        sys.stderr.write(f"error: {getattr(err, 'message', err)}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
