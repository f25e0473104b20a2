/* The CUDA device runtime for C programs (nnvm_cuda.h): nnvm's Python CUDA runtime
 * (targets/gpu/cuda/runtime.py, driver.py) with no Python, behind the five callbacks of
 * nnvm_device_api. Every failing driver call returns non-zero with a message naming the call
 * and its CUresult (nnvm_cuda_last_error); nothing here aborts.
 *
 * The driver. libcuda is opened with dlopen in nnvm_cuda_device_api (NNVM_LIBCUDA, else
 * libcuda.so.1), never linked, so a program built with this file starts without a GPU driver
 * and gets an error saying so; every entry point used is resolved then, by the name cuda.h
 * maps its call to (cuMemAlloc_v2, ...). It stays loaded after nnvm_cuda_release.
 *
 * The module blob. A device kernel's blob is the JSON document targets/gpu/cuda/blob.py
 * writes: {"format": "nnvm-cuda/1", "arch": "sm_90", "code": PTX, "plan": the launch plan of
 * targets/gpu/launch_plan.py} (and "llvm_ir" for a `cuda -emulate` build), read by the strict
 * reader of ../nnvm_gpu_plan.h, which the OpenCL runtime shares (compile with -I on its
 * folder). A blob of another format, a -emulate build (its kernels are for nnvm's host
 * emulator) and PTX for a newer architecture than the device's compute capability are errors
 * that say so. That header also holds what does not talk to the driver (the kernel table,
 * constants and temporaries made once, the plan's replay, the buffer table, the last error);
 * this file fills in its device hooks.
 *
 * Semantics, as runtime.py: buffers are cuMemAlloc'd, at least 1 byte (a zero-size tensor
 * still gets one; copies of 0 bytes are skipped); copies between host and device are the
 * driver's synchronous cuMemcpyHtoD / cuMemcpyDtoH. A kernel's module is loaded on its first
 * launch (cuModuleLoadDataEx, the JIT's error log in the error) and kept, its constants
 * uploaded once, its temporaries allocated once and reused by its next launches. A launch
 * replays the plan on the default stream: launch steps are cuLaunchKernel over grid and block
 * with no dynamic shared memory, each parameter a CUdeviceptr (kernelParams: one pointer per
 * parameter to its value), a grid with a 0 dimension launching nothing; copy steps are
 * cuMemcpyDtoD; then one cuCtxSynchronize, so a fault is reported at the kernel that caused it.
 * (A fault such as an illegal address leaves the context unusable: every later call fails.)
 * Launches are serialized (the temporaries serve every launch), so one API can serve several
 * models and threads. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnvm_cuda.h"

#define JIT_LOG_BYTES 16384
#define NNVM_GPU_RUNTIME
#define NNVM_GPU_ERROR_BYTES (JIT_LOG_BYTES + 1024) /* room for a JIT log */
#include "nnvm_gpu_plan.h"

/* ---- the driver API (the few declarations of cuda.h this file needs) --------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

enum {
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};
#define CUDA_FORMAT "nnvm-cuda/1" /* targets/gpu/cuda/blob.py's FORMAT */

typedef struct {
  CUresult (*Init)(unsigned flags);
  CUresult (*DeviceGetCount)(int *count);
  CUresult (*DeviceGet)(CUdevice *device, int ordinal);
  CUresult (*DeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice device);
  CUresult (*CtxPushCurrent)(CUcontext ctx);
  CUresult (*CtxPopCurrent)(CUcontext *ctx);
  CUresult (*CtxSynchronize)(void);
  CUresult (*ModuleLoadDataEx)(CUmodule *module, const void *image, unsigned n_options,
                               int *options, void **values);
  CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
  CUresult (*ModuleUnload)(CUmodule module);
  CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t nbytes);
  CUresult (*MemFree)(CUdeviceptr ptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t nbytes);
  CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t nbytes);
  CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t nbytes);
  CUresult (*LaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                           void **params, void **extra);
  CUresult (*GetErrorName)(CUresult code, const char **name);
} cuda_api;

