// RUN: nnvm-opt %s --split-input-file --verify-diagnostics -p convert-gpu-to-llvm

// What a PTX kernel cannot do is reported at the op, before LLVM's NVPTX backend sees it (it
// would abort the process on some of these).

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    "gpu.func"() <{function_type = (memref<4xf64>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf64>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %x = memref.load %a[%t] : memref<4xf64>
      // expected-error @+1 {{convert-gpu-to-llvm: llvm.intr.sin on f64 has no GPU lowering (PTX links no math library)}}
      %y = math.sin %x : f64
      memref.store %y, %a[%t] : memref<4xf64>
      "gpu.return"() : () -> ()
    }) {sym_name = "sine64"} : () -> ()
  }) : () -> ()
}

// -----

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      // expected-error @+1 {{convert-gpu-to-llvm could not lower: gpu.subgroup_size in a GPU kernel}}
      %s = "gpu.subgroup_size"() : () -> index
      %f = arith.index_cast %s : index to i32
      %g = arith.sitofp %f : i32 to f32
      memref.store %g, %a[%t] : memref<4xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "subgroup"} : () -> ()
  }) : () -> ()
}

// -----

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "k"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      // expected-error @+1 {{convert-gpu-to-llvm: a buffer in memory space 5 : i64 is not supported for CUDA (0: the thread's, 3: the block's shared memory)}}
      %s = memref.alloca() : memref<4xf32, 5 : i64>
      "gpu.return"() : () -> ()
    }) {sym_name = "shared"} : () -> ()
  }) : () -> ()
}
