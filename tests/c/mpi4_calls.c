/* MPI 4 calls beside the persistent collectives: MPI_Info_get_string (the in-out length, a
 * size query with a zero length, a value cut to fit, a missing key), MPI_Comm_idup_with_info
 * (the new communicator takes the given hints, usable once the request completes), and MPI
 * 4.1's status field accessors (where the library declares 4.1, or on Braid), and the
 * non-blocking send-receive (around a ring, in place with a strided type, to MPI_PROC_NULL,
 * completed by MPI_Test, MPI_Waitall and MPI_Waitany), the conversions through the mpi_f08 status,
 * and MPI 4.1's MPI_Request_get_status_all/any/some, MPI_Type_get_value_index and
 * MPI_Remove_error_class/code/string. */
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

/* MPICH before 4.1 leaves an MPI_Isendrecv's status unset, crashes on MPI_PROC_NULL peers, and
 * in MPI_Isendrecv_replace drops a reference to the datatype (freeing it then asserts) and lands
 * a strided type's data contiguously: those are checked on Braid and later libraries only (there,
 * the in-place exchange is given a stride of 1). */
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
#define SENDRECV_STATUS_SET 0
#else
#define SENDRECV_STATUS_SET 1
#endif

static void isendrecv(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { N = 1000 };
    static int out[N], in[N];
    for (int i = 0; i < N; i++) {
        out[i] = rank * N + i;
        in[i] = -1;
    }
    MPI_Request request;
    MPI_Status status;
    MPI_Isendrecv(out, N, MPI_INT, right, 5, in, N, MPI_INT, left, 5, MPI_COMM_WORLD, &request);
    int done = 0;
    while (!done)
        MPI_Test(&request, &done, &status);
    int count;
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK(request == MPI_REQUEST_NULL && (!SENDRECV_STATUS_SET || (status.MPI_SOURCE == left && status.MPI_TAG == 5 && count == N)),
          "status: source %d tag %d count %d", status.MPI_SOURCE, status.MPI_TAG, count);
    for (int i = 0; i < N; i++)
        CHECK(in[i] == left * N + i, "ring: in[%d] = %d", i, in[i]);

    /* In place, every other int of 2N: the odd ones are left alone. */
    static int strided[2 * N];
    const int stride = SENDRECV_STATUS_SET ? 2 : 1;
    for (int i = 0; i < stride * N; i++)
        strided[i] = i % stride ? -7 : rank * N + i / stride;
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, stride, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Request pair[2];
    MPI_Isendrecv_replace(strided, 1, every_other, right, 6, left, 6, MPI_COMM_WORLD, &pair[0]);
    if (SENDRECV_STATUS_SET)
        MPI_Type_free(&every_other);
    int nobody = SENDRECV_STATUS_SET ? MPI_PROC_NULL : rank;
    MPI_Isendrecv(out, 1, MPI_INT, nobody, 0, in, 1, MPI_INT, nobody, 0, MPI_COMM_WORLD, &pair[1]);
    MPI_Status statuses[2];
    MPI_Waitall(2, pair, statuses);
    CHECK(!SENDRECV_STATUS_SET || (statuses[0].MPI_SOURCE == left && statuses[1].MPI_SOURCE == nobody), "sources %d %d",
          statuses[0].MPI_SOURCE, statuses[1].MPI_SOURCE);
    for (int i = 0; i < stride * N; i++)
        CHECK(strided[i] == (i % stride ? -7 : left * N + i / stride), "in place: [%d] = %d", i, strided[i]);

    /* Many at once, completed in any order. */
    enum { K = 8 };
    MPI_Request many[K];
    static int got[K];
    int sent[K];
    for (int k = 0; k < K; k++) {
        sent[k] = rank * 100 + k;
        MPI_Isendrecv(&sent[k], 1, MPI_INT, right, 10 + k, &got[k], 1, MPI_INT, left, 10 + k, MPI_COMM_WORLD, &many[k]);
    }
    for (int k = 0; k < K; k++) {
        int index;
        MPI_Waitany(K, many, &index, &status);
        CHECK(index != MPI_UNDEFINED && (!SENDRECV_STATUS_SET || status.MPI_TAG == 10 + index), "waitany: index %d tag %d", index, status.MPI_TAG);
    }
    for (int k = 0; k < K; k++)
        CHECK(got[k] == left * 100 + k, "many: got[%d] = %d", k, got[k]);
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

/* MPI 4.1: completion queries that leave the requests alone, the MINLOC/MAXLOC pair types, and
 * removing added error classes, codes and strings. */
static void more_of_4_1(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int out = rank, in[2] = {-1, -1};
    MPI_Request requests[3];
    MPI_Irecv(&in[0], 1, MPI_INT, rank, 31, MPI_COMM_WORLD, &requests[0]);
    MPI_Irecv(&in[1], 1, MPI_INT, rank, 32, MPI_COMM_WORLD, &requests[1]);
    requests[2] = MPI_REQUEST_NULL;
    int flag = 1, index = -1, outcount = -1, indices[3];
    MPI_Status statuses[3];
    MPI_Request_get_status_all(3, requests, &flag, statuses);
    CHECK(!flag, "all complete before any send");
    MPI_Request_get_status_any(3, requests, &index, &flag, &statuses[0]);
    CHECK(!flag, "one complete before any send");
    MPI_Send(&out, 1, MPI_INT, rank, 32, MPI_COMM_WORLD);
    do
        MPI_Request_get_status_some(3, requests, &outcount, indices, statuses);
    while (outcount == 0);
    CHECK(outcount == 1 && indices[0] == 1 && statuses[0].MPI_TAG == 32 && requests[1] != MPI_REQUEST_NULL, "some: %d, index %d", outcount, indices[0]);
    do
        MPI_Request_get_status_any(3, requests, &index, &flag, &statuses[0]);
    while (!flag);
    CHECK(index == 1 && requests[1] != MPI_REQUEST_NULL, "any: index %d", index);
    MPI_Send(&out, 1, MPI_INT, rank, 31, MPI_COMM_WORLD);
    do
        MPI_Request_get_status_all(3, requests, &flag, statuses);
    while (!flag);
    CHECK(statuses[0].MPI_TAG == 31 && statuses[1].MPI_TAG == 32 && requests[0] != MPI_REQUEST_NULL, "all: tags %d %d", statuses[0].MPI_TAG, statuses[1].MPI_TAG);
    MPI_Waitall(3, requests, MPI_STATUSES_IGNORE);
    CHECK(requests[0] == MPI_REQUEST_NULL && in[0] == rank && in[1] == rank, "the wait still completes them");
    int none_active = 0;
    MPI_Request_get_status_any(3, requests, &index, &none_active, MPI_STATUS_IGNORE);
    CHECK(none_active && index == MPI_UNDEFINED, "no active request: flag %d index %d", none_active, index);

    MPI_Datatype pair;
    MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &pair);
    CHECK(pair == MPI_DOUBLE_INT, "double/int pair");
    MPI_Type_get_value_index(MPI_CHAR, MPI_INT, &pair);
    CHECK(pair == MPI_DATATYPE_NULL, "no char/int pair");

    int class, code;
    MPI_Add_error_class(&class);
    MPI_Add_error_code(class, &code);
    MPI_Add_error_string(code, "the reactor is warm");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Remove_error_class(class) != MPI_SUCCESS, "a class with a code was removed");
    CHECK(MPI_Remove_error_code(code) != MPI_SUCCESS, "a code with a string was removed");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Remove_error_string(code);
    MPI_Remove_error_code(code);
    MPI_Remove_error_class(class);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Remove_error_code(code) != MPI_SUCCESS && MPI_Remove_error_class(class) != MPI_SUCCESS, "a code or class was removed twice");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    int found = -1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Error_class(code, &found) != MPI_SUCCESS, "a removed code still has class %d", found);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}
