// RUN: nnvm-opt %s -p 'lower-te-to-gpu{outline_all=true}' | filecheck %s

// What a device target gets (outline_all): a stage computed at a thread's loop has its buffer
// cloned into the kernel (the thread's private accumulator, none left in the host function),
// and an unbound root stage becomes a one-thread kernel, so the host function only launches.
// CHECK:      "gpu.func"() <{function_type = (memref<37x16xf32>, memref<16x41xf32>, memref<37x41xf32>) -> (), kernel}>
// CHECK-NEXT: ^bb0(%A: memref<37x16xf32>, %B: memref<16x41xf32>, %out0: memref<37x41xf32>):
// CHECK:        %C = memref.alloca() {alignment = 64 : i64} : memref<1x1xf32>
// CHECK:        scf.for %k = %c0 to %c16 step %c1 {
// CHECK:          math.fma
// CHECK-NEXT:     memref.store %{{.*}}, %C[%c0, %c0] : memref<1x1xf32>
// CHECK:        arith.maximumf
// CHECK:      sym_name = "mm_D", gpu.known_block_size = array<i32: 16, 16, 1>, gpu.known_grid_size = array<i32: 3, 3, 1>
// CHECK:      sym_name = "mm_s", gpu.known_block_size = array<i32: 1, 1, 1>, gpu.known_grid_size = array<i32: 1, 1, 1>
// CHECK:      func.func @mm(%A: memref<37x16xf32>, %B: memref<16x41xf32>, %out0: memref<37x41xf32>, %out1: memref<f32>) {
// CHECK-NOT:    memref.alloca
// CHECK:        "gpu.launch_func"(%c3, %c3, %c1, %c16, %c16, %c1, %A, %B, %out0) <{kernel = @mm_kernels::@mm_D
// CHECK-NEXT:   "gpu.launch_func"(%c1, %c1, %c1, %c1, %c1, %c1, %out1, %out0) <{kernel = @mm_kernels::@mm_s
// CHECK-NEXT:   func.return
func.func @mm(%A: tensor<37x16xf32>, %B: tensor<16x41xf32>) -> (tensor<37x41xf32>, tensor<f32>) {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<37x16xf32>, tensor<16x41xf32>) -> tensor<37x41xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<37x41xf32>) -> tensor<37x41xf32>
  %s = te.compute "s" [] sum [a : 37, b : 41] = %D[a, b] : (tensor<37x41xf32>) -> tensor<f32>
  te.schedule {
    te.split "D" i by 16 -> (i.b, i.t)
    te.split "D" j by 16 -> (j.b, j.t)
    te.reorder "D" (i.b, j.b, i.t, j.t)
    te.bind "D" j.b to "blockIdx.x"
    te.bind "D" i.b to "blockIdx.y"
    te.bind "D" j.t to "threadIdx.x"
    te.bind "D" i.t to "threadIdx.y"
    te.compute_at "C" at "D" j.t
  }
  func.return %D, %s : tensor<37x41xf32>, tensor<f32>
}
