/* The OpenCL device runtime for C programs (nnvm_opencl.h): nnvm's Python OpenCL runtime
 * (targets/gpu/opencl/runtime.py) with no Python, behind the five callbacks of
 * nnvm_device_api. Every OpenCL failure returns non-zero with a message naming the call and
 * its error code (nnvm_opencl_last_error); nothing here aborts.
 *
 * The program blob, a device kernel's OpenCL C and launch plan (JSON), is read by the strict
 * reader of ../nnvm_gpu_plan.h, which the CUDA runtime shares (compile with -I on its folder);
 * a blob with a "format" (a CUDA module's) is an error that names it.
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

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnvm_gpu_plan.h"
#include "nnvm_opencl.h"

/* ---- errors ------------------------------------------------------------------------------ */

static __thread char last_error[16384]; /* room for a build log */

static void set_error(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, args);
  va_end(args);
}

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

typedef struct loaded {
  char *name;
  plan_t plan;
  cl_program program;
  cl_mem *temps, *consts;
  struct loaded *next;
} loaded_t;

#define BUCKETS 256

typedef struct {
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  nnvm_opencl_symbol_fn symbol;
  void *handle;
  pthread_mutex_t lock; /* the buffer table and the kernels */
  table_t buffers;      /* handle -> cl_mem */
  loaded_t *kernels[BUCKETS];
} device_t;

static void loaded_free(loaded_t *l) {
  for (size_t i = 0; i < l->plan.n_temps; ++i)
    if (l->temps && l->temps[i]) clReleaseMemObject(l->temps[i]);
  for (size_t i = 0; i < l->plan.n_consts; ++i)
    if (l->consts && l->consts[i]) clReleaseMemObject(l->consts[i]);
  for (size_t i = 0; i < l->plan.n_steps; ++i)
    if (l->plan.steps[i].fn) clReleaseKernel((cl_kernel)l->plan.steps[i].fn);
  plan_free(&l->plan); /* kernels before their program */
  if (l->program) clReleaseProgram(l->program);
  free(l->temps);
  free(l->consts);
  free(l->name);
  free(l);
}

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

#define MEM(value) ((cl_mem)(uintptr_t)(value))

/* The buffer of a handle (with the lock held), or NULL with an error. */
static slot_t *buffer_of(device_t *dev, uint64_t handle, const char *what) {
  slot_t *s = table_get(&dev->buffers, handle);
  if (!s) set_error("%s: no buffer %llu on this device", what, (unsigned long long)handle);
  return s;
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
  pthread_mutex_lock(&dev->lock);
  uint64_t handle = table_add(&dev->buffers, (uint64_t)(uintptr_t)mem, size);
  pthread_mutex_unlock(&dev->lock);
  if (!handle) {
    clReleaseMemObject(mem);
    set_error("alloc: out of memory");
  }
  return handle;
}

static void api_release(void *ctx, uint64_t handle) {
  device_t *dev = ctx;
  uint64_t mem;
  pthread_mutex_lock(&dev->lock);
  int live = table_remove(&dev->buffers, handle, &mem) == 0;
  pthread_mutex_unlock(&dev->lock);
  if (live) clReleaseMemObject(MEM(mem));
}

/* The cl_mem of a handle holding at least nbytes (retained: the caller releases it). */
static cl_mem copy_target(device_t *dev, uint64_t handle, size_t nbytes, const char *what) {
  pthread_mutex_lock(&dev->lock);
  slot_t *b = buffer_of(dev, handle, what);
  cl_mem mem = NULL;
  if (b && nbytes > b->size)
    set_error("%s: %zu bytes do not fit buffer %llu (%zu bytes)", what, nbytes,
              (unsigned long long)handle, b->size);
  else if (b && clRetainMemObject(MEM(b->value)) == CL_SUCCESS)
    mem = MEM(b->value);
  else if (b)
    set_error("%s: clRetainMemObject failed", what);
  pthread_mutex_unlock(&dev->lock);
  return mem;
}

