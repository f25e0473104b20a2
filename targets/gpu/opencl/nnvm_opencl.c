/* The OpenCL device runtime for C programs (nnvm_opencl.h): nnvm's Python OpenCL runtime
 * (targets/gpu/opencl/runtime.py) with no Python, behind the five callbacks of
 * nnvm_device_api. Every OpenCL failure returns non-zero with a message naming the call and
 * its error code (nnvm_opencl_last_error); nothing here aborts.
 *
 * The program blob, a device kernel's OpenCL C and launch plan (JSON), is read by the strict
 * reader of ../nnvm_gpu_plan.h, which the CUDA runtime shares (compile with -I on its folder);
 * a blob with a "format" (a CUDA module's) is an error that names it. That header also holds
 * what does not talk to OpenCL (the kernel table, constants and temporaries made once, the
 * plan's replay, the buffer table, the last error); this file fills in its device hooks.
 *
 * Semantics, as runtime.py: buffers are READ_WRITE and at least 1 byte (a zero-size tensor
 * still gets a buffer; copies of 0 bytes are skipped); copies between host and device block
 * (a read waits for the kernels before it on the in-order queue, so a kernel's failure may
 * surface there); a launch only enqueues. A plan's temporaries are allocated once per kernel
 * and reused by its next launches, its constants uploaded once (READ_ONLY), its program built
 * on the first launch (no build options) and kept; a build that fails is not kept, and its
 * build log is the error. Launch steps set every argument as a buffer in the plan's order and
 * run over global = grid * block, local = block (a global size of 0 launches nothing); copy
 * steps are clEnqueueCopyBuffer. Bool tensors are bytes on both sides: nothing to convert.
 * Launches are serialized by a mutex (kernel objects hold their arguments), so one API can
 * serve several models and threads. */
#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NNVM_GPU_RUNTIME
#define NNVM_GPU_ERROR_BYTES 16384 /* room for a build log */
#include "nnvm_gpu_plan.h"
#include "nnvm_opencl.h"

/* ---- errors ------------------------------------------------------------------------------ */

const char *nnvm_opencl_last_error(void) { return last_error; }

