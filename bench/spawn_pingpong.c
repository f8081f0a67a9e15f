/* A parent and the child it spawned (MPI_Comm_spawn of one process) ping-pong over their
 * intercommunicator: half the round trip, in microseconds, for 8 B, 64 KiB and 4 MiB messages;
 * also the time MPI_Comm_spawn took. One line per size: `SIZE HALF_ROUND_TRIP_US`, then
 * `spawn SECONDS`. Run with one process (bench/spawn.sh). */
#include <mpi.h>
#include <stdio.h>

static char buffer[4 << 20];

/* `n` round trips of `len` bytes, the parent sending first. */
static void round_trips(MPI_Comm comm, int parent, int n, int len)
{
    for (int i = 0; i < n; i++) {
        if (parent) {
            MPI_Send(buffer, len, MPI_CHAR, 0, 0, comm);
            MPI_Recv(buffer, len, MPI_CHAR, 0, 0, comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buffer, len, MPI_CHAR, 0, 0, comm, MPI_STATUS_IGNORE);
            MPI_Send(buffer, len, MPI_CHAR, 0, 0, comm);
        }
    }
}

static double half_round_trip(MPI_Comm comm, int parent, int n, int len)
{
    round_trips(comm, parent, n / 10 + 1, len);
    double start = MPI_Wtime();
    round_trips(comm, parent, n, len);
    return (MPI_Wtime() - start) / n / 2 * 1e6;
}

int main(int argc, char **argv)
{
    const int sizes[3] = {8, 65536, 4 << 20}, counts[3] = {20000, 2000, 100};
    MPI_Init(&argc, &argv);
    MPI_Comm parent, child;
    MPI_Comm_get_parent(&parent);
    int is_parent = parent == MPI_COMM_NULL;
    double spawn = 0;
    if (is_parent) {
        double start = MPI_Wtime();
        MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &child, MPI_ERRCODES_IGNORE);
        spawn = MPI_Wtime() - start;
    } else {
        child = parent;
    }
    for (int s = 0; s < 3; s++) {
        double time = half_round_trip(child, is_parent, counts[s], sizes[s]);
        if (is_parent)
            printf("%d %.3f\n", sizes[s], time);
    }
    if (is_parent)
        printf("spawn %.4f\n", spawn);
    MPI_Comm_disconnect(&child);
    MPI_Finalize();
    return 0;
}
