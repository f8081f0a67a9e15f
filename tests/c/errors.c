/* Under MPI_ERRORS_RETURN every bad argument comes back as a code of the right class, and the
 * library keeps working afterwards. Runs on any number of ranks. */
#include <string.h>
#include "check.h"

static int rank, size;

static void argument_errors(void)
{
    int value = 0, buffer[10] = {0};
    MPI_Request request;
    expect_class(MPI_Send(&value, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Send to rank == size");
    expect_class(MPI_Send(&value, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Send to rank -7");
    expect_class(MPI_Irecv(&value, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, &request), MPI_ERR_RANK, "MPI_Irecv from rank size + 3");
    expect_class(MPI_Send(&value, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Send with tag -5");
    expect_class(MPI_Send(&value, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Send with MPI_ANY_TAG");
    expect_class(MPI_Irecv(&value, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &request), MPI_ERR_TAG, "MPI_Irecv with tag -5");
    expect_class(MPI_Send(&value, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Send with count -1");
    expect_class(MPI_Send(&value, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Send with MPI_DATATYPE_NULL");

    MPI_Datatype uncommitted;
    MPI_Type_vector(2, 1, 2, MPI_INT, &uncommitted);
    expect_class(MPI_Send(buffer, 1, uncommitted, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Send with an uncommitted type");
    MPI_Type_free(&uncommitted);

    expect_class(MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Send on MPI_COMM_NULL");
    expect_class(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Barrier on MPI_COMM_NULL");
    int comm_size;
    expect_class(MPI_Comm_size(MPI_COMM_NULL, &comm_size), MPI_ERR_COMM, "MPI_Comm_size on MPI_COMM_NULL");

    expect_class(MPI_Bcast(&value, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "MPI_Bcast with root == size");
    expect_class(MPI_Reduce(&value, buffer, 1, MPI_INT, MPI_SUM, -2, MPI_COMM_WORLD), MPI_ERR_ROOT, "MPI_Reduce with root -2");
    expect_class(MPI_Allreduce(&value, buffer, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "MPI_Allreduce with MPI_OP_NULL");
    expect_class(MPI_Bcast(&value, -3, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Bcast with count -3");
}

/* Truncation is reported by the receive (and in the status of the *all forms). */
static void truncation(void)
{
    int ten[10], four[4];
    for (int i = 0; i < 10; i++)
        ten[i] = i;
    MPI_Request send_request, receive_request;
    MPI_Status status;
    MPI_Isend(ten, 10, MPI_INT, rank, 1, MPI_COMM_WORLD, &send_request);
    expect_class(MPI_Recv(four, 4, MPI_INT, rank, 1, MPI_COMM_WORLD, &status), MPI_ERR_TRUNCATE, "MPI_Recv of 10 ints into 4");
    MPI_Wait(&send_request, MPI_STATUS_IGNORE);

    MPI_Isend(ten, 10, MPI_INT, rank, 2, MPI_COMM_WORLD, &send_request);
    MPI_Irecv(four, 4, MPI_INT, rank, 2, MPI_COMM_WORLD, &receive_request);
    expect_class(MPI_Wait(&receive_request, &status), MPI_ERR_TRUNCATE, "MPI_Wait on a truncated MPI_Irecv");
    MPI_Wait(&send_request, MPI_STATUS_IGNORE);

    MPI_Request requests[2];
    MPI_Status statuses[2];
    MPI_Isend(ten, 10, MPI_INT, rank, 3, MPI_COMM_WORLD, &requests[0]);
    MPI_Irecv(four, 4, MPI_INT, rank, 3, MPI_COMM_WORLD, &requests[1]);
    expect_class(MPI_Waitall(2, requests, statuses), MPI_ERR_IN_STATUS, "MPI_Waitall with a truncated receive");
    int error_class;
    MPI_Error_class(statuses[1].MPI_ERROR, &error_class);
    CHECK(error_class == MPI_ERR_TRUNCATE, "MPI_Waitall status of the truncated receive has MPI_ERROR class %d", error_class);
    CHECK(statuses[0].MPI_ERROR == MPI_SUCCESS, "MPI_Waitall status of the good send has MPI_ERROR %d", statuses[0].MPI_ERROR);
}

static void still_works_afterwards(void)
{
    int next = (rank + 1) % size, previous = (rank + size - 1) % size, received = -1;
    int rc = MPI_Sendrecv(&rank, 1, MPI_INT, next, 9, &received, 1, MPI_INT, previous, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && received == previous, "MPI_Sendrecv after errors: rc %d received %d", rc, received);
    int total = 0;
    rc = MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && total == size * (size - 1) / 2, "MPI_Allreduce after errors: rc %d total %d", rc, total);
}


int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Errhandler handler;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
    CHECK(handler == MPI_ERRORS_RETURN, "MPI_Comm_get_errhandler does not report MPI_ERRORS_RETURN");
    argument_errors();
    truncation();
    still_works_afterwards();
    report_ok("errors");
    MPI_Finalize();
    return 0;
}
