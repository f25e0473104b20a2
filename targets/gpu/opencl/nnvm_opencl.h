/* The OpenCL device runtime for C programs: an nnvm_device_api (nnvm_runtime.h) that runs the
 * kernels a model library built with devices=["opencl"] carries, with no Python. It does what
 * nnvm's Python runtime (targets/gpu/opencl/runtime.py) does: one device, one context, one
 * in-order queue; blocking copies between host and device; each device kernel's program
 * (`nnvm_blob_<kernel>` in the library: OpenCL C and its launch plan) read and built on its
 * first launch, its constants uploaded once and its temporaries allocated once, its plan's
 * launches and copies enqueued without waiting. docs/deploy-c.md shows a whole program.
 *
 *   cc app.c nnvm_opencl.c -I<dir of nnvm_opencl.h> -I<dir of nnvm_gpu_plan.h> \
 *      -I<dir of nnvm_runtime.h> -Lout -lmodel -lOpenCL -ldl
 *
 *   nnvm_device_api cl;
 *   char err[1024];
 *   for (int d = 0; d < nnvm_num_devices(); ++d) {
 *     int index = nnvm_opencl_device_index(nnvm_device_name(d));   // -1: not an OpenCL device
 *     if (index < 0) continue;
 *     if (nnvm_opencl_device_api(dlsym, RTLD_DEFAULT, index, &cl, err, sizeof err) != 0 ||
 *         nnvm_bind_device(model, d, &cl) != 0) ...;
 *   }
 *   if (nnvm_run(model, inputs, outputs) != 0)
 *     fprintf(stderr, "%s: %s\n", nnvm_last_error(), nnvm_opencl_last_error());
 *   nnvm_destroy(model);          // releases the model's device buffers through `cl`
 *   nnvm_opencl_release(&cl);     // after every model bound to it
 *
 * Only libOpenCL (an ICD loader such as ocl-icd) is needed; this file uses no other library.
 * One API may serve several models, also on several threads (launches are serialized). */
#ifndef NNVM_OPENCL_H
#define NNVM_OPENCL_H

#include <stddef.h>

#include "nnvm_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the runtime finds a kernel's program: the address of a symbol of the model library, as
 * dlsym(handle, name) returns it (NULL when there is none). It asks for `nnvm_blob_<kernel>`
 * (the bytes) and `nnvm_blob_<kernel>_size` (a `const unsigned long`). Pass dlsym itself with
 * RTLD_DEFAULT for a library the program is linked with, or with the handle dlopen returned;
 * or a function of your own that serves the same two names from elsewhere. */
typedef void *(*nnvm_opencl_symbol_fn)(void *handle, const char *name);

/* Open OpenCL device `device_index` (every device of every platform, GPUs first: the order of
 * nnvm's `opencl -device=N`), create its context and queue, and fill `*out` with a device API
 * whose programs come from `symbol(handle, ...)`. 0 on success; otherwise non-zero, `*out`
 * zeroed, and the reason in `err` (up to errlen bytes, NUL-terminated; err may be NULL) and in
 * nnvm_opencl_last_error(). `handle` must stay valid while the API is used. */
int nnvm_opencl_device_api(nnvm_opencl_symbol_fn symbol, void *handle, int device_index,
                           nnvm_device_api *out, char *err, size_t errlen);

/* Free everything the API holds (buffers, programs, queue, context) and zero `*api`. Call it
 * after nnvm_destroy of every model bound to it; NULL or a zeroed API is a no-op. */
void nnvm_opencl_release(nnvm_device_api *api);

/* Why the last call of this runtime on this thread failed ("" when it succeeded): which
 * OpenCL call and its error code, a malformed program blob, or a build log. nnvm_run only
 * says that a device call failed (nnvm_last_error); this says why. */
const char *nnvm_opencl_last_error(void);

/* The OpenCL device index of a model's device target (nnvm_device_name(d): "opencl",
 * "opencl -device=1 ..."); -1 when the target is not OpenCL or its -device= is malformed. */
int nnvm_opencl_device_index(const char *target);

/* How many OpenCL devices this machine has (0 with no platform), -1 on an OpenCL error. */
int nnvm_opencl_num_devices(void);

#ifdef __cplusplus
}
#endif
#endif
