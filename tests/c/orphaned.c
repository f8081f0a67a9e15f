/* Ranks whose launcher dies: every rank waits in MPI_Recv for a message nobody sends, after rank
 * 0 has written argv[1] (so the runner knows they are all waiting). The runner then kills the
 * launcher with SIGKILL; the ranks must notice that the process that started them is gone and
 * end on their own (BRAID_PEER_CHECK_MS), not wait forever. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"

int main(int argc, char **argv)
{
    int rank, value = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(argc == 2, "usage: orphaned READY_FILE");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *ready = fopen(argv[1], "w");
        CHECK(ready != NULL, "cannot write %s", argv[1]);
        fputs("waiting\n", ready);
        fclose(ready);
    }
    MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("orphaned: rank %d received %d, which nobody sent\n", rank, value);
    MPI_Finalize();
    return 1;
}
