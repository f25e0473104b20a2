// accel-lower-layers alone: an accel.conv2d becomes an accel.layer holding its program (its te
// kernel and default schedule lowered by lower-te-to-accel: micro-ops,
// DMA loads into the on-chip buffers, GEMM block instructions, the requantizing ALU sequence with
// per-channel shifts, stores, dependency tokens) and its DRAM image layout; with one virtual
// thread no load overlaps compute. Layers the accelerator's loops cannot express are located errors.
// RUN: nnvm-opt %s -p accel-lower-layers --split-input-file | filecheck %s
// RUN: nnvm-opt %s -p 'accel-lower-layers{virtual_threads=1}' --split-input-file | filecheck %s --check-prefix=VT1
// RUN: nnvm-opt %s -p accel-lower-layers --split-input-file | nnvm-opt --split-input-file | filecheck %s
// RUN: not nnvm-opt %S/Inputs/unfit_layers.mlir -p accel-lower-layers --split-input-file 2>&1 | filecheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @conv
// CHECK:      %y = accel.layer %x, %w, %b, %r, %s {
// CHECK-NEXT:   accel.program {
// CHECK-NEXT:     accel.micro_ops {acc = array<i64:
// CHECK:          accel.dma_load {buffer = "uop"
// CHECK:          accel.dma_load {buffer = "inp", {{.*}}pad = array<i64: 1, 1, 1,
// CHECK:          accel.dma_load {buffer = "wgt"
// CHECK-NEXT:     accel.token_push {queue = "load->compute"}
// CHECK:          accel.gemm {{{.*}}reset
// CHECK:          accel.token_pop {queue = "load->compute"}
// CHECK-NEXT:     accel.gemm {uops = array<i64:
// CHECK:          accel.alu {{{.*}}op = "add"
// per-channel shifts: the source is the loaded shift entries, not an immediate
// CHECK-NEXT:     accel.alu {{{.*}}op = "shr", dst = array<i64: {{[0-9, ]+}}>, src = array<i64: {{[0-9, ]+}}>}{{$}}
// CHECK-NEXT:     accel.alu {{{.*}}op = "max", {{.*}}imm = -128
// CHECK-NEXT:     accel.alu {{{.*}}op = "min", {{.*}}imm = 127
// CHECK-NEXT:     accel.token_push {queue = "compute->store"}
// CHECK:          accel.dma_store
// CHECK:          accel.finish
// CHECK:      } {geometry = array<i64: 1, 32, 14, 14, 64, 3, 3, 1, 1>, tiling = array<i64: {{.*}}>, order = "{{weights|inputs}}", virtual_threads = 2 : i64, dram = array<i64: 0, 4096, {{.*}}>} : (tensor<1x32x14x14xi8>, tensor<64x32x3x3xi8>, tensor<64x1x1xi32>, tensor<64x1x1xi32>, tensor<64x1x1xi32>) -> tensor<1x64x14x14xi8>
// CHECK-NEXT: func.return %y

// VT1-LABEL: func.func @conv
// VT1-NOT:   accel.token_push {queue = "compute->load"}
// VT1:       virtual_threads = 1 : i64

// CHECK-LABEL: func.func @dense
// CHECK:      accel.layer %x, %w, %r, %s {
// CHECK:      geometry = array<i64: 4, 256, 1, 1, 100, 1, 1, 1, 0>

// BAD: unfit_layers.mlir:3:3: error: accel.conv2d: strides 1x2 (the accelerator's loops take one stride)
// BAD: unfit_layers.mlir:8:3: error: accel.conv2d: padding [1, 1, 0, 0] (the accelerator pads evenly)
// BAD: unfit_layers.mlir:13:3: error: accel.conv2d: conv2d 16->16 33x33 s1 p0 on 1x40x40 does not fit the accelerator: its smallest tile (1 block, 1 output pixel) needs 2178 inp entries with 2 virtual thread(s), the inp buffer holds 2048 (32768 bytes)
// BAD-NOT: Traceback

func.func @conv(%x: tensor<1x32x14x14xi8>, %w: tensor<64x32x3x3xi8>, %b: tensor<64x1x1xi32>, %r: tensor<64x1x1xi32>, %s: tensor<64x1x1xi32>) -> tensor<1x64x14x14xi8> {
  %y = accel.conv2d %x : tensor<1x32x14x14xi8>, %w : tensor<64x32x3x3xi8> bias %b : tensor<64x1x1xi32> rounding %r : tensor<64x1x1xi32> shift %s : tensor<64x1x1xi32> {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} -> tensor<1x64x14x14xi8>
  func.return %y : tensor<1x64x14x14xi8>
}

// -----

func.func @dense(%x: tensor<4x256xi8>, %w: tensor<100x256xi8>, %r: tensor<100xi32>, %s: tensor<100xi32>) -> tensor<4x100xi8> {
  %y = accel.dense %x : tensor<4x256xi8>, %w : tensor<100x256xi8> rounding %r : tensor<100xi32> shift %s : tensor<100xi32> -> tensor<4x100xi8>
  func.return %y : tensor<4x100xi8>
}
