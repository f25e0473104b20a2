/* The model-independent part of a library built by nnvm: parsing the params blob, owning the
 * arena and the weights, reporting errors. The generated part (entry.c, see entry_point.py)
 * provides the tables and nnvm_graph_run, which calls the kernels in order. */
#include "nnvm_fpenv.h"
#include "nnvm_graph.h"
#include "nnvm_runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__x86_64__) && defined(__AVX__)
#error "nnvm_runtime.c checks the CPU before any kernel runs: compile it for baseline x86-64"
#endif

/* ---- errors ------------------------------------------------------------------------------ */
static __thread char last_error[512];

static void set_error(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, args);
  va_end(args);
}

const char *nnvm_last_error(void) { return last_error; }

/* ---- the params blob (docs/params-format.md) --------------------------------------------- */
static const size_t dtype_size[] = {4, 2, 8, 8, 4, 2, 1, 1, 1, 2, 4, 8};
#define NUM_DTYPES (sizeof dtype_size / sizeof dtype_size[0])

struct nnvm_model {
  char *blob;    /* aligned copy of the params file (alloc_streamed): weights are used in place */
  char *arena;   /* intermediate tensors, laid out by plan-memory */
  void **params; /* per graph param, a pointer into blob */
  const nnvm_device_api **devices; /* per graph device, bound by nnvm_bind_device */
  uint64_t *dbuf;                  /* per device buffer, allocated at the first run */
  int ran;                         /* has run once (params are on the devices) */
};

int nnvm_graph_device_failed(const char *what, const char *kernel, int device) {
  set_error("device %d ('%s'): %s failed for kernel %s", device, nnvm_graph_devices[device],
            what, kernel);
  return -1;
}

static int read_bytes(const char *blob, size_t size, size_t *pos, void *out, size_t n) {
  if (*pos + n > size) return -1;
  memcpy(out, blob + *pos, n);
  *pos += n;
  return 0;
}

/* CRC-32 (IEEE 802.3, zlib's), slicing by 8: eight 256-entry tables (built on first use) fold
 * 8 bytes per step, 1.5-2 GB/s where the one-table byte loop ran at 0.4 GB/s (a 564 MB params
 * file checked in 0.3 s, not 1.4 s). */
