/* Compute and exchange, for bench/network_cores.sh: one rank computes much while the other
 * streams data to it, so the kernel's receive processing of that data runs while the heavy rank
 * computes. Where that processing runs (a NIC's interrupt CPU, or the CPUs RPS steers to)
 * decides whether it competes with the heavy rank.
 *
 * Usage: compute_exchange [ITERATIONS [BYTES [HEAVY [STEPS]]]]
 *   ITERATIONS  (default 40)
 *   BYTES       what the light rank sends the heavy rank per iteration (default 4194304)
 *   HEAVY       the rank that computes much (default 1); the others compute a tenth as much
 *   STEPS       the heavy rank's work per iteration, in steps of a dependent multiply-add chain
 *               (default 30000000, some 50 ms: longer than the transfer on a 1 Gbit/s rail)
 * Each iteration: the heavy rank posts its receive, computes a fixed amount of work, then waits;
 * the light rank sends, computes a little, waits; then a barrier. Rank 0 prints
 * `compute_exchange: heavy rank H on CPU C: compute S s, total T s` (the heavy rank's time
 * computing, and the loop's). Needs 2 ranks or more (ranks beyond 1 only compute). */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>


static double work(long steps)
{
    /* A dependent chain the compiler cannot shorten. */
    volatile double seed = 1.0;
    double x = seed;
    for (long i = 0; i < steps; i++)
        x = x * 1.0000001 + 0.0000001;
    return x;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 40;
    long bytes = argc > 2 ? atol(argv[2]) : 4194304;
    int heavy = argc > 3 ? atoi(argv[3]) : 1;
    long steps = argc > 4 ? atol(argv[4]) : 30000000L;
    if (size < 2 || heavy < 0 || heavy > 1) {
        if (rank == 0)
            fprintf(stderr, "compute_exchange: needs 2 ranks or more, and HEAVY 0 or 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int light = 1 - heavy;
    char *buffer = malloc((size_t)bytes);
    for (long i = 0; i < bytes; i++)
        buffer[i] = (char)i;
    double computing = 0, sink = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int iteration = 0; iteration < iterations; iteration++) {
        MPI_Request request = MPI_REQUEST_NULL;
        if (rank == heavy)
            MPI_Irecv(buffer, (int)bytes, MPI_BYTE, light, 0, MPI_COMM_WORLD, &request);
        else if (rank == light)
            MPI_Isend(buffer, (int)bytes, MPI_BYTE, heavy, 0, MPI_COMM_WORLD, &request);
        double began = MPI_Wtime();
        sink += work(rank == heavy ? steps : steps / 10);
        computing += MPI_Wtime() - began;
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double total = MPI_Wtime() - start;
    double report[3] = {computing, total, (double)sched_getcpu()};
    if (rank == heavy && heavy != 0)
        MPI_Send(report, 3, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    if (rank == 0) {
        if (heavy != 0)
            MPI_Recv(report, 3, MPI_DOUBLE, heavy, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("compute_exchange: heavy rank %d on CPU %d: compute %.4f s, total %.4f s\n", heavy, (int)report[2], report[0], report[1]);
    }
    if (sink == 42.0)
        printf("%f\n", sink);
    free(buffer);
    MPI_Finalize();
    return 0;
}