/* Each entry point: the symbol cuda.h maps the call to, and the older one drivers before
 * CUDA 11 export instead (or NULL). */
static const struct {
  size_t offset;
  const char *symbol, *older;
} entry_points[] = {
#define ENTRY(field, symbol, older) {offsetof(cuda_api, field), symbol, older}
    ENTRY(Init, "cuInit", NULL),
    ENTRY(DeviceGetCount, "cuDeviceGetCount", NULL),
    ENTRY(DeviceGet, "cuDeviceGet", NULL),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute", NULL),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    ENTRY(CtxPushCurrent, "cuCtxPushCurrent_v2", "cuCtxPushCurrent"),
    ENTRY(CtxPopCurrent, "cuCtxPopCurrent_v2", "cuCtxPopCurrent"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize", NULL),
    ENTRY(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction", NULL),
    ENTRY(ModuleUnload, "cuModuleUnload", NULL),
    ENTRY(MemAlloc, "cuMemAlloc_v2", NULL),
    ENTRY(MemFree, "cuMemFree_v2", NULL),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL),
    ENTRY(MemcpyDtoD, "cuMemcpyDtoD_v2", NULL),
    ENTRY(LaunchKernel, "cuLaunchKernel", NULL),
    ENTRY(GetErrorName, "cuGetErrorName", NULL),
#undef ENTRY
};

/* ---- errors ------------------------------------------------------------------------------ */

const char *nnvm_cuda_last_error(void) { return last_error; }

/* "<what> failed: CUDA_ERROR_... (code)", what formatted from fmt. */
static void cu_failed(const cuda_api *f, CUresult rc, const char *fmt, ...) {
  char what[512], code[32];
  const char *name = NULL;
  va_list args;
  va_start(args, fmt);
  vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  if (!f->GetErrorName || f->GetErrorName(rc, &name) != 0 || !name) {
    snprintf(code, sizeof code, "CUresult %d", rc);
    name = code;
  }
  set_error("%s failed: %s (%d)", what, name, rc);
}

/* Open libcuda, resolve every entry point and cuInit; -1 with the error otherwise. */
static int load_driver(cuda_api *f) {
  const char *path = getenv("NNVM_LIBCUDA");
  if (!path || !*path) path = "libcuda.so.1";
  memset(f, 0, sizeof *f);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    set_error("no CUDA driver on this machine (%s): a library built for target 'cuda' runs "
              "where an NVIDIA GPU and its driver are (NNVM_LIBCUDA may name the driver's "
              "libcuda.so.1)",
              why ? why : path);
    return -1;
  }
  for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; ++i) {
    void *fn = dlsym(lib, entry_points[i].symbol);
    if (!fn && entry_points[i].older) fn = dlsym(lib, entry_points[i].older);
    if (!fn) {
      set_error("the CUDA driver %s has no %s (a driver older than CUDA 12?)", path,
                entry_points[i].symbol);
      memset(f, 0, sizeof *f);
      dlclose(lib); /* nothing of it was used */
      return -1;
    }
    memcpy((char *)f + entry_points[i].offset, &fn, sizeof fn);
  }
  CUresult rc = f->Init(0);
  if (rc != 0) {
    cu_failed(f, rc, "cuInit");
    return -1;
  }
  return 0;
}

/* ---- the device -------------------------------------------------------------------------- */

typedef struct {
  gpu_runtime_t rt; /* first: the hooks get it */
  cuda_api f;
  CUdevice device;
  int ordinal, cc_major, cc_minor;
  CUcontext ctx;            /* the retained primary context; NULL until retained */
  pthread_mutex_t run_lock; /* the kernels: one launch at a time */
} device_t;

/* Make the device's context current on this thread until leave(). */
static int enter(device_t *dev, const char *what) {
  CUresult rc = dev->f.CtxPushCurrent(dev->ctx);
  if (rc != 0) {
    cu_failed(&dev->f, rc, "%s: cuCtxPushCurrent", what);
    return -1;
  }
  return 0;
}