static int api_copy_to_device(void *ctx, uint64_t dst, const void *src, size_t nbytes) {
  device_t *dev = ctx;
  last_error[0] = 0;
  if (nbytes == 0) return 0;
  if (!src) {
    set_error("copy_to_device: the host buffer is NULL");
    return 1;
  }
  cl_mem mem = copy_target(dev, dst, nbytes, "copy_to_device");
  if (!mem) return 1;
  cl_int rc = clEnqueueWriteBuffer(dev->queue, mem, CL_TRUE, 0, nbytes, src, 0, NULL, NULL);
  clReleaseMemObject(mem);
  if (rc != CL_SUCCESS) {
    CL_FAILED("copy_to_device: clEnqueueWriteBuffer", rc);
    return 1;
  }
  return 0;
}

static int api_copy_from_device(void *ctx, void *dst, uint64_t src, size_t nbytes) {
  device_t *dev = ctx;
  last_error[0] = 0;
  if (nbytes == 0) return 0;
  if (!dst) {
    set_error("copy_from_device: the host buffer is NULL");
    return 1;
  }
  cl_mem mem = copy_target(dev, src, nbytes, "copy_from_device");
  if (!mem) return 1;
  /* blocking: waits for the kernels enqueued before it, whose failures may show here */
  cl_int rc = clEnqueueReadBuffer(dev->queue, mem, CL_TRUE, 0, nbytes, dst, 0, NULL, NULL);
  clReleaseMemObject(mem);
  if (rc != CL_SUCCESS) {
    CL_FAILED("copy_from_device: clEnqueueReadBuffer (or a kernel before it)", rc);
    return 1;
  }
  return 0;
}

/* ---- kernels ----------------------------------------------------------------------------- */

static size_t bucket_of(const char *name) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)name; *p; ++p) h = (h ^ *p) * 16777619u;
  return h % BUCKETS;
}

static int build_program(device_t *dev, loaded_t *l) {
  cl_int rc;
  const char *code = l->plan.code;
  size_t len = l->plan.code_len;
  l->program = clCreateProgramWithSource(dev->context, 1, &code, &len, &rc);
  if (rc != CL_SUCCESS || !l->program) {
    l->program = NULL;
    set_error("kernel %s: clCreateProgramWithSource failed: %s (%d)", l->name,
              cl_error_name(rc), (int)rc);
    return -1;
  }
  rc = clBuildProgram(l->program, 1, &dev->device, "", NULL, NULL);
  if (rc == CL_SUCCESS) return 0;
  int n = snprintf(last_error, sizeof last_error,
                   "kernel %s: clBuildProgram failed: %s (%d); build log:\n", l->name,
                   cl_error_name(rc), (int)rc);
  size_t log_size = 0;
  if (n > 0 && (size_t)n < sizeof last_error - 1 &&
      clGetProgramBuildInfo(l->program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size) ==
          CL_SUCCESS &&
      log_size > 0) {
    char *log = malloc(log_size + 1);
    if (log && clGetProgramBuildInfo(l->program, dev->device, CL_PROGRAM_BUILD_LOG, log_size,
                                     log, NULL) == CL_SUCCESS) {
      log[log_size] = 0;
      snprintf(last_error + n, sizeof last_error - (size_t)n, "%s", log);
    }
    free(log);
  }
  return -1;
}

