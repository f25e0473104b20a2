/* The part of nnvm's C GPU device runtimes that does not talk to a GPU API, compiled into
 * each of them (nnvm_opencl.c, nnvm_cuda.c include this file; it is not compiled on its own):
 * the reader of a device kernel's program blob and its launch plan, the lookup of that blob in
 * a model library, the device index of a target string, and a table of buffer handles.
 * Everything here is static, so one program may use both runtimes.
 *
 * The program blob. A device kernel's blob is the JSON document targets/gpu/launch_plan.py
 * (OpenCL) or targets/gpu/cuda/blob.py (CUDA) writes: {"code": OpenCL C or PTX, "plan":
 * {"n_args", "temps", "consts" (base64), "steps"}}, for CUDA also "format" ("nnvm-cuda/1"),
 * "arch" ("sm_90") and, built with `cuda -emulate`, "llvm_ir". The runtimes read that JSON
 * themselves with a small strict parser (below) rather than asking the compiler for a second,
 * C-friendly copy of the plan in the blob. One format keeps every library built so far
 * runnable from C, leaves the Python readers and the blob's producers untouched, and keeps one
 * source of truth for the plan; the parser is short, needs no library, and checks everything
 * it reads: the JSON grammar (RFC 8259, UTF-16 escapes to UTF-8, nesting depth), every bound
 * (each read is against the blob's size, so a truncated blob is an error, never a read past
 * it), the schema (types, integer ranges, base64), and the plan's references (an argument,
 * temporary or constant index the plan does not have). Keys it does not know are ignored. */
#ifndef NNVM_GPU_PLAN_H
#define NNVM_GPU_PLAN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define NNVM_GPU_STATIC static __attribute__((unused))
#else
#define NNVM_GPU_STATIC static
#endif

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

