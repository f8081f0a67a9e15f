/* MPI 4 calls beside the persistent collectives: MPI_Info_get_string (the in-out length, a
 * size query with a zero length, a value cut to fit, a missing key), MPI_Comm_idup_with_info
 * (the new communicator takes the given hints, usable once the request completes), and MPI
 * 4.1's status field accessors (where the library declares 4.1, or on Braid). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static void info_get_string(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "braid_test_key", "a value of 21 chars..");
    char value[64];
    int buflen = 0, flag = 0;
    MPI_Info_get_string(info, "braid_test_key", &buflen, value, &flag);
    CHECK(flag && buflen == 22, "size query: flag %d buflen %d", flag, buflen);
    buflen = sizeof value;
    MPI_Info_get_string(info, "braid_test_key", &buflen, value, &flag);
    CHECK(flag && buflen == 22 && strcmp(value, "a value of 21 chars..") == 0, "whole value: %d '%s'", buflen, value);
    buflen = 8;
    memset(value, 'x', sizeof value);
    MPI_Info_get_string(info, "braid_test_key", &buflen, value, &flag);
    CHECK(flag && buflen == 22 && strcmp(value, "a value") == 0, "cut value: %d '%s'", buflen, value);
    buflen = sizeof value;
    MPI_Info_get_string(info, "no_such_key", &buflen, value, &flag);
    CHECK(!flag, "a missing key is found");
    MPI_Info_free(&info);
}

static void idup_with_info(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm dup;
    MPI_Request request;
    MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &dup, &request);
    MPI_Info_free(&info);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Info used;
    MPI_Comm_get_info(dup, &used);
    char value[16];
    int buflen = sizeof value, flag = 0;
    MPI_Info_get_string(used, "mpi_assert_no_any_tag", &buflen, value, &flag);
    CHECK(flag && strcmp(value, "true") == 0, "the duplicate's hint: flag %d '%s'", flag, flag ? value : "");
    MPI_Info_free(&used);
    int rank, size, sum = 0;
    MPI_Comm_rank(dup, &rank);
    MPI_Comm_size(dup, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup);
    CHECK(sum == size * (size - 1) / 2, "allreduce on the duplicate: %d", sum);
    MPI_Comm_free(&dup);
}

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1) || defined(TEST_BRAID_ONLY)
static void status_fields(void)
{
    MPI_Status status;
    MPI_Status_set_source(&status, 3);
    MPI_Status_set_tag(&status, 17);
    MPI_Status_set_error(&status, MPI_ERR_TRUNCATE);
    CHECK(status.MPI_SOURCE == 3 && status.MPI_TAG == 17 && status.MPI_ERROR == MPI_ERR_TRUNCATE, "set fields");
    int source = -1, tag = -1, code = -1;
    MPI_Status_get_source(&status, &source);
    MPI_Status_get_tag(&status, &tag);
    MPI_Status_get_error(&status, &code);
    CHECK(source == 3 && tag == 17 && code == MPI_ERR_TRUNCATE, "got %d %d %d", source, tag, code);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Status_set_tag(MPI_STATUS_IGNORE, 1);
    int class;
    MPI_Error_class(rc, &class);
    CHECK(class == MPI_ERR_ARG, "setting MPI_STATUS_IGNORE gives class %d", class);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}
#else
static void status_fields(void) {}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    info_get_string();
    idup_with_info();
    status_fields();
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("mpi4_calls: passed\n");
    MPI_Finalize();
    return 0;
}
