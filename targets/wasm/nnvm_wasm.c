/* The wasm side of the entry point: the generated nnvm_graph_run (entry.c, the same glue as the
 * C target's) plus what nnvm.js needs to check and feed it: the model's tables as exported
 * queries, a bump allocator over the exported memory, and one run call. No libc beyond
 * memcpy/memset and the math the kernels call (wasi-libc's, linked statically, no imports). */
#include <stddef.h>
#include <stdint.h>

#include "nnvm_graph.h"

#define EXPORT(name) __attribute__((export_name(#name), visibility("default")))

int nnvm_graph_device_failed(const char *what, const char *kernel, int device) {
  (void)what; (void)kernel; (void)device;
  return 1;
}

extern unsigned char __heap_base;
static uintptr_t heap_top = 0;

EXPORT(nnvm_wasm_alloc) void *nnvm_wasm_alloc(size_t nbytes) {
  if (!heap_top) heap_top = (uintptr_t)&__heap_base;
  uintptr_t start = (heap_top + 63) & ~(uintptr_t)63;
  uintptr_t end = start + nbytes;
  size_t have = __builtin_wasm_memory_size(0) * 65536u;
  if (end > have) {
    size_t pages = (end - have + 65535u) / 65536u;
    if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return 0;
  }
  heap_top = end;
  return (void *)start;
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
