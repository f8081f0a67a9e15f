/* The profiling interface: with a tool (pmpi_tool.c) in front of the MPI library, linked or
 * preloaded, each of this program's MPI_Send, MPI_Recv and MPI_Allreduce calls goes through the
 * tool exactly once and still does its work through PMPI_; calls the library makes internally
 * (MPI_Sendrecv, MPI_Bcast, MPI_Reduce) are not counted as the tool's functions. Usage:
 * pmpi_counts tool|none (whether the tool must be there). Needs at least 2 ranks. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include "check.h"

enum { ROUNDS = 3 };

typedef int (*count_function)(const char *name);

static int counted(count_function count, const char *name)
{
    return count ? count(name) : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    require_ranks(2, "pmpi_counts");
    CHECK(argc == 2 && (strcmp(argv[1], "tool") == 0 || strcmp(argv[1], "none") == 0), "usage: pmpi_counts tool|none");
    int expect_tool = strcmp(argv[1], "tool") == 0;
    count_function count = NULL;
    /* The POSIX way to turn dlsym's object pointer into a function pointer. */
    *(void **)(&count) = dlsym(RTLD_DEFAULT, "pmpi_tool_count");
    CHECK((count != NULL) == expect_tool, "the tool is %s, expected %s", count ? "present" : "absent", argv[1]);

    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int round = 0; round < ROUNDS; round++) {
        int out = rank * 100 + round, in = -1;
        if (rank % 2 == 0) {
            MPI_Send(&out, 1, MPI_INT, right, round, MPI_COMM_WORLD);
            MPI_Recv(&in, 1, MPI_INT, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&in, 1, MPI_INT, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&out, 1, MPI_INT, right, round, MPI_COMM_WORLD);
        }
        CHECK(in == left * 100 + round, "round %d received %d from rank %d", round, in, left);
    }

    int one = 1, total = 0, ranks_sum = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &ranks_sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == size && ranks_sum == size * (size - 1) / 2, "allreduce gave %d and %d", total, ranks_sum);

    /* Calls the tool does not intercept, which a library may build on its own point-to-point or
     * reduction code: none of them may reach the tool's MPI_Send, MPI_Recv or MPI_Allreduce. */
    int token = rank, received = -1, reduced = 0;
    MPI_Sendrecv(&token, 1, MPI_INT, right, 9, &received, 1, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(received == left, "MPI_Sendrecv brought %d, expected %d", received, left);
    MPI_Bcast(&token, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(token == 0, "MPI_Bcast gave %d", token);
    MPI_Reduce(&one, &reduced, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    CHECK(rank != 0 || reduced == size, "MPI_Reduce gave %d", reduced);

    CHECK(MPI_Pcontrol(2) == MPI_SUCCESS, "MPI_Pcontrol(2) failed");
    CHECK(!expect_tool || counted(count, "MPI_Pcontrol") == 2, "the tool's MPI_Pcontrol saw level %d, expected 2", counted(count, "MPI_Pcontrol"));
    CHECK(MPI_Pcontrol(0, "extra arguments", 1.5) == MPI_SUCCESS, "MPI_Pcontrol with extra arguments failed");

    if (expect_tool) {
        CHECK(counted(count, "MPI_Send") == ROUNDS, "the tool saw %d MPI_Send calls, expected %d", counted(count, "MPI_Send"), ROUNDS);
        CHECK(counted(count, "MPI_Recv") == ROUNDS, "the tool saw %d MPI_Recv calls, expected %d", counted(count, "MPI_Recv"), ROUNDS);
        CHECK(counted(count, "MPI_Allreduce") == 2, "the tool saw %d MPI_Allreduce calls, expected 2", counted(count, "MPI_Allreduce"));
        CHECK(counted(count, "MPI_Pcontrol") == 0, "the tool's last MPI_Pcontrol level is %d, expected 0", counted(count, "MPI_Pcontrol"));
    }
    report_ok(expect_tool ? "pmpi_counts (with the tool)" : "pmpi_counts (without a tool)");
    MPI_Finalize();
    return 0;
}
