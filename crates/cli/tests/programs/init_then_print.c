/* Prints a line before and after MPI_Init (or MPI_Init_thread when the first argument is
 * "thread"): the launcher tests check that a failed initialisation ends the process before the
 * second line. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    printf("before MPI_Init\n");
    if (argc > 1 && strcmp(argv[1], "thread") == 0) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    printf("after MPI_Init\n");
    MPI_Finalize();
    return 0;
}
