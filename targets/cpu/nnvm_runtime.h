/* The C ABI of a library built by nnvm (nnvm.compiler.build + export_library); docs/c-api.md.
 *
 * A model library runs a whole compiled graph with no Python: load the params file written by
 * nnvm.compiler.save_param_dict into memory, create a model from it, run it on your buffers.
 *
 *   nnvm_model *m = nnvm_create(blob, blob_size);      // NULL on error: see nnvm_last_error()
 *   const void *inputs[] = {image};                   // graph inputs, in order
 *   void *outputs[] = {scores};                       // caller-owned output buffers
 *   if (nnvm_run(m, inputs, outputs) != 0) puts(nnvm_last_error());
 *   nnvm_destroy(m);
 *
 * Buffers are dense C-order arrays of the shapes and dtypes the model header (or the graph
 * JSON) lists; 64-byte alignment is recommended, not required for inputs and outputs.
 * A model owns its arena and its copy of the weights; one model must not run concurrently on
 * two threads (create one per thread). Parallel kernels use NNVM_NUM_THREADS threads (default:
 * the CPUs this process may use) on the thread pool of nnvm_threads.c, compiled into the library.
 *
 * The library exports only this header's functions (plus the data nnvm's loader reads): its
 * kernels and runtime helpers are hidden and bound inside it, so several model libraries can
 * live in one process (docs/deploy-c.md). nnvm_create refuses, with an error naming the missing
 * features, a CPU that lacks a feature the kernels were compiled for (see nnvm_target()).
 * Tools reach a kernel through nnvm_kernel(name), with the kernel ABI
 *   void fused_<ops>_<hash>(const void *in0, ..., void *out0, ...);
 * so they can time and check kernels one by one.
 */
#ifndef NNVM_RUNTIME_H
#define NNVM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NNVM_ABI_VERSION 3

typedef struct nnvm_model nnvm_model;

/* Create a model from a params blob (the params file's bytes); the blob is copied. NULL when
 * the blob is bad or this CPU lacks a feature the library was built for. */
nnvm_model *nnvm_create(const void *params_blob, size_t size);
/* Create a model that reads the params file's bytes where they are (a file mapped with mmap:
 * shared with the page cache, never copied): checked as nnvm_create checks them, then used in
 * place, so the blob must outlive the model and not change while it runs. */
nnvm_model *nnvm_create_view(const void *params_blob, size_t size);
/* Create a model over params the caller holds: params[i] points to graph param i (the order of
 * the graph JSON's "params"), a dense C-order array of its dtype and shape. Nothing is copied
 * or checked beyond non-NULL: the arrays must outlive the model and not change while it runs.
 * Several models (one per thread) can share them. NULL on a wrong count or this CPU. */
nnvm_model *nnvm_create_bound(const void *const *params, int num_params);
/* Run the graph: inputs[i] and outputs[j] point to caller buffers. 0 on success. */
int nnvm_run(nnvm_model *model, const void *const *inputs, void *const *outputs);
void nnvm_destroy(nnvm_model *model);
/* The last error of this thread ("" when none). */
const char *nnvm_last_error(void);

/* What the library holds. */
int nnvm_abi_version(void);
const char *nnvm_model_hash(void);
const char *nnvm_target(void);
int nnvm_num_inputs(void);
int nnvm_num_outputs(void);
/* Shape and dtype of an input or output: dtype codes are the params file's (0 = float32). */
int nnvm_input_info(int index, const char **name, int *dtype, int *ndim, const int64_t **dims);
int nnvm_output_info(int index, int *dtype, int *ndim, const int64_t **dims);
/* A kernel by name (kernel ABI above), NULL when the library has none of that name; for tools
 * (nnvm's debug runtime), not needed to run a model. */
void *nnvm_kernel(const char *name);

/* Heterogeneous models: kernels placed on a device target (build(..., devices=[...])) run
 * through that device's API, which the host program binds before the first nnvm_run (the
 * Python runtime binds the device target's runtime itself). Device buffers are opaque
 * handles; the model allocates one per device-kernel argument and copies between host and
 * device around each device kernel; params are copied to a device once. */
typedef struct nnvm_device_api {
  void *ctx;
  uint64_t (*alloc)(void *ctx, size_t nbytes); /* 0 on failure */
  void (*release)(void *ctx, uint64_t buffer);
  int (*copy_to_device)(void *ctx, uint64_t dst, const void *src, size_t nbytes);
  int (*copy_from_device)(void *ctx, void *dst, uint64_t src, size_t nbytes);
  /* Run a device kernel over its inputs' then its outputs' buffers; 0 on success. */
  int (*launch)(void *ctx, const char *kernel, const uint64_t *buffers, int count);
} nnvm_device_api;

int nnvm_num_devices(void);
/* The device target of device `index` (its target string, e.g. "toyacc"). */
const char *nnvm_device_name(int index);
/* Bind device `index` of the model to an API (kept by pointer: it must outlive the model). */
int nnvm_bind_device(nnvm_model *model, int index, const nnvm_device_api *api);

#ifdef __cplusplus
}
#endif
#endif
