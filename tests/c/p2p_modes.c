/* Send modes and request handling: Ssend/Issend (must not complete before the match), Rsend,
 * Sendrecv, Sendrecv_replace, Probe/Iprobe with Get_count, every Wait and Test form, statuses,
 * MPI_REQUEST_NULL, small sends that complete at once in every completion call, cancelling
 * receives, Request_free and Request_get_status.
 * Ranks 0 and 1 do the work; any further ranks only join the ring and the barriers. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>
#include "check.h"

static int rank, size;

static void sleep_ms(int milliseconds)
{
    struct timespec pause = {0, milliseconds * 1000000L};
    nanosleep(&pause, NULL);
}

static void synchronous_sends(void)
{
    if (rank == 1) {
        int value = 41, go = 1, flag = 0;
        MPI_Request request;
        MPI_Issend(&value, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &request);
        double until = MPI_Wtime() + 0.05;
        while (MPI_Wtime() < until) {
            MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
            CHECK(!flag, "MPI_Issend completed before the receiver posted a matching receive");
        }
        MPI_Send(&go, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        CHECK(request == MPI_REQUEST_NULL, "MPI_Wait left the request handle set");
        MPI_Ssend(&value, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
    } else if (rank == 0) {
        int value = 0, go = 0;
        MPI_Recv(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&value, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(value == 41, "MPI_Issend delivered %d", value);
        sleep_ms(20);
        MPI_Recv(&value, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(value == 41, "MPI_Ssend delivered %d", value);
    }
}

static void ready_send(void)
{
    int value = 0;
    if (rank == 0) {
        MPI_Request request;
        MPI_Irecv(&value, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &request);
        MPI_Send(NULL, 0, MPI_INT, 1, 5, MPI_COMM_WORLD);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        CHECK(value == 77, "MPI_Rsend delivered %d", value);
    } else if (rank == 1) {
        MPI_Recv(NULL, 0, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        value = 77;
        MPI_Rsend(&value, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
    }
}

static void sendrecv_forms(void)
{
    int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    int values[3] = {rank, rank * 10, rank * 100}, received[3] = {-1, -1, -1};
    MPI_Status status;
    MPI_Sendrecv(values, 3, MPI_INT, next, 6, received, 3, MPI_INT, previous, 6, MPI_COMM_WORLD, &status);
    CHECK(received[0] == previous && received[2] == previous * 100 && status.MPI_SOURCE == previous && status.MPI_TAG == 6,
          "MPI_Sendrecv got %d from %d", received[0], status.MPI_SOURCE);
    MPI_Sendrecv_replace(values, 3, MPI_INT, next, 7, previous, 7, MPI_COMM_WORLD, &status);
    CHECK(values[0] == previous && values[1] == previous * 10 && values[2] == previous * 100, "MPI_Sendrecv_replace left %d %d %d", values[0], values[1],
          values[2]);
    int count;
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK(count == 3 && status.MPI_SOURCE == previous, "MPI_Sendrecv_replace status: count %d source %d", count, status.MPI_SOURCE);
}

static void probing(void)
{
    if (rank == 1) {
        double payload[100];
        for (int i = 0; i < 100; i++)
            payload[i] = i * 1.5;
        MPI_Send(payload, 17, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD);
        MPI_Send(payload, 100, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
    } else if (rank == 0) {
        int flag = 1;
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &status);
        CHECK(!flag, "MPI_Iprobe found a message with a tag nobody sent");
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        int count;
        MPI_Get_count(&status, MPI_DOUBLE, &count);
        CHECK(status.MPI_SOURCE == 1 && status.MPI_TAG == 8 && count == 17, "MPI_Probe: source %d tag %d count %d", status.MPI_SOURCE, status.MPI_TAG, count);
        MPI_Probe(1, 8, MPI_COMM_WORLD, &status);
        double *exact = malloc(sizeof(double) * (size_t)count);
        MPI_Recv(exact, count, MPI_DOUBLE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(exact[16] == 24.0, "probed message content %g", exact[16]);
        free(exact);
        flag = 0;
        while (!flag)
            MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        MPI_Get_count(&status, MPI_DOUBLE, &count);
        CHECK(status.MPI_TAG == 9 && count == 100, "MPI_Iprobe: tag %d count %d", status.MPI_TAG, count);
        int bytes;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        CHECK(bytes == 800, "MPI_Get_count in bytes: %d", bytes);
        double payload[100];
        MPI_Recv(payload, 100, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD, &status);
        MPI_Get_elements(&status, MPI_DOUBLE, &count);
        CHECK(count == 100 && payload[99] == 148.5, "after probe: elements %d, last %g", count, payload[99]);
    }
}

enum { PENDING = 6 };

/* Rank 1 sends tags 100..105 in the order given, after rank 0 has posted all receives. */
static void send_batch(const int *order)
{
    MPI_Recv(NULL, 0, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < PENDING; i++) {
        int value = 100 + order[i];
        MPI_Send(&value, 1, MPI_INT, 0, 100 + order[i], MPI_COMM_WORLD);
    }
}

