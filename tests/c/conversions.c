/* Handle conversions between C and Fortran (MPI_*_c2f / MPI_*_f2c) and Fortran statuses: every
 * handle kind survives the round trip and the converted handle works in calls; a status converted
 * to Fortran and back keeps its source, tag, error and count. Under TEST_BRAID_ONLY: the Fortran
 * status layout (MPI_F_SOURCE, MPI_F_TAG, MPI_F_ERROR) and the errors of the status calls. Runs on
 * any number of ranks. */
#include "check.h"

/* MPI_F_STATUS_SIZE is a C constant in MPI 4 headers only; 16 integers hold any implementation's. */
#ifndef MPI_F_STATUS_SIZE
#define MPI_F_STATUS_SIZE 16
#endif

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *datatype)
{
    (void)datatype;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "MPI_COMM_WORLD changed in the round trip");
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_NULL)) == MPI_COMM_NULL, "MPI_COMM_NULL changed in the round trip");
    MPI_Comm converted_comm = MPI_Comm_f2c(MPI_Comm_c2f(dup));
    CHECK(converted_comm == dup, "a duplicated communicator changed in the round trip");
    int converted_size = 0;
    MPI_Comm_size(converted_comm, &converted_size);
    CHECK(converted_size == size, "the converted communicator has %d ranks, expected %d", converted_size, size);

    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Datatype converted_type = MPI_Type_f2c(MPI_Type_c2f(pair));
    int type_size = 0;
    MPI_Type_size(converted_type, &type_size);
    CHECK(converted_type == pair && type_size == 2 * (int)sizeof(int), "the converted datatype has size %d", type_size);
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "MPI_DOUBLE changed in the round trip");

    MPI_Group group;
    MPI_Comm_group(dup, &group);
    MPI_Group converted_group = MPI_Group_f2c(MPI_Group_c2f(group));
    int group_size = 0;
    MPI_Group_size(converted_group, &group_size);
    CHECK(converted_group == group && group_size == size, "the converted group has %d ranks", group_size);
    CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "MPI_GROUP_EMPTY changed in the round trip");

    MPI_Op sum;
    MPI_Op_create(add_ints, 1, &sum);
    MPI_Op converted_op = MPI_Op_f2c(MPI_Op_c2f(sum));
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, converted_op, dup);
    CHECK(converted_op == sum && total == size, "the converted operation summed to %d", total);
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_MAX)) == MPI_MAX, "MPI_MAX changed in the round trip");

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "key", "value");
    MPI_Info converted_info = MPI_Info_f2c(MPI_Info_c2f(info));
    int keys = 0;
    MPI_Info_get_nkeys(converted_info, &keys);
    CHECK(converted_info == info && keys == 1, "the converted info has %d keys", keys);
    CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL, "MPI_INFO_NULL changed in the round trip");

    MPI_Errhandler converted_errhandler = MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN));
    CHECK(converted_errhandler == MPI_ERRORS_RETURN, "MPI_ERRORS_RETURN changed in the round trip");
    MPI_Comm_set_errhandler(dup, converted_errhandler);
    CHECK(MPI_Send(&one, 1, MPI_INT, size, 0, dup) != MPI_SUCCESS, "the converted MPI_ERRORS_RETURN did not return the error");

    CHECK(MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL, "MPI_WIN_NULL changed in the round trip");
    CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "MPI_FILE_NULL changed in the round trip");
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL, "MPI_MESSAGE_NULL changed in the round trip");
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC, "MPI_MESSAGE_NO_PROC changed in the round trip");
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "MPI_REQUEST_NULL changed in the round trip");

    /* A request waited on through its converted handle, and its status through Fortran and back. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int sent[3] = {rank, rank + 1, rank + 2}, received[3] = {-1, -1, -1};
    MPI_Request request;
    MPI_Irecv(received, 3, MPI_INT, left, 42, dup, &request);
    MPI_Fint fortran_request = MPI_Request_c2f(request);
    MPI_Send(sent, 3, MPI_INT, right, 42, dup);
    MPI_Request converted_request = MPI_Request_f2c(fortran_request);
    MPI_Status status;
    MPI_Wait(&converted_request, &status);
    CHECK(converted_request == MPI_REQUEST_NULL && received[0] == left && received[2] == left + 2, "the converted request received %d..%d",
          received[0], received[2]);

    MPI_Fint fortran_status[MPI_F_STATUS_SIZE];
    MPI_Status back;
    CHECK(MPI_Status_c2f(&status, fortran_status) == MPI_SUCCESS, "MPI_Status_c2f failed");
    CHECK(MPI_Status_f2c(fortran_status, &back) == MPI_SUCCESS, "MPI_Status_f2c failed");
    int count = -1;
    MPI_Get_count(&back, MPI_INT, &count);
    CHECK(back.MPI_SOURCE == left && back.MPI_TAG == 42 && count == 3, "the converted status says source %d, tag %d, count %d", back.MPI_SOURCE,
          back.MPI_TAG, count);
    CHECK(back.MPI_ERROR == status.MPI_ERROR, "the converted status has error %d, expected %d", back.MPI_ERROR, status.MPI_ERROR);
#ifdef TEST_BRAID_ONLY
    CHECK(fortran_status[MPI_F_SOURCE] == left && fortran_status[MPI_F_TAG] == 42 && fortran_status[MPI_F_ERROR] == status.MPI_ERROR,
          "the Fortran status holds source %d, tag %d, error %d", fortran_status[MPI_F_SOURCE], fortran_status[MPI_F_TAG],
          fortran_status[MPI_F_ERROR]);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Status_c2f(MPI_STATUS_IGNORE, fortran_status) == MPI_ERR_ARG, "MPI_Status_c2f accepted MPI_STATUS_IGNORE");
    CHECK(MPI_Status_c2f(&status, NULL) == MPI_ERR_ARG, "MPI_Status_c2f accepted a NULL Fortran status");
    CHECK(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back) == MPI_ERR_ARG, "MPI_Status_f2c accepted MPI_F_STATUS_IGNORE");
    CHECK(MPI_Status_f2c(fortran_status, MPI_STATUS_IGNORE) == MPI_ERR_ARG, "MPI_Status_f2c accepted MPI_STATUS_IGNORE");
#endif

    MPI_Info_free(&info);
    MPI_Op_free(&sum);
    MPI_Group_free(&group);
    MPI_Type_free(&pair);
    MPI_Comm_free(&dup);
    report_ok("conversions");
    MPI_Finalize();
    return 0;
}
