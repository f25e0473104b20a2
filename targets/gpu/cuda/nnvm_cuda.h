/* The CUDA device runtime for C programs: an nnvm_device_api (nnvm_runtime.h) that runs the
 * kernels a model library built with devices=["cuda -arch=sm_XX"] carries, on an NVIDIA GPU,
 * with no Python. It does what nnvm's Python runtime (targets/gpu/cuda/runtime.py) does,
 * through the CUDA driver API: the device's primary context; blocking copies between host and
 * device; each device kernel's module (`nnvm_blob_<kernel>` in the library: PTX and its launch
 * plan) loaded by the driver's JIT on its first launch, its constants uploaded once and its
 * temporaries allocated once, its plan's launches and copies run, then one cuCtxSynchronize.
 * docs/deploy-c.md shows a whole program.
 *
 *   cc app.c nnvm_cuda.c -I<dir of nnvm_cuda.h> -I<dir of nnvm_gpu_plan.h> -Iout \
 *      -Lout -lmodel -ldl -lpthread
 *
 *   nnvm_device_api gpu;
 *   char err[1024];
 *   for (int d = 0; d < nnvm_num_devices(); ++d) {
 *     int index = nnvm_cuda_device_index(nnvm_device_name(d));   // -1: not a CUDA device
 *     if (index < 0) continue;
 *     if (nnvm_cuda_device_api(dlsym, RTLD_DEFAULT, index, &gpu, err, sizeof err) != 0 ||
 *         nnvm_bind_device(model, d, &gpu) != 0) ...;
 *   }
 *   if (nnvm_run(model, inputs, outputs) != 0)
 *     fprintf(stderr, "%s: %s\n", nnvm_last_error(), nnvm_cuda_last_error());
 *   nnvm_destroy(model);          // releases the model's device buffers through `gpu`
 *   nnvm_cuda_release(&gpu);      // after every model bound to it
 *
 * The program is not linked with libcuda: the runtime opens libcuda.so.1 (the NVIDIA driver's)
 * with dlopen when nnvm_cuda_device_api is called, or the file the environment variable
 * NNVM_LIBCUDA names, so a program built with it starts on a machine with no GPU driver and
 * nnvm_cuda_device_api says so. One API may serve several models, also on several threads
 * (launches are serialized). Each callback makes the device's context current for its
 * duration only (cuCtxPushCurrent / cuCtxPopCurrent): the calling thread's own context, if it
 * has one, is current again afterwards. */
#ifndef NNVM_CUDA_H
#define NNVM_CUDA_H

#include <stddef.h>

#include "nnvm_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the runtime finds a kernel's module: the address of a symbol of the model library, as
 * dlsym(handle, name) returns it (NULL when there is none). It asks for `nnvm_blob_<kernel>`
 * (the bytes) and `nnvm_blob_<kernel>_size` (a `const unsigned long`). Pass dlsym itself with
 * RTLD_DEFAULT for a library the program is linked with, or with the handle dlopen returned;
 * or a function of your own that serves the same two names from elsewhere. */
typedef void *(*nnvm_cuda_symbol_fn)(void *handle, const char *name);

/* Open libcuda (NNVM_LIBCUDA, else libcuda.so.1), initialize it, retain the primary context of
 * CUDA device `device_index` (the driver's ordinal: nnvm's `cuda -device=N`) and fill `*out`
 * with a device API whose modules come from `symbol(handle, ...)`. 0 on success; otherwise
 * non-zero, `*out` zeroed, and the reason in `err` (up to errlen bytes, NUL-terminated; err
 * may be NULL) and in nnvm_cuda_last_error(): no driver, a driver call that failed (its name
 * and CUresult), or no such device. `handle` must stay valid while the API is used. */
int nnvm_cuda_device_api(nnvm_cuda_symbol_fn symbol, void *handle, int device_index,
                         nnvm_device_api *out, char *err, size_t errlen);

/* Free everything the API holds (buffers, modules, temporaries, constants) and release the
 * primary context; zero `*api`. Call it after nnvm_destroy of every model bound to it; NULL
 * or a zeroed API is a no-op. libcuda stays loaded (unloading a driver is not safe). */
void nnvm_cuda_release(nnvm_device_api *api);

/* Why the last call of this runtime on this thread failed ("" when it succeeded): the driver
 * call and its CUresult name (`cuMemAlloc(4096 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (2)`),
 * the JIT's log, a malformed or unsuitable module blob. nnvm_run only says that a device call
 * failed (nnvm_last_error); this says why. */
const char *nnvm_cuda_last_error(void);

/* The CUDA device index of a model's device target (nnvm_device_name(d): "cuda -arch=sm_90",
 * "nvptx -device=1 ..."); -1 when the target is not CUDA or its -device= is malformed. A
 * `-emulate` target gets its index too; its kernels are refused at their first launch. */
int nnvm_cuda_device_index(const char *target);

/* How many CUDA devices this machine has, -1 when there is no driver or it fails (why:
 * nnvm_cuda_last_error). */
int nnvm_cuda_num_devices(void);

#ifdef __cplusplus
}
#endif
#endif