/* Read, parse and build a kernel's program on its first launch (with the lock held). */
static loaded_t *load(device_t *dev, const char *kernel) {
  size_t b = bucket_of(kernel);
  for (loaded_t *l = dev->kernels[b]; l; l = l->next)
    if (strcmp(l->name, kernel) == 0) return l;

  const unsigned char *data;
  size_t size, name_len = strlen(kernel);
  char msg[256];
  if (plan_lookup(dev->symbol, dev->handle, kernel, &data, &size, msg, sizeof msg)) {
    set_error("%s", msg);
    return NULL;
  }
  loaded_t *l = calloc(1, sizeof *l);
  if (!l || !(l->name = malloc(name_len + 1))) {
    free(l);
    set_error("kernel %s: out of memory", kernel);
    return NULL;
  }
  memcpy(l->name, kernel, name_len + 1);
  jvalue root;
  if (json_parse(data, size, &root, msg, sizeof msg)) {
    set_error("kernel %s: its program (nnvm_blob_%s, %zu bytes) is not JSON: %s", kernel,
              kernel, size, msg);
    loaded_free(l);
    return NULL;
  }
  int bad = plan_of(&root, &l->plan, msg, sizeof msg);
  jfree(&root);
  if (bad) {
    set_error("kernel %s: its program (nnvm_blob_%s) is not a launch plan: %s", kernel, kernel,
              msg);
    loaded_free(l);
    return NULL;
  }
  if (l->plan.format) {
    set_error("kernel %s: its program is a %s blob, not OpenCL C (built for another device "
              "target: bind that target's runtime to this device)",
              kernel, l->plan.format);
    loaded_free(l);
    return NULL;
  }
  if (build_program(dev, l)) {
    loaded_free(l);
    return NULL;
  }
  cl_int rc;
  plan_t *p = &l->plan;
  for (size_t i = 0; i < p->n_steps; ++i) {
    step_t *st = &p->steps[i];
    if (st->is_copy) continue;
    cl_kernel k = clCreateKernel(l->program, st->kernel, &rc);
    if (rc != CL_SUCCESS || !k) {
      set_error("kernel %s: clCreateKernel(\"%s\") failed: %s (%d)", kernel, st->kernel,
                cl_error_name(rc), (int)rc);
      loaded_free(l);
      return NULL;
    }
    st->fn = k;
  }
  l->consts = calloc(p->n_consts ? p->n_consts : 1, sizeof *l->consts);
  l->temps = calloc(p->n_temps ? p->n_temps : 1, sizeof *l->temps);
  if (!l->consts || !l->temps) {
    set_error("kernel %s: out of memory", kernel);
    loaded_free(l);
    return NULL;
  }
  for (size_t i = 0; i < p->n_consts; ++i) {
    size_t n = p->const_sizes[i];
    l->consts[i] =
        n ? clCreateBuffer(dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n,
                           p->consts[i], &rc)
          : clCreateBuffer(dev->context, CL_MEM_READ_ONLY, 1, NULL, &rc);
    if (rc != CL_SUCCESS || !l->consts[i]) {
      l->consts[i] = NULL;
      set_error("kernel %s: clCreateBuffer of constant %zu (%zu bytes) failed: %s (%d)", kernel,
                i, n, cl_error_name(rc), (int)rc);
      loaded_free(l);
      return NULL;
    }
    free(p->consts[i]); /* uploaded: the host copy is not needed again */
    p->consts[i] = NULL;
  }
  for (size_t i = 0; i < p->n_temps; ++i) {
    size_t n = p->temps[i] ? p->temps[i] : 1;
    l->temps[i] = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, n, NULL, &rc);
    if (rc != CL_SUCCESS || !l->temps[i]) {
      l->temps[i] = NULL;
      set_error("kernel %s: clCreateBuffer of temporary %zu (%zu bytes) failed: %s (%d)",
                kernel, i, n, cl_error_name(rc), (int)rc);
      loaded_free(l);
      return NULL;
    }
  }
  free(p->code); /* built */
  p->code = NULL;
  l->next = dev->kernels[b];
  dev->kernels[b] = l;
  return l;
}

static cl_mem ref_mem(const loaded_t *l, cl_mem *args, ref_t r, size_t *size,
                      const size_t *arg_sizes) {
  switch (r.kind) {
  case REF_ARG:
    *size = arg_sizes[r.index];
    return args[r.index];
  case REF_TEMP:
    *size = l->plan.temps[r.index] ? l->plan.temps[r.index] : 1;
    return l->temps[r.index];
  default:
    *size = l->plan.const_sizes[r.index] ? l->plan.const_sizes[r.index] : 1;
    return l->consts[r.index];
  }
}

