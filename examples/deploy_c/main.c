/* Run nnvm model libraries from C, with no Python: the example of docs/deploy-c.md.
 *
 *   main MODEL.params [INPUT.bin ...] [--load LIB.so MODEL.params [INPUT.bin ...]]...
 *
 * The first model is the library this program is linked with (-lmodel); every `--load` group
 * is one more model library opened with dlopen, run through the same API. Each input file holds
 * one graph input as raw C-order bytes (numpy: x.tofile("x.bin")); a model without input files
 * runs on zeros. Every output is printed as one line:
 *
 *   output <model> <index> <dtype code> <d0>x<d1>...: v0 v1 ...
 *
 * Build (docs/deploy-c.md; `out/` as nnvm-compile writes it):
 *   cc -O2 main.c -Iout -Lout -lmodel -Wl,-rpath,'$ORIGIN/out' -ldl -o main
 *   NNVM_NUM_THREADS=4 ./main out/model.params input.bin
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnvm_runtime.h"

/* The C API of one model library: the linked one's functions, or a dlopen'ed one's. */
typedef struct {
  const char *name;
  nnvm_model *(*create)(const void *, size_t);
  int (*run)(nnvm_model *, const void *const *, void *const *);
  void (*destroy)(nnvm_model *);
  const char *(*last_error)(void);
  int (*abi_version)(void);
  int (*num_inputs)(void);
  int (*num_outputs)(void);
  int (*input_info)(int, const char **, int *, int *, const int64_t **);
  int (*output_info)(int, int *, int *, const int64_t **);
} model_api;

static const model_api linked = {
    .name = "the linked model",
    .create = nnvm_create,
    .run = nnvm_run,
    .destroy = nnvm_destroy,
    .last_error = nnvm_last_error,
    .abi_version = nnvm_abi_version,
    .num_inputs = nnvm_num_inputs,
    .num_outputs = nnvm_num_outputs,
    .input_info = nnvm_input_info,
    .output_info = nnvm_output_info,
};

/* A library opened with RTLD_LOCAL: its C API, looked up in it and nowhere else. */
static int open_library(const char *path, model_api *api) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "error: %s\n", dlerror());
    return -1;
  }
  void *fns[9];
  static const char *const names[9] = {
      "nnvm_create",      "nnvm_run",        "nnvm_destroy",
      "nnvm_last_error",  "nnvm_abi_version", "nnvm_num_inputs",
      "nnvm_num_outputs", "nnvm_input_info", "nnvm_output_info",
  };
  for (int i = 0; i < 9; ++i) {
    if (!(fns[i] = dlsym(h, names[i]))) {
      fprintf(stderr, "error: %s is not an nnvm model library (no %s)\n", path, names[i]);
      return -1;
    }
  }
  api->name = path;
  memcpy(&api->create, &fns[0], sizeof fns[0]);
  memcpy(&api->run, &fns[1], sizeof fns[1]);
  memcpy(&api->destroy, &fns[2], sizeof fns[2]);
  memcpy(&api->last_error, &fns[3], sizeof fns[3]);
  memcpy(&api->abi_version, &fns[4], sizeof fns[4]);
  memcpy(&api->num_inputs, &fns[5], sizeof fns[5]);
  memcpy(&api->num_outputs, &fns[6], sizeof fns[6]);
  memcpy(&api->input_info, &fns[7], sizeof fns[7]);
  memcpy(&api->output_info, &fns[8], sizeof fns[8]);
  return 0;
}

