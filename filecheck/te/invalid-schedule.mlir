// Illegal schedules are diagnostics at the primitive that makes them illegal.
// RUN: nnvm-opt %s --split-input-file --verify-diagnostics -p lower-te-to-loops
// An axis the stage does not have.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.split: stage 'C' has no axis 'q' (its loops: i, j, k)}}
    te.split "C" q by 4 -> (q.o, q.i)
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// An axis that was split already.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.split "C" j by 4 -> (j.o, j.i)
    // expected-error @+1 {{te.split: axis 'j' of 'C' was already split or fused}}
    te.split "C" j by 2 -> (a, b)
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// A stage that does not exist.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.vectorize: no stage named 'X'}}
    te.vectorize "X" j
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// A placeholder has no loops.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.split: stage 'arg0' is a placeholder}}
    te.split "arg0" i by 2 -> (a, b)
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// A split factor below 1.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.split: the factor must be >= 1, got 0}}
    te.split "D" j by 0 -> (a, b)
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// New axis names that clash.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.split: stage 'D' already has an axis 'i'}}
    te.split "D" j by 2 -> (i, b)
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Tile needs two axes.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.tile: the two axes must differ}}
    te.tile "D" (i, i) by (2, 2) -> (a, b, c, d)
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Vectorizing a reduction axis.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.vectorize: cannot vectorize the reduction axis 'k' of 'C' (rfactor it first)}}
    te.vectorize "C" k
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// A parallel reduction axis.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.parallel: the reduction axis 'k' of 'C' cannot run in parallel}}
    te.parallel "C" k
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Vectorizing a loop that is not innermost.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.vectorize: 'i' is not the innermost loop of 'D'}}
    te.vectorize "D" i
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// An axis marked twice.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.unroll "D" j
    // expected-error @+1 {{te.vectorize: axis 'j' is already marked unroll}}
    te.vectorize "D" j
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Two parallel loops in one stage.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.parallel "D" i
    // expected-error @+1 {{te.parallel: 'D' already has the parallel loop 'i' (nested parallel loops are not supported)}}
    te.parallel "D" j
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Fusing loops that are not adjacent.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.reorder "C" (j, k, i)
    // expected-error @+1 {{te.fuse: axes ['j', 'i'] of 'C' must be adjacent loops, outermost first}}
    te.fuse "C" (j, i) -> f
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Fusing a spatial and a reduction axis.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.fuse: cannot fuse a spatial and a reduction axis}}
    te.fuse "C" (j, k) -> f
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Inlining a reduction.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.compute_inline: 'C' is a reduction and cannot be inlined}}
    te.compute_inline "C"
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Inlining the output.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.compute_inline: 'E' is a kernel output and needs its buffer}}
    te.compute_inline "E"
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Computing at a stage that does not read it.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.compute_at: 'E' does not read 'C'}}
    te.compute_at "C" at "E" i
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Computing at a vectorized loop.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.vectorize "D" j
    // expected-error @+1 {{te.compute_at: cannot compute inside the vectorized loop 'j'}}
    te.compute_at "C" at "D" j
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Splitting the loop a stage is computed at.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.compute_at: the loop 'j' of 'D' was split or fused afterwards}}
    te.compute_at "C" at "D" j
    te.split "D" j by 2 -> (a, b)
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// A parallel loop inside a parallel loop.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.parallel "D" i
    te.compute_at "C" at "D" j
    // expected-error @+1 {{te.parallel: the parallel loop 'i' of 'C' would run inside another parallel loop}}
    te.parallel "C" i
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Rfactor of an injective stage.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.rfactor: 'D' is not a reduction}}
    te.rfactor "D" j -> "D.rf"
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Rfactor of a spatial axis.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.rfactor: 'j' is not a reduction axis of 'C'}}
    te.rfactor "C" j -> "C.rf"
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Cache_write after scheduling the reduction.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.split "C" k by 4 -> (k.o, k.i)
    // expected-error @+1 {{te.cache_write must come before the reduction axes of 'C' are scheduled}}
    te.cache_write "C" -> "C.local"
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// Cache_read for a stage that does not read the tensor.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.cache_read: 'D' does not read 'arg0'}}
    te.cache_read "arg0" for ["D"] -> "A.local"
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// A panel layout whose axis the tensor does not have.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.cache_read: panel axis 2 is out of range for the rank-2 tensor 'arg1'}}
    te.cache_read "arg1" for ["C"] -> "B.p" panel 2 by 4
  }
  func.return %C : tensor<5x9xf32>
}

// -----

// A panel layout of width zero.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.cache_read: the panel width must be positive, got 0}}
    te.cache_read "arg1" for ["C"] -> "B.p" panel 1 by 0
  }
  func.return %C : tensor<5x9xf32>
}

// -----

// Bind needs a GPU target.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %E = te.compute "E" [i, j] = exp(%D[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.bind is not supported by target 'llvm' (it needs a GPU or accelerator target that declares it)}}
    te.bind "D" i to "blockIdx.x"
  }
  func.return %E : tensor<5x9xf32>
}

// -----

// A memory scope the CPU does not have (it has only 'global'; the GPU targets add shared/local).
func.func @k(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %y = te.compute "mm" [i, j] sum [k : 8] = %x[i, k] * %w[k, j] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  te.schedule {
    // expected-error @+1 {{te.cache_read: target 'llvm' has no memory scope 'shared' (it has global)}}
    te.cache_read "arg0" for ["mm"] -> "A.sh" scope "shared"
  }
  func.return %y : tensor<4x16xf32>
}

// -----

// A memory scope the CPU does not have (an accelerator's buffer).
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    // expected-error @+1 {{te.set_scope: target 'llvm' has no memory scope 'acc' (it has global)}}
    te.set_scope "C" "acc"
    te.compute_at "C" at "D" i
  }
  func.return %D : tensor<5x9xf32>
}

// -----

// Double buffering needs an on-chip scope.
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.compute_at "C" at "D" i
    // expected-error @+1 {{te.double_buffer: 'C' is not in an on-chip memory scope (give it one with te.set_scope or te.cache_read ... scope)}}
    te.double_buffer "C"
  }
  func.return %D : tensor<5x9xf32>
}
