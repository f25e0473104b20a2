/* The wasm side of the entry point: the generated nnvm_graph_run (entry.c, the same glue as the
 * C target's) plus what nnvm.js needs to check and feed it: the model's tables as exported
 * queries, an allocator, and one run call. wasi-libc (malloc, memcpy, the kernels' math) is
 * linked statically and imports nothing. */
#include <stddef.h>
#include <stdint.h>

#include "nnvm_graph.h"

#define EXPORT(name) __attribute__((export_name(#name), visibility("default")))

int nnvm_graph_device_failed(const char *what, const char *kernel, int device) {
  (void)what; (void)kernel; (void)device;
  return 1;
}

/* Every buffer (nnvm.js's and the kernels' scratch) comes from wasi-libc's malloc, the one
 * owner of the heap above __heap_base. */
void *aligned_alloc(size_t align, size_t size);

static const char *last_error = "";

EXPORT(nnvm_wasm_last_error) const char *nnvm_wasm_last_error(void) { return last_error; }

EXPORT(nnvm_wasm_alloc) void *nnvm_wasm_alloc(size_t nbytes) {
  if (nbytes > SIZE_MAX - 63) return 0;
  return aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
}

/* The kernels' heap scratch: they call aligned_alloc(i64, i64) (the lowering's index type),
 * renamed to this by WasmTarget.emit_kernel since libc's takes (i32, i32). Out of memory traps
 * with the reason set: a kernel never writes through a null pointer (address 0 is valid wasm
 * memory). */
void *nnvm_wasm_scratch_alloc(uint64_t align, uint64_t size) {
  void *p = size <= SIZE_MAX ? aligned_alloc((size_t)align, (size_t)size) : 0;
  if (!p) {
    last_error = "out of wasm memory for a kernel's scratch buffer";
    __builtin_trap();
  }
  return p;
}

static const nnvm_tensor_desc *table(int which, int *count) {
  switch (which) {
    case 0: *count = nnvm_graph_num_inputs; return nnvm_graph_inputs;
    case 1: *count = nnvm_graph_num_outputs; return nnvm_graph_outputs;
    default: *count = nnvm_graph_num_params; return nnvm_graph_params;
  }
}

/* which: 0 inputs, 1 outputs, 2 params */
EXPORT(nnvm_wasm_count) int nnvm_wasm_count(int which) {
  int n;
  table(which, &n);
  return n;
}

EXPORT(nnvm_wasm_name) const char *nnvm_wasm_name(int which, int k) {
  int n;
  const nnvm_tensor_desc *t = table(which, &n);
  return k >= 0 && k < n ? t[k].name : 0;
}

EXPORT(nnvm_wasm_dtype) int nnvm_wasm_dtype(int which, int k) {
  int n;
  const nnvm_tensor_desc *t = table(which, &n);
  return k >= 0 && k < n ? t[k].dtype : -1;
}

EXPORT(nnvm_wasm_ndim) int nnvm_wasm_ndim(int which, int k) {
  int n;
  const nnvm_tensor_desc *t = table(which, &n);
  return k >= 0 && k < n ? t[k].ndim : -1;
}

EXPORT(nnvm_wasm_dim) double nnvm_wasm_dim(int which, int k, int d) {
  int n;
  const nnvm_tensor_desc *t = table(which, &n);
  return k >= 0 && k < n && d >= 0 && d < t[k].ndim ? (double)t[k].dims[d] : -1.0;
}

EXPORT(nnvm_wasm_arena_bytes) double nnvm_wasm_arena_bytes(void) {
  return (double)nnvm_graph_arena_bytes;
}

EXPORT(nnvm_wasm_model_hash) const char *nnvm_wasm_model_hash(void) {
  return nnvm_graph_model_hash;
}

EXPORT(nnvm_wasm_target) const char *nnvm_wasm_target(void) { return nnvm_build_target; }

EXPORT(nnvm_wasm_run)
int nnvm_wasm_run(void *const *params, char *arena, const void *const *inputs,
                  void *const *outputs, int first) {
  return nnvm_graph_run(params, arena, inputs, outputs, 0, 0, first);
}
