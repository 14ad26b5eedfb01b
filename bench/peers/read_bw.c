/* Read bandwidth for the LLM benchmark's roofline (bench/llm_bench.py, NOTE [LLM benchmark]):
 * sums a 512 MiB buffer (far past every cache) on OMP_NUM_THREADS threads, each thread its own
 * contiguous part, and prints the best GB/s of argv[1] (default 3) passes. Built and run by the
 * script in the same run as the engines, so the roofline and the engines see the same load. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  const int passes = argc > 1 ? atoi(argv[1]) : 3;
  const size_t n = (size_t)64 << 20; /* 64 Mi uint64 = 512 MiB */
  uint64_t* buf = malloc(n * sizeof *buf);
  if (!buf) return 1;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) buf[i] = i; /* first touch on the thread that reads it */
  double best = 0;
  uint64_t sink = 0;
  for (int p = 0; p < passes; ++p) {
    const double t0 = now();
    uint64_t total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (size_t i = 0; i < n; i += 4) total += buf[i] + buf[i + 1] + buf[i + 2] + buf[i + 3];
    const double gbs = (double)(n * sizeof *buf) / (now() - t0) / 1e9;
    sink += total;
    if (gbs > best) best = gbs;
  }
  printf("%.3f\n", best);
  return sink == 42 ? 2 : 0;
}
