/* A long stream of large messages from rank 0 to rank 1, each checked on arrival: its sequence
 * number (nothing lost, duplicated or reordered) and its whole content (nothing corrupted).
 * Made for multirail tests that take a rail down while it runs: rank 0 prints "streaming" once the
 * first message is through, so the test knows the transfer is under way.
 *   multirail_stream [MESSAGES [BYTES]]   (default 400 messages of 2 MiB) */
#include <stdint.h>
#include <string.h>
#include "check.h"

static void fill(unsigned char *buffer, size_t length, uint64_t seed)
{
    uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t i = 0; i < length; i += 8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        size_t left = length - i < 8 ? length - i : 8;
        memcpy(buffer + i, &state, left);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    require_ranks(2, "multirail_stream");
    long messages = argc > 1 ? atol(argv[1]) : 400;
    size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : (size_t)2 << 20;
    CHECK(messages > 0 && bytes >= 8, "bad arguments: %ld messages of %zu bytes", messages, bytes);
    unsigned char *buffer = malloc(bytes), *expected = malloc(bytes);
    CHECK(buffer && expected, "cannot allocate 2 x %zu bytes", bytes);

    for (long sequence = 0; sequence < messages; sequence++) {
        if (rank == 0) {
            fill(buffer, bytes, (uint64_t)sequence);
            memcpy(buffer, &sequence, sizeof sequence);
            MPI_Send(buffer, (int)bytes, MPI_BYTE, 1, (int)(sequence % 5), MPI_COMM_WORLD);
            if (sequence == 0) {
                printf("streaming\n");
                fflush(stdout);
            }
        } else if (rank == 1) {
            MPI_Status status;
            int count;
            memset(buffer, 0, bytes);
            MPI_Recv(buffer, (int)bytes, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
            MPI_Get_count(&status, MPI_BYTE, &count);
            CHECK((size_t)count == bytes, "message %ld has %d bytes, expected %zu", sequence, count, bytes);
            long arrived;
            memcpy(&arrived, buffer, sizeof arrived);
            CHECK(arrived == sequence, "expected message %ld, got %ld (lost or duplicated)", sequence, arrived);
            CHECK(status.MPI_TAG == (int)(sequence % 5), "message %ld has tag %d", sequence, status.MPI_TAG);
            fill(expected, bytes, (uint64_t)sequence);
            memcpy(expected, &sequence, sizeof sequence);
            CHECK(memcmp(buffer, expected, bytes) == 0, "message %ld arrived corrupted", sequence);
        }
    }
    free(buffer);
    free(expected);
    report_ok("multirail_stream");
    MPI_Finalize();
    return 0;
}
