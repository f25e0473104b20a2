/* The program-blob reader of nnvm_opencl.c on its own (no OpenCL device needed), for
 * tests/gpu/test_opencl_c_runtime.py:
 *
 *   opencl_plan_fuzz BLOB CODE_OUT
 *
 * reads BLOB, prints its plan (one line per field) and writes its decoded OpenCL C to
 * CODE_OUT; then parses every proper prefix of BLOB (each must be rejected) and BLOB with each
 * byte replaced by a few others (each must be read or rejected, never crash), every input in
 * a buffer of exactly its size so that a sanitizer sees any read past it. Exit 1 if the blob
 * is rejected or a prefix accepted. */
#include "nnvm_opencl.c"

static int read_plan(const unsigned char *data, size_t size, plan_t *plan, char *msg,
                     size_t msglen) {
  jvalue root;
  if (json_parse(data, size, &root, msg, msglen)) return -1;
  int bad = plan_of(&root, plan, msg, msglen);
  jfree(&root);
  return bad;
}

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
  for (size_t i = 0; i < p->n_steps; ++i) {
    const step_t *s = &p->steps[i];
    if (s->is_copy) {
      printf("copy %s %zu %s %zu %zu\n", kinds[s->src.kind], s->src.index, kinds[s->dst.kind],
             s->dst.index, s->nbytes);
      continue;
    }
    printf("launch %s global", s->kernel);
    for (cl_uint d = 0; d < s->dims; ++d) printf(" %zu", s->global[d]);
    printf(" local");
    for (cl_uint d = 0; d < s->dims; ++d) printf(" %zu", s->local[d]);
    printf(" args");
    for (size_t a = 0; a < s->n_args; ++a) printf(" %s %zu", kinds[s->args[a].kind], s->args[a].index);
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
  if (read_plan(blob, n, &plan, msg, sizeof msg)) {
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
    if (read_plan(prefix, k, &plan, msg, sizeof msg) == 0) {
      fprintf(stderr, "the prefix of %zu bytes is accepted\n", k);
      return 1;
    }
    ++rejected;
    free(prefix);
  }
  static const unsigned char others[] = {'"', '\\', '{', ']', ',', '0', '9', '-', 'e', 'u', 0, 0xff};
  unsigned char *copy = malloc(n ? n : 1);
  for (size_t i = 0; i < n; ++i) {
    for (size_t o = 0; o < sizeof others; ++o) {
      memcpy(copy, blob, n);
      copy[i] = others[o];
      ++mutated;
      if (read_plan(copy, n, &plan, msg, sizeof msg) == 0) {
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
