/* MPI_Abort's error code becomes the job's exit status (the runner expects 7). The last rank
 * aborts while every other rank is blocked in a receive that can never complete. */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size, value = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        fprintf(stderr, "abort_code: rank %d calls MPI_Abort(MPI_COMM_WORLD, 7)\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 7);
    } else {
        MPI_Recv(&value, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    fprintf(stderr, "abort_code: rank %d survived MPI_Abort\n", rank);
    MPI_Finalize();
    return 0;
}