static void leave(device_t *dev) {
  CUcontext popped;
  dev->f.CtxPopCurrent(&popped);
}


int nnvm_cuda_device_index(const char *target) {
  static const char *const kinds[] = {"cuda", "nvptx", NULL};
  return gpu_target_device(target, kinds);
}

int nnvm_cuda_num_devices(void) {
  cuda_api f;
  int n = 0;
  last_error[0] = 0;
  if (load_driver(&f)) return -1;
  CUresult rc = f.DeviceGetCount(&n);
  if (rc != 0) {
    cu_failed(&f, rc, "cuDeviceGetCount");
    return -1;
  }
  return n;
}

/* ---- buffers (the API's callbacks) ------------------------------------------------------- */

static void free_buffer(gpu_runtime_t *rt, uint64_t buffer) {
  ((device_t *)rt)->f.MemFree((CUdeviceptr)buffer);
}

static uint64_t api_alloc(void *ctx, size_t nbytes) {
  device_t *dev = ctx;
  last_error[0] = 0;
  size_t size = nbytes ? nbytes : 1;
  if (enter(dev, "alloc")) return 0;
  CUdeviceptr ptr = 0;
  CUresult rc = dev->f.MemAlloc(&ptr, size);
  uint64_t handle = 0;
  if (rc != 0 || !ptr)
    cu_failed(&dev->f, rc, "cuMemAlloc(%zu bytes)", size);
  else
    handle = gpu_buffer_add(&dev->rt, (uint64_t)ptr, size);
  leave(dev);
  return handle;
}

static void api_release(void *ctx, uint64_t handle) {
  device_t *dev = ctx;
  uint64_t ptr;
  if (!gpu_buffer_take(&dev->rt, handle, &ptr) || enter(dev, "release")) return;
  CUresult rc = dev->f.MemFree((CUdeviceptr)ptr);
  if (rc != 0) cu_failed(&dev->f, rc, "cuMemFree");
  leave(dev);
}

static int api_copy_to_device(void *ctx, uint64_t dst, const void *src, size_t nbytes) {
  device_t *dev = ctx;
  uint64_t ptr;
  int go = gpu_copy_begin(src, nbytes, "copy_to_device");
  if (go) return go < 0;
  if (gpu_buffer_get(&dev->rt, dst, nbytes, "copy_to_device", NULL, &ptr) ||
      enter(dev, "copy_to_device"))
    return 1;
  CUresult rc = dev->f.MemcpyHtoD((CUdeviceptr)ptr, src, nbytes);
  if (rc != 0) cu_failed(&dev->f, rc, "copy_to_device: cuMemcpyHtoD(%zu bytes)", nbytes);
  leave(dev);
  return rc != 0;
}

static int api_copy_from_device(void *ctx, void *dst, uint64_t src, size_t nbytes) {
  device_t *dev = ctx;
  uint64_t ptr;
  int go = gpu_copy_begin(dst, nbytes, "copy_from_device");
  if (go) return go < 0;
  if (gpu_buffer_get(&dev->rt, src, nbytes, "copy_from_device", NULL, &ptr) ||
      enter(dev, "copy_from_device"))
    return 1;
  CUresult rc = dev->f.MemcpyDtoH(dst, (CUdeviceptr)ptr, nbytes);
  if (rc != 0) cu_failed(&dev->f, rc, "copy_from_device: cuMemcpyDtoH(%zu bytes)", nbytes);
  leave(dev);
  return rc != 0;
}

/* ---- kernels (the hooks of gpu_load and gpu_run_plan, with the context current) ---------- */