NNVM_GPU_STATIC int jfail(jparser *ps, const char *what) {
  if (ps->p >= ps->end)
    snprintf(ps->msg, sizeof ps->msg, "%s at the end of the blob (truncated?)", what);
  else
    snprintf(ps->msg, sizeof ps->msg, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
  return -1;
}

NNVM_GPU_STATIC void jfree(jvalue *v) {
  for (size_t i = 0; i < v->n; ++i) {
    if (v->items) jfree(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

NNVM_GPU_STATIC void jskip(jparser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ++ps->p;
}

NNVM_GPU_STATIC int hex4(const unsigned char *p, unsigned *out) {
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

NNVM_GPU_STATIC size_t put_utf8(char *o, unsigned cp) {
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
NNVM_GPU_STATIC int jstring(jparser *ps, char **out, size_t *len) {
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

NNVM_GPU_STATIC int jdigits(jparser *ps) {
  const unsigned char *p0 = ps->p;
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ++ps->p;
  return ps->p > p0 ? 0 : jfail(ps, "bad number");
}

NNVM_GPU_STATIC int jnumber(jparser *ps, jvalue *v) {
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

NNVM_GPU_STATIC int jliteral(jparser *ps, const char *word, int kind, jvalue *v) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
    return jfail(ps, "unexpected character");
  ps->p += n;
  v->kind = kind;
  return 0;
}

/* On failure *v is left for jfree (the caller frees it). */
NNVM_GPU_STATIC int jvalue_of(jparser *ps, jvalue *v, int depth) {
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

NNVM_GPU_STATIC int json_parse(const unsigned char *data, size_t size, jvalue *root, char *msg,
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

NNVM_GPU_STATIC const jvalue *jget(const jvalue *obj, const char *key) {
  for (size_t i = 0; i < obj->n; ++i)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

/* A copy of a string value, NULL if it holds a NUL (or on no memory). */
NNVM_GPU_STATIC char *jdup(const jvalue *v) {
  if (v->kind != J_STRING || strlen(v->str) != v->len) return NULL;
  char *s = malloc(v->len + 1);
  if (s) memcpy(s, v->str, v->len + 1);
  return s;
}

/* A non-negative integer (no sign, fraction or exponent) of at most `max`. */
NNVM_GPU_STATIC int jint(const jvalue *v, uint64_t max, uint64_t *out) {
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

NNVM_GPU_STATIC int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Standard base64 with padding (Python's b64encode), nothing else. */
NNVM_GPU_STATIC int base64_decode(const char *s, size_t len, unsigned char **out, size_t *size) {
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
  unsigned dims; /* 1 to 3 */
  size_t grid[3], block[3];
  ref_t *args;
  size_t n_args;
  void *fn; /* the runtime's handle on the kernel (plan_free does not release it) */
  /* a copy */
  ref_t src, dst;
  size_t nbytes;
} step_t;

typedef struct {
  char *code; /* OpenCL C or PTX */
  size_t code_len;
  char *format, *arch; /* the blob's "format" and "arch" strings; NULL where it has none */
  int has_llvm_ir;     /* the blob has an "llvm_ir" (a `cuda -emulate` build's) */
  size_t n_args, n_temps, n_consts, n_steps;
  size_t *temps;
  unsigned char **consts;
  size_t *const_sizes;
  step_t *steps;
} plan_t;

NNVM_GPU_STATIC void plan_free(plan_t *p) {
  for (size_t i = 0; i < p->n_consts; ++i)
    if (p->consts) free(p->consts[i]);
  for (size_t i = 0; i < p->n_steps; ++i) {
    free(p->steps[i].kernel);
    free(p->steps[i].args);
  }
  free(p->code);
  free(p->format);
  free(p->arch);
  free(p->temps);
  free(p->consts);
  free(p->const_sizes);
  free(p->steps);
  memset(p, 0, sizeof *p);
}

#define MAX_COUNT ((uint64_t)1 << 24)  /* arguments, temporaries, constants, steps */
#define MAX_BYTES ((uint64_t)1 << 48)  /* a buffer */
#define MAX_GRID ((uint64_t)1 << 31)   /* a grid or block dimension */

NNVM_GPU_STATIC int plan_ref(const jvalue *v, const plan_t *p, ref_t *out) {
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
NNVM_GPU_STATIC int plan_dims(const jvalue *v, uint64_t lo, size_t out[3], unsigned *dims) {
  if (!v || v->kind != J_ARRAY || v->n < 1 || v->n > 3) return -1;
  for (size_t i = 0; i < v->n; ++i) {
    uint64_t x;
    if (jint(&v->items[i], MAX_GRID, &x) || x < lo) return -1;
    out[i] = (size_t)x;
  }
  *dims = (unsigned)v->n;
  return 0;
}

/* The blob's document as a plan; on failure `msg` says what is wrong and where. */
NNVM_GPU_STATIC int plan_of(const jvalue *root, plan_t *p, char *msg, size_t msglen) {
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
      unsigned block_dims;
      if (kernel->kind != J_STRING || kernel->len == 0 || strlen(kernel->str) != kernel->len)
        BAD("plan.steps[%zu].launch is not a kernel name", i);
      if (plan_dims(jget(s, "grid"), 0, st->grid, &st->dims))
        BAD("plan.steps[%zu].grid is not 1 to 3 sizes", i);
      if (plan_dims(jget(s, "block"), 1, st->block, &block_dims) || block_dims != st->dims)
        BAD("plan.steps[%zu].block is not %u positive sizes", i, st->dims);
      for (unsigned d = 0; d < st->dims; ++d)
        if (st->grid[d] > SIZE_MAX / st->block[d])
          BAD("plan.steps[%zu]: grid * block overflows", i);
      for (unsigned d = st->dims; d < 3; ++d) st->grid[d] = st->block[d] = 1;
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
  if ((v = jget(root, "format")) != NULL) {
    if (v->kind != J_STRING || !(p->format = jdup(v))) BAD("\"format\" is not a plain string");
  }
  if ((v = jget(root, "arch")) != NULL) {
    if (v->kind != J_STRING || !(p->arch = jdup(v))) BAD("\"arch\" is not a plain string");
  }
  p->has_llvm_ir = jget(root, "llvm_ir") != NULL;
  return 0;
#undef BAD
}

/* The blob at data[0:size) as a plan; on failure `msg` says what is wrong and where. */
NNVM_GPU_STATIC int plan_read(const unsigned char *data, size_t size, plan_t *p, char *msg,
                              size_t msglen) {
  jvalue root;
  memset(p, 0, sizeof *p);
  if (json_parse(data, size, &root, msg, msglen)) return -1;
  int bad = plan_of(&root, p, msg, msglen);
  jfree(&root);
  return bad;
}

/* ---- the blob of a kernel ---------------------------------------------------------------- */

/* How a runtime finds a kernel's blob: dlsym's signature (nnvm_opencl_symbol_fn and
 * nnvm_cuda_symbol_fn are this type). */
typedef void *(*gpu_symbol_fn)(void *handle, const char *name);

/* The bytes of `nnvm_blob_<kernel>` and the value of `nnvm_blob_<kernel>_size`; -1 with a
 * message when the library has no such symbols. */
NNVM_GPU_STATIC int plan_lookup(gpu_symbol_fn symbol, void *handle, const char *kernel,
                                const unsigned char **data, size_t *size, char *msg,
                                size_t msglen) {
  size_t n = strlen(kernel) + 32;
  char *name = malloc(n);
  if (!name) {
    snprintf(msg, msglen, "kernel %s: out of memory", kernel);
    return -1;
  }
  snprintf(name, n, "nnvm_blob_%s", kernel);
  const unsigned char *bytes = symbol ? symbol(handle, name) : NULL;
  snprintf(name, n, "nnvm_blob_%s_size", kernel);
  const unsigned long *nbytes = symbol ? symbol(handle, name) : NULL;
  free(name);
  if (!bytes || !nbytes) {
    snprintf(msg, msglen, "the library holds no device program for '%s' (no symbol nnvm_blob_%s)",
             kernel, kernel);
    return -1;
  }
  *data = bytes;
  *size = (size_t)*nbytes;
  return 0;
}

/* ---- targets ----------------------------------------------------------------------------- */

/* The device index of a target string whose first word is one of `kinds` (a NULL-terminated
 * list): its -device=N, 0 without one; -1 for another target or a malformed -device=. */
NNVM_GPU_STATIC int gpu_target_device(const char *target, const char *const *kinds) {
  if (!target) return -1;
  const char *p = target;
  int index = 0, first = 1;
  for (;;) {
    while (*p == ' ' || *p == '\t') ++p;
    if (!*p) break;
    size_t n = strcspn(p, " \t");
    if (first) {
      const char *const *k = kinds;
      while (*k && !(strlen(*k) == n && strncmp(p, *k, n) == 0)) ++k;
      if (!*k) return -1;
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

/* ---- buffer handles ---------------------------------------------------------------------- */

/* The handles an API gives the model for its buffers: handle h is slots[h - 1], so a handle
 * that was never given out, or was released, is caught rather than used. Not locked: the
 * runtime holds its lock around these. */
typedef struct {
  uint64_t value; /* the runtime's buffer (a cl_mem, a CUdeviceptr) */
  size_t size;
  int used;
} slot_t;

typedef struct {
  slot_t *slots;
  size_t n, first_free;
} table_t;

/* A new handle for (value, size); 0 when out of memory. */
NNVM_GPU_STATIC uint64_t table_add(table_t *t, uint64_t value, size_t size) {
  size_t slot = t->first_free;
  while (slot < t->n && t->slots[slot].used) ++slot;
  if (slot == t->n) {
    size_t n = (t->n + 1) * 2;
    slot_t *grown = realloc(t->slots, n * sizeof *grown);
    if (!grown) return 0;
    memset(grown + t->n, 0, (n - t->n) * sizeof *grown);
    t->slots = grown;
    t->n = n;
  }
  t->slots[slot].value = value;
  t->slots[slot].size = size;
  t->slots[slot].used = 1;
  t->first_free = slot + 1;
  return (uint64_t)slot + 1;
}

/* The slot of a live handle, NULL for any other number. */
NNVM_GPU_STATIC slot_t *table_get(table_t *t, uint64_t handle) {
  if (handle == 0 || handle > t->n || !t->slots[handle - 1].used) return NULL;
  return &t->slots[handle - 1];
}

/* Forget a live handle: 0 and its value; -1 for any other number. */
NNVM_GPU_STATIC int table_remove(table_t *t, uint64_t handle, uint64_t *value) {
  slot_t *s = table_get(t, handle);
  if (!s) return -1;
  *value = s->value;
  s->used = 0;
  if (handle - 1 < t->first_free) t->first_free = (size_t)(handle - 1);
  return 0;
}

NNVM_GPU_STATIC void table_free(table_t *t) {
  free(t->slots);
  memset(t, 0, sizeof *t);
}

/* ---- the device-independent half of a runtime -------------------------------------------- */

/* Compiled only into a runtime (it defines NNVM_GPU_RUNTIME before including this file; the
 * plan fuzzer does not): the per-thread last error, the table of a device's kernels, each
 * kernel read, built, given its constants and temporaries once on its first launch, and the
 * replay of its plan. What talks to the device is a runtime's gpu_ops_t: its hooks set the
 * error (set_error) and return non-zero when they fail. A runtime's device struct starts with
 * a gpu_runtime_t, which the hooks get. */
#ifdef NNVM_GPU_RUNTIME
#include <pthread.h>
#include <stdarg.h>

#ifndef NNVM_GPU_ERROR_BYTES
#define NNVM_GPU_ERROR_BYTES 16384
#endif

static __thread char last_error[NNVM_GPU_ERROR_BYTES];

NNVM_GPU_STATIC void set_error(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, args);
  va_end(args);
}

typedef struct gpu_kernel {
  char *name;
  plan_t plan;
  void *code;               /* the runtime's program or module */
  uint64_t *temps, *consts; /* the runtime's buffers; 0: not allocated */
  uint64_t *values;         /* one launch step's buffers, in its argument order */
  void **params;            /* pointers to them (CUDA's kernelParams) */
  struct gpu_kernel *next;
} gpu_kernel_t;

typedef struct gpu_runtime gpu_runtime_t;

typedef struct {
  /* Is the plan (`launches` launch steps) one this device runs? */
  int (*check)(gpu_runtime_t *rt, const char *kernel, const plan_t *p, size_t launches);
  /* Build k->plan.code into k->code and set each launch step's fn. */
  int (*build)(gpu_runtime_t *rt, gpu_kernel_t *k, size_t launches);
  /* A read-only buffer holding constant i (n bytes of data; n may be 0). */
  int (*upload_const)(gpu_runtime_t *rt, const char *kernel, size_t i, const void *data,
                      size_t n, uint64_t *out);
  /* A buffer of n (> 0) bytes for temporary i. */
  int (*alloc_temp)(gpu_runtime_t *rt, const char *kernel, size_t i, size_t n, uint64_t *out);
  void (*free_buffer)(gpu_runtime_t *rt, uint64_t buffer);
  /* Release k->code and whatever the steps' fn hold (never called with k->code unset: it may
   * still have to release step functions). */
  void (*free_code)(gpu_runtime_t *rt, gpu_kernel_t *k);
  /* Step `step` of k: copy nbytes (> 0, in bounds) from src to dst. */
  int (*copy)(gpu_runtime_t *rt, gpu_kernel_t *k, size_t step, uint64_t dst, uint64_t src,
              size_t nbytes);
  /* Launch step st of k over its buffers k->values (k->params point to them). */
  int (*launch)(gpu_runtime_t *rt, gpu_kernel_t *k, const step_t *st);
  /* After a plan's last step (NULL: nothing to do). */
  int (*finish)(gpu_runtime_t *rt, gpu_kernel_t *k);
} gpu_ops_t;

#define GPU_BUCKETS 256

struct gpu_runtime {
  const gpu_ops_t *ops;
  gpu_symbol_fn symbol;
  void *handle;
  pthread_mutex_t lock; /* the buffer table */
  table_t buffers;      /* handle -> the runtime's buffer */
  gpu_kernel_t *kernels[GPU_BUCKETS];
};

/* ---- buffers ---- */

/* A handle for a new buffer of the runtime; 0 (and the buffer freed) when out of memory. */
NNVM_GPU_STATIC uint64_t gpu_buffer_add(gpu_runtime_t *rt, uint64_t buffer, size_t size) {
  pthread_mutex_lock(&rt->lock);
  uint64_t handle = table_add(&rt->buffers, buffer, size);
  pthread_mutex_unlock(&rt->lock);
  if (!handle) {
    rt->ops->free_buffer(rt, buffer);
    set_error("alloc: out of memory");
  }
  return handle;
}

/* Forget a handle: 1 and its buffer (for the caller to free) when it was live, else 0. */
NNVM_GPU_STATIC int gpu_buffer_take(gpu_runtime_t *rt, uint64_t handle, uint64_t *buffer) {
  pthread_mutex_lock(&rt->lock);
  int live = table_remove(&rt->buffers, handle, buffer) == 0;
  pthread_mutex_unlock(&rt->lock);
  return live;
}

/* The buffer of a live handle holding at least nbytes, passed to `hold` (may be NULL; it sets
 * the error when it fails) under the lock; -1 with an error otherwise. */
NNVM_GPU_STATIC int gpu_buffer_get(gpu_runtime_t *rt, uint64_t handle, size_t nbytes,
                                   const char *what, int (*hold)(uint64_t buffer, const char *what),
                                   uint64_t *buffer) {
  int failed = -1;
  pthread_mutex_lock(&rt->lock);
  slot_t *s = table_get(&rt->buffers, handle);
  if (!s)
    set_error("%s: no buffer %llu on this device", what, (unsigned long long)handle);
  else if (nbytes > s->size)
    set_error("%s: %zu bytes do not fit buffer %llu (%zu bytes)", what, nbytes,
              (unsigned long long)handle, s->size);
  else if (!hold || hold(s->value, what) == 0) {
    *buffer = s->value;
    failed = 0;
  }
  pthread_mutex_unlock(&rt->lock);
  return failed;
}

/* The start of copy_to_device / copy_from_device: 0 to go on, 1 when there is nothing to copy,
 * -1 with an error for a NULL host buffer. */
NNVM_GPU_STATIC int gpu_copy_begin(const void *host, size_t nbytes, const char *what) {
  last_error[0] = 0;
  if (nbytes == 0) return 1;
  if (!host) {
    set_error("%s: the host buffer is NULL", what);
    return -1;
  }
  return 0;
}

/* ---- kernels ---- */

NNVM_GPU_STATIC size_t gpu_bucket_of(const char *name) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)name; *p; ++p) h = (h ^ *p) * 16777619u;
  return h % GPU_BUCKETS;
}

NNVM_GPU_STATIC void gpu_kernel_free(gpu_runtime_t *rt, gpu_kernel_t *k) {
  for (size_t i = 0; i < k->plan.n_temps; ++i)
    if (k->temps && k->temps[i]) rt->ops->free_buffer(rt, k->temps[i]);
  for (size_t i = 0; i < k->plan.n_consts; ++i)
    if (k->consts && k->consts[i]) rt->ops->free_buffer(rt, k->consts[i]);
  rt->ops->free_code(rt, k);
  plan_free(&k->plan);
  free(k->temps);
  free(k->consts);
  free(k->values);
  free(k->params);
  free(k->name);
  free(k);
}

/* A kernel, read, built, its constants uploaded and temporaries allocated on its first launch
 * (with the kernels' lock held); NULL with the error. */
NNVM_GPU_STATIC gpu_kernel_t *gpu_load(gpu_runtime_t *rt, const char *kernel) {
  size_t b = gpu_bucket_of(kernel);
  for (gpu_kernel_t *k = rt->kernels[b]; k; k = k->next)
    if (strcmp(k->name, kernel) == 0) return k;

  const unsigned char *data;
  size_t size, name_len = strlen(kernel);
  char msg[256];
  if (plan_lookup(rt->symbol, rt->handle, kernel, &data, &size, msg, sizeof msg)) {
    set_error("%s", msg);
    return NULL;
  }
  gpu_kernel_t *k = calloc(1, sizeof *k);
  if (!k || !(k->name = malloc(name_len + 1))) {
    free(k);
    set_error("kernel %s: out of memory", kernel);
    return NULL;
  }
  memcpy(k->name, kernel, name_len + 1);
  jvalue root;
  if (json_parse(data, size, &root, msg, sizeof msg)) {
    set_error("kernel %s: its program (nnvm_blob_%s, %zu bytes) is not JSON: %s", kernel,
              kernel, size, msg);
    gpu_kernel_free(rt, k);
    return NULL;
  }
  int bad = plan_of(&root, &k->plan, msg, sizeof msg);
  jfree(&root);
  if (bad) {
    set_error("kernel %s: its program (nnvm_blob_%s) is not a launch plan: %s", kernel, kernel,
              msg);
    gpu_kernel_free(rt, k);
    return NULL;
  }
  plan_t *p = &k->plan;
  size_t launches = 0, max_args = 1;
  for (size_t i = 0; i < p->n_steps; ++i) {
    if (p->steps[i].is_copy) continue;
    ++launches;
    if (p->steps[i].n_args > max_args) max_args = p->steps[i].n_args;
  }
  if (rt->ops->check(rt, kernel, p, launches) || rt->ops->build(rt, k, launches)) {
    gpu_kernel_free(rt, k);
    return NULL;
  }
  k->consts = calloc(p->n_consts ? p->n_consts : 1, sizeof *k->consts);
  k->temps = calloc(p->n_temps ? p->n_temps : 1, sizeof *k->temps);
  k->values = calloc(max_args, sizeof *k->values);
  k->params = calloc(max_args, sizeof *k->params);
  if (!k->consts || !k->temps || !k->values || !k->params) {
    set_error("kernel %s: out of memory", kernel);
    gpu_kernel_free(rt, k);
    return NULL;
  }
  for (size_t i = 0; i < p->n_consts; ++i) {
    if (rt->ops->upload_const(rt, kernel, i, p->consts[i], p->const_sizes[i], &k->consts[i])) {
      gpu_kernel_free(rt, k);
      return NULL;
    }
    free(p->consts[i]); /* uploaded: the host copy is not needed again */
    p->consts[i] = NULL;
  }
  for (size_t i = 0; i < p->n_temps; ++i) {
    if (rt->ops->alloc_temp(rt, kernel, i, p->temps[i] ? p->temps[i] : 1, &k->temps[i])) {
      gpu_kernel_free(rt, k);
      return NULL;
    }
  }
  free(p->code); /* built */
  p->code = NULL;
  k->next = rt->kernels[b];
  rt->kernels[b] = k;
  return k;
}

NNVM_GPU_STATIC uint64_t gpu_ref(const gpu_kernel_t *k, const uint64_t *args,
                                 const size_t *arg_sizes, ref_t r, size_t *size) {
  switch (r.kind) {
  case REF_ARG:
    *size = arg_sizes[r.index];
    return args[r.index];
  case REF_TEMP:
    *size = k->plan.temps[r.index] ? k->plan.temps[r.index] : 1;
    return k->temps[r.index];
  default:
    *size = k->plan.const_sizes[r.index] ? k->plan.const_sizes[r.index] : 1;
    return k->consts[r.index];
  }
}

/* Replay k's plan over the model's buffers args (of arg_sizes bytes). */
NNVM_GPU_STATIC int gpu_run_plan(gpu_runtime_t *rt, gpu_kernel_t *k, const uint64_t *args,
                                 const size_t *arg_sizes) {
  for (size_t i = 0; i < k->plan.n_steps; ++i) {
    const step_t *st = &k->plan.steps[i];
    size_t size;
    if (st->is_copy) {
      if (st->nbytes == 0) continue;
      size_t src_size, dst_size;
      uint64_t src = gpu_ref(k, args, arg_sizes, st->src, &src_size);
      uint64_t dst = gpu_ref(k, args, arg_sizes, st->dst, &dst_size);
      if (st->nbytes > src_size || st->nbytes > dst_size) {
        set_error("kernel %s: step %zu copies %zu bytes between buffers of %zu and %zu bytes",
                  k->name, i, st->nbytes, src_size, dst_size);
        return -1;
      }
      if (rt->ops->copy(rt, k, i, dst, src, st->nbytes)) return -1;
      continue;
    }
    for (size_t a = 0; a < st->n_args; ++a) {
      k->values[a] = gpu_ref(k, args, arg_sizes, st->args[a], &size);
      k->params[a] = &k->values[a];
    }
    if (rt->ops->launch(rt, k, st)) return -1;
  }
  return rt->ops->finish ? rt->ops->finish(rt, k) : 0;
}

/* The checks of a launch's arguments, before any lock. */
NNVM_GPU_STATIC int gpu_launch_begin(const char *kernel, const uint64_t *buffers, int count) {
  last_error[0] = 0;
  if (!kernel || count < 0 || (count > 0 && !buffers)) {
    set_error("launch: bad kernel name or buffers");
    return -1;
  }
  return 0;
}

/* A launch of `kernel` over the model's buffers, with the kernels' lock held (and the buffer
 * table's too when table_locked): 0, or 1 with the error. */
NNVM_GPU_STATIC int gpu_launch(gpu_runtime_t *rt, const char *kernel, const uint64_t *buffers,
                               int count, int table_locked) {
  int failed = 1;
  uint64_t *args = NULL;
  size_t *sizes = NULL;
  gpu_kernel_t *k = gpu_load(rt, kernel);
  if (!k) goto done;
  if ((size_t)count != k->plan.n_args) {
    set_error("kernel %s takes %zu buffers, got %d", kernel, k->plan.n_args, count);
    goto done;
  }
  args = malloc((count ? (size_t)count : 1) * sizeof *args);
  sizes = malloc((count ? (size_t)count : 1) * sizeof *sizes);
  if (!args || !sizes) {
    set_error("kernel %s: out of memory", kernel);
    goto done;
  }
  if (!table_locked) pthread_mutex_lock(&rt->lock);
  for (int i = 0; i < count; ++i) {
    slot_t *s = table_get(&rt->buffers, buffers[i]);
    if (!s) {
      set_error("launch: no buffer %llu on this device", (unsigned long long)buffers[i]);
      if (!table_locked) pthread_mutex_unlock(&rt->lock);
      goto done;
    }
    args[i] = s->value;
    sizes[i] = s->size;
  }
  if (!table_locked) pthread_mutex_unlock(&rt->lock);
  failed = gpu_run_plan(rt, k, args, sizes) ? 1 : 0;
done:
  free(args);
  free(sizes);
  return failed;
}

/* Free every kernel and every buffer still in the table (not the table itself). */
NNVM_GPU_STATIC void gpu_free_kernels_and_buffers(gpu_runtime_t *rt) {
  for (size_t b = 0; b < GPU_BUCKETS; ++b) {
    while (rt->kernels[b]) {
      gpu_kernel_t *next = rt->kernels[b]->next;
      gpu_kernel_free(rt, rt->kernels[b]);
      rt->kernels[b] = next;
    }
  }
  for (size_t i = 0; i < rt->buffers.n; ++i)
    if (rt->buffers.slots[i].used) rt->ops->free_buffer(rt, rt->buffers.slots[i].value);
}

/* Fill an nnvm_device_api with a runtime's five callbacks. */
#define GPU_FILL_API(out, dev)                     \
  do {                                             \
    (out)->ctx = (dev);                            \
    (out)->alloc = api_alloc;                      \
    (out)->release = api_release;                  \
    (out)->copy_to_device = api_copy_to_device;    \
    (out)->copy_from_device = api_copy_from_device; \
    (out)->launch = api_launch;                    \
  } while (0)

#endif /* NNVM_GPU_RUNTIME */

#endif
