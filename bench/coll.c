/* Collective sweep for bench/coll_cluster.sh: the slowest rank's mean time per call.
 *
 * Usage: coll [-c LIST] [-s LIST] [-t SECONDS] [-i ITERATIONS]
 *   -c  collectives, comma-separated (default
 *       allreduce,bcast,alltoall,allgather,reduce_scatter,gather,iallreduce; also reduce (to
 *       rank 0), and gatherv and alltoallv, with every count equal, as the v-variants)
 *   -s  sizes in bytes, comma-separated (default 8,1024,65536,524288,4194304)
 *   -t  seconds to spend timing each point (default 0.3); the iteration count comes from one
 *       untimed call, at least 3 and at most 2000
 *   -i  a fixed iteration count instead (with -i 1: one call per point, e.g. to see decisions)
 * What a size means: allreduce, iallreduce, reduce, bcast, reduce_scatter: the whole vector (MPI_INT,
 * MPI_SUM; reduce_scatter gives each rank 1/n of it); alltoall: the block for each destination;
 * allgather and gather: each rank's contribution (gather to rank 0).
 * Every result is checked once per point (a wrong result aborts).
 * Output (rank 0, stdout): `# ...` comment lines and one `collective,size,us` line per point.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int *send_buffer, *receive_buffer;
/* The v-variants' counts and displacements: `count` elements per rank, in rank order. */
static int *counts, *displacements;

