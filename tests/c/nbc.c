/* Non-blocking collectives: every MPI_I* collective gives what its blocking twin gives; several
 * run at once on one communicator and complete in any order; they progress while the rank is
 * inside other MPI calls; MPI_Alltoallw and MPI_Reduce_local; argument errors. */
#include <string.h>

#include "check.h"

#define N 37

static int rank, size;

static int value(int r, int i) { return r * 1000 + i; }

static void test_each_collective(void)
{
    MPI_Request req;
    int i, r;
    int *all = malloc(sizeof(int) * N * size);
    int *all2 = malloc(sizeof(int) * N * size);
    int counts[64], displs[64];
    int mine[N], out[N];

    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);

    for (i = 0; i < N; i++) mine[i] = rank == size - 1 ? value(7, i) : -1;
    MPI_Ibcast(mine, N, MPI_INT, size - 1, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i < N; i++) CHECK(mine[i] == value(7, i), "ibcast [%d] = %d", i, mine[i]);

    for (i = 0; i < N; i++) mine[i] = value(rank, i);
    MPI_Ireduce(mine, out, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == 0)
        for (i = 0; i < N; i++) {
            int expected = 0;
            for (r = 0; r < size; r++) expected += value(r, i);
            CHECK(out[i] == expected, "ireduce [%d] = %d, expected %d", i, out[i], expected);
        }

    MPI_Iallreduce(mine, out, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i < N; i++) CHECK(out[i] == value(size - 1, i), "iallreduce [%d] = %d", i, out[i]);

    memcpy(out, mine, sizeof out);
    MPI_Iallreduce(MPI_IN_PLACE, out, N, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i < N; i++) CHECK(out[i] == value(0, i), "iallreduce in place [%d] = %d", i, out[i]);

    MPI_Iscan(mine, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i < N; i++) {
        int expected = 0;
        for (r = 0; r <= rank; r++) expected += value(r, i);
        CHECK(out[i] == expected, "iscan [%d] = %d, expected %d", i, out[i], expected);
    }
    MPI_Iexscan(mine, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank > 0)
        for (i = 0; i < N; i++) {
            int expected = 0;
            for (r = 0; r < rank; r++) expected += value(r, i);
            CHECK(out[i] == expected, "iexscan [%d] = %d, expected %d", i, out[i], expected);
        }

    MPI_Igather(mine, N, MPI_INT, all, N, MPI_INT, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == 0)
        for (r = 0; r < size; r++)
            for (i = 0; i < N; i++) CHECK(all[r * N + i] == value(r, i), "igather [%d][%d]", r, i);

    for (r = 0; r < size; r++) {
        counts[r] = r + 1;
        displs[r] = r * N;
    }
    MPI_Igatherv(mine, rank + 1, MPI_INT, all2, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == 0)
        for (r = 0; r < size; r++)
            for (i = 0; i <= r; i++) CHECK(all2[r * N + i] == value(r, i), "igatherv [%d][%d]", r, i);

    if (rank == 0)
        for (r = 0; r < size; r++)
            for (i = 0; i < N; i++) all[r * N + i] = value(r, i) + 5;
    MPI_Iscatter(all, N, MPI_INT, out, N, MPI_INT, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i < N; i++) CHECK(out[i] == value(rank, i) + 5, "iscatter [%d] = %d", i, out[i]);

    MPI_Iscatterv(all, counts, displs, MPI_INT, out, rank + 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (i = 0; i <= rank; i++) CHECK(out[i] == value(rank, i) + 5, "iscatterv [%d] = %d", i, out[i]);

    MPI_Iallgather(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (r = 0; r < size; r++)
        for (i = 0; i < N; i++) CHECK(all[r * N + i] == value(r, i), "iallgather [%d][%d]", r, i);

    MPI_Iallgatherv(mine, rank + 1, MPI_INT, all2, counts, displs, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (r = 0; r < size; r++)
        for (i = 0; i <= r; i++) CHECK(all2[r * N + i] == value(r, i), "iallgatherv [%d][%d]", r, i);

    for (r = 0; r < size; r++)
        for (i = 0; i < N; i++) all[r * N + i] = value(rank, r * N + i);
    MPI_Ialltoall(all, N, MPI_INT, all2, N, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (r = 0; r < size; r++)
        for (i = 0; i < N; i++) CHECK(all2[r * N + i] == value(r, rank * N + i), "ialltoall [%d][%d]", r, i);

    for (i = 0; i < N; i++) mine[i] = value(rank, i);
    {
        int *input = malloc(sizeof(int) * N * size);
        for (r = 0; r < size; r++)
            for (i = 0; i < N; i++) input[r * N + i] = value(rank, r * N + i);
        MPI_Ireduce_scatter_block(input, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (i = 0; i < N; i++) {
            int expected = 0;
            for (r = 0; r < size; r++) expected += value(r, rank * N + i);
            CHECK(out[i] == expected, "ireduce_scatter_block [%d] = %d, expected %d", i, out[i], expected);
        }
        for (r = 0; r < size; r++) counts[r] = N;
        MPI_Ireduce_scatter(input, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (i = 0; i < N; i++) {
            int expected = 0;
            for (r = 0; r < size; r++) expected += value(r, rank * N + i);
            CHECK(out[i] == expected, "ireduce_scatter [%d] = %d, expected %d", i, out[i], expected);
        }
        free(input);
    }
    free(all);
    free(all2);
}

/* Alltoallv where rank s sends s + d + 1 ints to rank d. */
static void test_alltoallv_and_w(int nonblocking)
{
    int *sendcounts = malloc(sizeof(int) * size), *sdispls = malloc(sizeof(int) * size);
    int *recvcounts = malloc(sizeof(int) * size), *rdispls = malloc(sizeof(int) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    int *send, *recv, total_send = 0, total_recv = 0, d, i;
    MPI_Request req;
    for (d = 0; d < size; d++) {
        sendcounts[d] = rank + d + 1;
        sdispls[d] = total_send;
        total_send += sendcounts[d];
        recvcounts[d] = d + rank + 1;
        rdispls[d] = total_recv;
        total_recv += recvcounts[d];
        types[d] = MPI_INT;
    }
    send = malloc(sizeof(int) * total_send);
    recv = malloc(sizeof(int) * total_recv);
    for (d = 0; d < size; d++)
        for (i = 0; i < sendcounts[d]; i++) send[sdispls[d] + i] = value(rank, d * 100 + i);
    if (nonblocking) {
        MPI_Ialltoallv(send, sendcounts, sdispls, MPI_INT, recv, recvcounts, rdispls, MPI_INT, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Alltoallv(send, sendcounts, sdispls, MPI_INT, recv, recvcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    }
    for (d = 0; d < size; d++)
        for (i = 0; i < recvcounts[d]; i++)
            CHECK(recv[rdispls[d] + i] == value(d, rank * 100 + i), "alltoallv from %d [%d] = %d", d, i, recv[rdispls[d] + i]);

    /* Alltoallw: byte displacements. */
    for (d = 0; d < size; d++) {
        sdispls[d] *= (int)sizeof(int);
        rdispls[d] *= (int)sizeof(int);
    }
    memset(recv, 0, sizeof(int) * total_recv);
    if (nonblocking) {
        MPI_Ialltoallw(send, sendcounts, sdispls, types, recv, recvcounts, rdispls, types, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Alltoallw(send, sendcounts, sdispls, types, recv, recvcounts, rdispls, types, MPI_COMM_WORLD);
    }
    for (d = 0; d < size; d++)
        for (i = 0; i < recvcounts[d]; i++)
            CHECK(recv[rdispls[d] / (int)sizeof(int) + i] == value(d, rank * 100 + i), "alltoallw from %d [%d]", d, i);
    free(sendcounts);
    free(sdispls);
    free(recvcounts);
    free(rdispls);
    free(types);
    free(send);
    free(recv);
}

/* Several collectives in flight at once on one communicator, completed in reverse order. */
static void test_many_in_flight(void)
{
    enum { K = 8, LEN = 5000 };
    MPI_Request reqs[K];
    static int bufs[K][LEN], outs[K][LEN];
    int k, i, flag = 0;
    for (k = 0; k < K; k++) {
        for (i = 0; i < LEN; i++) bufs[k][i] = value(rank, i) + k;
        if (k % 2 == 0)
            MPI_Iallreduce(bufs[k], outs[k], LEN, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[k]);
        else
            MPI_Ibcast(bufs[k], LEN, MPI_INT, k % size, MPI_COMM_WORLD, &reqs[k]);
    }
    for (k = K - 1; k >= 0; k--) MPI_Wait(&reqs[k], MPI_STATUS_IGNORE);
    for (k = 0; k < K; k++)
        for (i = 0; i < LEN; i += 97) {
            if (k % 2 == 0) {
                int expected = 0, r;
                for (r = 0; r < size; r++) expected += value(r, i) + k;
                CHECK(outs[k][i] == expected, "in flight %d [%d] = %d, expected %d", k, i, outs[k][i], expected);
            } else {
                CHECK(bufs[k][i] == value(k % size, i) + k, "in flight bcast %d [%d]", k, i);
            }
        }
    /* Testall drives them too. */
    for (k = 0; k < K; k++) MPI_Ibarrier(MPI_COMM_WORLD, &reqs[k]);
    while (!flag) MPI_Testall(K, reqs, &flag, MPI_STATUSES_IGNORE);
    for (k = 0; k < K; k++) CHECK(reqs[k] == MPI_REQUEST_NULL, "testall left request %d", k);
}

/* A collective started before a blocking receive must progress inside it: rank 1 only sends
 * once its own broadcast is complete, which needs rank 0 to forward (binomial tree over 3+). */
static void test_progress_inside_other_calls(void)
{
    enum { LEN = 100000 };
    static int data[LEN];
    int token = 0, i;
    MPI_Request req;
    if (size < 2) return;
    for (i = 0; i < LEN; i++) data[i] = rank == 0 ? i : -1;
    MPI_Ibcast(data, LEN, MPI_INT, 0, MPI_COMM_WORLD, &req);
    if (rank == 0) {
        MPI_Recv(&token, 1, MPI_INT, size - 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(token == 42, "token %d", token);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == size - 1) {
            token = 42;
            MPI_Send(&token, 1, MPI_INT, 0, 99, MPI_COMM_WORLD);
        }
    }
    for (i = 0; i < LEN; i += 1001) CHECK(data[i] == i, "ibcast [%d] = %d", i, data[i]);
}

/* Collectives on a duplicated communicator stay apart from those on the parent. */
static void test_two_communicators(void)
{
    MPI_Comm dup;
    MPI_Request a, b;
    int x = rank, y = rank * 10, sx = 0, sy = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Iallreduce(&x, &sx, 1, MPI_INT, MPI_SUM, dup, &a);
    MPI_Iallreduce(&y, &sy, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &b);
    MPI_Wait(&b, MPI_STATUS_IGNORE);
    MPI_Wait(&a, MPI_STATUS_IGNORE);
    CHECK(sx == size * (size - 1) / 2, "dup sum %d", sx);
    CHECK(sy == 10 * size * (size - 1) / 2, "world sum %d", sy);
    MPI_Comm_free(&dup);
}

static void test_reduce_local(void)
{
    int in[N], inout[N], i;
    double din[3] = {1.5, -2.0, 4.0}, dinout[3] = {2.0, 3.0, -1.0};
    for (i = 0; i < N; i++) {
        in[i] = i;
        inout[i] = 2 * i;
    }
    CHECK(MPI_Reduce_local(in, inout, N, MPI_INT, MPI_SUM) == MPI_SUCCESS, "reduce_local");
    for (i = 0; i < N; i++) CHECK(inout[i] == 3 * i, "reduce_local [%d] = %d", i, inout[i]);
    MPI_Reduce_local(din, dinout, 3, MPI_DOUBLE, MPI_MAX);
    CHECK(dinout[0] == 2.0 && dinout[1] == 3.0 && dinout[2] == 4.0, "reduce_local max %g %g %g", dinout[0], dinout[1], dinout[2]);
}

static void test_errors(void)
{
    int x = 0, y = 0;
    MPI_Request req;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(class_of(MPI_Ibcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD, &req)) == MPI_ERR_ROOT, "ibcast bad root");
    CHECK(class_of(MPI_Ibarrier(MPI_COMM_NULL, &req)) == MPI_ERR_COMM, "ibarrier null comm");
    /* MPICH does not check these (it crashes on a null op), so only Braid's answers are checked. */
#ifdef TEST_BRAID_ONLY
    CHECK(class_of(MPI_Iallreduce(&x, &y, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req)) == MPI_ERR_COUNT, "iallreduce negative count");
    CHECK(class_of(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &req)) == MPI_ERR_OP, "iallreduce null op");
    CHECK(class_of(MPI_Reduce_local(&x, &y, 1, MPI_INT, MPI_OP_NULL)) == MPI_ERR_OP, "reduce_local null op");
    CHECK(class_of(MPI_Reduce_local(&x, &y, -1, MPI_INT, MPI_SUM)) == MPI_ERR_COUNT, "reduce_local negative count");
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_each_collective();
    test_alltoallv_and_w(0);
    test_alltoallv_and_w(1);
    test_many_in_flight();
    test_progress_inside_other_calls();
    test_two_communicators();
    test_reduce_local();
    test_errors();
    report_ok("nbc");
    MPI_Finalize();
    return 0;
}
