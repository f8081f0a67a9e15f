/* Sends to the own rank, cancelled or received, then asked about with MPI_Request_get_status (as
 * mpi4py's test suite does): every such request must come to an end, and one look after
 * MPI_Cancel must say whether the send was cancelled, since a program that receives the message
 * when it was not would otherwise wait forever for a withdrawn one. */
#include "check.h"
#include <string.h>

/* Polls `request` with MPI_Request_get_status until it reports completion; fails if it never does. */
static void get_status_until_done(MPI_Request request, MPI_Status *status, const char *what, int bytes)
{
    int flag = 0;
    long looks = 0;
    const long limit = 10 * 1000 * 1000;
    while (!flag && looks < limit) {
        CHECK(MPI_Request_get_status(request, &flag, status) == MPI_SUCCESS, "%s: MPI_Request_get_status failed", what);
        looks++;
    }
    CHECK(flag, "%s (%d bytes): MPI_Request_get_status never reported completion in %ld looks", what, bytes, limit);
}

static void probe_then_cancel(MPI_Comm comm, int bytes, char *out, char *in)
{
    int rank, flag = 0, cancelled = 0;
    MPI_Request request;
    MPI_Status status;
    MPI_Comm_rank(comm, &rank);
    MPI_Issend(out, bytes, MPI_CHAR, rank, 123, comm, &request);
    MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &status);
    CHECK(status.MPI_SOURCE == rank && status.MPI_TAG == 123, "probe found source %d tag %d", status.MPI_SOURCE, status.MPI_TAG);
    MPI_Cancel(&request);
    /* One look, as mpi4py's testProbeCancel takes: the answer decides whether to receive. */
    MPI_Request_get_status(request, &flag, &status);
    if (flag)
        MPI_Test_cancelled(&status, &cancelled);
    if (flag && cancelled) {
        MPI_Request_free(&request);
        /* The withdrawn message must not be there any more. */
        MPI_Iprobe(rank, 123, comm, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "a cancelled send to self (%d bytes) can still be probed", bytes);
    } else {
        MPI_Recv(in, bytes, MPI_CHAR, rank, 123, comm, MPI_STATUS_IGNORE);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        CHECK(memcmp(in, out, (size_t)bytes) == 0, "a send to self that was not cancelled delivered other bytes");
    }
}

static void cancel_then_poll(MPI_Comm comm, int bytes, char *out)
{
    int rank, cancelled = 0;
    MPI_Request request;
    MPI_Status status;
    MPI_Comm_rank(comm, &rank);
    MPI_Issend(out, bytes, MPI_CHAR, rank, 124, comm, &request);
    MPI_Cancel(&request);
    get_status_until_done(request, &status, "Issend to self, then MPI_Cancel", bytes);
    MPI_Test_cancelled(&status, &cancelled);
    CHECK(cancelled, "an unmatched synchronous send to self (%d bytes) was not cancelled", bytes);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    CHECK(request == MPI_REQUEST_NULL, "MPI_Wait left the cancelled request active");
}

static void receive_then_poll(MPI_Comm comm, int bytes, char *out, char *in)
{
    int rank, cancelled = 1;
    MPI_Request request;
    MPI_Status status;
    MPI_Comm_rank(comm, &rank);
    MPI_Issend(out, bytes, MPI_CHAR, rank, 125, comm, &request);
    MPI_Recv(in, bytes, MPI_CHAR, rank, 125, comm, MPI_STATUS_IGNORE);
    get_status_until_done(request, &status, "Issend to self, then its receive", bytes);
    MPI_Test_cancelled(&status, &cancelled);
    CHECK(!cancelled, "a received send to self reports cancelled");
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    /* A cancel after the match changes nothing. */
    MPI_Issend(out, bytes, MPI_CHAR, rank, 126, comm, &request);
    MPI_Recv(in, bytes, MPI_CHAR, rank, 126, comm, MPI_STATUS_IGNORE);
    MPI_Cancel(&request);
    get_status_until_done(request, &status, "Issend to self, its receive, then MPI_Cancel", bytes);
    MPI_Test_cancelled(&status, &cancelled);
    CHECK(!cancelled, "a send to self cancelled after its receive reports cancelled");
    MPI_Wait(&request, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int provided;
    int thread_level = argc > 1 && strcmp(argv[1], "multiple") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, thread_level, &provided);
    static char out[1 << 20], in[1 << 20];
    for (int i = 0; i < (int)sizeof out; i++)
        out[i] = (char)(i * 7 + 1);
    /* Nothing, eager, and rendezvous sizes. */
    const int sizes[] = {0, 8, 4000, 100000, 1 << 20};
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm comms[] = {MPI_COMM_WORLD, dup, MPI_COMM_SELF};
    for (int c = 0; c < 3; c++) {
        for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++) {
            probe_then_cancel(comms[c], sizes[s], out, in);
#ifdef TEST_BRAID_ONLY
            /* MPI says a wait on a send marked for cancellation returns whatever the other
             * processes do; MPICH 4.0 and Open MPI 4.1 leave an unmatched synchronous send to
             * self pending forever after MPI_Cancel at 2 ranks and more. */
            cancel_then_poll(comms[c], sizes[s], out);
#endif
            receive_then_poll(comms[c], sizes[s], out, in);
        }
    }
    MPI_Comm_free(&dup);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