static uint32_t crc_table[8][256];
static int crc_ready;

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  if (!crc_ready) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int t = 1; t < 8; ++t)
        crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
    crc_ready = 1;
  }
  uint32_t c = 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, p += 8) { /* little-endian words, as the params file is */
    uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                       (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
        crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
        crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
  }
  for (; n; --n, ++p) c = crc_table[0][(c ^ *p) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

/* Point the model's params into the params file `b` (size bytes), checking it whole first. */
static int bind_params(nnvm_model *m, const char *b, size_t size) {
  size_t pos = 0;
  uint32_t version, count;
  if (size < 16 || memcmp(b, "NNVMPRM\0", 8) != 0) {
    set_error("params blob: bad magic (not an nnvm params file)");
    return -1;
  }
  pos = 8;
  read_bytes(b, size, &pos, &version, 4);
  read_bytes(b, size, &pos, &count, 4);
  if (version != 1 && version != 2 && version != 3) {
    set_error("params blob: unsupported version %u", version);
    return -1;
  }
  if (version == 3) { /* a CRC-32 of everything before it closes the file */
    uint32_t stored;
    if (size < 20) goto truncated;
    memcpy(&stored, b + size - 4, 4);
    size -= 4;
    if (crc32_of((const unsigned char *)b, size) != stored) {
      set_error("params blob: checksum mismatch (the file is corrupt)");
      return -1;
    }
  }
  if (version >= 2) { /* the params of one build: they must be this library's */
    char hash[33] = {0};
    if (read_bytes(b, size, &pos, hash, 32)) goto truncated;
    if (hash[0] && strcmp(hash, nnvm_graph_model_hash) != 0) {
      set_error("params blob belongs to model %s, this library is model %s", hash,
                nnvm_graph_model_hash);
      return -1;
    }
  }
  for (int i = 0; i < nnvm_graph_num_params; ++i) m->params[i] = NULL;
  for (uint32_t t = 0; t < count; ++t) {
    uint32_t name_len, dtype, ndim;
    uint64_t nbytes;
    int64_t dims[16];
    if (read_bytes(b, size, &pos, &name_len, 4) || name_len > size - pos) goto truncated;
    const char *name = b + pos;
    pos += name_len;
    if (read_bytes(b, size, &pos, &dtype, 4) || read_bytes(b, size, &pos, &ndim, 4)) goto truncated;
    if (ndim > 16) {
      set_error("params blob: tensor %u has rank %u (at most 16 supported)", t, ndim);
      return -1;
    }
    if (read_bytes(b, size, &pos, dims, 8 * (size_t)ndim) || read_bytes(b, size, &pos, &nbytes, 8))
      goto truncated;
    if (dtype >= NUM_DTYPES) {
      set_error("params blob: tensor %u has unknown dtype code %u", t, dtype);
      return -1;
    }
    uint64_t expect = dtype_size[dtype];
    for (uint32_t k = 0; k < ndim; ++k) {
      if (dims[k] < 0 || __builtin_mul_overflow(expect, (uint64_t)dims[k], &expect)) {
        set_error("params blob: tensor %u has a negative or overflowing dimension", t);
        return -1;
      }
    }
    if (expect != nbytes) {
      set_error("params blob: tensor %u holds %llu bytes, its shape needs %llu", t,
                (unsigned long long)nbytes, (unsigned long long)expect);
      return -1;
    }
    pos = (pos + 63) / 64 * 64;
    if (pos > size || nbytes > size - pos) goto truncated; /* no wrap-around: pos only grows */
    for (int i = 0; i < nnvm_graph_num_params; ++i) {
      const nnvm_tensor_desc *d = &nnvm_graph_params[i];
      if (strlen(d->name) != name_len || memcmp(d->name, name, name_len) != 0) continue;
      int same = (int)dtype == d->dtype && (int)ndim == d->ndim;
      for (int k = 0; same && k < d->ndim; ++k) same = dims[k] == d->dims[k];
      if (!same) {
        set_error("params blob: param \"%s\" has another dtype or shape than the graph expects",
                  d->name);
        return -1;
      }
      m->params[i] = (void *)(b + pos);
    }
    pos += nbytes;
  }
  if (pos != size) {
    set_error("params blob: %zu trailing bytes after the last tensor", size - pos);
    return -1;
  }
  for (int i = 0; i < nnvm_graph_num_params; ++i) {
    if (m->params[i] == NULL) {
      set_error("params blob: param \"%s\" is missing", nnvm_graph_params[i].name);
      return -1;
    }
  }
  return 0;
truncated:
  set_error("params blob: truncated at byte %zu", pos);
  return -1;
}

/* ---- the CPU check ------------------------------------------------------------------------
 * The kernels may use every feature recorded in nnvm_build_target (LLVM's names). Before any of
 * them runs, nnvm_create asks CPUID (and XCR0, for the register state the OS saves) for those
 * it knows; a name not in the table is not checked. NNVM_CPU_FEATURES_OVERRIDE="sse4.2,avx"
 * (a testing hook) makes the check see a CPU with exactly those features plus baseline x86-64. */
#if defined(__x86_64__)
#include <cpuid.h>

enum { L1, L7, L7S1, LD1, LX1, LX8 };        /* CPUID leaves (and subleaves) */
enum { EAX, EBX, ECX, EDX };                 /* registers */
enum { NOSTATE, AVX_STATE, AVX512_STATE, AMX_STATE }; /* register state the OS must save */

static const struct cpu_feature {
  const char *name;
  unsigned char leaf, reg, bit, state;
} cpu_features[] = {
    {"64bit", LX1, EDX, 29, 0},   {"cmov", L1, EDX, 15, 0},     {"cx8", L1, EDX, 8, 0},
    {"fxsr", L1, EDX, 24, 0},     {"mmx", L1, EDX, 23, 0},      {"sse", L1, EDX, 25, 0},
    {"sse2", L1, EDX, 26, 0},     {"sse3", L1, ECX, 0, 0},      {"pclmul", L1, ECX, 1, 0},
    {"ssse3", L1, ECX, 9, 0},     {"fma", L1, ECX, 12, AVX_STATE}, {"cx16", L1, ECX, 13, 0},
    {"sse4.1", L1, ECX, 19, 0},   {"sse4.2", L1, ECX, 20, 0},   {"crc32", L1, ECX, 20, 0},
    {"movbe", L1, ECX, 22, 0},    {"popcnt", L1, ECX, 23, 0},   {"aes", L1, ECX, 25, 0},
    {"xsave", L1, ECX, 26, 0},    {"avx", L1, ECX, 28, AVX_STATE}, {"f16c", L1, ECX, 29, AVX_STATE},
    {"rdrnd", L1, ECX, 30, 0},    {"fsgsbase", L7, EBX, 0, 0},  {"bmi", L7, EBX, 3, 0},
    {"avx2", L7, EBX, 5, AVX_STATE}, {"bmi2", L7, EBX, 8, 0},   {"invpcid", L7, EBX, 10, 0},
    {"avx512f", L7, EBX, 16, AVX512_STATE},   {"avx512dq", L7, EBX, 17, AVX512_STATE},
    {"rdseed", L7, EBX, 18, 0},   {"adx", L7, EBX, 19, 0},
    {"avx512ifma", L7, EBX, 21, AVX512_STATE}, {"clflushopt", L7, EBX, 23, 0},
    {"clwb", L7, EBX, 24, 0},     {"avx512cd", L7, EBX, 28, AVX512_STATE},
    {"sha", L7, EBX, 29, 0},      {"avx512bw", L7, EBX, 30, AVX512_STATE},
    {"avx512vl", L7, EBX, 31, AVX512_STATE},  {"avx512vbmi", L7, ECX, 1, AVX512_STATE},
    {"avx512vbmi2", L7, ECX, 6, AVX512_STATE}, {"shstk", L7, ECX, 7, 0},
    {"gfni", L7, ECX, 8, 0},      {"vaes", L7, ECX, 9, AVX_STATE},
    {"vpclmulqdq", L7, ECX, 10, AVX_STATE},   {"avx512vnni", L7, ECX, 11, AVX512_STATE},
    {"avx512bitalg", L7, ECX, 12, AVX512_STATE}, {"avx512vpopcntdq", L7, ECX, 14, AVX512_STATE},
    {"rdpid", L7, ECX, 22, 0},    {"amx-bf16", L7, EDX, 22, AMX_STATE},
    {"avx512fp16", L7, EDX, 23, AVX512_STATE}, {"amx-tile", L7, EDX, 24, AMX_STATE},
    {"amx-int8", L7, EDX, 25, AMX_STATE},     {"avxvnni", L7S1, EAX, 4, AVX_STATE},
    {"avx512bf16", L7S1, EAX, 5, AVX512_STATE}, {"xsaveopt", LD1, EAX, 0, 0},
    {"xsavec", LD1, EAX, 1, 0},   {"xsaves", LD1, EAX, 3, 0},   {"sahf", LX1, ECX, 0, 0},
    {"lzcnt", LX1, ECX, 5, 0},    {"sse4a", LX1, ECX, 6, 0},    {"prfchw", LX1, ECX, 8, 0},
    {"xop", LX1, ECX, 11, AVX_STATE}, {"fma4", LX1, ECX, 16, AVX_STATE}, {"clzero", LX8, EBX, 0, 0},
};
#define NUM_CPU_FEATURES (sizeof cpu_features / sizeof cpu_features[0])

static int cpu_has(const struct cpu_feature *f) {
  static const unsigned leaf[] = {1, 7, 7, 0xD, 0x80000001u, 0x80000008u};
  static const unsigned sub[] = {0, 0, 1, 1, 0, 0};
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(leaf[f->leaf], sub[f->leaf], &r[EAX], &r[EBX], &r[ECX], &r[EDX]))
    return 0;
  if (!((r[f->reg] >> f->bit) & 1)) return 0;
  if (f->state == NOSTATE) return 1;
  unsigned a, b, c, d, lo, hi;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return 0; /* no OSXSAVE: no XCR0 */
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  unsigned need = f->state == AVX_STATE ? 0x6u : f->state == AVX512_STATE ? 0xE6u : 0x60000u;
  return (lo & need) == need;
}

static int listed(const char *list, const char *name) { /* comma- or space-separated */
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    while (*p == ',' || *p == ' ') ++p;
    size_t k = strcspn(p, ", ");
    if (k == n && memcmp(p, name, n) == 0) return 1;
    p += k;
  }
  return 0;
}

