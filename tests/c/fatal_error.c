/* Under the default handler (MPI_ERRORS_ARE_FATAL) a bad argument ends the whole job with a
 * readable message. Reaching the end of main is the failure: the runner expects a non-zero exit
 * and the message on stderr. Rank 0 commits the error while the others wait for it forever. */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size, value = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        MPI_Send(&value, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
        fprintf(stderr, "fatal_error: MPI_Send to an invalid rank returned instead of aborting\n");
    } else {
        MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
