/* The OpenCL device runtime for C programs (nnvm_opencl.h): nnvm's Python OpenCL runtime
 * (targets/gpu/opencl/runtime.py) with no Python, behind the five callbacks of
 * nnvm_device_api. Every OpenCL failure returns non-zero with a message naming the call and
 * its error code (nnvm_opencl_last_error); nothing here aborts.
 *
 * The program blob. A device kernel's blob is the JSON document targets/gpu/launch_plan.py
 * writes, {"code": OpenCL C, "plan": {"n_args", "temps", "consts" (base64), "steps"}}, and this
 * file reads that JSON itself with a small strict parser (below) rather than asking the
 * compiler for a second, C-friendly copy of the plan in the blob. One format keeps every
 * library built so far runnable from C, leaves the Python reader and the blob's producer
 * untouched, and keeps one source of truth for the plan; the parser is short, needs no
 * library, and checks everything it reads: the JSON grammar (RFC 8259, UTF-16 escapes to
 * UTF-8, nesting depth), every bound (each read is against the blob's size, so a truncated
 * blob is an error, never a read past it), the schema (types, integer ranges, base64), and
 * the plan's references (an argument, temporary or constant index the plan does not have).
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

/* ---- a strict JSON reader ---------------------------------------------------------------- */

enum { J_NULL, J_FALSE, J_TRUE, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };
#define JSON_MAX_DEPTH 32

typedef struct jvalue {
  int kind;
  char *str;  /* a string (decoded, NUL-terminated) or a number's text */
  size_t len; /* its length in bytes */
  struct jvalue *items; /* an array's items, an object's values */
  char **keys;          /* an object's keys */
  size_t n;
} jvalue;

typedef struct {
  const unsigned char *start, *p, *end;
  char msg[160];
} jparser;

