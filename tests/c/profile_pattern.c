/* A program whose traffic is known in advance, for the job profiler: rank i sends rank j
 * (j != i) PATTERN_BYTES(i, j) bytes as PATTERN_MESSAGES(i, j) messages, inside the phase
 * "exchange" (MPI_Pcontrol), then the ranks meet in one barrier. Nothing else is sent. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

#define PATTERN_MESSAGES(i, j) (1 + ((i) + 2 * (j)) % 3)
#define PATTERN_BYTES(i, j) (1000 * ((i) + 1) + 10 * (j))

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int most = PATTERN_BYTES(size, size);
    char *out = malloc((size_t)most), *in = malloc((size_t)most);
    CHECK(out && in, "out of memory");
    memset(out, rank, (size_t)most);
    MPI_Pcontrol(1, "exchange");
    for (int step = 1; step < size; step++) {
        int to = (rank + step) % size, from = (rank - step + size) % size;
        int sends = PATTERN_MESSAGES(rank, to), receives = PATTERN_MESSAGES(from, rank);
        int send_bytes = PATTERN_BYTES(rank, to), receive_bytes = PATTERN_BYTES(from, rank);
        for (int m = 0; m < sends || m < receives; m++) {
            /* The bytes of a pair are split over its messages; the last one takes the rest. */
            int out_len = m < sends ? (m + 1 < sends ? send_bytes / sends : send_bytes - (sends - 1) * (send_bytes / sends)) : 0;
            int in_len = m < receives ? (m + 1 < receives ? receive_bytes / receives : receive_bytes - (receives - 1) * (receive_bytes / receives)) : 0;
            MPI_Status status;
            if (m < sends && m < receives) {
                MPI_Sendrecv(out, out_len, MPI_CHAR, to, m, in, in_len, MPI_CHAR, from, m, MPI_COMM_WORLD, &status);
            } else if (m < sends) {
                MPI_Send(out, out_len, MPI_CHAR, to, m, MPI_COMM_WORLD);
            } else {
                MPI_Recv(in, in_len, MPI_CHAR, from, m, MPI_COMM_WORLD, &status);
            }
        }
    }
    MPI_Pcontrol(-1, "exchange");
    MPI_Barrier(MPI_COMM_WORLD);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
