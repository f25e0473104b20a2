/* The model-independent part of a library built by nnvm: parsing the params blob, owning the
 * arena and the weights, reporting errors. The generated part (entry.c, see entry_point.py)
 * provides the tables and nnvm_graph_run, which calls the kernels in order. */
#include "nnvm_graph.h"
#include "nnvm_runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  char *blob;    /* 64-byte aligned copy of the params file: weights are used in place */
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

/* CRC-32 (IEEE 802.3, zlib's), table-driven; the table is built on first use. */
static uint32_t crc_table[256];
static int crc_ready;

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  if (!crc_ready) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      crc_table[i] = c;
    }
    crc_ready = 1;
  }
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

static int bind_params(nnvm_model *m, size_t size) {
  const char *b = m->blob;
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

static void *aligned_alloc64(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
  return p;
}

nnvm_model *nnvm_create(const void *params_blob, size_t size) {
  last_error[0] = '\0';
  if (params_blob == NULL && size) {
    set_error("nnvm_create: params blob is NULL");
    return NULL;
  }
  nnvm_model *m = calloc(1, sizeof *m);
  if (!m) goto oom;
  m->blob = aligned_alloc64(size);
  m->arena = aligned_alloc64(nnvm_graph_arena_bytes);
  m->params = calloc(nnvm_graph_num_params ? nnvm_graph_num_params : 1, sizeof(void *));
  m->devices = calloc(nnvm_graph_num_devices ? nnvm_graph_num_devices : 1, sizeof(void *));
  m->dbuf = calloc(nnvm_graph_num_device_buffers ? nnvm_graph_num_device_buffers : 1,
                   sizeof(uint64_t));
  if (!m->blob || !m->arena || !m->params || !m->devices || !m->dbuf) goto oom;
  if (size) memcpy(m->blob, params_blob, size);
  if (bind_params(m, size) != 0) {
    nnvm_destroy(m);
    return NULL;
  }
  if (&nnvm_num_threads != NULL) {
    const char *env = getenv("NNVM_NUM_THREADS");
    int n = env ? atoi(env) : 0;
    if (n > 0) nnvm_num_threads = n;
  }
  return m;
oom:
  set_error("nnvm_create: out of memory");
  nnvm_destroy(m);
  return NULL;
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
  if (nnvm_graph_run(m->params, m->arena, inputs, outputs,
                     (const nnvm_device_api *const *)m->devices, m->dbuf, !m->ran) != 0)
    return -1;
  m->ran = 1;
  return 0;
}

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

int nnvm_output_info(int i, int *dtype, int *ndim, const int64_t **dims) {
  if (i < 0 || i >= nnvm_graph_num_outputs) return -1;
  if (dtype) *dtype = nnvm_graph_outputs[i].dtype;
  if (ndim) *ndim = nnvm_graph_outputs[i].ndim;
  if (dims) *dims = nnvm_graph_outputs[i].dims;
  return 0;
}
