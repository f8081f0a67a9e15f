/* Under the default handler (MPI_ERRORS_ARE_FATAL) a bad argument ends the whole job with a
 * readable message; with the argument `abort`, under MPI 4's MPI_ERRORS_ABORT set on
 * MPI_COMM_WORLD, likewise. Reaching the end of main is the failure: the runner expects a
 * non-zero exit and the message on stderr. Rank 0 commits the error while the others wait for
 * it forever. */
#include <string.h>

#include "check.h"

int main(int argc, char **argv)
{
    int rank, size, value = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "abort") == 0) {
#ifdef MPI_ERRORS_ABORT
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
        MPI_Errhandler handler;
        MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
        CHECK(handler == MPI_ERRORS_ABORT, "MPI_Comm_get_errhandler after setting MPI_ERRORS_ABORT");
        MPI_Errhandler_free(&handler);
#else
        fprintf(stderr, "fatal_error: this MPI has no MPI_ERRORS_ABORT\n");
        MPI_Finalize();
        return 0;
#endif
    }
    if (rank == 0) {
        MPI_Send(&value, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
        fprintf(stderr, "fatal_error: MPI_Send to an invalid rank returned instead of aborting\n");
    } else {
        MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
