/* Shared helpers of the end-to-end C tests: every failed check names the rank, the place and
 * the values involved, then ends the whole job with MPI_Abort so the runner sees a failure. */
#ifndef BRAID_TEST_CHECK_H
#define BRAID_TEST_CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static inline int check_world_rank(void)
{
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

#define CHECK(condition, ...)                                                               \
    do {                                                                                    \
        if (!(condition)) {                                                                 \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", check_world_rank(),      \
                    __FILE__, __LINE__, #condition);                                        \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fputc('\n', stderr);                                                            \
            fflush(stderr);                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                   \
        }                                                                                   \
    } while (0)

/* Ends the test on rank 0 with the line the runner's log shows. */
static inline void report_ok(const char *name)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (check_world_rank() == 0) {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        printf("%s: ok on %d rank%s\n", name, size, size == 1 ? "" : "s");
        fflush(stdout);
    }
}

/* A test started with fewer ranks than it needs fails rather than passing vacuously. */
static inline void require_ranks(int minimum, const char *name)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < minimum) {
        if (check_world_rank() == 0)
            fprintf(stderr, "%s needs at least %d ranks, got %d\n", name, minimum, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

#endif