/* The whole file, 64-byte aligned; NULL (with a message) when it cannot be read. */
static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f || fseek(f, 0, SEEK_END) != 0) {
    fprintf(stderr, "error: cannot read %s\n", path);
    if (f) fclose(f);
    return NULL;
  }
  long n = ftell(f);
  void *data = NULL;
  if (n < 0 || posix_memalign(&data, 64, n ? (size_t)n : 1) != 0 || fseek(f, 0, SEEK_SET) != 0 ||
      fread(data, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "error: cannot read %s\n", path);
    free(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

static const size_t dtype_bytes[] = {4, 2, 8, 8, 4, 2, 1, 1, 1, 2, 4, 8}; /* params-format.md */

static size_t tensor_bytes(int dtype, int ndim, const int64_t *dims) {
  size_t n = dtype >= 0 && dtype < 12 ? dtype_bytes[dtype] : 0;
  for (int k = 0; k < ndim; ++k) n *= (size_t)dims[k];
  return n;
}

static void print_output(int model, int index, int dtype, int ndim, const int64_t *dims,
                         const void *data) {
  size_t count = 1;
  printf("output %d %d %d ", model, index, dtype);
  for (int k = 0; k < ndim; ++k) {
    printf(k ? "x%lld" : "%lld", (long long)dims[k]);
    count *= (size_t)dims[k];
  }
  printf(":");
  for (size_t i = 0; i < count; ++i) {
    if (dtype == 0) printf(" %.9g", ((const float *)data)[i]);
    else if (dtype == 2) printf(" %.17g", ((const double *)data)[i]);
    else if (dtype == 3) printf(" %lld", (long long)((const int64_t *)data)[i]);
    else if (dtype == 4) printf(" %d", ((const int32_t *)data)[i]);
    else if (dtype == 7 || dtype == 8) printf(" %u", ((const uint8_t *)data)[i]);
    else { printf(" (dtype code %d not printed)", dtype); break; }
  }
  printf("\n");
}

/* Create, run once and print one model: its params file and input files are argv[0..count). */
static int run_model(int index, const model_api *api, char **args, int count) {
  if (api->abi_version() != NNVM_ABI_VERSION) {
    fprintf(stderr, "error: %s has ABI version %d, this program was built for %d\n", api->name,
            api->abi_version(), NNVM_ABI_VERSION);
    return -1;
  }
  size_t size = 0;
  void *params = read_file(args[0], &size);
  if (!params) return -1;
  nnvm_model *m = api->create(params, size); /* copies the params: free them right away */
  free(params);
  if (!m) {
    fprintf(stderr, "error: %s: %s\n", api->name, api->last_error());
    return -1;
  }
  int n_in = api->num_inputs(), n_out = api->num_outputs(), status = -1;
  void **ins = calloc((size_t)n_in + 1, sizeof *ins);
  void **outs = calloc((size_t)n_out + 1, sizeof *outs);
  if (!ins || !outs) goto done;
  if (count - 1 != 0 && count - 1 != n_in) {
    fprintf(stderr, "error: %s takes %d inputs, %d input files given\n", api->name, n_in,
            count - 1);
    goto done;
  }
  for (int i = 0; i < n_in; ++i) {
    const char *name;
    int dtype, ndim;
    const int64_t *dims;
    api->input_info(i, &name, &dtype, &ndim, &dims);
    size_t want = tensor_bytes(dtype, ndim, dims), got = want;
    ins[i] = count > 1 ? read_file(args[1 + i], &got) : calloc(1, want ? want : 1);
    if (!ins[i]) goto done;
    if (got != want) {
      fprintf(stderr, "error: input %d (\"%s\") needs %zu bytes, %s holds %zu\n", i, name, want,
              args[1 + i], got);
      goto done;
    }
  }
  for (int j = 0; j < n_out; ++j) {
    int dtype, ndim;
    const int64_t *dims;
    api->output_info(j, &dtype, &ndim, &dims);
    size_t nbytes = tensor_bytes(dtype, ndim, dims);
    if (posix_memalign(&outs[j], 64, nbytes ? nbytes : 1) != 0) goto done;
  }
  if (api->run(m, (const void *const *)ins, outs) != 0) {
    fprintf(stderr, "error: %s: %s\n", api->name, api->last_error());
    goto done;
  }
  for (int j = 0; j < n_out; ++j) {
    int dtype, ndim;
    const int64_t *dims;
    api->output_info(j, &dtype, &ndim, &dims);
    print_output(index, j, dtype, ndim, dims, outs[j]);
  }
  status = 0;
done:
  for (int i = 0; ins && i < n_in; ++i) free(ins[i]);
  for (int j = 0; outs && j < n_out; ++j) free(outs[j]);
  free(ins);
  free(outs);
  api->destroy(m);
  return status;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--load") == 0) {
    fprintf(stderr,
            "usage: %s MODEL.params [INPUT.bin ...] [--load LIB.so MODEL.params [INPUT.bin ...]]"
            "...\n",
            argv[0]);
    return 2;
  }
  int model = 0, start = 1;
  model_api api = linked;
  for (;;) { /* argv[start..end): one model's params file and input files */
    int end = start;
    while (end < argc && strcmp(argv[end], "--load") != 0) ++end;
    if (run_model(model++, &api, argv + start, end - start) != 0) return 1;
    if (end == argc) return 0;
    if (end + 2 >= argc || strcmp(argv[end + 2], "--load") == 0) {
      fprintf(stderr, "error: --load needs LIB.so MODEL.params\n");
      return 2;
    }
    if (open_library(argv[end + 1], &api) != 0) return 1;
    start = end + 2;
  }
}