static const char *cl_error_name(cl_int code) {
  switch (code) {
#define NAME(c) \
  case c:       \
    return #c
    NAME(CL_DEVICE_NOT_FOUND);
    NAME(CL_DEVICE_NOT_AVAILABLE);
    NAME(CL_COMPILER_NOT_AVAILABLE);
    NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    NAME(CL_OUT_OF_RESOURCES);
    NAME(CL_OUT_OF_HOST_MEMORY);
    NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
    NAME(CL_MEM_COPY_OVERLAP);
    NAME(CL_IMAGE_FORMAT_MISMATCH);
    NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    NAME(CL_BUILD_PROGRAM_FAILURE);
    NAME(CL_MAP_FAILURE);
    NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    NAME(CL_COMPILE_PROGRAM_FAILURE);
    NAME(CL_LINKER_NOT_AVAILABLE);
    NAME(CL_LINK_PROGRAM_FAILURE);
    NAME(CL_DEVICE_PARTITION_FAILED);
    NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
    NAME(CL_INVALID_VALUE);
    NAME(CL_INVALID_DEVICE_TYPE);
    NAME(CL_INVALID_PLATFORM);
    NAME(CL_INVALID_DEVICE);
    NAME(CL_INVALID_CONTEXT);
    NAME(CL_INVALID_QUEUE_PROPERTIES);
    NAME(CL_INVALID_COMMAND_QUEUE);
    NAME(CL_INVALID_HOST_PTR);
    NAME(CL_INVALID_MEM_OBJECT);
    NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    NAME(CL_INVALID_IMAGE_SIZE);
    NAME(CL_INVALID_SAMPLER);
    NAME(CL_INVALID_BINARY);
    NAME(CL_INVALID_BUILD_OPTIONS);
    NAME(CL_INVALID_PROGRAM);
    NAME(CL_INVALID_PROGRAM_EXECUTABLE);
    NAME(CL_INVALID_KERNEL_NAME);
    NAME(CL_INVALID_KERNEL_DEFINITION);
    NAME(CL_INVALID_KERNEL);
    NAME(CL_INVALID_ARG_INDEX);
    NAME(CL_INVALID_ARG_VALUE);
    NAME(CL_INVALID_ARG_SIZE);
    NAME(CL_INVALID_KERNEL_ARGS);
    NAME(CL_INVALID_WORK_DIMENSION);
    NAME(CL_INVALID_WORK_GROUP_SIZE);
    NAME(CL_INVALID_WORK_ITEM_SIZE);
    NAME(CL_INVALID_GLOBAL_OFFSET);
    NAME(CL_INVALID_EVENT_WAIT_LIST);
    NAME(CL_INVALID_EVENT);
    NAME(CL_INVALID_OPERATION);
    NAME(CL_INVALID_GL_OBJECT);
    NAME(CL_INVALID_BUFFER_SIZE);
    NAME(CL_INVALID_MIP_LEVEL);
    NAME(CL_INVALID_GLOBAL_WORK_SIZE);
    NAME(CL_INVALID_PROPERTY);
    NAME(CL_INVALID_IMAGE_DESCRIPTOR);
    NAME(CL_INVALID_COMPILER_OPTIONS);
    NAME(CL_INVALID_LINKER_OPTIONS);
    NAME(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef NAME
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  default:
    return "an OpenCL error";
  }
}

#define CL_FAILED(what, code) \
  set_error("%s failed: %s (%d)", what, cl_error_name(code), (int)(code))

/* ---- the device -------------------------------------------------------------------------- */

typedef struct {
  gpu_runtime_t rt; /* first: the hooks get it; its lock also serializes the launches */
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
} device_t;

#define MEM(value) ((cl_mem)(uintptr_t)(value))
#define VALUE(mem) ((uint64_t)(uintptr_t)(mem))

/* Every device of every platform, GPUs first (a stable partition: runtime.py's order). */
static int list_devices(cl_device_id **out, cl_uint *count) {
  cl_uint n_platforms = 0, n = 0;
  cl_platform_id *platforms = NULL;
  cl_device_id *devices = NULL;
  *out = NULL;
  *count = 0;
  cl_int rc = clGetPlatformIDs(0, NULL, &n_platforms);
  if (rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (rc == CL_SUCCESS && n_platforms == 0))
    return 0;
  if (rc != CL_SUCCESS) {
    CL_FAILED("clGetPlatformIDs", rc);
    return -1;
  }
  platforms = calloc(n_platforms, sizeof *platforms);
  if (!platforms) goto oom;
  rc = clGetPlatformIDs(n_platforms, platforms, NULL);
  if (rc != CL_SUCCESS) {
    CL_FAILED("clGetPlatformIDs", rc);
    free(platforms);
    return -1;
  }
  for (cl_uint p = 0; p < n_platforms; ++p) {
    cl_uint k = 0;
    rc = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &k);
    if (rc == CL_DEVICE_NOT_FOUND) continue;
    if (rc != CL_SUCCESS) {
      CL_FAILED("clGetDeviceIDs", rc);
      goto fail;
    }
    if (k == 0) continue;
    cl_device_id *grown = realloc(devices, (n + k) * sizeof *devices);
    if (!grown) goto oom;
    devices = grown;
    rc = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, k, devices + n, NULL);
    if (rc != CL_SUCCESS) {
      CL_FAILED("clGetDeviceIDs", rc);
      goto fail;
    }
    n += k;
  }
  free(platforms);
  if (n) {
    cl_device_id *sorted = malloc(n * sizeof *sorted);
    cl_uint k = 0;
    if (!sorted) {
      free(devices);
      set_error("out of memory");
      return -1;
    }
    for (int gpu = 1; gpu >= 0; --gpu) {
      for (cl_uint i = 0; i < n; ++i) {
        cl_device_type type = 0;
        rc = clGetDeviceInfo(devices[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
        if (rc != CL_SUCCESS) {
          CL_FAILED("clGetDeviceInfo(CL_DEVICE_TYPE)", rc);
          free(sorted);
          free(devices);
          return -1;
        }
        if (((type & CL_DEVICE_TYPE_GPU) != 0) == gpu) sorted[k++] = devices[i];
      }
    }
    free(devices);
    devices = sorted;
  }
  *out = devices;
  *count = n;
  return 0;
oom:
  set_error("out of memory");
fail:
  free(platforms);
  free(devices);
  return -1;
}

int nnvm_opencl_num_devices(void) {
  cl_device_id *devices;
  cl_uint n;
  last_error[0] = 0;
  if (list_devices(&devices, &n)) return -1;
  free(devices);
  return (int)n;
}

int nnvm_opencl_device_index(const char *target) {
  static const char *const kinds[] = {"opencl", "cl", NULL};
  return gpu_target_device(target, kinds);
}

/* ---- buffers (the API's callbacks) ------------------------------------------------------- */

static void free_buffer(gpu_runtime_t *rt, uint64_t buffer) {
  (void)rt;
  clReleaseMemObject(MEM(buffer));
}

static uint64_t api_alloc(void *ctx, size_t nbytes) {
  device_t *dev = ctx;
  cl_int rc;
  last_error[0] = 0;
  size_t size = nbytes ? nbytes : 1;
  cl_mem mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, size, NULL, &rc);
  if (rc != CL_SUCCESS || !mem) {
    set_error("clCreateBuffer of %zu bytes failed: %s (%d)", size, cl_error_name(rc), (int)rc);
    return 0;
  }
  return gpu_buffer_add(&dev->rt, VALUE(mem), size);
}

