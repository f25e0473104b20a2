/* The program-blob reader the C GPU runtimes share (targets/gpu/nnvm_gpu_plan.h) on its own
 * (no device or driver needed), for tests/gpu/test_{opencl,cuda}_c_runtime.py:
 *
 *   gpu_plan_fuzz BLOB CODE_OUT
 *
 * reads BLOB, prints its plan (one line per field, and a CUDA blob's format, arch and whether
 * it has LLVM IR) and writes its decoded code (OpenCL C, PTX) to CODE_OUT; then parses every
 * proper prefix of BLOB (each must be rejected) and BLOB with each byte replaced by a few
 * others (each must be read or rejected, never crash), every input in a buffer of exactly its
 * size so that a sanitizer sees any read past it. Exit 1 if the blob
 * is rejected or a prefix accepted. */
#include "nnvm_gpu_plan.h"

static const char *kinds[] = {"arg", "temp", "const"};

static void print_plan(const plan_t *p) {
  printf("n_args %zu\ntemps", p->n_args);
  for (size_t i = 0; i < p->n_temps; ++i) printf(" %zu", p->temps[i]);
  printf("\nconsts");
  for (size_t i = 0; i < p->n_consts; ++i) {
    uint32_t h = 2166136261u;
    for (size_t k = 0; k < p->const_sizes[i]; ++k) h = (h ^ p->consts[i][k]) * 16777619u;
    printf(" %zu:%08x", p->const_sizes[i], (unsigned)h);
  }
  printf("\n");
  if (p->format)
    printf("format %s arch %s llvm_ir %d\n", p->format, p->arch ? p->arch : "-", p->has_llvm_ir);
  for (size_t i = 0; i < p->n_steps; ++i) {
    const step_t *s = &p->steps[i];
    if (s->is_copy) {
      printf("copy %s %zu %s %zu %zu\n", kinds[s->src.kind], s->src.index, kinds[s->dst.kind],
             s->dst.index, s->nbytes);
      continue;
    }
    printf("launch %s global", s->kernel);
    for (unsigned d = 0; d < s->dims; ++d) printf(" %zu", s->grid[d] * s->block[d]);
    printf(" local");
    for (unsigned d = 0; d < s->dims; ++d) printf(" %zu", s->block[d]);
    printf(" args");
    for (size_t a = 0; a < s->n_args; ++a)
      printf(" %s %zu", kinds[s->args[a].kind], s->args[a].index);
    printf("\n");
  }
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  size_t n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *blob = malloc(n ? n : 1);
  if (fread(blob, 1, n, f) != n) return 2;
  fclose(f);

  plan_t plan;
  char msg[256];
  if (plan_read(blob, n, &plan, msg, sizeof msg)) {
    fprintf(stderr, "the blob is rejected: %s\n", msg);
    return 1;
  }
  print_plan(&plan);
  FILE *out = fopen(argv[2], "wb");
  if (!out || fwrite(plan.code, 1, plan.code_len, out) != plan.code_len) return 2;
  fclose(out);
  plan_free(&plan);

  size_t rejected = 0, mutated = 0, accepted = 0;
  for (size_t k = 0; k < n; ++k) {
    unsigned char *prefix = malloc(k ? k : 1);
    memcpy(prefix, blob, k);
    if (plan_read(prefix, k, &plan, msg, sizeof msg) == 0) {
      fprintf(stderr, "the prefix of %zu bytes is accepted\n", k);
      return 1;
    }
    ++rejected;
    free(prefix);
  }
  static const unsigned char others[] = {'"', '\\', '{', ']', ',', '0', '9',
                                         '-', 'e', 'u', 0,   0xff};
  unsigned char *copy = malloc(n ? n : 1);
  for (size_t i = 0; i < n; ++i) {
    for (size_t o = 0; o < sizeof others; ++o) {
      memcpy(copy, blob, n);
      copy[i] = others[o];
      ++mutated;
      if (plan_read(copy, n, &plan, msg, sizeof msg) == 0) {
        ++accepted;
        plan_free(&plan);
      }
    }
  }
  free(copy);
  free(blob);
  printf("prefixes rejected %zu\nmutations %zu accepted %zu\n", rejected, mutated, accepted);
  return 0;
}
