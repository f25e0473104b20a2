// RUN: nnvm-opt %s -p lower-te-to-gpu | python -m nnvm.targets.gpu.opencl - | filecheck %s

// A shared stage in OpenCL C: the workgroup buffer is a `__local` array at the kernel's outermost
// scope, the work-items copy it in strides of the work-group size between two barriers, and the
// reads come from it.
// CHECK:      __kernel __attribute__((reqd_work_group_size(8, 1, 1))) void rowsum_y(__global float* restrict out, __global float* restrict x) {
// CHECK:        __local float x_s[64];
// CHECK:        long tid_x = (long)get_local_id(0);
// CHECK:        for (long ko = c0; ko < c3; ko += c1) {
// CHECK-NEXT:     barrier(CLK_LOCAL_MEM_FENCE
// CHECK:          long [[T:.*]] = (long)get_local_id(0);
// CHECK-NEXT:     for (long copy = [[T]]; copy < c64; copy += c8) {
// CHECK:              float [[V:v[0-9]+]] = x[({{.*}}) * 20L + {{.*}}];
// CHECK-NEXT:         x_s[({{.*}}) * 8L + {{.*}}] = [[V]];
// CHECK:          barrier(CLK_LOCAL_MEM_FENCE
// CHECK:          for (long ki = c0; ki < {{.*}}; ki += c1) {
// CHECK:            float {{v[0-9]+}} = x_s[({{.*}}) * 8L + {{.*}}];
func.func @rowsum(%x: tensor<40x20xf32>) -> tensor<40xf32> {
  %y = te.compute "y" [i] sum [k : 20] = %x[i, k] : (tensor<40x20xf32>) -> tensor<40xf32>
  te.schedule {
    te.split "y" i by 8 -> (b, t)
    te.split "y" k by 8 -> (ko, ki)
    te.bind "y" b to "blockIdx.x"
    te.bind "y" t to "threadIdx.x"
    te.cache_read "arg0" for ["y"] -> "x.s" scope "shared"
    te.compute_at "x.s" at "y" ko
  }
  func.return %y : tensor<40xf32>
}
