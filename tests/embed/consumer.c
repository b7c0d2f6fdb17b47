/* tests/embed/consumer.c — a C program that links a generated model's library and runs it (the
 * embedding tests: built through pkg-config, CMake add_subdirectory and an installed package).
 *
 *   consumer DIR      reads DIR/input_<i>.bin (raw bytes of input i, exactly its size), runs the model
 *                     with NAME_run_host, writes DIR/output_<i>.bin; prints the tensors it found
 *
 * Built with -DMODEL=name (the model's symbol prefix) and NAME.h on the include path; C99. Exit
 * status: 0 ok; create's return code (1..5: 3 is "no CUDA device") when create fails; 10 a file
 * problem; 11 the C API misbehaved (a check below failed); 12 run_host failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MC_STR2(x) #x
#define MC_STR(x) MC_STR2(x)
#define MC_CAT2(a, b) a##b
#define MC_CAT(a, b) MC_CAT2(a, b)
#define API(f) MC_CAT(MODEL, MC_CAT(_, f))

#include MC_STR(MODEL.h)

typedef API(ctx) model_ctx;

static size_t dtype_size(int dtype) {
  switch (dtype) {
    case 7: case 11: case 13: return 8;
    case 1: case 6: case 12: return 4;
    case 4: case 5: case 10: case 16: return 2;
    case 2: case 3: case 9: return 1;
    default: return 0;
  }
}

static size_t tensor_bytes(int dtype, int rank, const int64_t* shape) {
  size_t n = dtype_size(dtype);
  int d;
  for (d = 0; d < rank; ++d) n *= (size_t)shape[d];
  return n;
}

static void print_tensor(const char* kind, int i, const char* name, int dtype, int rank, const int64_t* shape) {
  int d;
  printf("%s %d '%s': dtype %d, shape [", kind, i, name, dtype);
  for (d = 0; d < rank; ++d) printf("%s%lld", d ? "x" : "", (long long)shape[d]);
  printf("]\n");
}

int main(int argc, char** argv) {
  model_ctx* ctx = NULL;
  const int ni = API(num_inputs)(), no = API(num_outputs)();
  void** inputs;
  void** outputs;
  size_t* out_bytes;
  int i, rc;
  char path[4096];
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 10;
  }
  /* The metadata: out-of-range indices give null / -1. */
  if (API(input_name)(-1) != NULL || API(input_name)(ni) != NULL || API(output_rank)(no) != -1) {
    fprintf(stderr, "the metadata functions accept an index out of range\n");
    return 11;
  }
  /* A null context is an error with a message, not a crash. */
  if (API(run_host)(NULL, NULL, NULL) != 2 || API(error)(NULL) == NULL || strlen(API(error)(NULL)) == 0) {
    fprintf(stderr, "run_host on a null context does not fail with code 2 and a message\n");
    return 11;
  }
  rc = API(create)(&ctx, 0);
  if (rc != 0) {
    fprintf(stderr, "%s_create failed (%d): %s\n", MC_STR(MODEL), rc, API(error)(ctx));
    API(destroy)(ctx);
    return rc;
  }
  inputs = (void**)calloc((size_t)ni + 1, sizeof(void*));
  outputs = (void**)calloc((size_t)no + 1, sizeof(void*));
  out_bytes = (size_t*)calloc((size_t)no + 1, sizeof(size_t));
  for (i = 0; i < ni; ++i) {
    const size_t want = tensor_bytes(API(input_dtype)(i), API(input_rank)(i), API(input_shape)(i));
    FILE* f;
    long got;
    print_tensor("input", i, API(input_name)(i), API(input_dtype)(i), API(input_rank)(i), API(input_shape)(i));
    snprintf(path, sizeof path, "%s/input_%d.bin", argv[1], i);
    f = fopen(path, "rb");
    if (!f) {
      fprintf(stderr, "cannot open %s\n", path);
      return 10;
    }
    fseek(f, 0, SEEK_END);
    got = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (got < 0 || (size_t)got != want) {
      fprintf(stderr, "%s holds %ld bytes, input %d takes %zu\n", path, got, i, want);
      return 10;
    }
    inputs[i] = malloc(want + 1);
    if (fread(inputs[i], 1, want, f) != want) {
      fprintf(stderr, "cannot read %s\n", path);
      return 10;
    }
    fclose(f);
  }
  for (i = 0; i < no; ++i) {
    print_tensor("output", i, API(output_name)(i), API(output_dtype)(i), API(output_rank)(i), API(output_shape)(i));
    out_bytes[i] = tensor_bytes(API(output_dtype)(i), API(output_rank)(i), API(output_shape)(i));
    outputs[i] = malloc(out_bytes[i] + 1);
  }
  printf("workspace: %zu bytes\n", API(workspace_bytes)());
  rc = API(run_host)(ctx, (const void* const*)inputs, outputs);
  if (rc != 0) {
    fprintf(stderr, "%s_run_host failed (%d): %s\n", MC_STR(MODEL), rc, API(error)(ctx));
    return 12;
  }
  if (strlen(API(error)(ctx)) != 0) {
    fprintf(stderr, "the error string is not empty after a successful run: %s\n", API(error)(ctx));
    return 11;
  }
  for (i = 0; i < no; ++i) {
    FILE* f;
    snprintf(path, sizeof path, "%s/output_%d.bin", argv[1], i);
    f = fopen(path, "wb");
    if (!f || fwrite(outputs[i], 1, out_bytes[i], f) != out_bytes[i] || fclose(f) != 0) {
      fprintf(stderr, "cannot write %s\n", path);
      return 10;
    }
  }
  for (i = 0; i < ni; ++i) free(inputs[i]);
  for (i = 0; i < no; ++i) free(outputs[i]);
  free(inputs);
  free(outputs);
  free(out_bytes);
  API(destroy)(ctx);
  printf("ok\n");
  return 0;
}
