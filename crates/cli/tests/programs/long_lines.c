/* Every rank prints LINES lines at once, "<rank> <index> " and then a run of the letter of its
 * rank, of lengths cycling through 80, 5000 and 70000 bytes (longer than a pipe's buffer, so
 * each line reaches the launcher in pieces). Usage: long_lines LINES */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    static const int lengths[] = {80, 5000, 70000};
    int rank;
    long lines = argc > 1 ? atol(argv[1]) : 30;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *run = malloc(70001);
    memset(run, 'a' + rank % 26, 70000);
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < lines; i++) {
        int length = lengths[i % 3];
        printf("%d %ld %.*s\n", rank, i, length, run);
    }
    free(run);
    MPI_Finalize();
    return 0;
}