static void api_release(void *ctx, uint64_t handle) {
  device_t *dev = ctx;
  uint64_t mem;
  if (gpu_buffer_take(&dev->rt, handle, &mem)) clReleaseMemObject(MEM(mem));
}

/* The cl_mem of a copy is retained (under the table's lock): the caller releases it. */
static int retain(uint64_t buffer, const char *what) {
  if (clRetainMemObject(MEM(buffer)) == CL_SUCCESS) return 0;
  set_error("%s: clRetainMemObject failed", what);
  return -1;
}

static int api_copy_to_device(void *ctx, uint64_t dst, const void *src, size_t nbytes) {
  device_t *dev = ctx;
  uint64_t mem;
  int go = gpu_copy_begin(src, nbytes, "copy_to_device");
  if (go) return go < 0;
  if (gpu_buffer_get(&dev->rt, dst, nbytes, "copy_to_device", retain, &mem)) return 1;
  cl_int rc = clEnqueueWriteBuffer(dev->queue, MEM(mem), CL_TRUE, 0, nbytes, src, 0, NULL, NULL);
  clReleaseMemObject(MEM(mem));
  if (rc != CL_SUCCESS) {
    CL_FAILED("copy_to_device: clEnqueueWriteBuffer", rc);
    return 1;
  }
  return 0;
}

static int api_copy_from_device(void *ctx, void *dst, uint64_t src, size_t nbytes) {
  device_t *dev = ctx;
  uint64_t mem;
  int go = gpu_copy_begin(dst, nbytes, "copy_from_device");
  if (go) return go < 0;
  if (gpu_buffer_get(&dev->rt, src, nbytes, "copy_from_device", retain, &mem)) return 1;
  /* blocking: waits for the kernels enqueued before it, whose failures may show here */
  cl_int rc = clEnqueueReadBuffer(dev->queue, MEM(mem), CL_TRUE, 0, nbytes, dst, 0, NULL, NULL);
  clReleaseMemObject(MEM(mem));
  if (rc != CL_SUCCESS) {
    CL_FAILED("copy_from_device: clEnqueueReadBuffer (or a kernel before it)", rc);
    return 1;
  }
  return 0;
}

/* ---- kernels (the hooks of gpu_load and gpu_run_plan) ------------------------------------ */

static int check(gpu_runtime_t *rt, const char *kernel, const plan_t *p, size_t launches) {
  (void)rt;
  (void)launches;
  if (p->format) {
    set_error("kernel %s: its program is a %s blob, not OpenCL C (built for another device "
              "target: bind that target's runtime to this device)",
              kernel, p->format);
    return -1;
  }
  return 0;
}

