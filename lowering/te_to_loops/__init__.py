"""te -> loops: apply a kernel's schedule and emit scf/memref/arith/vector loop nests."""
