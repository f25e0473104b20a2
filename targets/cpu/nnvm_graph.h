/* Between the model-independent runtime (nnvm_runtime.c) and the generated entry point
 * (entry.c, written by targets/cpu/entry_point.py for each model): the tables describing the
 * graph and the function that runs it. Not part of the public C ABI. */
#ifndef NNVM_GRAPH_H
#define NNVM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "nnvm_runtime.h"

/* Everything here stays inside one library: hidden, so a second model library in the process
 * can neither interpose on these names nor be bound to them (the linker's version script,
 * targets/cpu/link.py, exports only the C API). */
#pragma GCC visibility push(hidden)

typedef struct {
  const char *name;
  int dtype; /* params file dtype code */
  int ndim;
  const int64_t *dims;
} nnvm_tensor_desc;

extern const nnvm_tensor_desc nnvm_graph_params[];
extern const int nnvm_graph_num_params;
extern const nnvm_tensor_desc nnvm_graph_inputs[];
extern const int nnvm_graph_num_inputs;
extern const nnvm_tensor_desc nnvm_graph_outputs[];
extern const int nnvm_graph_num_outputs;
extern const size_t nnvm_graph_arena_bytes;
extern const char nnvm_graph_model_hash[];
extern const char nnvm_graph_target[];
/* Device targets of the graph, and one buffer per device-kernel argument (bytes, device). */
extern const int nnvm_graph_num_devices;
extern const char *const nnvm_graph_devices[];
extern const int nnvm_graph_num_device_buffers;
extern const size_t nnvm_graph_device_buffer_bytes[];
extern const int nnvm_graph_device_buffer_device[];
/* Runs every kernel in order over params, the arena and the caller's buffers; device kernels
 * through devices[] over the device buffers dbuf[] (params copied only when `first`). Returns 0,
 * or the result of nnvm_graph_device_failed. */
extern int nnvm_graph_run(void *const *params, char *arena, const void *const *inputs,
                          void *const *outputs, const struct nnvm_device_api *const *devices,
                          const uint64_t *dbuf, int first);
/* Every kernel of the graph by name, for nnvm_kernel (fn NULL: a device kernel whose program
 * is a blob, not code in this library). */
typedef struct {
  const char *name;
  void *fn;
} nnvm_kernel_entry;
extern const nnvm_kernel_entry nnvm_graph_kernels[];
extern const int nnvm_graph_num_kernels;
/* Record a failed device call (the runtime's error) and return -1. */
int nnvm_graph_device_failed(const char *what, const char *kernel, int device);

#pragma GCC visibility pop

/* Exported data (for the Python loader, which reads them without running code): */
/* the record of the CPU the kernels were built for, `cpu=...;triple=...;features=+a,+b`; */
extern const char nnvm_build_target[];
/* the thread count parallel kernels read (weak: absent when nothing is parallel). */
extern int32_t nnvm_num_threads __attribute__((weak));

#endif