static int run_plan(device_t *dev, loaded_t *l, cl_mem *args, const size_t *arg_sizes) {
  cl_int rc;
  for (size_t i = 0; i < l->plan.n_steps; ++i) {
    step_t *st = &l->plan.steps[i];
    size_t size;
    if (st->is_copy) {
      if (st->nbytes == 0) continue;
      size_t src_size, dst_size;
      cl_mem src = ref_mem(l, args, st->src, &src_size, arg_sizes);
      cl_mem dst = ref_mem(l, args, st->dst, &dst_size, arg_sizes);
      if (st->nbytes > src_size || st->nbytes > dst_size) {
        set_error("kernel %s: step %zu copies %zu bytes between buffers of %zu and %zu bytes",
                  l->name, i, st->nbytes, src_size, dst_size);
        return -1;
      }
      rc = clEnqueueCopyBuffer(dev->queue, src, dst, 0, 0, st->nbytes, 0, NULL, NULL);
      if (rc != CL_SUCCESS) {
        set_error("kernel %s: step %zu: clEnqueueCopyBuffer failed: %s (%d)", l->name, i,
                  cl_error_name(rc), (int)rc);
        return -1;
      }
      continue;
    }
    for (size_t a = 0; a < st->n_args; ++a) {
      cl_mem mem = ref_mem(l, args, st->args[a], &size, arg_sizes);
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
    if (empty) continue; /* no work-items: nothing to run */
    rc = clEnqueueNDRangeKernel(dev->queue, (cl_kernel)st->fn, st->dims, NULL, global, st->block,
                                0, NULL, NULL);
    if (rc != CL_SUCCESS) {
      set_error("kernel %s: clEnqueueNDRangeKernel(%s, global %zux%zux%zu, local %zux%zux%zu) "
                "failed: %s (%d)",
                l->name, st->kernel, global[0], global[1], global[2], st->block[0],
                st->block[1], st->block[2], cl_error_name(rc), (int)rc);
      return -1;
    }
  }
  return 0;
}

static int api_launch(void *ctx, const char *kernel, const uint64_t *buffers, int count) {
  device_t *dev = ctx;
  last_error[0] = 0;
  if (!kernel || count < 0 || (count > 0 && !buffers)) {
    set_error("launch: bad kernel name or buffers");
    return 1;
  }
  pthread_mutex_lock(&dev->lock);
  int failed = 1;
  cl_mem *args = NULL;
  size_t *sizes = NULL;
  loaded_t *l = load(dev, kernel);
  if (!l) goto done;
  if ((size_t)count != l->plan.n_args) {
    set_error("kernel %s takes %zu buffers, got %d", kernel, l->plan.n_args, count);
    goto done;
  }
  args = malloc((count ? (size_t)count : 1) * sizeof *args);
  sizes = malloc((count ? (size_t)count : 1) * sizeof *sizes);
  if (!args || !sizes) {
    set_error("kernel %s: out of memory", kernel);
    goto done;
  }
  for (int i = 0; i < count; ++i) {
    slot_t *b = buffer_of(dev, buffers[i], "launch");
    if (!b) goto done;
    args[i] = MEM(b->value);
    sizes[i] = b->size;
  }
  failed = run_plan(dev, l, args, sizes) ? 1 : 0;
done:
  pthread_mutex_unlock(&dev->lock);
  free(args);
  free(sizes);
  return failed;
}

/* ---- the API ----------------------------------------------------------------------------- */

static void device_free(device_t *dev) {
  if (dev->queue) clFinish(dev->queue);
  for (size_t b = 0; b < BUCKETS; ++b) {
    while (dev->kernels[b]) {
      loaded_t *next = dev->kernels[b]->next;
      loaded_free(dev->kernels[b]);
      dev->kernels[b] = next;
    }
  }
  for (size_t i = 0; i < dev->buffers.n; ++i)
    if (dev->buffers.slots[i].used) clReleaseMemObject(MEM(dev->buffers.slots[i].value));
  table_free(&dev->buffers);
  if (dev->queue) clReleaseCommandQueue(dev->queue);
  if (dev->context) clReleaseContext(dev->context);
  pthread_mutex_destroy(&dev->lock);
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
  if (!dev || pthread_mutex_init(&dev->lock, NULL) != 0) {
    free(dev);
    dev = NULL;
    set_error("nnvm_opencl_device_api: out of memory");
    goto fail;
  }
  dev->device = devices[device_index];
  dev->symbol = symbol;
  dev->handle = handle;
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
  out->ctx = dev;
  out->alloc = api_alloc;
  out->release = api_release;
  out->copy_to_device = api_copy_to_device;
  out->copy_from_device = api_copy_from_device;
  out->launch = api_launch;
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