static void die(const char *message)
{
    fprintf(stderr, "coll: rank %d: %s\n", rank, message);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* One call of COLLECTIVE on BYTES (rounded down to whole ints, at least one). */
static void run(const char *collective, long bytes)
{
    int count = (int)(bytes / (long)sizeof(int));
    if (count < 1)
        count = 1;
    if (strcmp(collective, "allreduce") == 0) {
        MPI_Allreduce(send_buffer, receive_buffer, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else if (strcmp(collective, "reduce") == 0) {
        MPI_Reduce(send_buffer, receive_buffer, count, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    } else if (strcmp(collective, "iallreduce") == 0) {
        MPI_Request request;
        MPI_Iallreduce(send_buffer, receive_buffer, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else if (strcmp(collective, "bcast") == 0) {
        MPI_Bcast(receive_buffer, count, MPI_INT, 0, MPI_COMM_WORLD);
    } else if (strcmp(collective, "alltoall") == 0) {
        MPI_Alltoall(send_buffer, count, MPI_INT, receive_buffer, count, MPI_INT, MPI_COMM_WORLD);
    } else if (strcmp(collective, "alltoallv") == 0 || strcmp(collective, "gatherv") == 0) {
        for (int s = 0; s < size; s++) {
            counts[s] = count;
            displacements[s] = s * count;
        }
        if (collective[0] == 'a')
            MPI_Alltoallv(send_buffer, counts, displacements, MPI_INT, receive_buffer, counts, displacements, MPI_INT, MPI_COMM_WORLD);
        else
            MPI_Gatherv(send_buffer, count, MPI_INT, receive_buffer, counts, displacements, MPI_INT, 0, MPI_COMM_WORLD);
    } else if (strcmp(collective, "allgather") == 0) {
        MPI_Allgather(send_buffer, count, MPI_INT, receive_buffer, count, MPI_INT, MPI_COMM_WORLD);
    } else if (strcmp(collective, "gather") == 0) {
        MPI_Gather(send_buffer, count, MPI_INT, receive_buffer, count, MPI_INT, 0, MPI_COMM_WORLD);
    } else if (strcmp(collective, "reduce_scatter") == 0) {
        int block = count / size > 0 ? count / size : 1;
        MPI_Reduce_scatter_block(send_buffer, receive_buffer, block, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        die("unknown collective");
    }
}

/* Fills the inputs for COLLECTIVE: rank r's element i is r * 7 + i % 13 (bcast: the root's). */
static void prepare(const char *collective, long elements)
{
    for (long i = 0; i < elements; i++) {
        send_buffer[i] = rank * 7 + (int)(i % 13);
        receive_buffer[i] = strcmp(collective, "bcast") == 0 && rank == 0 ? (int)(i % 13) : -1;
    }
}

/* Checks the result of one call of COLLECTIVE on BYTES prepared by `prepare`. */
static void check(const char *collective, long bytes)
{
    int count = (int)(bytes / (long)sizeof(int));
    if (count < 1)
        count = 1;
    int rank_sum = 7 * size * (size - 1) / 2;
    if (strcmp(collective, "allreduce") == 0 || strcmp(collective, "iallreduce") == 0 || (strcmp(collective, "reduce") == 0 && rank == 0)) {
        for (int i = 0; i < count; i++)
            if (receive_buffer[i] != rank_sum + size * (i % 13))
                die("allreduce result is wrong");
    } else if (strcmp(collective, "bcast") == 0) {
        for (int i = 0; i < count; i++)
            if (receive_buffer[i] != i % 13)
                die("bcast result is wrong");
    } else if (strcmp(collective, "alltoall") == 0 || strcmp(collective, "alltoallv") == 0) {
        /* Block s came from rank s's block `rank`, elements rank * count + i there. */
        for (int s = 0; s < size; s++)
            for (int i = 0; i < count; i++)
                if (receive_buffer[s * count + i] != s * 7 + (rank * count + i) % 13)
                    die("alltoall result is wrong");
    } else if (strcmp(collective, "allgather") == 0 || ((strcmp(collective, "gather") == 0 || strcmp(collective, "gatherv") == 0) && rank == 0)) {
        for (int s = 0; s < size; s++)
            for (int i = 0; i < count; i++)
                if (receive_buffer[s * count + i] != s * 7 + i % 13)
                    die("gather result is wrong");
    } else if (strcmp(collective, "reduce_scatter") == 0) {
        int block = count / size > 0 ? count / size : 1;
        for (int i = 0; i < block; i++)
            if (receive_buffer[i] != rank_sum + size * ((rank * block + i) % 13))
                die("reduce_scatter result is wrong");
    }
}

static long *parse_list(const char *text, int *length)
{
    long *values = malloc(64 * sizeof(long));
    char *copy = strdup(text), *save = NULL;
    *length = 0;
    for (char *item = strtok_r(copy, ",", &save); item && *length < 64; item = strtok_r(NULL, ",", &save))
        values[(*length)++] = atol(item);
    free(copy);
    return values;
}

int main(int argc, char **argv)
{
    const char *collectives = "allreduce,bcast,alltoall,allgather,reduce_scatter,gather,iallreduce";
    const char *sizes_text = "8,1024,65536,524288,4194304";
    double seconds = 0.3;
    long fixed_iterations = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            collectives = argv[++i];
        else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            sizes_text = argv[++i];
        else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
            fixed_iterations = atol(argv[++i]);
        else
            die("usage: coll [-c LIST] [-s LIST] [-t SECONDS] [-i ITERATIONS]");
    }
    int size_count;
    long *sizes = parse_list(sizes_text, &size_count);
    long largest = 0;
    for (int i = 0; i < size_count; i++)
        largest = sizes[i] > largest ? sizes[i] : largest;
    /* Room for n blocks of the largest size (alltoall, allgather, gather). */
    long elements = (largest / (long)sizeof(int) + 1) * size;
    send_buffer = malloc((size_t)elements * sizeof(int));
    receive_buffer = malloc((size_t)elements * sizeof(int));
    counts = malloc((size_t)size * sizeof(int));
    displacements = malloc((size_t)size * sizeof(int));
    if (!send_buffer || !receive_buffer || !counts || !displacements)
        die("out of memory");
    if (rank == 0)
        printf("# coll: %d ranks, slowest rank's mean time per call\n", size);
    char *list = strdup(collectives), *save = NULL;
    for (char *collective = strtok_r(list, ",", &save); collective; collective = strtok_r(NULL, ",", &save)) {
        for (int s = 0; s < size_count; s++) {
            long bytes = sizes[s];
            prepare(collective, elements);
            run(collective, bytes);
            check(collective, bytes);
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            run(collective, bytes);
            double once = MPI_Wtime() - start, slowest;
            MPI_Allreduce(&once, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            long iterations = fixed_iterations > 0 ? fixed_iterations : (long)(seconds / (slowest > 1e-7 ? slowest : 1e-7));
            if (fixed_iterations <= 0)
                iterations = iterations < 3 ? 3 : iterations > 2000 ? 2000 : iterations;
            MPI_Barrier(MPI_COMM_WORLD);
            start = MPI_Wtime();
            for (long i = 0; i < iterations; i++)
                run(collective, bytes);
            double mean = (MPI_Wtime() - start) / (double)iterations, worst;
            MPI_Reduce(&mean, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                printf("%s,%ld,%.6g\n", collective, bytes, worst * 1e6);
                fflush(stdout);
            }
        }
    }
    free(list);
    free(sizes);
    free(send_buffer);
    free(receive_buffer);
    free(counts);
    free(displacements);
    MPI_Finalize();
    return 0;
}
