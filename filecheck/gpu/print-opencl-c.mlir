// RUN: nnvm-opt %s --split-input-file -p lower-te-to-gpu | python -m nnvm.targets.gpu.opencl - | filecheck %s

// The OpenCL C the opencl target ships: a kernel per outlined stage with its block size as
// reqd_work_group_size, __global pointers (restrict: one buffer per argument), index math in
// long, the split tail masked by an if, buffers indexed row-major.
// CHECK:      static inline long nnvm_floordiv(long a, long b) {
// CHECK:      __kernel __attribute__((reqd_work_group_size(256, 1, 1))) void vexp_y(__global float* restrict x, __global float* restrict out) {
// CHECK:        long bid_x = (long)get_group_id(0);
// CHECK:        long [[UB:v[0-9]+]] = min(c256,
// CHECK-NEXT:   long tid_x = (long)get_local_id(0);
// CHECK-NEXT:   bool [[IN:v[0-9]+]] = tid_x < [[UB]];
// CHECK-NEXT:   if ([[IN]]) {
// CHECK:          float [[X:v[0-9]+]] = x[[[I:v[0-9]+]]];
// CHECK-NEXT:     float [[Y:v[0-9]+]] = exp([[X]]);
// CHECK-NEXT:     out[[[I]]] = [[Y]];
// CHECK-NEXT:   }
// CHECK-NEXT: }
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

// A reduction and its epilogue as two kernels over the intermediate buffer: the reduction a
// for loop per thread, max as NaN-propagating (LLVM's maximum), a bool output stored as bytes.
// CHECK:      void mm_C(__global float* restrict C, __global float* restrict A, __global float* restrict B) {
// CHECK:        C[(bid_x) * 9L + tid_x] = {{v[0-9]+}};
// CHECK-NEXT:   for (long k = c0; k < c16; k += c1) {
// CHECK-NEXT:     float [[A:v[0-9]+]] = A[(bid_x) * 16L + k];
// CHECK-NEXT:     float [[B:v[0-9]+]] = B[(k) * 9L + tid_x];
// CHECK:          fma([[A]], [[B]],
// CHECK:      void mm_D(__global float* restrict C, __global uchar* restrict out) {
// CHECK:        (isnan([[P:v[0-9]+]]) || isnan([[Q:v[0-9]+]])) ? ([[P]] + [[Q]]) : fmax([[P]], [[Q]]);
// CHECK:        out[(bid_x) * 9L + tid_x] = (uchar){{v[0-9]+}};
func.func @mm(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xi1> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) > 0.5 : (tensor<5x9xf32>) -> tensor<5x9xi1>
  te.schedule {
    te.bind "C" i to "blockIdx.x"
    te.bind "C" j to "threadIdx.x"
    te.bind "D" i to "blockIdx.x"
    te.bind "D" j to "threadIdx.x"
  }
  func.return %D : tensor<5x9xi1>
}