static void post_batch(MPI_Request *requests, int *values)
{
    for (int i = 0; i < PENDING; i++) {
        values[i] = -1;
        MPI_Irecv(&values[i], 1, MPI_INT, 1, 100 + i, MPI_COMM_WORLD, &requests[i]);
    }
    MPI_Send(NULL, 0, MPI_INT, 1, 99, MPI_COMM_WORLD);
}

static void wait_and_test_forms(void)
{
    const int order[PENDING] = {3, 0, 5, 1, 4, 2};
    MPI_Request requests[PENDING];
    MPI_Status statuses[PENDING];
    int values[PENDING], seen[PENDING];
    if (rank == 1) {
        for (int round = 0; round < 4; round++)
            send_batch(order);
        return;
    }
    if (rank != 0)
        return;

    post_batch(requests, values);
    memset(seen, 0, sizeof seen);
    for (int done = 0; done < PENDING; done++) {
        int index;
        MPI_Status status;
        MPI_Waitany(PENDING, requests, &index, &status);
        CHECK(index >= 0 && index < PENDING && !seen[index], "MPI_Waitany returned index %d twice or out of range", index);
        seen[index] = 1;
        CHECK(requests[index] == MPI_REQUEST_NULL, "MPI_Waitany did not free request %d", index);
        CHECK(values[index] == 100 + index && status.MPI_TAG == 100 + index && status.MPI_SOURCE == 1, "MPI_Waitany index %d: value %d tag %d", index,
              values[index], status.MPI_TAG);
    }
    int index, flag;
    MPI_Waitany(PENDING, requests, &index, MPI_STATUS_IGNORE);
    CHECK(index == MPI_UNDEFINED, "MPI_Waitany over null requests gave index %d", index);
    MPI_Testany(PENDING, requests, &index, &flag, MPI_STATUS_IGNORE);
    CHECK(flag && index == MPI_UNDEFINED, "MPI_Testany over null requests: flag %d index %d", flag, index);

    post_batch(requests, values);
    int completed = 0, outcount, indices[PENDING];
    memset(seen, 0, sizeof seen);
    while (completed < PENDING) {
        MPI_Waitsome(PENDING, requests, &outcount, indices, statuses);
        CHECK(outcount >= 1, "MPI_Waitsome returned %d with requests pending", outcount);
        for (int k = 0; k < outcount; k++) {
            CHECK(!seen[indices[k]] && statuses[k].MPI_TAG == 100 + indices[k], "MPI_Waitsome index %d status tag %d", indices[k], statuses[k].MPI_TAG);
            seen[indices[k]] = 1;
        }
        completed += outcount;
    }
    MPI_Waitsome(PENDING, requests, &outcount, indices, statuses);
    CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome over null requests gave %d", outcount);

    post_batch(requests, values);
    completed = 0;
    while (completed < PENDING) {
        MPI_Testsome(PENDING, requests, &outcount, indices, MPI_STATUSES_IGNORE);
        CHECK(outcount >= 0 && outcount <= PENDING - completed, "MPI_Testsome outcount %d", outcount);
        completed += outcount;
    }
    for (int i = 0; i < PENDING; i++)
        CHECK(values[i] == 100 + i && requests[i] == MPI_REQUEST_NULL, "after MPI_Testsome: slot %d holds %d", i, values[i]);

    post_batch(requests, values);
    flag = 0;
    while (!flag)
        MPI_Testall(PENDING, requests, &flag, statuses);
    for (int i = 0; i < PENDING; i++)
        CHECK(statuses[i].MPI_TAG == 100 + i && values[i] == 100 + i && requests[i] == MPI_REQUEST_NULL, "MPI_Testall slot %d: tag %d value %d", i,
              statuses[i].MPI_TAG, values[i]);

    MPI_Request null_request = MPI_REQUEST_NULL;
    MPI_Status status;
    MPI_Wait(&null_request, &status);
    int count;
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK(status.MPI_SOURCE == MPI_ANY_SOURCE && status.MPI_TAG == MPI_ANY_TAG && count == 0, "MPI_Wait on MPI_REQUEST_NULL: source %d tag %d count %d",
          status.MPI_SOURCE, status.MPI_TAG, count);
    MPI_Test(&null_request, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "MPI_Test on MPI_REQUEST_NULL is not complete");
}

