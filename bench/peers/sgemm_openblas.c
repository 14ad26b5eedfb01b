/* Peer for bench/run_matmul.sh: OpenBLAS cblas_sgemm on square row-major float32 matrices.
 * Usage: sgemm_openblas N THREADS [MIN_SECONDS]
 * Prints one line: "openblas n=N threads=T seconds=S gflops=G iterations=I" where S is the mean
 * time of one product after a warm-up call, over at least MIN_SECONDS (default 0.5), the way
 * Google Benchmark times Spore's side. Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset
 * (see bench/README.md). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void openblas_set_num_threads(int num_threads);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s N THREADS [MIN_SECONDS]\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[1]), threads = atoi(argv[2]);
  const double min_seconds = argc > 3 ? atof(argv[3]) : 0.5;
  if (n <= 0 || threads <= 0) return 2;
  const size_t count = (size_t)n * (size_t)n;
  float* a = malloc(count * sizeof(float));
  float* b = malloc(count * sizeof(float));
  float* c = malloc(count * sizeof(float));
  if (!a || !b || !c) return 1;
  unsigned s = 12345u;
  for (size_t i = 0; i < count; ++i) {  /* values in [-1, 1): denormals and NaN play no part */
    s = s * 1664525u + 1013904223u;
    a[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
    s = s * 1664525u + 1013904223u;
    b[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
  }
  openblas_set_num_threads(threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  int iterations = 0;
  const double t0 = now();
  double t1 = t0;
  while (t1 - t0 < min_seconds || iterations < 1) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    ++iterations;
    t1 = now();
  }
  const double sec = (t1 - t0) / iterations;
  printf("openblas n=%d threads=%d seconds=%.6f gflops=%.2f iterations=%d check=%g\n", n, threads, sec,
         2.0 * n * (double)n * n / sec / 1e9, iterations, (double)c[count / 2]);
  free(a);
  free(b);
  free(c);
  return 0;
}
