// RUN: nnvm-opt %s --split-input-file -p lower-te-to-gpu | filecheck %s

// A split axis bound to blockIdx.x / threadIdx.x: the root stage is outlined into a kernel
// taking the buffers as static memrefs; the tail block (1000 = 3 * 256 + 232) is masked by
// `tid < min(256, 1000 - bid * 256)`; the host launches a 4 x 256 grid.
// CHECK:      builtin.module attributes {gpu.container_module}
// CHECK:      sym_name = "vexp_kernels"
// CHECK:        gpu.func
// CHECK-NEXT:   ^bb0(%x: memref<1000xf32>, %out: memref<1000xf32>):
// CHECK:          %bid_x = "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:          %[[UB:.*]] = arith.minsi %c256
// CHECK-NEXT:     %tid_x = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT:     %[[IN:.*]] = arith.cmpi slt, %tid_x, %[[UB]]
// CHECK-NEXT:     scf.if %[[IN]] {
// CHECK:            math.exp
// CHECK:            memref.store
// CHECK:          "gpu.return"()
// CHECK:        sym_name = "vexp_y", gpu.known_block_size = array<i32: 256, 1, 1>, gpu.known_grid_size = array<i32: 4, 1, 1>
// CHECK:      func.func @vexp(%x: memref<1000xf32>, %out: memref<1000xf32>)
// CHECK:        "gpu.launch_func"(%c4, %c1, %c1, %c256, %c1, %c1, %x, %out) <{kernel = @vexp_kernels::@vexp_y
func.func @vexp(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %y = te.compute "y" [i] = exp(%x[i]) : (tensor<1000xf32>) -> tensor<1000xf32>
  te.schedule {
    te.split "y" i by 256 -> (bx, tx)
    te.bind "y" bx to "blockIdx.x"
    te.bind "y" tx to "threadIdx.x"
  }
  func.return %y : tensor<1000xf32>
}

// -----

// A reduction: rows on blocks, columns on threads, the reduction a serial loop per thread
// with its accumulator initialised just outside it; an unbound stage stays on the host.
// CHECK-LABEL: sym_name = "mm_kernels"
// CHECK:        %bid_x = "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT:   %tid_x = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:        memref.store %{{.*}}, %out[%bid_x, %tid_x]
// CHECK-NEXT:   scf.for %k = %c0 to %c16 step %c1 {
// CHECK:          math.fma
// CHECK:      sym_name = "mm_C", gpu.known_block_size = array<i32: 9, 1, 1>, gpu.known_grid_size = array<i32: 5, 1, 1>
// CHECK:      func.func @mm
// CHECK:        "gpu.launch_func"(%c5, %c1, %c1, %c9, %c1, %c1, %out, %A, %B)
func.func @mm(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.bind "C" i to "blockIdx.x"
    te.bind "C" j to "threadIdx.x"
  }
  func.return %C : tensor<5x9xf32>
}
