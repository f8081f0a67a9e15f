/* Rank 1 waits in MPI_Recv for a message that rank 0 sends only after a long pause, with nothing
 * else moving between them. Made for a multirail test that takes every rail down during the
 * pause: rank 1 must learn that no rail reaches rank 0 any more and fail, not wait forever.
 * Rank 1 prints "waiting" just before its receive, so the test knows when to cut the rails.
 *   silent_peer [PAUSE_SECONDS]   (default 30) */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    require_ranks(2, "silent_peer");
    int pause = argc > 1 ? atoi(argv[1]) : 30;
    int value = 0;
    /* One message each way first: both rails' connections are up and have carried traffic. */
    MPI_Sendrecv_replace(&value, 1, MPI_INT, 1 - rank, 0, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
        sleep((unsigned)pause);
        value = 42;
        MPI_Send(&value, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    } else {
        printf("waiting\n");
        fflush(stdout);
        MPI_Recv(&value, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(value == 42, "received %d", value);
    }
    report_ok("silent_peer");
    MPI_Finalize();
    return 0;
}