static int simulated_has(const char *override, const char *name) {
  static const char *const baseline[] = {"64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2"};
  for (size_t i = 0; i < sizeof baseline / sizeof baseline[0]; ++i)
    if (strcmp(baseline[i], name) == 0) return 1;
  return listed(override, name);
}
#endif

/* 0 when this CPU has every feature the library records that the table knows; else -1 with
 * an error naming the missing ones. Compiled for baseline x86-64, like the rest of this file. */
static int check_cpu(void) {
#if defined(__x86_64__)
  const char *override = getenv("NNVM_CPU_FEATURES_OVERRIDE");
  const char *feats = strstr(nnvm_build_target, "features=");
  char missing[320] = "";
  size_t used = 0;
  int count = 0;
  for (const char *p = feats ? feats + 9 : ""; *p && *p != ';';) {
    size_t k = strcspn(p, ",;");
    char name[32];
    if (*p == '+' && k > 1 && k <= sizeof name) {
      memcpy(name, p + 1, k - 1);
      name[k - 1] = '\0';
      for (size_t i = 0; i < NUM_CPU_FEATURES; ++i) {
        if (strcmp(cpu_features[i].name, name) != 0) continue;
        if (override ? simulated_has(override, name) : cpu_has(&cpu_features[i])) break;
        if (used + k + 2 < sizeof missing)
          used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%s",
                                   count ? ", " : "", name);
        ++count;
        break;
      }
    }
    p += k;
    if (*p == ',') ++p;
  }
  if (count) {
    const char *cpu = strstr(nnvm_build_target, "cpu=");
    int len = cpu ? (int)strcspn(cpu + 4, ";") : 0;
    set_error("nnvm_create: this library was built for CPU '%.*s' and needs CPU features this "
              "CPU%s lacks: %s; rebuild it for a portable target, e.g. target=\"llvm "
              "-mcpu=x86-64-v3\" (docs/deploy-c.md)",
              len, cpu ? cpu + 4 : "", override ? " (NNVM_CPU_FEATURES_OVERRIDE)" : "", missing);
    return -1;
  }
