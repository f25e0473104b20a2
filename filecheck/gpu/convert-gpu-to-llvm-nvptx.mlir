// RUN: nnvm-opt %s --split-input-file -p lower-te-to-gpu,convert-gpu-to-llvm | filecheck %s

// The kernel of a bound, split axis becomes an llvm.func inside its gpu.module: bare pointer
// buffers, the block and thread indices as NVVM special-register reads zero-extended to i64, the
// tail mask as a branch, and the kernel marks (nvvm.kernel, nvvm.maxntid from the block size).
// The host function keeps its gpu.launch_func.
// CHECK:      "gpu.module"() <{sym_name = "vexp_kernels"}> ({
// CHECK-NEXT:   llvm.func @vexp_y(%x: !llvm.ptr, %out: !llvm.ptr) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {
// CHECK:          %[[B:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"() : () -> i32
// CHECK-NEXT:     %bid_x = llvm.zext %[[B]] : i32 to i64
// CHECK:          %[[T:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK-NEXT:     %tid_x = llvm.zext %[[T]] : i32 to i64
// CHECK-NEXT:     %[[IN:.*]] = llvm.icmp "slt" %tid_x, %{{.*}} : i64
// CHECK-NEXT:     llvm.cond_br %[[IN]], ^bb1, ^bb2
// CHECK:          llvm.getelementptr inbounds %x[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:          llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:          llvm.return
// CHECK-NOT:    math.exp
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

// Two dimensions of blocks and threads; the reduction stays a loop (a back edge) in the kernel.
// CHECK-LABEL: sym_name = "mm_kernels"
// CHECK:        llvm.func @mm_C(%out: !llvm.ptr, %A: !llvm.ptr, %B: !llvm.ptr) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 8, 4, 1>}
// CHECK-DAG:    llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"()
// CHECK-DAG:    llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.y"()
// CHECK-DAG:    llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"()
// CHECK-DAG:    llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.y"()
// CHECK:        llvm.intr.fma
// CHECK:        llvm.br ^bb{{[0-9]+}}
func.func @mm(%A: tensor<20x16xf32>, %B: tensor<16x24xf32>) -> tensor<20x24xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<20x16xf32>, tensor<16x24xf32>) -> tensor<20x24xf32>
  te.schedule {
    te.split "C" i by 4 -> (bi, ti)
    te.split "C" j by 8 -> (bj, tj)
    te.reorder "C" (bi, bj, ti, tj)
    te.bind "C" bi to "blockIdx.y"
    te.bind "C" bj to "blockIdx.x"
    te.bind "C" ti to "threadIdx.y"
    te.bind "C" tj to "threadIdx.x"
  }
  func.return %C : tensor<20x24xf32>
}

// -----

// Every index op of the table, and the block barrier; a kernel without a known block size has
// no nvvm.maxntid.
// CHECK-LABEL: llvm.func @sregs(%a: !llvm.ptr) attributes {nvvm.kernel} {
// CHECK:         llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.y"() : () -> i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.nctaid.z"() : () -> i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.laneid"() : () -> i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
// CHECK-NEXT:    llvm.getelementptr inbounds %a[%t]
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    "gpu.func"() <{function_type = (memref<256xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<256xf32>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %n = "gpu.block_dim"() <{dimension = #gpu<dim y>}> : () -> index
      %g = "gpu.grid_dim"() <{dimension = #gpu<dim z>}> : () -> index
      %l = "gpu.lane_id"() : () -> index
      %s = arith.addi %n, %g : index
      %u = arith.addi %s, %l : index
      %v = arith.index_cast %u : index to i32
      %f = arith.sitofp %v : i32 to f32
      "gpu.barrier"() : () -> ()
      memref.store %f, %a[%t] : memref<256xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "sregs"} : () -> ()
  }) : () -> ()
}

// -----

// f32 sine has no libm on the device: device_math's Cody-Waite reduction and polynomials.
// CHECK-LABEL: llvm.func @sine
// CHECK-NOT:     llvm.intr.sin
// CHECK:         llvm.intr.fma
// CHECK:         llvm.select
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %x = memref.load %a[%t] : memref<4xf32>
      %y = math.sin %x : f32
      memref.store %y, %a[%t] : memref<4xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "sine"} : () -> ()
  }) : () -> ()
}

// -----

// A shared stage's workgroup buffer becomes an internal addr_space 3 global of the kernel (no
// initializer: shared memory has none), reached through addressof; gpu.barrier is bar.sync's
// intrinsic.
// CHECK:      "gpu.module"() <{sym_name = "rowsum_kernels"}> ({
// CHECK-NEXT:   llvm.mlir.global internal @rowsum_y.x.s() {addr_space = 3 : i32, alignment = 64 : i64} : !llvm.array<64 x f32>
// CHECK:        llvm.func @rowsum_y(%out: !llvm.ptr, %x: !llvm.ptr) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 8, 1, 1>} {
// CHECK:          %[[G:.*]] = llvm.mlir.addressof @rowsum_y.x.s : !llvm.ptr
// CHECK-NEXT:     %x.s = llvm.bitcast %[[G]] : !llvm.ptr to !llvm.ptr
// CHECK:          llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
// CHECK:          llvm.getelementptr inbounds %x.s[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:          llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
// CHECK-NOT:    memref.alloca
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
