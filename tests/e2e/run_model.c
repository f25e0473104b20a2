/* A model runner with no Python: links a library built by nnvm, reads the params file and
 * one raw input file per graph input, writes one raw output file per graph output.
 *
 *   run_model model.params in0.bin [in1.bin ...] out0.bin [out1.bin ...]
 */
#include <stdio.h>
#include <stdlib.h>

#include "nnvm_runtime.h"

static const size_t dtype_size[] = {4, 2, 8, 8, 4, 2, 1, 1, 1, 2, 4, 8};

static size_t nbytes(int dtype, int ndim, const int64_t *dims) {
  size_t n = dtype_size[dtype];
  for (int k = 0; k < ndim; ++k) n *= (size_t)dims[k];
  return n;
}

static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = malloc(*size ? *size : 1);
  if (fread(data, 1, *size, f) != *size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  int n_in = nnvm_num_inputs(), n_out = nnvm_num_outputs();
  if (argc != 2 + n_in + n_out) {
    fprintf(stderr, "usage: %s params %d inputs %d outputs\n", argv[0], n_in, n_out);
    return 2;
  }
  size_t size;
  void *blob = read_file(argv[1], &size);
  if (!blob) return 2;
  nnvm_model *m = nnvm_create(blob, size);
  free(blob);
  if (!m) {
    fprintf(stderr, "error: %s\n", nnvm_last_error());
    return 1;
  }
  const void **inputs = calloc(n_in, sizeof(void *));
  void **outputs = calloc(n_out, sizeof(void *));
  size_t *out_bytes = calloc(n_out, sizeof(size_t));
  for (int i = 0; i < n_in; ++i) {
    const char *name;
    int dtype, ndim;
    const int64_t *dims;
    nnvm_input_info(i, &name, &dtype, &ndim, &dims);
    inputs[i] = read_file(argv[2 + i], &size);
    if (!inputs[i] || size != nbytes(dtype, ndim, dims)) {
      fprintf(stderr, "error: input %s: wrong size\n", name);
      return 1;
    }
  }
  for (int i = 0; i < n_out; ++i) {
    int dtype, ndim;
    const int64_t *dims;
    nnvm_output_info(i, &dtype, &ndim, &dims);
    out_bytes[i] = nbytes(dtype, ndim, dims);
    outputs[i] = malloc(out_bytes[i] ? out_bytes[i] : 1);
  }
  if (nnvm_run(m, inputs, outputs) != 0) {
    fprintf(stderr, "error: %s\n", nnvm_last_error());
    return 1;
  }
  for (int i = 0; i < n_out; ++i) {
    FILE *f = fopen(argv[2 + n_in + i], "wb");
    fwrite(outputs[i], 1, out_bytes[i], f);
    fclose(f);
  }
  nnvm_destroy(m);
  return 0;
}
