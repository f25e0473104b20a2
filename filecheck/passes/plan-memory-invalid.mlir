// plan-memory on a function that is not at graph level (memrefs) is a located error, not a
// crash (found by the IR fuzzer, tests/reliability/test_fuzz_ir.py).
// RUN: nnvm-opt %s --verify-diagnostics -p plan-memory

func.func @alloc() {
  // expected-error @+1 {{plan-memory plans the tensors of graph functions; memref.alloc in @alloc gives memref<10x10xf32> (run it before bufferizing lowerings)}}
  %m = memref.alloc() : memref<10x10xf32>
  func.return
}