/* sm_XY[a] -> X, Y; -1 for anything else. */
static int parse_arch(const char *arch, int *major, int *minor) {
  if (strncmp(arch, "sm_", 3) != 0) return -1;
  const char *p = arch + 3;
  int v = 0, digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 4; ++p, ++digits) v = v * 10 + (*p - '0');
  if (digits < 2 || (*p && !(p[0] >= 'a' && p[0] <= 'z' && p[1] == 0))) return -1;
  *major = v / 10;
  *minor = v % 10;
  return 0;
}

/* Is the blob one this runtime runs on this device? (The error says why not.) */
static int check(gpu_runtime_t *rt, const char *kernel, const plan_t *p, size_t launches) {
  device_t *dev = (device_t *)rt;
  int major, minor;
  if (!p->format) {
    set_error("kernel %s: its program (nnvm_blob_%s) is not a CUDA module (no \"format\"; "
              "OpenCL C? bind nnvm_opencl.c to this device)",
              kernel, kernel);
    return -1;
  }
  if (strcmp(p->format, CUDA_FORMAT) != 0) {
    set_error("kernel %s: its program is a %s blob, not %s (a library built by another "
              "nnvm, or for another device target)",
              kernel, p->format, CUDA_FORMAT);
    return -1;
  }
  if (p->has_llvm_ir) {
    set_error("kernel %s was built for `cuda -emulate` (its kernels run in nnvm's host "
              "emulator, from Python): the C runtime runs PTX on a GPU only; build with "
              "devices=[\"cuda -arch=sm_XX\"]",
              kernel);
    return -1;
  }
  if (!launches) return 0; /* copies only: no module */
  if (!p->arch || parse_arch(p->arch, &major, &minor)) {
    set_error("kernel %s: its blob's \"arch\" (%s) is not sm_XY", kernel,
              p->arch ? p->arch : "missing");
    return -1;
  }
  if (major > dev->cc_major || (major == dev->cc_major && minor > dev->cc_minor)) {
    set_error("kernel %s was built for %s, but CUDA device %d has compute capability %d.%d: "
              "rebuild for target 'cuda -arch=sm_%d%d' (or run on a GPU of compute capability "
              "%d.%d or newer)",
              kernel, p->arch, dev->ordinal, dev->cc_major, dev->cc_minor, dev->cc_major,
              dev->cc_minor, major, minor);
    return -1;
  }
  if (p->code_len == 0 || strlen(p->code) != p->code_len) {
    set_error("kernel %s: its blob's PTX is empty or holds a NUL byte", kernel);
    return -1;
  }
  return 0;
}