#endif
  return 0;
}

static void *aligned_alloc64(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
  return p;
}

/* The weights and the arena: megabytes that kernels stream through once per run. Linux backs
 * them with 2 MiB pages when asked (transparent huge pages in "madvise" mode, the common
 * default): a weight stream then takes a TLB miss per 2 MiB instead of per 4 KiB, which under
 * a hypervisor's nested page walk doubled the read bandwidth of one core here (7.3 -> 15 GB/s)
 * and made a BERT projection whose weights come from memory 1.23x faster. Such buffers start
 * on a 2 MiB boundary, so huge pages cover them from their first byte; smaller ones keep
 * 64-byte alignment and 4 KiB pages. */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)

static void *alloc_streamed(size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (n >= HUGE_PAGE_BYTES) {
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE_BYTES, n) != 0) return NULL;
    (void)madvise(p, n & ~(HUGE_PAGE_BYTES - 1), MADV_HUGEPAGE); /* a hint: ignore refusals */
    return p;
  }
#endif
  return aligned_alloc64(n);
}

/* A model without params: its arena, device slots and thread count. */
static nnvm_model *new_model(void) {
  nnvm_model *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->arena = alloc_streamed(nnvm_graph_arena_bytes);
  m->params = calloc(nnvm_graph_num_params ? nnvm_graph_num_params : 1, sizeof(void *));
  m->devices = calloc(nnvm_graph_num_devices ? nnvm_graph_num_devices : 1, sizeof(void *));
  m->dbuf = calloc(nnvm_graph_num_device_buffers ? nnvm_graph_num_device_buffers : 1,
                   sizeof(uint64_t));
  if (!m->arena || !m->params || !m->devices || !m->dbuf) {
    nnvm_destroy(m);
    return NULL;
  }
  if (&nnvm_num_threads != NULL) {
    const char *env = getenv("NNVM_NUM_THREADS");
    int n = env ? atoi(env) : 0;
    if (n > 0) nnvm_num_threads = n;
  }
  return m;
}

