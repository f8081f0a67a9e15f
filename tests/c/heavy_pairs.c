/* Heavy pairs: each rank exchanges much with one partner and a little with everyone, so where the
 * pairs sit decides how much crosses between nodes.
 *
 * Usage: heavy_pairs [BYTES [ITERATIONS [PAIRS]]]
 *   BYTES       what a rank sends its partner per iteration (default 1048576)
 *   ITERATIONS  (default 20)
 *   PAIRS       the partners, as "0-3,1-6,2-5,4-7" (the default for 8 ranks: blocked placement on
 *               4 nodes of 2 and round-robin placement both split every pair); with other rank
 *               counts the default pairs rank r with rank n - 1 - r
 * Each iteration every rank also sends 1 KiB to every other rank. Every byte received is checked.
 * Rank 0 prints `heavy_pairs: N ranks, T s` (the exchange's time, the slowest rank's). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define LIGHT 1024

static int partner_of(const char *pairs, int rank, int size)
{
    if (pairs == NULL)
        return size == 8 ? (int[]){3, 6, 5, 0, 7, 2, 1, 4}[rank] : size - 1 - rank;
    int partner = -1;
    char *copy = strdup(pairs), *save = NULL;
    for (char *pair = strtok_r(copy, ",", &save); pair; pair = strtok_r(NULL, ",", &save)) {
        int a, b;
        CHECK(sscanf(pair, "%d-%d", &a, &b) == 2, "bad pair %s", pair);
        if (a == rank)
            partner = b;
        if (b == rank)
            partner = a;
    }
    free(copy);
    CHECK(partner >= 0 && partner < size, "no partner for rank %d in %s", rank, pairs);
    return partner;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long bytes = argc > 1 ? atol(argv[1]) : 1048576;
    int iterations = argc > 2 ? atoi(argv[2]) : 20;
    int partner = partner_of(argc > 3 ? argv[3] : NULL, rank, size);
    CHECK(partner_of(argc > 3 ? argv[3] : NULL, partner, size) == rank, "pairs must be mutual");

    unsigned char *out = malloc((size_t)bytes), *in = malloc((size_t)bytes);
    unsigned char *light_out = malloc((size_t)LIGHT * (size_t)size), *light_in = malloc((size_t)LIGHT * (size_t)size);
    MPI_Request *requests = malloc(sizeof(MPI_Request) * (size_t)(2 * size + 2));
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int iteration = 0; iteration < iterations; iteration++) {
        for (long i = 0; i < bytes; i++)
            out[i] = (unsigned char)(rank * 31 + iteration + i);
        for (int peer = 0; peer < size; peer++)
            memset(light_out + (size_t)peer * LIGHT, rank + iteration, LIGHT);
        int count = 0;
        MPI_Irecv(in, (int)bytes, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &requests[count++]);
        MPI_Isend(out, (int)bytes, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &requests[count++]);
        for (int peer = 0; peer < size; peer++) {
            if (peer == rank)
                continue;
            MPI_Irecv(light_in + (size_t)peer * LIGHT, LIGHT, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &requests[count++]);
            MPI_Isend(light_out + (size_t)peer * LIGHT, LIGHT, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &requests[count++]);
        }
        MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
        for (long i = 0; i < bytes; i++)
            CHECK(in[i] == (unsigned char)(partner * 31 + iteration + i), "byte %ld from %d", i, partner);
        for (int peer = 0; peer < size; peer++)
            CHECK(peer == rank || light_in[(size_t)peer * LIGHT] == (unsigned char)(peer + iteration), "light data from %d", peer);
    }
    double elapsed = MPI_Wtime() - start, slowest = 0;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("heavy_pairs: %d ranks, %.4f s\n", size, slowest);
    free(requests);
    free(light_in);
    free(light_out);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
