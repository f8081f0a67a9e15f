/* Matching and ordering: wildcards (MPI_ANY_SOURCE / MPI_ANY_TAG), the non-overtaking rule across
 * eager and rendezvous sizes, posted-receive order, tag selection out of arrival order, self
 * messages, zero-byte messages and MPI_PROC_NULL. Needs 2 or more ranks. */
#include <string.h>
#include "check.h"

#define STREAM_LENGTH 200
#define BIG_BYTES (1 << 20)

static int rank, size;

/* Every other rank streams numbered messages with rotating tags to rank 0, which receives them
 * with both wildcards: per source the sequence must arrive in order. */
static void wildcard_stream(void)
{
    if (rank == 0) {
        int *next = calloc((size_t)size, sizeof(int));
        for (int received = 0; received < STREAM_LENGTH * (size - 1); received++) {
            int payload[2];
            MPI_Status status;
            MPI_Recv(payload, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
            int source = status.MPI_SOURCE;
            CHECK(source >= 1 && source < size, "bad MPI_SOURCE %d", source);
            CHECK(payload[0] == source, "payload says source %d, status says %d", payload[0], source);
            CHECK(payload[1] == next[source], "from %d got sequence %d, expected %d (overtaken)", source, payload[1], next[source]);
            CHECK(status.MPI_TAG == payload[1] % 7, "tag %d for sequence %d", status.MPI_TAG, payload[1]);
            int count;
            MPI_Get_count(&status, MPI_INT, &count);
            CHECK(count == 2, "count %d", count);
            next[source]++;
        }
        free(next);
    } else {
        for (int sequence = 0; sequence < STREAM_LENGTH; sequence++) {
            int payload[2] = {rank, sequence};
            MPI_Send(payload, 2, MPI_INT, 0, sequence % 7, MPI_COMM_WORLD);
        }
    }
}

/* Small, large (rendezvous in most implementations), small again on one tag: a wildcard
 * receiver must get them in send order even though the large one takes another protocol. */
static void mixed_protocol_order(void)
{
    char *big = malloc(BIG_BYTES);
    if (rank == 1) {
        MPI_Request requests[3];
        int first = 11, last = 33;
        memset(big, 0x5a, BIG_BYTES);
        MPI_Isend(&first, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, &requests[0]);
        MPI_Isend(big, BIG_BYTES, MPI_CHAR, 0, 4, MPI_COMM_WORLD, &requests[1]);
        MPI_Isend(&last, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, &requests[2]);
        MPI_Waitall(3, requests, MPI_STATUSES_IGNORE);
    } else if (rank == 0) {
        MPI_Status status;
        int count;
        memset(big, 0, BIG_BYTES);
        MPI_Recv(big, BIG_BYTES, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        MPI_Get_count(&status, MPI_CHAR, &count);
        CHECK(count == (int)sizeof(int), "first message has %d bytes", count);
        CHECK(*(int *)big == 11, "first message holds %d", *(int *)big);
        MPI_Recv(big, BIG_BYTES, MPI_CHAR, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        MPI_Get_count(&status, MPI_CHAR, &count);
        CHECK(count == BIG_BYTES, "second message has %d bytes", count);
        for (int i = 0; i < BIG_BYTES; i++)
            CHECK(big[i] == 0x5a, "byte %d of the large message is %d", i, big[i]);
        MPI_Recv(big, BIG_BYTES, MPI_CHAR, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &status);
        MPI_Get_count(&status, MPI_CHAR, &count);
        CHECK(count == (int)sizeof(int) && *(int *)big == 33, "third message: %d bytes, value %d", count, *(int *)big);
    }
    free(big);
}

/* Tags 1, 2, 3 are sent in that order; the receiver asks for 3, then 2, then 1. */
static void tag_selection_out_of_order(void)
{
    if (rank == 1) {
        MPI_Request requests[3];
        int values[3] = {100, 200, 300};
        for (int i = 0; i < 3; i++)
            MPI_Isend(&values[i], 1, MPI_INT, 0, i + 1, MPI_COMM_WORLD, &requests[i]);
        MPI_Waitall(3, requests, MPI_STATUSES_IGNORE);
    } else if (rank == 0) {
        for (int tag = 3; tag >= 1; tag--) {
            int value = -1;
            MPI_Status status;
            MPI_Recv(&value, 1, MPI_INT, 1, tag, MPI_COMM_WORLD, &status);
            CHECK(value == tag * 100, "tag %d delivered %d", tag, value);
            CHECK(status.MPI_TAG == tag && status.MPI_SOURCE == 1, "status tag %d source %d", status.MPI_TAG, status.MPI_SOURCE);
        }
    }
}

/* Two receives posted before any message arrives must match in the order they were posted. */
static void posted_receive_order(void)
{
    if (rank == 0) {
        int first = -1, second = -1;
        MPI_Request requests[2];
        MPI_Irecv(&first, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &requests[0]);
        MPI_Irecv(&second, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &requests[1]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        CHECK(first == 1 && second == 2, "posted receives got %d then %d, expected 1 then 2", first, second);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            int one = 1, two = 2;
            MPI_Send(&one, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
            MPI_Send(&two, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
        }
    }
}

/* A wildcard receive and a specific one racing for messages from two senders. */
static void specific_and_wildcard_receivers(void)
{
    if (size < 3)
        return;
    if (rank == 0) {
        int from_two = -1, from_any = -1;
        MPI_Status status;
        MPI_Recv(&from_two, 1, MPI_INT, 2, 21, MPI_COMM_WORLD, &status);
        CHECK(from_two == 2, "source-2 receive got %d", from_two);
        MPI_Recv(&from_any, 1, MPI_INT, MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &status);
        CHECK(from_any == 1 && status.MPI_SOURCE == 1, "wildcard got %d from %d", from_any, status.MPI_SOURCE);
    } else if (rank == 1 || rank == 2) {
        MPI_Send(&rank, 1, MPI_INT, 0, 21, MPI_COMM_WORLD);
    }
}

static void self_and_empty_messages(void)
{
    int out[4] = {rank, rank + 1, rank + 2, rank + 3}, in[4] = {0};
    MPI_Request request;
    MPI_Status status;
    MPI_Isend(out, 4, MPI_INT, rank, 77, MPI_COMM_WORLD, &request);
    MPI_Recv(in, 4, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &status);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    CHECK(memcmp(in, out, sizeof in) == 0 && status.MPI_SOURCE == rank, "self message garbled (source %d)", status.MPI_SOURCE);

    int peer = (rank + 1) % size, from = (rank + size - 1) % size, count = -1;
    MPI_Sendrecv(NULL, 0, MPI_INT, peer, 78, NULL, 0, MPI_INT, from, 78, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK(count == 0 && status.MPI_SOURCE == from && status.MPI_TAG == 78, "empty message: count %d source %d tag %d", count, status.MPI_SOURCE, status.MPI_TAG);

    int untouched = 1234;
    MPI_Send(&untouched, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Recv(&untouched, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK(untouched == 1234, "receive from MPI_PROC_NULL wrote %d", untouched);
    CHECK(status.MPI_SOURCE == MPI_PROC_NULL && status.MPI_TAG == MPI_ANY_TAG && count == 0,
          "MPI_PROC_NULL status: source %d tag %d count %d", status.MPI_SOURCE, status.MPI_TAG, count);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    require_ranks(2, "p2p_matching");
    /* Phases are separated by barriers so that one phase's wildcards never see the next one's. */
    void (*phases[])(void) = {wildcard_stream, mixed_protocol_order, tag_selection_out_of_order,
                              posted_receive_order, specific_and_wildcard_receivers, self_and_empty_messages};
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        phases[i]();
        MPI_Barrier(MPI_COMM_WORLD);
    }
    report_ok("p2p_matching");
    MPI_Finalize();
    return 0;
}