/* A model over a params file's bytes: copied into its own buffer (`copy`), or read where they
 * are; checked whole either way. `who` names the entry point in errors. */
static nnvm_model *create_from_file(const char *who, const void *blob, size_t size, int copy) {
  last_error[0] = '\0';
  if (check_cpu() != 0) return NULL; /* before anything that could run a kernel */
  if (blob == NULL && (size || !copy)) {
    set_error("%s: params blob is NULL", who);
    return NULL;
  }
  nnvm_model *m = new_model();
  if (!m || (copy && !(m->blob = alloc_streamed(size)))) {
    set_error("%s: out of memory", who);
    nnvm_destroy(m);
    return NULL;
  }
  if (copy && size) memcpy(m->blob, blob, size);
  if (bind_params(m, copy ? m->blob : (const char *)blob, size) != 0) {
    nnvm_destroy(m);
    return NULL;
  }
  return m;
}

nnvm_model *nnvm_create(const void *params_blob, size_t size) {
  return create_from_file("nnvm_create", params_blob, size, 1);
}

nnvm_model *nnvm_create_view(const void *params_blob, size_t size) {
  return create_from_file("nnvm_create_view", params_blob, size, 0);
}

nnvm_model *nnvm_create_bound(const void *const *params, int num_params) {
  last_error[0] = '\0';
  if (check_cpu() != 0) return NULL;
  if (num_params != nnvm_graph_num_params || (num_params && params == NULL)) {
    set_error("nnvm_create_bound: the graph has %d params, got %d", nnvm_graph_num_params,
              params == NULL ? 0 : num_params);
    return NULL;
  }
  for (int i = 0; i < num_params; ++i) {
    if (params[i] == NULL) {
      set_error("nnvm_create_bound: param \"%s\" is NULL", nnvm_graph_params[i].name);
      return NULL;
    }
  }
  nnvm_model *m = new_model();
  if (!m) {
    set_error("nnvm_create_bound: out of memory");
    return NULL;
  }
  for (int i = 0; i < num_params; ++i) m->params[i] = (void *)params[i];
  return m;
}

int nnvm_run(nnvm_model *m, const void *const *inputs, void *const *outputs) {
  if (m == NULL || (nnvm_graph_num_inputs && inputs == NULL) || outputs == NULL) {
    set_error("nnvm_run: model, inputs and outputs must not be NULL");
    return -1;
  }
  if (!m->ran) {
    for (int d = 0; d < nnvm_graph_num_devices; ++d) {
      if (m->devices[d] == NULL) {
        set_error("nnvm_run: device %d ('%s') is not bound (call nnvm_bind_device)", d,
                  nnvm_graph_devices[d]);
        return -1;
      }
    }
    for (int i = 0; i < nnvm_graph_num_device_buffers; ++i) {
      const nnvm_device_api *api = m->devices[nnvm_graph_device_buffer_device[i]];
      m->dbuf[i] = api->alloc(api->ctx, nnvm_graph_device_buffer_bytes[i]);
      if (m->dbuf[i] == 0) {
        set_error("nnvm_run: device '%s' could not allocate %zu bytes",
                  nnvm_graph_devices[nnvm_graph_device_buffer_device[i]],
                  nnvm_graph_device_buffer_bytes[i]);
        return -1;
      }
    }
  }
  unsigned fpenv = nnvm_fpenv_enter(); /* denormals flushed while kernels run */
  int failed = nnvm_graph_run(m->params, m->arena, inputs, outputs,
                              (const nnvm_device_api *const *)m->devices, m->dbuf, !m->ran);
  nnvm_fpenv_leave(fpenv);
  if (failed != 0)
    return -1;
  m->ran = 1;
  return 0;
}

