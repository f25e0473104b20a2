// RUN: nnvm-opt %s -p 'lower-te-to-gpu{target="opencl"}' | python -m nnvm.targets.gpu.opencl - | filecheck %s

// A vectorized axis on the opencl target: OpenCL C vector types. A full vector is one vload4 /
// vstore4 at the element's address; an op without a C operator for vectors (LLVM's
// NaN-propagating maximumf) is printed lane by lane (.s0 ... .s3) and gathered into a float4;
// the tail (10 = 2 * 4 + 2) is one masked vector: a char4 of 0/1 lanes, each lane loaded and
// stored only under its bit, so nothing past the row is touched.
// CHECK:      __kernel __attribute__((reqd_work_group_size(9, 1, 1))) void vrelu_y(__global float* restrict x, __global float* restrict out) {
// CHECK:        if ([[FULL:v[0-9]+]]) {
// CHECK:          float4 [[X:v[0-9]+]] = vload4(0, x + ([[OFF:.*]]));
// CHECK:          float4 [[Z:v[0-9]+]] = (float4)([[ZERO:v[0-9]+]]);
// CHECK-NEXT:     float4 [[Y:v[0-9]+]] = (float4)(((isnan([[X]].s0) || isnan([[Z]].s0)) ? ([[X]].s0 + [[Z]].s0) : fmax([[X]].s0, [[Z]].s0)), {{.*}}fmax([[X]].s3, [[Z]].s3)));
// CHECK-NEXT:     vstore4([[Y]], 0, out + ([[OFF]]));
// CHECK-NEXT:   } else {
// CHECK-NEXT:     char4 [[M:v[0-9]+]] = (char4)((0L < [[N:v[0-9]+]]) ? 1 : 0, (1L < [[N]]) ? 1 : 0, (2L < [[N]]) ? 1 : 0, (3L < [[N]]) ? 1 : 0);
// CHECK:          float4 {{v[0-9]+}} = (float4)((([[M]].s0 ? x[([[T:.*]]) + 0] : {{v[0-9]+}}.s0)), {{.*}}(([[M]].s3 ? x[([[T]]) + 3] : {{v[0-9]+}}.s3)));
// CHECK:          if ([[M]].s0) out[([[T2:.*]]) + 0] = [[R:v[0-9]+]].s0;
// CHECK-NEXT:     if ([[M]].s1) out[([[T2]]) + 1] = [[R]].s1;
// CHECK-NEXT:     if ([[M]].s2) out[([[T2]]) + 2] = [[R]].s2;
// CHECK-NEXT:     if ([[M]].s3) out[([[T2]]) + 3] = [[R]].s3;
// CHECK-NEXT:   }
// CHECK-NEXT: }
func.func @vrelu(%x: tensor<3x10xf32>) -> tensor<3x10xf32> {
  %y = te.compute "y" [i, j] = max(%x[i, j], 0.0) : (tensor<3x10xf32>) -> tensor<3x10xf32>
  te.schedule {
    te.split "y" j by 4 -> (jo, jv)
    te.fuse "y" (i, jo) -> t
    te.bind "y" t to "threadIdx.x"
    te.vectorize "y" jv
  }
  func.return %y : tensor<3x10xf32>
}
