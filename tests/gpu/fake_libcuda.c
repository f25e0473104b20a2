/* A fake CUDA driver (libcuda.so.1) over host memory, for tests/gpu/test_cuda_c_runtime.py: the
 * entry points nnvm_cuda.c resolves, each checking what a real driver checks that the test can
 * see (cuInit first, a current context, live pointers, sizes, PTX text, kernel names) and
 * logging one line per call to $FAKE_CUDA_LOG:
 *
 *   init | count N | device I | attribute A V | retain D | release D | push | pop
 *   alloc ID SIZE | free ID | htod ID NBYTES FNV1A | dtoh ID NBYTES | dtod DST SRC NBYTES
 *   module ID ENTRIES | function ID NAME PARAMS | unload ID | sync
 *   launch NAME grid X Y Z block X Y Z params N ID:SIZE ... (parameter values as allocations)
 *   violation WHAT          (a call a real driver would refuse or crash on)
 *   fail CALL CODE          (an injected failure)
 *   exit allocations N modules M contexts C   (at unload: what is still live)
 *
 * Memory is calloc'd; a launch records and runs nothing, except with FAKE_CUDA_FILL set: then
 * it fills its last parameter's allocation with one byte, FNV-1a of the kernel's name, odd.
 * The number of parameters of a kernel is read from its .entry in the PTX, so a launch's
 * kernelParams are read exactly as a driver reads them. Environment: FAKE_CUDA_FAIL=
 * "call[#n]=code,..." makes the n-th call (every call without #n) of an entry point return
 * `code` (cuModuleLoadDataEx also writes a JIT log);
 * FAKE_CUDA_CC="8.0" sets the compute capability (9.0), FAKE_CUDA_DEVICES the device count (1).
 * A module whose `.target sm_XY` is newer than the device fails to load, as on a real one. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  INVALID_DEVICE = 101,
  INVALID_IMAGE = 200,
  INVALID_CONTEXT = 201,
  NO_BINARY_FOR_GPU = 209,
  INVALID_PTX = 218,
  INVALID_HANDLE = 400,
  NOT_FOUND = 500,
  LAUNCH_FAILED = 719,
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static int initialized;

static void say(const char *fmt, ...) {
  va_list args;
  pthread_mutex_lock(&lock);
  if (!log_file) {
    const char *path = getenv("FAKE_CUDA_LOG");
    log_file = fopen(path && *path ? path : "/dev/null", "a");
  }
  if (log_file) {
    va_start(args, fmt);
    vfprintf(log_file, fmt, args);
    va_end(args);
    fputc('\n', log_file);
    fflush(log_file);
  }
  pthread_mutex_unlock(&lock);
}

/* ---- injected failures ------------------------------------------------------------------- */

#define MAX_CALLS 64
static struct {
  char name[64];
  int count;
} calls[MAX_CALLS];