/* Tool hooks for nnvm's debug runtime, which calls the kernels one by one from its own thread:
 * the floating-point environment nnvm_run gives them (nnvm_fpenv.h), and the caller's back. */
unsigned nnvm_debug_fpenv_enter(void) { return nnvm_fpenv_enter(); }
void nnvm_debug_fpenv_leave(unsigned saved) { nnvm_fpenv_leave(saved); }

int nnvm_num_devices(void) { return nnvm_graph_num_devices; }

const char *nnvm_device_name(int index) {
  if (index < 0 || index >= nnvm_graph_num_devices) return NULL;
  return nnvm_graph_devices[index];
}

int nnvm_bind_device(nnvm_model *m, int index, const nnvm_device_api *api) {
  if (m == NULL || api == NULL || index < 0 || index >= nnvm_graph_num_devices) {
    set_error("nnvm_bind_device: bad model, API or device index %d", index);
    return -1;
  }
  if (m->ran) {
    set_error("nnvm_bind_device: the model has already run on device %d", index);
    return -1;
  }
  m->devices[index] = api;
  return 0;
}

void nnvm_destroy(nnvm_model *m) {
  if (!m) return;
  if (m->dbuf && m->devices) {
    for (int i = 0; i < nnvm_graph_num_device_buffers; ++i) {
      const nnvm_device_api *api = m->devices[nnvm_graph_device_buffer_device[i]];
      if (m->dbuf[i] && api) api->release(api->ctx, m->dbuf[i]);
    }
  }
  free(m->devices);
  free(m->dbuf);
  free(m->blob);
  free(m->arena);
  free(m->params);
  free(m);
}

int nnvm_abi_version(void) { return NNVM_ABI_VERSION; }
const char *nnvm_model_hash(void) { return nnvm_graph_model_hash; }
const char *nnvm_target(void) { return nnvm_graph_target; }
int nnvm_num_inputs(void) { return nnvm_graph_num_inputs; }
int nnvm_num_outputs(void) { return nnvm_graph_num_outputs; }

int nnvm_input_info(int i, const char **name, int *dtype, int *ndim, const int64_t **dims) {
  if (i < 0 || i >= nnvm_graph_num_inputs) return -1;
  if (name) *name = nnvm_graph_inputs[i].name;
  if (dtype) *dtype = nnvm_graph_inputs[i].dtype;
  if (ndim) *ndim = nnvm_graph_inputs[i].ndim;
  if (dims) *dims = nnvm_graph_inputs[i].dims;
  return 0;
}

void *nnvm_kernel(const char *name) {
  if (name == NULL) return NULL;
  for (int i = 0; i < nnvm_graph_num_kernels; ++i)
    if (strcmp(nnvm_graph_kernels[i].name, name) == 0) return nnvm_graph_kernels[i].fn;
  return NULL;
}

int nnvm_output_info(int i, int *dtype, int *ndim, const int64_t **dims) {
  if (i < 0 || i >= nnvm_graph_num_outputs) return -1;
  if (dtype) *dtype = nnvm_graph_outputs[i].dtype;
  if (ndim) *ndim = nnvm_graph_outputs[i].ndim;
  if (dims) *dims = nnvm_graph_outputs[i].dims;
  return 0;
}