static void waitall_with_statuses(void)
{
    if (rank > 1)
        return;
    int peer = 1 - rank, out[2] = {rank, rank + 5}, in[2] = {-1, -1};
    MPI_Request requests[4];
    MPI_Status statuses[4];
    MPI_Irecv(&in[0], 1, MPI_INT, peer, 11, MPI_COMM_WORLD, &requests[0]);
    MPI_Irecv(&in[1], 1, MPI_INT, peer, 12, MPI_COMM_WORLD, &requests[1]);
    MPI_Isend(&out[1], 1, MPI_INT, peer, 12, MPI_COMM_WORLD, &requests[2]);
    MPI_Isend(&out[0], 1, MPI_INT, peer, 11, MPI_COMM_WORLD, &requests[3]);
    MPI_Waitall(4, requests, statuses);
    CHECK(in[0] == peer && in[1] == peer + 5, "MPI_Waitall exchange got %d %d", in[0], in[1]);
    CHECK(statuses[0].MPI_SOURCE == peer && statuses[0].MPI_TAG == 11 && statuses[1].MPI_TAG == 12, "MPI_Waitall statuses: %d/%d %d",
          statuses[0].MPI_SOURCE, statuses[0].MPI_TAG, statuses[1].MPI_TAG);
    for (int i = 0; i < 4; i++)
        CHECK(requests[i] == MPI_REQUEST_NULL, "MPI_Waitall left request %d set", i);
}

/* Small sends may complete as they start and then share one handle value: every completion call
 * must still treat each array slot as its own request. */
