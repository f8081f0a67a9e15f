/* A token travels around the ring of ranks; every rank adds one on each pass. Prints the time
 * per hop (one message between neighbours) and checks the token's final value.
 * Usage: ring [LAPS]   (default 1000) */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    require_ranks(2, "ring");
    long laps = argc > 1 ? atol(argv[1]) : 1000;
    CHECK(laps > 0, "LAPS must be positive, got %s", argv[1]);
    int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    long token = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long lap = 0; lap < laps; lap++) {
        if (rank == 0) {
            token++;
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, previous, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_LONG, previous, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token++;
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
        }
    }
    double elapsed = MPI_Wtime() - start;

    if (rank == 0) {
        CHECK(token == laps * size, "token is %ld after %ld laps of %d ranks, expected %ld", token, laps, size, laps * size);
        char library[MPI_MAX_LIBRARY_VERSION_STRING];
        int length;
        MPI_Get_library_version(library, &length);
        for (int i = 0; i < length; i++)
            if (library[i] == '\n')
                library[i] = ' ';
        printf("ring: %d ranks, %ld laps, token %ld, %.3f s, %.2f us per hop\n", size, laps, token, elapsed, elapsed * 1e6 / ((double)laps * size));
        printf("ring: library %s\n", library);
    }
    MPI_Finalize();
    return 0;
}
