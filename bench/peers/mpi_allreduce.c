/* The limit for Spore's all_reduce (bench/dist_bench.cc): Open MPI's own MPI_Allreduce, in place,
 * float32 sum, on the same buffer sizes and timed the same way (a barrier, then one call; the
 * median over calls of the slowest rank). bench/run_dist.py builds it with mpicc.
 * usage: mpirun -np N mpi_allreduce [iters] [i|b|m] [max_mib]
 * m: MPI_Allreduce as b, but MPI initialised with MPI_THREAD_MULTIPLE, the level Spore's MPI
 * backend asks for (its all-reduce thread): what that level alone costs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[2], "m") == 0) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iters = argc > 1 ? atoi(argv[1]) : 20;
  /* "i": MPI_Iallreduce completed by an MPI_Test loop, the calls Spore's MPI backend makes (its
   * watchdog needs a call that returns), to tell Open MPI's non-blocking algorithm apart from
   * Spore's own overhead. */
  const int nonblocking = argc > 2 && strcmp(argv[2], "i") == 0;
  const long max_mib = argc > 3 ? atol(argv[3]) : 256; /* bench/run_dist.py --max-mib */
  for (long mib = 1; mib <= max_mib; mib *= 4) {
    const long n = (mib << 20) / 4;
    float* buf = calloc((size_t)n, sizeof(float));
    const int reps = mib >= 64 ? (iters / 4 > 3 ? iters / 4 : 3) : iters;
    double* ms = malloc(sizeof(double) * (size_t)reps);
    for (int i = 0; i < reps + 2; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (nonblocking) {
        MPI_Request req;
        int done = 0;
        MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        while (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      } else {
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      double t = (MPI_Wtime() - t0) * 1e3;
      if (i >= 2) ms[i - 2] = t;
    }
    MPI_Allreduce(MPI_IN_PLACE, ms, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(ms, (size_t)reps, sizeof(double), cmp);
    if (rank == 0)
      printf("mpi %s ranks=%d mib=%ld median_ms=%.4f\n",
             nonblocking ? "iallreduce" : strcmp(argc > 2 ? argv[2] : "b", "m") == 0 ? "allreduce_mt" : "allreduce", size, mib,
             ms[reps / 2]);
    free(ms);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