#else
static void status_fields(void) {}
static void more_of_4_1(void) {}
#endif

/* MPI 4.0's conversions through the mpi_f08 status: round trips keep the public fields. Debian's
 * MPICH 4.0.2 declares them but its library (built without mpi_f08) does not have them. */
#if !defined(MPICH_NUMVERSION) || MPICH_NUMVERSION >= 40100000
static void f08_statuses(void)
{
    MPI_Status status, back;
    memset(&status, 0, sizeof status);
    status.MPI_SOURCE = 2;
    status.MPI_TAG = 9;
    status.MPI_ERROR = MPI_ERR_TAG;
    MPI_F08_status f08;
    MPI_Fint fortran[MPI_F_STATUS_SIZE], direct[MPI_F_STATUS_SIZE];
    MPI_Status_c2f08(&status, &f08);
    MPI_Status_f082f(&f08, fortran);
    MPI_Status_c2f(&status, direct);
    CHECK(memcmp(fortran, direct, sizeof fortran) == 0, "c -> f08 -> f differs from c -> f");
    MPI_Status_f2f08(fortran, &f08);
    MPI_Status_f082c(&f08, &back);
    CHECK(back.MPI_SOURCE == 2 && back.MPI_TAG == 9 && back.MPI_ERROR == MPI_ERR_TAG, "round trip: %d %d %d", back.MPI_SOURCE, back.MPI_TAG, back.MPI_ERROR);
}
#else
static void f08_statuses(void) {}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    info_get_string();
    idup_with_info();
    status_fields();
    isendrecv();
    f08_statuses();
    more_of_4_1();
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("mpi4_calls: passed\n");
    MPI_Finalize();
    return 0;
}