static int build_program(device_t *dev, gpu_kernel_t *l) {
  cl_int rc;
  const char *code = l->plan.code;
  size_t len = l->plan.code_len;
  cl_program program = clCreateProgramWithSource(dev->context, 1, &code, &len, &rc);
  if (rc != CL_SUCCESS || !program) {
    set_error("kernel %s: clCreateProgramWithSource failed: %s (%d)", l->name,
              cl_error_name(rc), (int)rc);
    return -1;
  }
  l->code = program;
  rc = clBuildProgram(program, 1, &dev->device, "", NULL, NULL);
  if (rc == CL_SUCCESS) return 0;
  int n = snprintf(last_error, sizeof last_error,
                   "kernel %s: clBuildProgram failed: %s (%d); build log:\n", l->name,
                   cl_error_name(rc), (int)rc);
  size_t log_size = 0;
  if (n > 0 && (size_t)n < sizeof last_error - 1 &&
      clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size) ==
          CL_SUCCESS &&
      log_size > 0) {
    char *log = malloc(log_size + 1);
    if (log && clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, log_size, log,
                                     NULL) == CL_SUCCESS) {
      log[log_size] = 0;
      snprintf(last_error + n, sizeof last_error - (size_t)n, "%s", log);
    }
    free(log);
  }
  return -1;
}

/* The program (built with no options) and a cl_kernel for each launch step. */
static int build(gpu_runtime_t *rt, gpu_kernel_t *l, size_t launches) {
  device_t *dev = (device_t *)rt;
  cl_int rc;
  (void)launches;
  if (build_program(dev, l)) return -1;
  for (size_t i = 0; i < l->plan.n_steps; ++i) {
    step_t *st = &l->plan.steps[i];
    if (st->is_copy) continue;
    cl_kernel k = clCreateKernel((cl_program)l->code, st->kernel, &rc);
    if (rc != CL_SUCCESS || !k) {
      set_error("kernel %s: clCreateKernel(\"%s\") failed: %s (%d)", l->name, st->kernel,
                cl_error_name(rc), (int)rc);
      return -1;
    }
    st->fn = k;
  }
  return 0;
}

static int upload_const(gpu_runtime_t *rt, const char *kernel, size_t i, const void *data,
                        size_t n, uint64_t *out) {
  device_t *dev = (device_t *)rt;
  cl_int rc;
  cl_mem mem = n ? clCreateBuffer(dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n,
                                  (void *)data, &rc)
                 : clCreateBuffer(dev->context, CL_MEM_READ_ONLY, 1, NULL, &rc);
  if (rc != CL_SUCCESS || !mem) {
    set_error("kernel %s: clCreateBuffer of constant %zu (%zu bytes) failed: %s (%d)", kernel, i,
              n, cl_error_name(rc), (int)rc);
    return -1;
  }
  *out = VALUE(mem);
  return 0;
}

static int alloc_temp(gpu_runtime_t *rt, const char *kernel, size_t i, size_t n, uint64_t *out) {
  device_t *dev = (device_t *)rt;
  cl_int rc;
  cl_mem mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, n, NULL, &rc);
  if (rc != CL_SUCCESS || !mem) {
    set_error("kernel %s: clCreateBuffer of temporary %zu (%zu bytes) failed: %s (%d)", kernel,
              i, n, cl_error_name(rc), (int)rc);
    return -1;
  }
  *out = VALUE(mem);
  return 0;
}

static void free_code(gpu_runtime_t *rt, gpu_kernel_t *l) {
  (void)rt;
  for (size_t i = 0; i < l->plan.n_steps; ++i)
    if (l->plan.steps[i].fn) clReleaseKernel((cl_kernel)l->plan.steps[i].fn);
  if (l->code) clReleaseProgram((cl_program)l->code); /* after its kernels */
}

static int copy(gpu_runtime_t *rt, gpu_kernel_t *l, size_t step, uint64_t dst, uint64_t src,
                size_t nbytes) {
  device_t *dev = (device_t *)rt;
  cl_int rc = clEnqueueCopyBuffer(dev->queue, MEM(src), MEM(dst), 0, 0, nbytes, 0, NULL, NULL);
  if (rc != CL_SUCCESS) {
    set_error("kernel %s: step %zu: clEnqueueCopyBuffer failed: %s (%d)", l->name, step,
              cl_error_name(rc), (int)rc);
    return -1;
  }
  return 0;
}