static int jfail(jparser *ps, const char *what) {
  if (ps->p >= ps->end)
    snprintf(ps->msg, sizeof ps->msg, "%s at the end of the blob (truncated?)", what);
  else
    snprintf(ps->msg, sizeof ps->msg, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
  return -1;
}

static void jfree(jvalue *v) {
  for (size_t i = 0; i < v->n; ++i) {
    if (v->items) jfree(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

static void jskip(jparser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ++ps->p;
}

static int hex4(const unsigned char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; ++i) {
    unsigned c = p[i], d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return -1;
    v = v * 16 + d;
  }
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* A string at ps->p (its opening quote): decoded into a new buffer. Escapes never grow the
 * text, so the raw length found by a first pass bounds the decoded one. */
static int jstring(jparser *ps, char **out, size_t *len) {
  const unsigned char *q = ++ps->p;
  while (q < ps->end && *q != '"') q += (*q == '\\' && ps->end - q > 1) ? 2 : 1;
  if (q >= ps->end) {
    ps->p = ps->end;
    return jfail(ps, "unterminated string");
  }
  char *s = malloc((size_t)(q - ps->p) + 1), *o = s;
  if (!s) return jfail(ps, "out of memory");
  while (ps->p < q) {
    unsigned c = *ps->p;
    if (c < 0x20) {
      free(s);
      return jfail(ps, "control character in a string");
    }
    if (c != '\\') {
      *o++ = (char)c;
      ++ps->p;
      continue;
    }
    c = ps->p[1];
    ps->p += 2;
    switch (c) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '/': *o++ = '/'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'n': *o++ = '\n'; break;
    case 'r': *o++ = '\r'; break;
    case 't': *o++ = '\t'; break;
    case 'u': {
      unsigned cp, lo;
      if (q - ps->p < 4 || hex4(ps->p, &cp)) {
        free(s);
        return jfail(ps, "bad \\u escape");
      }
      ps->p += 4;
      if (cp >= 0xDC00 && cp <= 0xDFFF) {
        free(s);
        return jfail(ps, "unpaired UTF-16 surrogate");
      }
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (q - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' || hex4(ps->p + 2, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF) {
          free(s);
          return jfail(ps, "unpaired UTF-16 surrogate");
        }
        ps->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      o += put_utf8(o, cp);
      break;
    }
    default:
      ps->p -= 2;
      free(s);
      return jfail(ps, "bad escape in a string");
    }
  }
  ++ps->p; /* the closing quote */
  *o = 0;
  *out = s;
  *len = (size_t)(o - s);
  return 0;
}

static int jdigits(jparser *ps) {
  const unsigned char *p0 = ps->p;
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ++ps->p;
  return ps->p > p0 ? 0 : jfail(ps, "bad number");
}

static int jnumber(jparser *ps, jvalue *v) {
  const unsigned char *p0 = ps->p;
  if (*ps->p == '-') ++ps->p;
  if (ps->p < ps->end && *ps->p == '0')
    ++ps->p;
  else if (jdigits(ps))
    return -1;
  if (ps->p < ps->end && *ps->p == '.') {
    ++ps->p;
    if (jdigits(ps)) return -1;
  }
  if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
    ++ps->p;
    if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ++ps->p;
    if (jdigits(ps)) return -1;
  }
  v->kind = J_NUMBER;
  v->len = (size_t)(ps->p - p0);
  v->str = malloc(v->len + 1);
  if (!v->str) return jfail(ps, "out of memory");
  memcpy(v->str, p0, v->len);
  v->str[v->len] = 0;
  return 0;
}

static int jliteral(jparser *ps, const char *word, int kind, jvalue *v) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
    return jfail(ps, "unexpected character");
  ps->p += n;
  v->kind = kind;
  return 0;
}

/* On failure *v is left for jfree (the caller frees it). */
static int jvalue_of(jparser *ps, jvalue *v, int depth) {
  memset(v, 0, sizeof *v);
  jskip(ps);
  if (ps->p >= ps->end) return jfail(ps, "expected a value");
  unsigned c = *ps->p;
  if (c == '"') {
    v->kind = J_STRING;
    return jstring(ps, &v->str, &v->len);
  }
  if (c == '-' || (c >= '0' && c <= '9')) return jnumber(ps, v);
  if (c == 't') return jliteral(ps, "true", J_TRUE, v);
  if (c == 'f') return jliteral(ps, "false", J_FALSE, v);
  if (c == 'n') return jliteral(ps, "null", J_NULL, v);
  if (c != '[' && c != '{') return jfail(ps, "unexpected character");
  if (depth >= JSON_MAX_DEPTH) return jfail(ps, "nested too deeply");
  int object = c == '{';
  char close = object ? '}' : ']';
  v->kind = object ? J_OBJECT : J_ARRAY;
  ++ps->p;
  jskip(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ++ps->p;
    return 0;
  }
  size_t cap = 0;
  for (;;) {
    if (v->n == cap) {
      cap = cap ? 2 * cap : 4;
      jvalue *items = realloc(v->items, cap * sizeof *items);
      if (!items) return jfail(ps, "out of memory");
      v->items = items;
      if (object) {
        char **keys = realloc(v->keys, cap * sizeof *keys);
        if (!keys) return jfail(ps, "out of memory");
        v->keys = keys;
      }
    }
    jvalue *item = &v->items[v->n];
    memset(item, 0, sizeof *item);
    if (object) {
      size_t klen;
      v->keys[v->n] = NULL;
      jskip(ps);
      if (ps->p >= ps->end || *ps->p != '"') {
        v->n++;
        return jfail(ps, "expected a key");
      }
      if (jstring(ps, &v->keys[v->n], &klen)) {
        v->n++;
        return -1;
      }
      for (size_t i = 0; i < v->n; ++i) {
        if (strcmp(v->keys[i], v->keys[v->n]) == 0) {
          v->n++;
          return jfail(ps, "duplicate key");
        }
      }
      jskip(ps);
      if (ps->p >= ps->end || *ps->p != ':') {
        v->n++;
        return jfail(ps, "expected ':'");
      }
      ++ps->p;
    }
    int failed = jvalue_of(ps, item, depth + 1);
    v->n++;
    if (failed) return -1;
    jskip(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ++ps->p;
      continue;
    }
    if (ps->p < ps->end && *ps->p == close) {
      ++ps->p;
      return 0;
    }
    return jfail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int json_parse(const unsigned char *data, size_t size, jvalue *root, char *msg,
                      size_t msglen) {
  jparser ps = {data, data, data + size, ""};
  int failed = jvalue_of(&ps, root, 0);
  if (!failed) {
    jskip(&ps);
    if (ps.p != ps.end) failed = jfail(&ps, "trailing data");
  }
  if (failed) {
    jfree(root);
    snprintf(msg, msglen, "%s", ps.msg);
  }
  return failed;
}

static const jvalue *jget(const jvalue *obj, const char *key) {
  for (size_t i = 0; i < obj->n; ++i)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

/* A non-negative integer (no sign, fraction or exponent) of at most `max`. */
static int jint(const jvalue *v, uint64_t max, uint64_t *out) {
  if (!v || v->kind != J_NUMBER || v->str[0] == '-') return -1;
  uint64_t x = 0;
  for (size_t i = 0; i < v->len; ++i) {
    char c = v->str[i];
    if (c < '0' || c > '9') return -1;
    if (x > (max - (uint64_t)(c - '0')) / 10) return -1;
    x = x * 10 + (uint64_t)(c - '0');
  }
  *out = x;
  return 0;
}

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Standard base64 with padding (Python's b64encode), nothing else. */
static int base64_decode(const char *s, size_t len, unsigned char **out, size_t *size) {
  if (len % 4) return -1;
  size_t pad = len && s[len - 1] == '=' ? (len > 1 && s[len - 2] == '=' ? 2 : 1) : 0;
  size_t n = len / 4 * 3 - pad;
  unsigned char *o = malloc(n ? n : 1);
  if (!o) return -1;
  size_t k = 0;
  for (size_t i = 0; i < len; i += 4) {
    int v[4];
    for (int j = 0; j < 4; ++j) {
      int is_pad = i + (size_t)j >= len - pad;
      v[j] = is_pad ? 0 : b64_value((unsigned char)s[i + (size_t)j]);
      if (v[j] < 0) {
        free(o);
        return -1;
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    unsigned char bytes[3] = {(unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w};
    for (int j = 0; j < 3 && k < n; ++j) o[k++] = bytes[j];
  }
  *out = o;
  *size = n;
  return 0;
}

/* ---- the launch plan --------------------------------------------------------------------- */

enum { REF_ARG, REF_TEMP, REF_CONST };
typedef struct {
  int kind;
  size_t index;
} ref_t;

typedef struct {
  int is_copy;
  /* a launch */
  char *kernel;
  cl_uint dims;
  size_t global[3], local[3];
  ref_t *args;
  size_t n_args;
  cl_kernel k; /* created when the program is built */
  /* a copy */
  ref_t src, dst;
  size_t nbytes;
} step_t;

typedef struct {
  char *code;
  size_t code_len;
  size_t n_args, n_temps, n_consts, n_steps;
  size_t *temps;
  unsigned char **consts;
  size_t *const_sizes;
  step_t *steps;
} plan_t;

static void plan_free(plan_t *p) {
  for (size_t i = 0; i < p->n_consts; ++i)
    if (p->consts) free(p->consts[i]);
  for (size_t i = 0; i < p->n_steps; ++i) {
    free(p->steps[i].kernel);
    free(p->steps[i].args);
    if (p->steps[i].k) clReleaseKernel(p->steps[i].k);
  }
  free(p->code);
  free(p->temps);
  free(p->consts);
  free(p->const_sizes);
  free(p->steps);
  memset(p, 0, sizeof *p);
}

#define MAX_COUNT ((uint64_t)1 << 24)  /* arguments, temporaries, constants, steps */
#define MAX_BYTES ((uint64_t)1 << 48)  /* a buffer */
#define MAX_GRID ((uint64_t)1 << 31)   /* a grid or block dimension */

static int plan_ref(const jvalue *v, const plan_t *p, ref_t *out) {
  uint64_t index;
  if (!v || v->kind != J_ARRAY || v->n != 2 || v->items[0].kind != J_STRING ||
      jint(&v->items[1], MAX_COUNT, &index))
    return -1;
  const char *kind = v->items[0].str;
  size_t count;
  if (strcmp(kind, "arg") == 0) {
    out->kind = REF_ARG;
    count = p->n_args;
  } else if (strcmp(kind, "temp") == 0) {
    out->kind = REF_TEMP;
    count = p->n_temps;
  } else if (strcmp(kind, "const") == 0) {
    out->kind = REF_CONST;
    count = p->n_consts;
  } else {
    return -1;
  }
  out->index = (size_t)index;
  return index < count ? 0 : -1;
}

/* A 1- to 3-element array of integers in [lo, MAX_GRID]. */
static int plan_dims(const jvalue *v, uint64_t lo, size_t out[3], cl_uint *dims) {
  if (!v || v->kind != J_ARRAY || v->n < 1 || v->n > 3) return -1;
  for (size_t i = 0; i < v->n; ++i) {
    uint64_t x;
    if (jint(&v->items[i], MAX_GRID, &x) || x < lo) return -1;
    out[i] = (size_t)x;
  }
  *dims = (cl_uint)v->n;
  return 0;
}

/* The blob's document as a plan; on failure `msg` says what is wrong and where. */
static int plan_of(const jvalue *root, plan_t *p, char *msg, size_t msglen) {
  const jvalue *code, *plan, *v;
  uint64_t x;
  memset(p, 0, sizeof *p);
#define BAD(...)                          \
  do {                                    \
    snprintf(msg, msglen, __VA_ARGS__);   \
    plan_free(p);                         \
    return -1;                            \
  } while (0)
  if (root->kind != J_OBJECT) BAD("not a JSON object");
  code = jget(root, "code");
  plan = jget(root, "plan");
  if (!code || code->kind != J_STRING) BAD("\"code\" is missing or not a string");
  if (!plan || plan->kind != J_OBJECT) BAD("\"plan\" is missing or not an object");
  if (jint(jget(plan, "n_args"), MAX_COUNT, &x)) BAD("plan.n_args is not a count");
  p->n_args = (size_t)x;

  v = jget(plan, "temps");
  if (!v || v->kind != J_ARRAY || v->n > MAX_COUNT) BAD("plan.temps is not an array");
  p->temps = calloc(v->n ? v->n : 1, sizeof *p->temps);
  if (!p->temps) BAD("out of memory");
  p->n_temps = v->n;
  for (size_t i = 0; i < v->n; ++i) {
    if (jint(&v->items[i], MAX_BYTES, &x)) BAD("plan.temps[%zu] is not a byte count", i);
    p->temps[i] = (size_t)x;
  }

  v = jget(plan, "consts");
  if (!v || v->kind != J_ARRAY || v->n > MAX_COUNT) BAD("plan.consts is not an array");
  p->consts = calloc(v->n ? v->n : 1, sizeof *p->consts);
  p->const_sizes = calloc(v->n ? v->n : 1, sizeof *p->const_sizes);
  if (!p->consts || !p->const_sizes) BAD("out of memory");
  p->n_consts = v->n;
  for (size_t i = 0; i < v->n; ++i) {
    const jvalue *c = &v->items[i];
    if (c->kind != J_STRING ||
        base64_decode(c->str, c->len, &p->consts[i], &p->const_sizes[i]))
      BAD("plan.consts[%zu] is not base64", i);
  }

  v = jget(plan, "steps");
  if (!v || v->kind != J_ARRAY || v->n > MAX_COUNT) BAD("plan.steps is not an array");
  p->steps = calloc(v->n ? v->n : 1, sizeof *p->steps);
  if (!p->steps) BAD("out of memory");
  p->n_steps = v->n;
  for (size_t i = 0; i < v->n; ++i) {
    const jvalue *s = &v->items[i], *kernel, *args, *copy;
    step_t *st = &p->steps[i];
    if (s->kind != J_OBJECT) BAD("plan.steps[%zu] is not an object", i);
    if ((kernel = jget(s, "launch")) != NULL) {
      cl_uint block_dims;
      if (kernel->kind != J_STRING || kernel->len == 0 || strlen(kernel->str) != kernel->len)
        BAD("plan.steps[%zu].launch is not a kernel name", i);
      if (plan_dims(jget(s, "grid"), 0, st->global, &st->dims))
        BAD("plan.steps[%zu].grid is not 1 to 3 sizes", i);
      if (plan_dims(jget(s, "block"), 1, st->local, &block_dims) || block_dims != st->dims)
        BAD("plan.steps[%zu].block is not %u positive sizes", i, (unsigned)st->dims);
      for (cl_uint d = 0; d < st->dims; ++d) {
        if (st->global[d] > SIZE_MAX / st->local[d])
          BAD("plan.steps[%zu]: grid * block overflows", i);
        st->global[d] *= st->local[d];
      }
      args = jget(s, "args");
      if (!args || args->kind != J_ARRAY || args->n > MAX_COUNT)
        BAD("plan.steps[%zu].args is not an array", i);
      st->args = calloc(args->n ? args->n : 1, sizeof *st->args);
      if (!st->args) BAD("out of memory");
      st->n_args = args->n;
      for (size_t a = 0; a < args->n; ++a)
        if (plan_ref(&args->items[a], p, &st->args[a]))
          BAD("plan.steps[%zu].args[%zu] is not a buffer of the plan", i, a);
      st->kernel = malloc(kernel->len + 1);
      if (!st->kernel) BAD("out of memory");
      memcpy(st->kernel, kernel->str, kernel->len + 1);
    } else if ((copy = jget(s, "copy")) != NULL) {
      st->is_copy = 1;
      if (copy->kind != J_ARRAY || copy->n != 2 || plan_ref(&copy->items[0], p, &st->src) ||
          plan_ref(&copy->items[1], p, &st->dst))
        BAD("plan.steps[%zu].copy is not two buffers of the plan", i);
      if (jint(jget(s, "bytes"), MAX_BYTES, &x)) BAD("plan.steps[%zu].bytes is not a count", i);
      st->nbytes = (size_t)x;
    } else {
      BAD("plan.steps[%zu] is neither a launch nor a copy", i);
    }
  }
  p->code = malloc(code->len + 1);
  if (!p->code) BAD("out of memory");
  memcpy(p->code, code->str, code->len + 1);
  p->code_len = code->len;
  return 0;
#undef BAD
}

/* ---- the device -------------------------------------------------------------------------- */

typedef struct {
  cl_mem mem; /* NULL: a free slot */
  size_t size;
} buffer_t;

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
  buffer_t *buffers;    /* handle h is buffers[h - 1] */
  size_t n_buffers, first_free;
  loaded_t *kernels[BUCKETS];
} device_t;

static void loaded_free(loaded_t *l) {
  for (size_t i = 0; i < l->plan.n_temps; ++i)
    if (l->temps && l->temps[i]) clReleaseMemObject(l->temps[i]);
  for (size_t i = 0; i < l->plan.n_consts; ++i)
    if (l->consts && l->consts[i]) clReleaseMemObject(l->consts[i]);
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
  if (!target) return -1;
  const char *p = target;
  int index = 0, first = 1;
  for (;;) {
    while (*p == ' ' || *p == '\t') ++p;
    if (!*p) break;
    size_t n = strcspn(p, " \t");
    if (first) {
      if (!((n == 6 && strncmp(p, "opencl", 6) == 0) || (n == 2 && strncmp(p, "cl", 2) == 0)))
        return -1;
      first = 0;
    } else if (n >= 8 && strncmp(p, "-device=", 8) == 0) {
      long v = 0;
      if (n == 8) return -1;
      for (size_t i = 8; i < n; ++i) {
        if (p[i] < '0' || p[i] > '9' || v > 100000) return -1;
        v = v * 10 + (p[i] - '0');
      }
      index = (int)v;
    }
    p += n;
  }
  return first ? -1 : index;
}

/* ---- buffers (the API's callbacks) ------------------------------------------------------- */

/* The buffer of a handle (with the lock held), or NULL with an error. */
static buffer_t *buffer_of(device_t *dev, uint64_t handle, const char *what) {
  if (handle == 0 || handle > dev->n_buffers || dev->buffers[handle - 1].mem == NULL) {
    set_error("%s: no buffer %llu on this device", what, (unsigned long long)handle);
    return NULL;
  }
  return &dev->buffers[handle - 1];
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
  size_t slot = dev->first_free;
  while (slot < dev->n_buffers && dev->buffers[slot].mem) ++slot;
  if (slot == dev->n_buffers) {
    buffer_t *grown = realloc(dev->buffers, (dev->n_buffers + 1) * 2 * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&dev->lock);
      clReleaseMemObject(mem);
      set_error("alloc: out of memory");
      return 0;
    }
    for (size_t i = dev->n_buffers; i < (dev->n_buffers + 1) * 2; ++i) grown[i].mem = NULL;
    dev->buffers = grown;
    dev->n_buffers = (dev->n_buffers + 1) * 2;
  }
  dev->buffers[slot].mem = mem;
  dev->buffers[slot].size = size;
  dev->first_free = slot + 1;
  pthread_mutex_unlock(&dev->lock);
  return (uint64_t)slot + 1;
}

static void api_release(void *ctx, uint64_t handle) {
  device_t *dev = ctx;
  cl_mem mem = NULL;
  pthread_mutex_lock(&dev->lock);
  if (handle && handle <= dev->n_buffers) {
    mem = dev->buffers[handle - 1].mem;
    dev->buffers[handle - 1].mem = NULL;
    if (handle - 1 < dev->first_free) dev->first_free = handle - 1;
  }
  pthread_mutex_unlock(&dev->lock);
  if (mem) clReleaseMemObject(mem);
}

/* The cl_mem of a handle holding at least nbytes (retained: the caller releases it). */
static cl_mem copy_target(device_t *dev, uint64_t handle, size_t nbytes, const char *what) {
  pthread_mutex_lock(&dev->lock);
  buffer_t *b = buffer_of(dev, handle, what);
  cl_mem mem = NULL;
  if (b && nbytes > b->size)
    set_error("%s: %zu bytes do not fit buffer %llu (%zu bytes)", what, nbytes,
              (unsigned long long)handle, b->size);
  else if (b && clRetainMemObject(b->mem) == CL_SUCCESS)
    mem = b->mem;
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

  size_t name_len = strlen(kernel);
  char *sym = malloc(name_len + 32);
  if (!sym) {
    set_error("kernel %s: out of memory", kernel);
    return NULL;
  }
  snprintf(sym, name_len + 32, "nnvm_blob_%s", kernel);
  const unsigned char *data = dev->symbol ? dev->symbol(dev->handle, sym) : NULL;
  snprintf(sym, name_len + 32, "nnvm_blob_%s_size", kernel);
  const unsigned long *size = dev->symbol ? dev->symbol(dev->handle, sym) : NULL;
  free(sym);
  if (!data || !size) {
    set_error("the library holds no device program for '%s' (no symbol nnvm_blob_%s)", kernel,
              kernel);
    return NULL;
  }

  jvalue root;
  char msg[256];
  loaded_t *l = calloc(1, sizeof *l);
  if (!l || !(l->name = malloc(name_len + 1))) {
    free(l);
    set_error("kernel %s: out of memory", kernel);
    return NULL;
  }
  memcpy(l->name, kernel, name_len + 1);
  if (json_parse(data, (size_t)*size, &root, msg, sizeof msg)) {
    set_error("kernel %s: its program (nnvm_blob_%s, %lu bytes) is not JSON: %s", kernel,
              kernel, *size, msg);
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
  if (build_program(dev, l)) {
    loaded_free(l);
    return NULL;
  }
  cl_int rc;
  plan_t *p = &l->plan;
  for (size_t i = 0; i < p->n_steps; ++i) {
    step_t *st = &p->steps[i];
    if (st->is_copy) continue;
    st->k = clCreateKernel(l->program, st->kernel, &rc);
    if (rc != CL_SUCCESS || !st->k) {
      st->k = NULL;
      set_error("kernel %s: clCreateKernel(\"%s\") failed: %s (%d)", kernel, st->kernel,
                cl_error_name(rc), (int)rc);
      loaded_free(l);
      return NULL;
    }
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
      rc = clSetKernelArg(st->k, (cl_uint)a, sizeof mem, &mem);
      if (rc != CL_SUCCESS) {
        set_error("kernel %s: clSetKernelArg(%s, %zu) failed: %s (%d)", l->name, st->kernel, a,
                  cl_error_name(rc), (int)rc);
        return -1;
      }
    }
    int empty = 0;
    for (cl_uint d = 0; d < st->dims; ++d) empty |= st->global[d] == 0;
    if (empty) continue; /* no work-items: nothing to run */
    rc = clEnqueueNDRangeKernel(dev->queue, st->k, st->dims, NULL, st->global, st->local, 0, NULL,
                                NULL);
    if (rc != CL_SUCCESS) {
      set_error("kernel %s: clEnqueueNDRangeKernel(%s, global %zux%zux%zu, local %zux%zux%zu) "
                "failed: %s (%d)",
                l->name, st->kernel, st->global[0], st->dims > 1 ? st->global[1] : 1,
                st->dims > 2 ? st->global[2] : 1, st->local[0], st->dims > 1 ? st->local[1] : 1,
                st->dims > 2 ? st->local[2] : 1, cl_error_name(rc), (int)rc);
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
    buffer_t *b = buffer_of(dev, buffers[i], "launch");
    if (!b) goto done;
    args[i] = b->mem;
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
  for (size_t i = 0; i < dev->n_buffers; ++i)
    if (dev->buffers[i].mem) clReleaseMemObject(dev->buffers[i].mem);
  free(dev->buffers);
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