/* The module (PTX through the JIT), for a plan with launches, and each launch step's function. */
static int build(gpu_runtime_t *rt, gpu_kernel_t *l, size_t launches) {
  device_t *dev = (device_t *)rt;
  if (!launches) return 0; /* copies only: no module */
  char *log = calloc(1, JIT_LOG_BYTES);
  if (!log) {
    set_error("kernel %s: out of memory", l->name);
    return -1;
  }
  int options[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {log, (void *)(uintptr_t)JIT_LOG_BYTES};
  CUmodule module = NULL;
  CUresult rc = dev->f.ModuleLoadDataEx(&module, l->plan.code, 2, options, values);
  if (rc != 0) {
    log[JIT_LOG_BYTES - 1] = 0;
    cu_failed(&dev->f, rc, "kernel %s: cuModuleLoadDataEx", l->name);
    size_t n = strlen(last_error);
    snprintf(last_error + n, sizeof last_error - n, "; JIT log:\n%s",
             *log ? log : "(the JIT wrote none)");
    free(log);
    return -1;
  }
  free(log);
  l->code = module;
  for (size_t i = 0; i < l->plan.n_steps; ++i) {
    step_t *st = &l->plan.steps[i];
    if (st->is_copy) continue;
    CUfunction fn = NULL;
    rc = dev->f.ModuleGetFunction(&fn, module, st->kernel);
    if (rc != 0 || !fn) {
      cu_failed(&dev->f, rc, "kernel %s: cuModuleGetFunction(\"%s\")", l->name, st->kernel);
      return -1;
    }
    st->fn = fn;
  }
  return 0;
}

static int upload_const(gpu_runtime_t *rt, const char *kernel, size_t i, const void *data,
                        size_t n, uint64_t *out) {
  device_t *dev = (device_t *)rt;
  CUdeviceptr ptr = 0;
  CUresult rc = dev->f.MemAlloc(&ptr, n ? n : 1);
  if (rc != 0) {
    cu_failed(&dev->f, rc, "kernel %s: cuMemAlloc(constant %zu, %zu bytes)", kernel, i,
              n ? n : 1);
    return -1;
  }
  *out = (uint64_t)ptr; /* freed with the kernel, also when the copy fails */
  if (n && (rc = dev->f.MemcpyHtoD(ptr, data, n)) != 0) {
    cu_failed(&dev->f, rc, "kernel %s: cuMemcpyHtoD(constant %zu, %zu bytes)", kernel, i, n);
    return -1;
  }
  return 0;
}

static int alloc_temp(gpu_runtime_t *rt, const char *kernel, size_t i, size_t n, uint64_t *out) {
  device_t *dev = (device_t *)rt;
  CUdeviceptr ptr = 0;
  CUresult rc = dev->f.MemAlloc(&ptr, n);
  if (rc != 0) {
    cu_failed(&dev->f, rc, "kernel %s: cuMemAlloc(temporary %zu, %zu bytes)", kernel, i, n);
    return -1;
  }
  *out = (uint64_t)ptr;
  return 0;
}

static void free_code(gpu_runtime_t *rt, gpu_kernel_t *l) {
  device_t *dev = (device_t *)rt;
  if (l->code) dev->f.ModuleUnload((CUmodule)l->code); /* the functions belong to the module */
}

static int copy(gpu_runtime_t *rt, gpu_kernel_t *l, size_t step, uint64_t dst, uint64_t src,
                size_t nbytes) {
  device_t *dev = (device_t *)rt;
  CUresult rc = dev->f.MemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, nbytes);
  if (rc != 0) {
    cu_failed(&dev->f, rc, "kernel %s: step %zu: cuMemcpyDtoD(%zu bytes)", l->name, step, nbytes);
    return -1;
  }
  return 0;
}

/* Each parameter a CUdeviceptr (l->params point to l->values), no dynamic shared memory. */
static int launch(gpu_runtime_t *rt, gpu_kernel_t *l, const step_t *st) {
  device_t *dev = (device_t *)rt;
  if (st->grid[0] == 0 || st->grid[1] == 0 || st->grid[2] == 0) return 0; /* no blocks */
  CUresult rc = dev->f.LaunchKernel(st->fn, (unsigned)st->grid[0], (unsigned)st->grid[1],
                                    (unsigned)st->grid[2], (unsigned)st->block[0],
                                    (unsigned)st->block[1], (unsigned)st->block[2], 0, NULL,
                                    l->params, NULL);
  if (rc != 0) {
    cu_failed(&dev->f, rc, "kernel %s: cuLaunchKernel(%s, grid %zux%zux%zu, block %zux%zux%zu)",
              l->name, st->kernel, st->grid[0], st->grid[1], st->grid[2], st->block[0],
              st->block[1], st->block[2]);
    return -1;
  }
  return 0;
}

static int finish(gpu_runtime_t *rt, gpu_kernel_t *l) {
  device_t *dev = (device_t *)rt;
  CUresult rc = dev->f.CtxSynchronize();
  if (rc != 0) {
    cu_failed(&dev->f, rc, "kernel %s: cuCtxSynchronize (after its launches)", l->name);
    return -1;
  }
  return 0;
}

static const gpu_ops_t ops = {check,     build, upload_const, alloc_temp, free_buffer,
                              free_code, copy,  launch,       finish};

