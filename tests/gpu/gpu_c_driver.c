/* A model runner with no Python whose device kernels run on a GPU through nnvm's C device
 * runtime, nnvm_opencl.c (built with -DDEVICE_OPENCL) or nnvm_cuda.c (-DDEVICE_CUDA): links a
 * library built with devices=["opencl"] or ["cuda -arch=sm_XX"] (and not libcuda), binds every
 * device of the model, runs it, writes one raw file per graph output
 * (tests/gpu/test_opencl_c_runtime.py on PoCL, tests/gpu/test_cuda_c_runtime.py over a fake
 * libcuda: NNVM_LIBCUDA).
 *
 *   gpu_c_driver [--device N] [--runs R] [--blob KERNEL=FILE]... params in.bin... out.bin...
 *   gpu_c_driver --device-index TARGET      (prints nnvm_<device>_device_index(TARGET))
 *   gpu_c_driver --num-devices              (prints nnvm_<device>_num_devices(), and why if -1)
 *
 * --device N binds device N instead of the one the target names; --blob serves FILE's bytes as
 * KERNEL's program (a test of malformed programs). Exit 1 with the error on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(DEVICE_OPENCL)
#include "nnvm_opencl.h"
#define DEVICE "OpenCL"
#define device_index nnvm_opencl_device_index
#define num_devices nnvm_opencl_num_devices
#define device_api nnvm_opencl_device_api
#define device_last_error nnvm_opencl_last_error
#define device_release nnvm_opencl_release
#elif defined(DEVICE_CUDA)
#include "nnvm_cuda.h"
#define DEVICE "CUDA"
#define device_index nnvm_cuda_device_index
#define num_devices nnvm_cuda_num_devices
#define device_api nnvm_cuda_device_api
#define device_last_error nnvm_cuda_last_error
#define device_release nnvm_cuda_release
#else
#error "build with -DDEVICE_OPENCL or -DDEVICE_CUDA"
#endif
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

/* --blob overrides: the symbol function serves them, dlsym the rest. */
#define MAX_BLOBS 16
static struct {
  char data_name[256], size_name[256];
  void *data;
  unsigned long size;
} blobs[MAX_BLOBS];
static int n_blobs;

static void *symbol(void *handle, const char *name) {
  for (int i = 0; i < n_blobs; ++i) {
    if (strcmp(name, blobs[i].data_name) == 0) return blobs[i].data;
    if (strcmp(name, blobs[i].size_name) == 0) return &blobs[i].size;
  }
  return dlsym(handle, name);
}

int main(int argc, char **argv) {
  int device = 0, pick_device = 0, runs = 1, a = 1;
  if (argc == 3 && strcmp(argv[1], "--device-index") == 0) {
    printf("%d\n", device_index(argv[2]));
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--num-devices") == 0) {
    int n = num_devices();
    printf("%d\n", n);
    if (n < 0) fprintf(stderr, "error: %s\n", device_last_error());
    return n < 0;
  }
  for (; a + 1 < argc && strncmp(argv[a], "--", 2) == 0; a += 2) {
    if (strcmp(argv[a], "--device") == 0) {
      device = atoi(argv[a + 1]);
      pick_device = 1;
    } else if (strcmp(argv[a], "--runs") == 0) {
      runs = atoi(argv[a + 1]);
    } else if (strcmp(argv[a], "--blob") == 0 && n_blobs < MAX_BLOBS) {
      char *eq = strchr(argv[a + 1], '=');
      size_t size;
      if (!eq) return 2;
      *eq = 0;
      snprintf(blobs[n_blobs].data_name, 256, "nnvm_blob_%s", argv[a + 1]);
      snprintf(blobs[n_blobs].size_name, 256, "nnvm_blob_%s_size", argv[a + 1]);
      blobs[n_blobs].data = read_file(eq + 1, &size);
      if (!blobs[n_blobs].data) return 2;
      blobs[n_blobs++].size = (unsigned long)size;
    } else {
      return 2;
    }
  }
  int n_in = nnvm_num_inputs(), n_out = nnvm_num_outputs();
  if (argc - a != 1 + n_in + n_out) {
    fprintf(stderr, "usage: %s [options] params %d inputs %d outputs\n", argv[0], n_in, n_out);
    return 2;
  }
  size_t size;
  void *params = read_file(argv[a], &size);
  if (!params) return 2;
  nnvm_model *m = nnvm_create(params, size);
  free(params);
  if (!m) {
    fprintf(stderr, "error: %s\n", nnvm_last_error());
    return 1;
  }

  /* Errors below still release everything (a leak checker sees the runtime's failure paths). */
  int status = 1, n_dev = nnvm_num_devices();
  nnvm_device_api *apis = calloc(n_dev ? (size_t)n_dev : 1, sizeof *apis);
  const void **inputs = calloc(n_in ? (size_t)n_in : 1, sizeof(void *));
  void **outputs = calloc(n_out ? (size_t)n_out : 1, sizeof(void *));
  size_t *out_bytes = calloc(n_out ? (size_t)n_out : 1, sizeof(size_t));
  for (int d = 0; d < n_dev; ++d) {
    int index = pick_device ? device : device_index(nnvm_device_name(d));
    char err[2048];
    if (index < 0 && !pick_device) {
      fprintf(stderr, "error: device %d is %s, not " DEVICE "\n", d, nnvm_device_name(d));
      goto done;
    }
    if (device_api(symbol, RTLD_DEFAULT, index, &apis[d], err, sizeof err) != 0) {
      fprintf(stderr, "error: %s\n", err);
      goto done;
    }
    if (nnvm_bind_device(m, d, &apis[d]) != 0) {
      fprintf(stderr, "error: %s\n", nnvm_last_error());
      goto done;
    }
  }
  for (int i = 0; i < n_in; ++i) {
    const char *name;
    int dtype, ndim;
    const int64_t *dims;
    nnvm_input_info(i, &name, &dtype, &ndim, &dims);
    inputs[i] = read_file(argv[a + 1 + i], &size);
    if (!inputs[i] || size != nbytes(dtype, ndim, dims)) {
      fprintf(stderr, "error: input %s: wrong size\n", name);
      goto done;
    }
  }
  for (int i = 0; i < n_out; ++i) {
    int dtype, ndim;
    const int64_t *dims;
    nnvm_output_info(i, &dtype, &ndim, &dims);
    out_bytes[i] = nbytes(dtype, ndim, dims);
    outputs[i] = malloc(out_bytes[i] ? out_bytes[i] : 1);
  }
  for (int r = 0; r < runs; ++r) {
    if (nnvm_run(m, inputs, outputs) != 0) {
      fprintf(stderr, "error: %s: %s\n", nnvm_last_error(), device_last_error());
      goto done;
    }
  }
  status = 0;
  for (int i = 0; i < n_out; ++i) {
    FILE *f = fopen(argv[a + 1 + n_in + i], "wb");
    if (!f || fwrite(outputs[i], 1, out_bytes[i], f) != out_bytes[i]) status = 2;
    if (f) fclose(f);
  }
done:
  nnvm_destroy(m); /* releases its device buffers through the APIs: before them */
  for (int d = 0; d < n_dev; ++d) device_release(&apis[d]);
  for (int i = 0; i < n_in; ++i) free((void *)inputs[i]);
  for (int i = 0; i < n_out; ++i) free(outputs[i]);
  for (int i = 0; i < n_blobs; ++i) free(blobs[i].data);
  free(apis);
  free(inputs);
  free(outputs);
  free(out_bytes);
  return status;
}
