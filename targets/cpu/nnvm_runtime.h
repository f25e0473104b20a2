/* The C ABI of a library built by nnvm (nnvm.compiler.build + export_library).
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
 * all CPUs) through libgomp.
 *
 * Every kernel is also exported by name with the kernel ABI
 *   void fused_<ops>_<hash>(const void *in0, ..., void *out0, ...);
 * so tools can time and check kernels one by one.
 */
#ifndef NNVM_RUNTIME_H
#define NNVM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NNVM_ABI_VERSION 1

typedef struct nnvm_model nnvm_model;

/* Create a model from a params blob (the params file's bytes); the blob is copied. */
nnvm_model *nnvm_create(const void *params_blob, size_t size);
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

#ifdef __cplusplus
}
#endif
#endif