static void completed_sends_in_arrays(void)
{
    enum { SENDS = 4 };
    if (rank == 1) {
        int values[4 * SENDS];
        for (int i = 0; i < 4 * SENDS; i++) {
            MPI_Recv(&values[i], 1, MPI_INT, 0, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(values[i] == i, "small send %d arrived as %d", i, values[i]);
        }
        return;
    }
    if (rank != 0)
        return;
    static int payload[4 * SENDS];
    MPI_Request requests[SENDS];
    int next = 0, index, flag, outcount, indices[SENDS], seen[SENDS];
    for (int i = 0; i < 4 * SENDS; i++)
        payload[i] = i;

    for (int i = 0; i < SENDS; i++, next++)
        MPI_Isend(&payload[next], 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &requests[i]);
    memset(seen, 0, sizeof seen);
    for (int done = 0; done < SENDS; done++) {
        MPI_Waitany(SENDS, requests, &index, MPI_STATUS_IGNORE);
        CHECK(index >= 0 && index < SENDS && !seen[index] && requests[index] == MPI_REQUEST_NULL, "MPI_Waitany over sends gave index %d", index);
        seen[index] = 1;
    }
    MPI_Testany(SENDS, requests, &index, &flag, MPI_STATUS_IGNORE);
    CHECK(flag && index == MPI_UNDEFINED, "MPI_Testany after every send: flag %d index %d", flag, index);

    for (int i = 0; i < SENDS; i++, next++)
        MPI_Isend(&payload[next], 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &requests[i]);
    int completed = 0;
    while (completed < SENDS) {
        MPI_Testsome(SENDS, requests, &outcount, indices, MPI_STATUSES_IGNORE);
        CHECK(outcount >= 0 && outcount <= SENDS - completed, "MPI_Testsome over sends: outcount %d", outcount);
        completed += outcount;
    }
    MPI_Waitsome(SENDS, requests, &outcount, indices, MPI_STATUSES_IGNORE);
    CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome after every send gave %d", outcount);

    for (int i = 0; i < SENDS; i++, next++)
        MPI_Isend(&payload[next], 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &requests[i]);
    MPI_Request_get_status(requests[0], &flag, MPI_STATUS_IGNORE);
    MPI_Request_free(&requests[0]);
    CHECK(requests[0] == MPI_REQUEST_NULL, "MPI_Request_free left a send handle set");
    for (int i = 1; i < SENDS; i++) {
        MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
        CHECK(requests[i] == MPI_REQUEST_NULL, "MPI_Wait left send %d set", i);
    }

    for (int i = 0; i < SENDS; i++, next++)
        MPI_Isend(&payload[next], 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &requests[i]);
    flag = 0;
    while (!flag)
        MPI_Testall(SENDS, requests, &flag, MPI_STATUSES_IGNORE);
    for (int i = 0; i < SENDS; i++)
        CHECK(requests[i] == MPI_REQUEST_NULL, "MPI_Testall left send %d set", i);
}

static void cancel_and_free(void)
{
    if (rank == 0) {
        int never = -1, flag = 0;
        MPI_Request request;
        MPI_Status status;
        MPI_Irecv(&never, 1, MPI_INT, 1, 55, MPI_COMM_WORLD, &request);
        MPI_Request_get_status(request, &flag, &status);
        CHECK(!flag, "MPI_Request_get_status says an unmatched receive completed");
        MPI_Cancel(&request);
        MPI_Wait(&request, &status);
        MPI_Test_cancelled(&status, &flag);
        CHECK(flag, "cancelled receive: MPI_Test_cancelled is false");
        CHECK(never == -1, "cancelled receive wrote %d", never);

        MPI_Send(NULL, 0, MPI_INT, 1, 56, MPI_COMM_WORLD);
        int value = -1;
        MPI_Irecv(&value, 1, MPI_INT, 1, 55, MPI_COMM_WORLD, &request);
        do
            MPI_Request_get_status(request, &flag, &status);
        while (!flag);
        CHECK(request != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
        MPI_Wait(&request, &status);
        MPI_Test_cancelled(&status, &flag);
        CHECK(value == 55 && !flag, "message after a cancelled receive: value %d, cancelled %d", value, flag);

        MPI_Recv(&value, 1, MPI_INT, 1, 57, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(value == 57, "message sent with a freed request arrived as %d", value);
    } else if (rank == 1) {
        int value = 55;
        MPI_Recv(NULL, 0, MPI_INT, 0, 56, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&value, 1, MPI_INT, 0, 55, MPI_COMM_WORLD);
        static int freed_value = 57;
        MPI_Request request;
        MPI_Isend(&freed_value, 1, MPI_INT, 0, 57, MPI_COMM_WORLD, &request);
        MPI_Request_free(&request);
        CHECK(request == MPI_REQUEST_NULL, "MPI_Request_free left the handle set");
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    require_ranks(2, "p2p_modes");
    void (*phases[])(void) = {synchronous_sends, ready_send, sendrecv_forms, probing, wait_and_test_forms, waitall_with_statuses, completed_sends_in_arrays, cancel_and_free};
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        phases[i]();
        MPI_Barrier(MPI_COMM_WORLD);
    }
    report_ok("p2p_modes");
    MPI_Finalize();
    return 0;
}