/* The code FAKE_CUDA_FAIL gives this call of `name` (0: succeed). */
static CUresult injected(const char *name) {
  const char *spec = getenv("FAKE_CUDA_FAIL");
  int n = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CALLS; ++i) {
    if (calls[i].name[0] == 0) snprintf(calls[i].name, sizeof calls[i].name, "%s", name);
    if (strcmp(calls[i].name, name) == 0) {
      n = ++calls[i].count;
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  size_t len = strlen(name);
  for (const char *p = spec; p && *p;) {
    const char *end = strchr(p, ',');
    size_t item = end ? (size_t)(end - p) : strlen(p);
    if (strncmp(p, name, len) == 0 && (p[len] == '=' || p[len] == '#')) {
      int nth = 0, code = 0;
      if (p[len] == '#')
        sscanf(p + len + 1, "%d=%d", &nth, &code);
      else
        sscanf(p + len + 1, "%d", &code);
      if (code && (nth == 0 || nth == n)) {
        say("fail %s %d", name, code);
        return code;
      }
    }
    p += item + (end ? 1 : 0);
  }
  return OK;
}

#define INJECT(name)                       \
  do {                                     \
    CUresult injected_ = injected(name);   \
    if (injected_) return injected_;       \
  } while (0)

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

static void capability(int *major, int *minor) {
  const char *v = getenv("FAKE_CUDA_CC");
  *major = 9;
  *minor = 0;
  if (v && *v) sscanf(v, "%d.%d", major, minor);
}

/* ---- contexts ---------------------------------------------------------------------------- */

typedef struct {
  int device, refs;
} context_t;

#define MAX_DEVICES 8
static context_t contexts[MAX_DEVICES];
static __thread context_t *stack[16];
static __thread int depth;

static CUresult need_context(const char *call) {
  if (!initialized) {
    say("violation %s before cuInit", call);
    return NOT_INITIALIZED;
  }
  if (depth == 0 || stack[depth - 1]->refs == 0) {
    say("violation %s with no current context", call);
    return INVALID_CONTEXT;
  }
  return OK;
}

#define NEED_CONTEXT(call)                      \
  do {                                          \
    CUresult need_ = need_context(call);        \
    if (need_) return need_;                    \
  } while (0)

/* ---- memory ------------------------------------------------------------------------------ */

typedef struct {
  unsigned char *data;
  size_t size;
  int id;
} allocation_t;

#define MAX_ALLOCATIONS 4096
static allocation_t allocations[MAX_ALLOCATIONS];
static int next_id = 1;

/* The live allocation `ptr` points into with `nbytes` after it, or NULL. */
static allocation_t *find(CUdeviceptr ptr, size_t nbytes) {
  allocation_t *found = NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_ALLOCATIONS; ++i) {
    allocation_t *a = &allocations[i];
    uintptr_t p = (uintptr_t)ptr, base = (uintptr_t)a->data;
    if (a->data && p >= base && p - base <= a->size && nbytes <= a->size - (p - base)) {
      found = a;
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  return found;
}

static uint32_t fnv1a(const unsigned char *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

/* ---- modules ----------------------------------------------------------------------------- */

typedef struct {
  char name[256];
  int params;
  int module;
} function_t;

typedef struct {
  int id, live, n;
  function_t functions[64];
} module_t;

#define MAX_MODULES 256
static module_t modules[MAX_MODULES];
static int n_modules;

/* ---- the entry points -------------------------------------------------------------------- */

CUresult cuGetErrorName(CUresult code, const char **name) {
  static const struct {
    int code;
    const char *name;
  } names[] = {
      {0, "CUDA_SUCCESS"},
      {1, "CUDA_ERROR_INVALID_VALUE"},
      {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {3, "CUDA_ERROR_NOT_INITIALIZED"},
      {100, "CUDA_ERROR_NO_DEVICE"},
      {101, "CUDA_ERROR_INVALID_DEVICE"},
      {200, "CUDA_ERROR_INVALID_IMAGE"},
      {201, "CUDA_ERROR_INVALID_CONTEXT"},
      {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
      {218, "CUDA_ERROR_INVALID_PTX"},
      {400, "CUDA_ERROR_INVALID_HANDLE"},
      {500, "CUDA_ERROR_NOT_FOUND"},
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
      {719, "CUDA_ERROR_LAUNCH_FAILED"},
      {999, "CUDA_ERROR_UNKNOWN"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (names[i].code == code) {
      *name = names[i].name;
      return OK;
    }
  }
  *name = NULL;
  return INVALID_VALUE;
}

CUresult cuInit(unsigned flags) {
  INJECT("cuInit");
  say("init");
  if (flags != 0) return INVALID_VALUE;
  initialized = 1;
  return OK;
}

CUresult cuDeviceGetCount(int *count) {
  INJECT("cuDeviceGetCount");
  if (!initialized) return NOT_INITIALIZED;
  *count = env_int("FAKE_CUDA_DEVICES", 1);
  say("count %d", *count);
  return OK;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  INJECT("cuDeviceGet");
  if (!initialized) return NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= env_int("FAKE_CUDA_DEVICES", 1) || ordinal >= MAX_DEVICES)
    return INVALID_DEVICE;
  *device = ordinal;
  say("device %d", ordinal);
  return OK;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  INJECT("cuDeviceGetAttribute");
  int major, minor;
  if (!initialized) return NOT_INITIALIZED;
  if (device < 0 || device >= env_int("FAKE_CUDA_DEVICES", 1)) return INVALID_DEVICE;
  capability(&major, &minor);
  if (attribute == 75)
    *value = major;
  else if (attribute == 76)
    *value = minor;
  else
    return INVALID_VALUE;
  say("attribute %d %d", attribute, *value);
  return OK;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int device) {
  INJECT("cuDevicePrimaryCtxRetain");
  if (!initialized) return NOT_INITIALIZED;
  if (device < 0 || device >= MAX_DEVICES) return INVALID_DEVICE;
  pthread_mutex_lock(&lock);
  contexts[device].device = device;
  contexts[device].refs++;
  pthread_mutex_unlock(&lock);
  *ctx = &contexts[device];
  say("retain %d", device);
  return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  INJECT("cuDevicePrimaryCtxRelease_v2");
  if (device < 0 || device >= MAX_DEVICES || contexts[device].refs == 0) {
    say("violation release of device %d's primary context, never retained", device);
    return INVALID_CONTEXT;
  }
  pthread_mutex_lock(&lock);
  contexts[device].refs--;
  pthread_mutex_unlock(&lock);
  say("release %d", device);
  return OK;
}

CUresult cuCtxPushCurrent_v2(void *ctx) {
  INJECT("cuCtxPushCurrent_v2");
  context_t *c = ctx;
  if (!c || c < contexts || c >= contexts + MAX_DEVICES || c->refs == 0) {
    say("violation push of a context that is not retained");
    return INVALID_CONTEXT;
  }
  if (depth == 16) return INVALID_VALUE;
  stack[depth++] = c;
  say("push");
  return OK;
}

CUresult cuCtxPopCurrent_v2(void **ctx) {
  INJECT("cuCtxPopCurrent_v2");
  if (depth == 0) {
    say("violation pop with no current context");
    return INVALID_CONTEXT;
  }
  context_t *c = stack[--depth];
  if (ctx) *ctx = c;
  say("pop");
  return OK;
}

CUresult cuCtxSynchronize(void) {
  INJECT("cuCtxSynchronize");
  NEED_CONTEXT("cuCtxSynchronize");
  say("sync");
  return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t nbytes) {
  INJECT("cuMemAlloc_v2");
  NEED_CONTEXT("cuMemAlloc_v2");
  if (nbytes == 0) return INVALID_VALUE;
  unsigned char *data = calloc(1, nbytes);
  if (!data) return OUT_OF_MEMORY;
  int id = -1;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_ALLOCATIONS; ++i) {
    if (!allocations[i].data) {
      allocations[i].data = data;
      allocations[i].size = nbytes;
      allocations[i].id = id = next_id++;
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  if (id < 0) {
    free(data);
    return OUT_OF_MEMORY;
  }
  *ptr = (CUdeviceptr)(uintptr_t)data;
  say("alloc %d %zu", id, nbytes);
  return OK;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  INJECT("cuMemFree_v2");
  NEED_CONTEXT("cuMemFree_v2");
  allocation_t *a = find(ptr, 0);
  if (!a || (uintptr_t)a->data != (uintptr_t)ptr) {
    say("violation cuMemFree_v2 of a pointer that is not a live allocation");
    return INVALID_VALUE;
  }
  say("free %d", a->id);
  pthread_mutex_lock(&lock);
  free(a->data);
  a->data = NULL;
  pthread_mutex_unlock(&lock);
  return OK;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t nbytes) {
  INJECT("cuMemcpyHtoD_v2");
  NEED_CONTEXT("cuMemcpyHtoD_v2");
  allocation_t *a = find(dst, nbytes);
  if (!a || !src) {
    say("violation cuMemcpyHtoD_v2 of %zu bytes outside an allocation", nbytes);
    return INVALID_VALUE;
  }
  memcpy((void *)(uintptr_t)dst, src, nbytes);
  say("htod %d %zu %08x", a->id, nbytes, (unsigned)fnv1a(src, nbytes));
  return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t nbytes) {
  INJECT("cuMemcpyDtoH_v2");
  NEED_CONTEXT("cuMemcpyDtoH_v2");
  allocation_t *a = find(src, nbytes);
  if (!a || !dst) {
    say("violation cuMemcpyDtoH_v2 of %zu bytes outside an allocation", nbytes);
    return INVALID_VALUE;
  }
  memcpy(dst, (const void *)(uintptr_t)src, nbytes);
  say("dtoh %d %zu", a->id, nbytes);
  return OK;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t nbytes) {
  INJECT("cuMemcpyDtoD_v2");
  NEED_CONTEXT("cuMemcpyDtoD_v2");
  allocation_t *d = find(dst, nbytes), *s = find(src, nbytes);
  if (!d || !s) {
    say("violation cuMemcpyDtoD_v2 of %zu bytes outside an allocation", nbytes);
    return INVALID_VALUE;
  }
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, nbytes);
  say("dtod %d %d %zu", d->id, s->id, nbytes);
  return OK;
}

/* The kernels of PTX text: each `.entry NAME(` and the `.param`s up to its `)`. */
static int read_entries(const char *ptx, module_t *m) {
  const char *p = ptx;
  while ((p = strstr(p, ".entry ")) != NULL && m->n < 64) {
    p += 7;
    size_t n = strcspn(p, "( \t\n");
    function_t *f = &m->functions[m->n++];
    snprintf(f->name, sizeof f->name, "%.*s", (int)n, p);
    const char *close = strchr(p, ')');
    if (!close) return -1;
    f->params = 0;
    for (const char *q = p; (q = strstr(q, ".param")) != NULL && q < close; q += 6) ++f->params;
  }
  return m->n ? 0 : -1;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n_options, int *options,
                            void **values) {
  char *log = NULL;
  size_t log_size = 0;
  for (unsigned i = 0; i < n_options; ++i) {
    if (options[i] == 5) log = values[i];
    if (options[i] == 6) log_size = (size_t)(uintptr_t)values[i];
  }
  CUresult code = injected("cuModuleLoadDataEx");
  if (code) {
    if (log && log_size) snprintf(log, log_size, "ptxas fatal   : fake JIT failure %d", code);
    return code;
  }
  NEED_CONTEXT("cuModuleLoadDataEx");
  const char *ptx = image;
  /* PTX text: comments, then .version and .target */
  if (!ptx || (ptx[0] != '/' && ptx[0] != '.') || !strstr(ptx, ".version") ||
      !strstr(ptx, ".target sm_")) {
    if (log && log_size) snprintf(log, log_size, "ptxas fatal   : not PTX text");
    return INVALID_IMAGE; /* a fat binary or cubin would be valid: nnvm never passes one */
  }
  int arch = atoi(strstr(ptx, ".target sm_") + 11), major, minor;
  capability(&major, &minor);
  if (arch > major * 10 + minor) {
    if (log && log_size)
      snprintf(log, log_size, "ptxas fatal   : SM version specified by .target is higher "
                              "than default SM version assumed");
    return NO_BINARY_FOR_GPU;
  }
  pthread_mutex_lock(&lock);
  if (n_modules == MAX_MODULES) {
    pthread_mutex_unlock(&lock);
    return OUT_OF_MEMORY;
  }
  module_t *m = &modules[n_modules];
  memset(m, 0, sizeof *m);
  m->id = ++n_modules;
  pthread_mutex_unlock(&lock);
  if (read_entries(ptx, m)) {
    if (log && log_size) snprintf(log, log_size, "ptxas fatal   : no .entry");
    return INVALID_PTX;
  }
  m->live = 1;
  *module = m;
  say("module %d %d", m->id, m->n);
  return OK;
}

CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
  INJECT("cuModuleGetFunction");
  NEED_CONTEXT("cuModuleGetFunction");
  module_t *m = module;
  if (!m || !m->live) return INVALID_HANDLE;
  for (int i = 0; i < m->n; ++i) {
    if (strcmp(m->functions[i].name, name) == 0) {
      m->functions[i].module = m->id;
      *fn = &m->functions[i];
      say("function %d %s %d", m->id, name, m->functions[i].params);
      return OK;
    }
  }
  return NOT_FOUND;
}

CUresult cuModuleUnload(void *module) {
  INJECT("cuModuleUnload");
  NEED_CONTEXT("cuModuleUnload");
  module_t *m = module;
  if (!m || !m->live) {
    say("violation cuModuleUnload of a module that is not loaded");
    return INVALID_HANDLE;
  }
  m->live = 0;
  say("unload %d", m->id);
  return OK;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared_bytes, void *stream,
                        void **params, void **extra) {
  INJECT("cuLaunchKernel");
  NEED_CONTEXT("cuLaunchKernel");
  function_t *f = fn;
  if (!f || !modules[f->module - 1].live) return INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || shared_bytes || stream || extra ||
      (f->params && !params)) {
    say("violation cuLaunchKernel of %s with grid %u %u %u block %u %u %u", f->name, gx, gy, gz,
        bx, by, bz);
    return INVALID_VALUE;
  }
  if ((size_t)bx * by * bz > 1024 || bz > 64 || gy > 65535 || gz > 65535)
    return INVALID_VALUE; /* past the limits of every GPU: a driver's error, not a misuse */
  allocation_t *last = NULL;
  char line[8192];
  int n = snprintf(line, sizeof line, "launch %s grid %u %u %u block %u %u %u params %d", f->name,
                   gx, gy, gz, bx, by, bz, f->params);
  for (int i = 0; i < f->params && n < (int)sizeof line - 32; ++i) {
    CUdeviceptr value;
    memcpy(&value, params[i], sizeof value); /* a kernel parameter: a pointer to its value */
    allocation_t *a = find(value, 0);
    if (!a || (uintptr_t)a->data != (uintptr_t)value) {
      say("violation cuLaunchKernel of %s: parameter %d is not a live allocation", f->name, i);
      return LAUNCH_FAILED;
    }
    n += snprintf(line + n, sizeof line - (size_t)n, " %d:%zu", a->id, a->size);
    last = a;
  }
  say("%s", line);
  if (last && getenv("FAKE_CUDA_FILL")) /* the kernel's "output": its name's FNV-1a, odd */
    memset(last->data, (int)((fnv1a((const unsigned char *)f->name, strlen(f->name)) & 0xff) | 1),
           last->size);
  return OK;
}

__attribute__((destructor)) static void at_exit(void) {
  int live = 0, loaded = 0, refs = 0;
  for (int i = 0; i < MAX_ALLOCATIONS; ++i) live += allocations[i].data != NULL;
  for (int i = 0; i < n_modules; ++i) loaded += modules[i].live;
  for (int i = 0; i < MAX_DEVICES; ++i) refs += contexts[i].refs;
  if (initialized) say("exit allocations %d modules %d contexts %d", live, loaded, refs);
  if (log_file) fclose(log_file);
}
