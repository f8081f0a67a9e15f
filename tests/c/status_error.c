/* The MPI_ERROR field of a status: calls that complete one operation leave it as it was (MPI
 * 3.1 section 3.2.5: only the calls that return several statuses may set it); MPI_Waitall sets
 * it for each request when it returns MPI_ERR_IN_STATUS. All sends go to the own rank through
 * MPI_COMM_SELF, posted non-blocking before their receives. */
#include "check.h"
#include <stdio.h>

#define SENTINEL 4242

/* MPICH 4.0 writes MPI_ERROR in several single completions (the probes, MPI_Test, ...); Open MPI
 * leaves it in all of them, as MPI says. Under MPICH a written field is reported, not failed. */
static void expect_kept(const MPI_Status *status, const char *call)
{
#ifdef MPICH_VERSION
    if (status->MPI_ERROR != SENTINEL)
        printf("note: %s wrote MPI_ERROR = %d (MPICH)\n", call, status->MPI_ERROR);
#else
    CHECK(status->MPI_ERROR == SENTINEL, "%s wrote MPI_ERROR = %d into its status", call, status->MPI_ERROR);
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm self = MPI_COMM_SELF;
    int out = 7, in = 0, flag = 0, index = -1;
    MPI_Status status;
    MPI_Request send, receive;
    MPI_Message message;

    status.MPI_ERROR = SENTINEL;
    MPI_Isend(&out, 1, MPI_INT, 0, 1, self, &send);
    MPI_Recv(&in, 1, MPI_INT, 0, 1, self, &status);
    expect_kept(&status, "MPI_Recv");
    MPI_Wait(&send, &status);
    expect_kept(&status, "MPI_Wait");

    MPI_Isend(&out, 1, MPI_INT, 0, 2, self, &send);
    MPI_Probe(0, 2, self, &status);
    expect_kept(&status, "MPI_Probe");
    do
        MPI_Iprobe(0, 2, self, &flag, &status);
    while (!flag);
    expect_kept(&status, "MPI_Iprobe");
    MPI_Irecv(&in, 1, MPI_INT, 0, 2, self, &receive);
    do
        MPI_Test(&receive, &flag, &status);
    while (!flag);
    expect_kept(&status, "MPI_Test");
    do
        MPI_Request_get_status(send, &flag, &status);
    while (!flag);
    expect_kept(&status, "MPI_Request_get_status");
    MPI_Waitany(1, &send, &index, &status);
    expect_kept(&status, "MPI_Waitany");

    MPI_Isend(&out, 1, MPI_INT, 0, 3, self, &send);
    MPI_Mprobe(0, 3, self, &message, &status);
    expect_kept(&status, "MPI_Mprobe");
    MPI_Mrecv(&in, 1, MPI_INT, &message, &status);
    expect_kept(&status, "MPI_Mrecv");
    do
        MPI_Testany(1, &send, &index, &flag, &status);
    while (!flag);
    expect_kept(&status, "MPI_Testany");

    MPI_Isend(&out, 1, MPI_INT, 0, 4, self, &send);
    do
        MPI_Improbe(0, 4, self, &flag, &message, &status);
    while (!flag);
    expect_kept(&status, "MPI_Improbe");
    MPI_Imrecv(&in, 1, MPI_INT, &message, &receive);
    MPI_Wait(&receive, &status);
    expect_kept(&status, "MPI_Wait on MPI_Imrecv");
    MPI_Wait(&send, MPI_STATUS_IGNORE);

    MPI_Sendrecv(&out, 1, MPI_INT, 0, 5, &in, 1, MPI_INT, 0, 5, self, &status);
    expect_kept(&status, "MPI_Sendrecv");
    CHECK(in == 7, "received %d", in);

    /* A receive too small for its message: MPI_Waitall reports it in that request's status. */
    int pair[2] = {1, 2};
    MPI_Status statuses[2];
    MPI_Request requests[2];
    /* MPICH applies MPI_COMM_WORLD's handler to MPI_Waitall, Open MPI and Braid the requests' communicator's. */
    MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Isend(pair, 2, MPI_INT, 0, 6, self, &requests[0]);
    MPI_Irecv(&in, 1, MPI_INT, 0, 6, self, &requests[1]);
    statuses[0].MPI_ERROR = statuses[1].MPI_ERROR = SENTINEL;
    int code = MPI_Waitall(2, requests, statuses);
    CHECK(class_of(code) == MPI_ERR_IN_STATUS, "MPI_Waitall with a truncated receive returned class %d", class_of(code));
    CHECK(class_of(statuses[1].MPI_ERROR) == MPI_ERR_TRUNCATE, "the truncated receive's status holds class %d", class_of(statuses[1].MPI_ERROR));
    CHECK(statuses[0].MPI_ERROR == MPI_SUCCESS, "the send's status holds %d", statuses[0].MPI_ERROR);

    MPI_Finalize();
    return 0;
}