/* Every argument a buffer, in the plan's order; global = grid * block, local = block. */
static int launch(gpu_runtime_t *rt, gpu_kernel_t *l, const step_t *st) {
  device_t *dev = (device_t *)rt;
  cl_int rc;
  for (size_t a = 0; a < st->n_args; ++a) {
    cl_mem mem = MEM(l->values[a]);
    rc = clSetKernelArg((cl_kernel)st->fn, (cl_uint)a, sizeof mem, &mem);
    if (rc != CL_SUCCESS) {
      set_error("kernel %s: clSetKernelArg(%s, %zu) failed: %s (%d)", l->name, st->kernel, a,
                cl_error_name(rc), (int)rc);
      return -1;
    }
  }
  size_t global[3];
  int empty = 0;
  for (unsigned d = 0; d < 3; ++d) {
    global[d] = st->grid[d] * st->block[d]; /* the reader checked it does not overflow */
    empty |= global[d] == 0;
  }
  if (empty) return 0; /* no work-items: nothing to run */
  rc = clEnqueueNDRangeKernel(dev->queue, (cl_kernel)st->fn, st->dims, NULL, global, st->block,
                              0, NULL, NULL);
  if (rc != CL_SUCCESS) {
    set_error("kernel %s: clEnqueueNDRangeKernel(%s, global %zux%zux%zu, local %zux%zux%zu) "
              "failed: %s (%d)",
              l->name, st->kernel, global[0], global[1], global[2], st->block[0], st->block[1],
              st->block[2], cl_error_name(rc), (int)rc);
    return -1;
  }
  return 0;
}

static const gpu_ops_t ops = {check,     build, upload_const, alloc_temp, free_buffer,
                              free_code, copy,  launch,       NULL};

static int api_launch(void *ctx, const char *kernel, const uint64_t *buffers, int count) {
  device_t *dev = ctx;
  if (gpu_launch_begin(kernel, buffers, count)) return 1;
  pthread_mutex_lock(&dev->rt.lock); /* the buffer table and the kernels */
  int failed = gpu_launch(&dev->rt, kernel, buffers, count, 1);
  pthread_mutex_unlock(&dev->rt.lock);
  return failed;
}

/* ---- the API ----------------------------------------------------------------------------- */

static void device_free(device_t *dev) {
  if (dev->queue) clFinish(dev->queue);
  gpu_free_kernels_and_buffers(&dev->rt);
  table_free(&dev->rt.buffers);
  if (dev->queue) clReleaseCommandQueue(dev->queue);
  if (dev->context) clReleaseContext(dev->context);
  pthread_mutex_destroy(&dev->rt.lock);
  free(dev);
}

int nnvm_opencl_device_api(nnvm_opencl_symbol_fn symbol, void *handle, int device_index,
                           nnvm_device_api *out, char *err, size_t errlen) {
  cl_device_id *devices = NULL;
  cl_uint n = 0;
  cl_int rc;
  device_t *dev = NULL;
  last_error[0] = 0;
  if (out) memset(out, 0, sizeof *out);
  if (!out || !symbol) {
    set_error("nnvm_opencl_device_api: `out` and `symbol` must not be NULL");
    goto fail;
  }
  if (list_devices(&devices, &n)) goto fail;
  if (device_index < 0 || (cl_uint)device_index >= n) {
    set_error("no OpenCL device %d: %u found (install an OpenCL driver, e.g. pocl-opencl-icd)",
              device_index, (unsigned)n);
    goto fail;
  }
  dev = calloc(1, sizeof *dev);
  if (!dev || pthread_mutex_init(&dev->rt.lock, NULL) != 0) {
    free(dev);
    dev = NULL;
    set_error("nnvm_opencl_device_api: out of memory");
    goto fail;
  }
  dev->rt.ops = &ops;
  dev->device = devices[device_index];
  dev->rt.symbol = symbol;
  dev->rt.handle = handle;
  dev->context = clCreateContext(NULL, 1, &dev->device, NULL, NULL, &rc);
  if (rc != CL_SUCCESS || !dev->context) {
    dev->context = NULL;
    CL_FAILED("clCreateContext", rc);
    goto fail;
  }
  dev->queue = clCreateCommandQueue(dev->context, dev->device, 0, &rc); /* in order */
  if (rc != CL_SUCCESS || !dev->queue) {
    dev->queue = NULL;
    CL_FAILED("clCreateCommandQueue", rc);
    goto fail;
  }
  free(devices);
  GPU_FILL_API(out, dev);
  return 0;
fail:
  free(devices);
  if (dev) device_free(dev);
  if (err && errlen) snprintf(err, errlen, "%s", last_error);
  return 1;
}

void nnvm_opencl_release(nnvm_device_api *api) {
  if (!api || !api->ctx || api->launch != api_launch) return;
  device_free(api->ctx);
  memset(api, 0, sizeof *api);
}
