/* Rank 0 prints LINES lines, half before MPI_Finalize and half after it, then exits 0; rank 1
 * exits with code 3 right after MPI_Finalize; other ranks exit 0. The launcher must report rank
 * 1's failure without losing any of rank 0's lines. Usage: fail_after_finalize LINES */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank;
    long lines = argc > 1 ? atol(argv[1]) : 1000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        for (long i = 0; i < lines / 2; i++)
            printf("rank 0 line %ld of %ld\n", i, lines);
    MPI_Finalize();
    if (rank == 0)
        for (long i = lines / 2; i < lines; i++)
            printf("rank 0 line %ld of %ld\n", i, lines);
    return rank == 1 ? 3 : 0;
}
