/* Large messages (64 MiB) end to end with checksums: one direction, both directions at once,
 * an odd length at an unaligned address (pipeline chunk edges), non-blocking pairs and a large
 * broadcast. The sender's checksum travels in a separate small message. Needs 2 or more ranks. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define LARGE ((size_t)64 << 20)

static int rank, size;

static void fill(unsigned char *buffer, size_t length, uint64_t seed)
{
    uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t i = 0; i < length; i++) {
        if (i % 8 == 0) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
        }
        buffer[i] = (unsigned char)(state >> (8 * (i % 8)));
    }
}

static uint64_t checksum(const unsigned char *buffer, size_t length)
{
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < length; i++)
        hash = (hash ^ buffer[i]) * 0x100000001b3ULL;
    return hash;
}

/* Sends `length` bytes of pattern `seed` to `peer`, then the checksum as a second message. */
static void send_checked(unsigned char *buffer, size_t length, uint64_t seed, int peer, int tag)
{
    fill(buffer, length, seed);
    uint64_t sum = checksum(buffer, length);
    MPI_Send(buffer, (int)length, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    MPI_Send(&sum, 1, MPI_UINT64_T, peer, tag + 1, MPI_COMM_WORLD);
}

static void receive_checked(unsigned char *buffer, size_t length, int peer, int tag, const char *what)
{
    MPI_Status status;
    int count;
    uint64_t expected;
    memset(buffer, 0, length);
    MPI_Recv(buffer, (int)length, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_BYTE, &count);
    MPI_Recv(&expected, 1, MPI_UINT64_T, peer, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK((size_t)count == length, "%s: received %d bytes, expected %zu", what, count, length);
    uint64_t sum = checksum(buffer, length);
    CHECK(sum == expected, "%s: checksum %016llx, sender's %016llx", what, (unsigned long long)sum, (unsigned long long)expected);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    require_ranks(2, "large");
    unsigned char *outgoing = malloc(LARGE + 64), *incoming = malloc(LARGE + 64);
    CHECK(outgoing && incoming, "cannot allocate 2 x %zu bytes", LARGE);
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    int paired = partner < size;

    if (rank == 0)
        send_checked(outgoing, LARGE, 1, 1, 10);
    else if (rank == 1)
        receive_checked(incoming, LARGE, 0, 10, "64 MiB 0 -> 1");

    if (paired) {
        fill(outgoing, LARGE, 100 + (uint64_t)rank);
        uint64_t mine = checksum(outgoing, LARGE), theirs;
        MPI_Sendrecv(outgoing, (int)LARGE, MPI_BYTE, partner, 20, incoming, (int)LARGE, MPI_BYTE, partner, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&mine, 1, MPI_UINT64_T, partner, 21, &theirs, 1, MPI_UINT64_T, partner, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(checksum(incoming, LARGE) == theirs, "64 MiB exchange with %d: checksum mismatch", partner);

        /* Odd length at odd addresses on both sides. */
        size_t odd = LARGE - 13;
        if (rank % 2 == 0)
            send_checked(outgoing + 3, odd, 7, partner, 30);
        else
            receive_checked(incoming + 5, odd, partner, 30, "odd length, unaligned");

        MPI_Request requests[4];
        size_t half = LARGE / 2;
        fill(outgoing, LARGE, 200 + (uint64_t)rank);
        MPI_Irecv(incoming, (int)half, MPI_BYTE, partner, 40, MPI_COMM_WORLD, &requests[0]);
        MPI_Irecv(incoming + half, (int)half, MPI_BYTE, partner, 41, MPI_COMM_WORLD, &requests[1]);
        MPI_Isend(outgoing + half, (int)half, MPI_BYTE, partner, 41, MPI_COMM_WORLD, &requests[2]);
        MPI_Isend(outgoing, (int)half, MPI_BYTE, partner, 40, MPI_COMM_WORLD, &requests[3]);
        MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
        fill(outgoing, LARGE, 200 + (uint64_t)partner);
        CHECK(memcmp(outgoing, incoming, LARGE) == 0, "two concurrent 32 MiB halves from %d arrived wrong", partner);
    }

    size_t broadcast_length = (size_t)16 << 20;
    if (rank == size - 1)
        fill(incoming, broadcast_length, 300);
    else
        memset(incoming, 0, broadcast_length);
    MPI_Bcast(incoming, (int)broadcast_length, MPI_BYTE, size - 1, MPI_COMM_WORLD);
    fill(outgoing, broadcast_length, 300);
    CHECK(memcmp(outgoing, incoming, broadcast_length) == 0, "16 MiB MPI_Bcast from %d arrived wrong", size - 1);

    free(outgoing);
    free(incoming);
    report_ok("large");
    MPI_Finalize();
    return 0;
}
