/* Rank 1 dies of SIGKILL while the others wait for it; the launcher must end the job quickly and
 * say which rank died of which signal. argv[1] names a file where rank 1 writes the moment of its
 * death (milliseconds since the epoch) so the runner can time the launcher's reaction. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <time.h>
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size, value = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && argc == 2, "usage: kill_rank TIMESTAMP_FILE, with 2 or more ranks");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        FILE *stamp = fopen(argv[1], "w");
        CHECK(stamp != NULL, "cannot write %s", argv[1]);
        fprintf(stamp, "%lld\n", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
        fclose(stamp);
        raise(SIGKILL);
    }
    MPI_Recv(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "kill_rank: rank %d received from a dead rank\n", rank);
    MPI_Finalize();
    return 0;
}