static int api_launch(void *ctx, const char *kernel, const uint64_t *buffers, int count) {
  device_t *dev = ctx;
  if (gpu_launch_begin(kernel, buffers, count)) return 1;
  pthread_mutex_lock(&dev->run_lock);
  if (enter(dev, "launch")) {
    pthread_mutex_unlock(&dev->run_lock);
    return 1;
  }
  int failed = gpu_launch(&dev->rt, kernel, buffers, count, 0);
  leave(dev);
  pthread_mutex_unlock(&dev->run_lock);
  return failed;
}

/* ---- the API ----------------------------------------------------------------------------- */

static void device_free(device_t *dev) {
  if (dev->ctx && enter(dev, "release") == 0) {
    dev->f.CtxSynchronize();
    gpu_free_kernels_and_buffers(&dev->rt);
    leave(dev);
  }
  if (dev->ctx) dev->f.DevicePrimaryCtxRelease(dev->device);
  table_free(&dev->rt.buffers);
  pthread_mutex_destroy(&dev->rt.lock);
  pthread_mutex_destroy(&dev->run_lock);
  free(dev);
}

int nnvm_cuda_device_api(nnvm_cuda_symbol_fn symbol, void *handle, int device_index,
                         nnvm_device_api *out, char *err, size_t errlen) {
  device_t *dev = NULL;
  int n = 0;
  CUresult rc;
  last_error[0] = 0;
  if (out) memset(out, 0, sizeof *out);
  if (!out || !symbol) {
    set_error("nnvm_cuda_device_api: `out` and `symbol` must not be NULL");
    goto fail;
  }
  dev = calloc(1, sizeof *dev);
  if (!dev) {
    set_error("nnvm_cuda_device_api: out of memory");
    goto fail;
  }
  if (pthread_mutex_init(&dev->rt.lock, NULL) != 0) {
    free(dev);
    dev = NULL;
    set_error("nnvm_cuda_device_api: pthread_mutex_init failed");
    goto fail;
  }
  if (pthread_mutex_init(&dev->run_lock, NULL) != 0) {
    pthread_mutex_destroy(&dev->rt.lock);
    free(dev);
    dev = NULL;
    set_error("nnvm_cuda_device_api: pthread_mutex_init failed");
    goto fail;
  }
  dev->rt.ops = &ops;
  dev->rt.symbol = symbol;
  dev->rt.handle = handle;
  dev->ordinal = device_index;
  if (load_driver(&dev->f)) goto fail;
  if ((rc = dev->f.DeviceGetCount(&n)) != 0) {
    cu_failed(&dev->f, rc, "cuDeviceGetCount");
    goto fail;
  }
  if (device_index < 0 || device_index >= n) {
    set_error("no CUDA device %d: this machine has %d", device_index, n);
    goto fail;
  }
  if ((rc = dev->f.DeviceGet(&dev->device, device_index)) != 0) {
    cu_failed(&dev->f, rc, "cuDeviceGet(%d)", device_index);
    goto fail;
  }
  if ((rc = dev->f.DeviceGetAttribute(&dev->cc_major,
                                      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                      dev->device)) != 0 ||
      (rc = dev->f.DeviceGetAttribute(&dev->cc_minor,
                                      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                      dev->device)) != 0) {
    cu_failed(&dev->f, rc, "cuDeviceGetAttribute(compute capability of device %d)",
              device_index);
    goto fail;
  }
  if ((rc = dev->f.DevicePrimaryCtxRetain(&dev->ctx, dev->device)) != 0 || !dev->ctx) {
    dev->ctx = NULL;
    cu_failed(&dev->f, rc, "cuDevicePrimaryCtxRetain(device %d)", device_index);
    goto fail;
  }
  GPU_FILL_API(out, dev);
  return 0;
fail:
  if (dev) device_free(dev);
  if (err && errlen) snprintf(err, errlen, "%s", last_error);
  return 1;
}

void nnvm_cuda_release(nnvm_device_api *api) {
  if (!api || !api->ctx || api->launch != api_launch) return;
  device_free(api->ctx);
  memset(api, 0, sizeof *api);
}
