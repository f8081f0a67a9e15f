/* Collectives on intercommunicators (MPI 3.1 §5.2.2), blocking and non-blocking, between the even
 * and the odd ranks and between rank 0 and the others: every rooted collective from every root of
 * either group (MPI_ROOT at the root, MPI_PROC_NULL in the rest of its group, the root's remote
 * rank in the other), each result checked and the memory around the blocks left alone; a
 * non-commutative user operation reduced in the other group's rank order; a barrier that holds
 * one group until the other has entered; large messages; several collectives in flight at once,
 * and an MPI_Comm_dup meanwhile; and under MPI_ERRORS_RETURN, MPI_Scan (not defined on an
 * intercommunicator: MPI_ERR_COMM) and roots that are none of the three (MPI_ERR_ROOT). Under
 * TEST_BRAID_ONLY also MPI_Exscan, neighbourhood collectives and MPI_IN_PLACE, on which MPICH or
 * Open MPI crash or abort. Needs at least 2 ranks. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include "check.h"

#define N 5
#define MAX_RANKS 8
/* Room for a block of up to MAX_RANKS elements and a gap. */
#define SLOT (MAX_RANKS + 1)

static int rank, size;

/* An intercommunicator and this process's place in it. */
struct inter {
    MPI_Comm comm;
    const char *label; /* starts every message */
    int group; /* 0 for the group of world rank 0 */
    int local_rank, local_size, remote_size;
    int local_world[MAX_RANKS], remote_world[MAX_RANKS];
};

static int value(int world, int i) { return world * 1000 + i + 1; }

static MPI_Request request;

/* Runs MPI_<Name>, or when `nb` MPI_I<name> and a wait; either must succeed. */
#define CALL(nb, Name, name, ...)                                                                   \
    do {                                                                                            \
        int err_ = (nb) ? MPI_I##name(__VA_ARGS__, &request) : MPI_##Name(__VA_ARGS__);             \
        CHECK(err_ == MPI_SUCCESS, "%s%s returned %d", c->label, (nb) ? "MPI_I" #name : "MPI_" #Name, \
              err_);                                                                                \
        if (nb) {                                                                                   \
            err_ = MPI_Wait(&request, MPI_STATUS_IGNORE);                                           \
            CHECK(err_ == MPI_SUCCESS, "%sMPI_Wait after MPI_I" #name " returned %d", c->label, err_); \
        }                                                                                           \
    } while (0)

static void world_ranks(MPI_Group group, int n, int *out)
{
    MPI_Group world;
    int ranks[MAX_RANKS];
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int i = 0; i < n; i++) ranks[i] = i;
    MPI_Group_translate_ranks(group, n, ranks, world, out);
    MPI_Group_free(&world);
}

/* The intercommunicator between the processes of colour 0 and 1; world ranks 0 and `leader1`
 * lead. */
static struct inter make(const char *name, int colour, int leader1)
{
    struct inter c;
    MPI_Comm half;
    MPI_Group group;
    MPI_Comm_split(MPI_COMM_WORLD, colour, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, colour == 0 ? leader1 : 0, 23, &c.comm);
    MPI_Comm_free(&half);
    MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
    c.label = name;
    c.group = colour;
    MPI_Comm_rank(c.comm, &c.local_rank);
    MPI_Comm_size(c.comm, &c.local_size);
    MPI_Comm_remote_size(c.comm, &c.remote_size);
    MPI_Comm_group(c.comm, &group);
    world_ranks(group, c.local_size, c.local_world);
    MPI_Group_free(&group);
    MPI_Comm_remote_group(c.comm, &group);
    world_ranks(group, c.remote_size, c.remote_world);
    MPI_Group_free(&group);
    return c;
}

static int group_size(const struct inter *c, int group) { return group == c->group ? c->local_size : c->remote_size; }

/* The root argument of this process when rank `root` of group `root_group` is the root. */
static int root_arg(const struct inter *c, int root_group, int root)
{
    if (c->group != root_group) return root;
    return c->local_rank == root ? MPI_ROOT : MPI_PROC_NULL;
}

static int root_world(const struct inter *c, int root_group, int root)
{
    return root_group == c->group ? c->local_world[root] : c->remote_world[root];
}

/* 2x2 matrices of unsigned, multiplied (inout = in * inout): not commutative. */
typedef struct {
    unsigned a, b, c, d;
} matrix;

static void multiply(void *in, void *inout, int *len, MPI_Datatype *type)
{
    matrix *x = in, *y = inout;
    (void)type;
    for (int k = 0; k < *len; k++) {
        matrix p = {x[k].a * y[k].a + x[k].b * y[k].c, x[k].a * y[k].b + x[k].b * y[k].d, x[k].c * y[k].a + x[k].d * y[k].c,
                    x[k].c * y[k].b + x[k].d * y[k].d};
        y[k] = p;
    }
}

static matrix matrix_of(int world, int k)
{
    matrix m = {(unsigned)world + 2, 1u + (unsigned)k, (unsigned)world * 3 + 1, 5};
    return m;
}

static MPI_Datatype matrix_type;
static MPI_Op matrix_product;

/* The product of the remote group's matrices k, in remote rank order. */
static matrix remote_product(const struct inter *c, int k)
{
    matrix result = matrix_of(c->remote_world[c->remote_size - 1], k);
    for (int j = c->remote_size - 2; j >= 0; j--) {
        matrix m = matrix_of(c->remote_world[j], k);
        int one = 1;
        multiply(&m, &result, &one, &matrix_type);
    }
    return result;
}

static int remote_sum(const struct inter *c, int i)
{
    int sum = 0;
    for (int j = 0; j < c->remote_size; j++) sum += value(c->remote_world[j], i);
    return sum;
}

/* Each group in turn enters late (after a message from each member of the other): the other's
 * barrier must not complete before. A non-blocking barrier is tested meanwhile; a blocking one
 * must last at least the delay. (Blocking and non-blocking collectives never match each other.) */
static void barrier(const struct inter *c, int nb)
{
    struct timespec pause = {0, 1000000}, delay = {0, 60000000};
    for (int early = 0; early < 2; early++) {
        int go = 1;
        if (c->group == early) {
            for (int j = 0; j < c->remote_size; j++) MPI_Send(&go, 1, MPI_INT, j, 55, c->comm);
            double entered = MPI_Wtime();
            if (nb) {
                int flag = 0;
                MPI_Ibarrier(c->comm, &request);
                for (int attempt = 0; attempt < 20; attempt++) {
                    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
                    CHECK(!flag, "%sMPI_Ibarrier completed before the other group entered", c->label);
                    nanosleep(&pause, NULL);
                }
                MPI_Wait(&request, MPI_STATUS_IGNORE);
            } else {
                CHECK(MPI_Barrier(c->comm) == MPI_SUCCESS, "%sMPI_Barrier", c->label);
            }
            double waited = MPI_Wtime() - entered;
            CHECK(waited > 0.04, "%sthe barrier let this group through after %.3f s, before the other group entered", c->label, waited);
        } else {
            for (int j = 0; j < c->remote_size; j++) MPI_Recv(&go, 1, MPI_INT, j, 55, c->comm, MPI_STATUS_IGNORE);
            nanosleep(&delay, NULL);
            CALL(nb, Barrier, barrier, c->comm);
        }
    }
}

static void bcast(const struct inter *c, int nb)
{
    for (int rg = 0; rg < 2; rg++)
        for (int root = 0; root < group_size(c, rg); root++) {
#if defined(MPICH_VERSION)
            /* MPICH 4.0's MPI_Ibcast on an intercommunicator broadcasts in the receiving group from
             * the local rank that has the root's number, not from the one that received. */
            if (nb && root != 0) continue;
#endif
            int buf[N], arg = root_arg(c, rg, root), from = root_world(c, rg, root);
            for (int i = 0; i < N; i++) buf[i] = arg == MPI_ROOT ? value(from, i) : -1;
            CALL(nb, Bcast, bcast, buf, N, MPI_INT, arg, c->comm);
            for (int i = 0; i < N; i++) {
                int expected = arg == MPI_PROC_NULL ? -1 : value(from, i);
                CHECK(buf[i] == expected, "%sbcast from %d/%d: [%d] = %d, expected %d", c->label, rg, root, i, buf[i], expected);
            }
        }
}

static void reduce(const struct inter *c, int nb)
{
    for (int rg = 0; rg < 2; rg++)
        for (int root = 0; root < group_size(c, rg); root++) {
            int in[N], out[N], arg = root_arg(c, rg, root);
            matrix min[N], mout[N];
            for (int i = 0; i < N; i++) {
                in[i] = value(rank, i);
                out[i] = -1;
                min[i] = matrix_of(rank, i);
            }
            CALL(nb, Reduce, reduce, in, out, N, MPI_INT, MPI_SUM, arg, c->comm);
            CALL(nb, Reduce, reduce, min, mout, N, matrix_type, matrix_product, arg, c->comm);
            if (arg != MPI_ROOT) continue;
            for (int i = 0; i < N; i++) {
                matrix m = remote_product(c, i);
                CHECK(out[i] == remote_sum(c, i), "%sreduce at %d/%d: [%d] = %d, expected %d", c->label, rg, root, i, out[i], remote_sum(c, i));
                CHECK(!memcmp(&mout[i], &m, sizeof m), "%sreduce of matrices at %d/%d: [%d] is not the remote group's product in rank order", c->label, rg, root, i);
            }
        }
}

static void allreduce(const struct inter *c, int nb)
{
    int in[N], out[N];
    matrix min[N], mout[N];
    for (int i = 0; i < N; i++) {
        in[i] = value(rank, i);
        min[i] = matrix_of(rank, i);
    }
    CALL(nb, Allreduce, allreduce, in, out, N, MPI_INT, MPI_SUM, c->comm);
    CALL(nb, Allreduce, allreduce, min, mout, N, matrix_type, matrix_product, c->comm);
    for (int i = 0; i < N; i++) {
        matrix m = remote_product(c, i);
        CHECK(out[i] == remote_sum(c, i), "%sallreduce [%d] = %d, expected %d", c->label, i, out[i], remote_sum(c, i));
        CHECK(!memcmp(&mout[i], &m, sizeof m), "%sallreduce of matrices: [%d] is not the remote group's product in rank order", c->label, i);
    }
}

static void gather(const struct inter *c, int nb)
{
    for (int rg = 0; rg < 2; rg++)
        for (int root = 0; root < group_size(c, rg); root++) {
            int mine[SLOT], all[MAX_RANKS * SLOT], arg = root_arg(c, rg, root), r = c->remote_size;
            for (int i = 0; i < SLOT; i++) mine[i] = value(rank, i);
            for (int i = 0; i < MAX_RANKS * SLOT; i++) all[i] = -1;
            CALL(nb, Gather, gather, mine, N, MPI_INT, all, N, MPI_INT, arg, c->comm);
            if (arg == MPI_ROOT)
                for (int j = 0; j < r; j++)
                    for (int i = 0; i < N; i++)
                        CHECK(all[j * N + i] == value(c->remote_world[j], i), "%sgather at %d/%d: [%d][%d] = %d", c->label, rg, root, j, i, all[j * N + i]);
            else
                for (int i = 0; i < MAX_RANKS * SLOT; i++) CHECK(all[i] == -1, "%sgather wrote at a non-root [%d]", c->label, i);

            /* Remote rank j sends j + 1 elements, which land at reversed places with gaps. */
            int counts[MAX_RANKS], displs[MAX_RANKS];
            for (int j = 0; j < r; j++) {
                counts[j] = j + 1;
                displs[j] = (r - 1 - j) * SLOT;
            }
            for (int i = 0; i < MAX_RANKS * SLOT; i++) all[i] = -1;
            CALL(nb, Gatherv, gatherv, mine, c->local_rank + 1, MPI_INT, all, counts, displs, MPI_INT, arg, c->comm);
            if (arg != MPI_ROOT) continue;
            for (int j = 0; j < r; j++)
                for (int i = 0; i < SLOT; i++) {
                    int at = displs[j] + i, expected = i < counts[j] ? value(c->remote_world[j], i) : -1;
                    CHECK(all[at] == expected, "%sgatherv at %d/%d: block %d [%d] = %d, expected %d", c->label, rg, root, j, i, all[at], expected);
                }
        }
}

static void scatter(const struct inter *c, int nb)
{
    for (int rg = 0; rg < 2; rg++)
        for (int root = 0; root < group_size(c, rg); root++) {
            int mine[SLOT], all[MAX_RANKS * SLOT], arg = root_arg(c, rg, root), r = c->remote_size;
            for (int i = 0; i < MAX_RANKS * SLOT; i++) all[i] = 7000 + i;
            for (int i = 0; i < SLOT; i++) mine[i] = -1;
            CALL(nb, Scatter, scatter, all, N, MPI_INT, mine, N, MPI_INT, arg, c->comm);
            for (int i = 0; i < SLOT; i++) {
                int expected = arg >= 0 && i < N ? 7000 + c->local_rank * N + i : -1;
                CHECK(mine[i] == expected, "%sscatter from %d/%d: [%d] = %d, expected %d", c->label, rg, root, i, mine[i], expected);
            }

            /* Remote rank j gets j + 1 elements from reversed places with gaps. */
            int counts[MAX_RANKS], displs[MAX_RANKS];
            for (int j = 0; j < r; j++) {
                counts[j] = j + 1;
                displs[j] = (r - 1 - j) * SLOT;
            }
            for (int i = 0; i < SLOT; i++) mine[i] = -1;
            CALL(nb, Scatterv, scatterv, all, counts, displs, MPI_INT, mine, c->local_rank + 1, MPI_INT, arg, c->comm);
            if (arg < 0) continue;
            /* The root's group is as large as this one. */
            int from = (c->local_size - 1 - c->local_rank) * SLOT;
            for (int i = 0; i < SLOT; i++) {
                int expected = i <= c->local_rank ? 7000 + from + i : -1;
                CHECK(mine[i] == expected, "%sscatterv from %d/%d: [%d] = %d, expected %d", c->label, rg, root, i, mine[i], expected);
            }
        }
}

static void allgather(const struct inter *c, int nb)
{
    int mine[SLOT], all[MAX_RANKS * SLOT], r = c->remote_size;
    for (int i = 0; i < SLOT; i++) mine[i] = value(rank, i);
    CALL(nb, Allgather, allgather, mine, N, MPI_INT, all, N, MPI_INT, c->comm);
    for (int j = 0; j < r; j++)
        for (int i = 0; i < N; i++) CHECK(all[j * N + i] == value(c->remote_world[j], i), "%sallgather [%d][%d] = %d", c->label, j, i, all[j * N + i]);

    int counts[MAX_RANKS], displs[MAX_RANKS];
    for (int j = 0; j < r; j++) {
        counts[j] = j + 1;
        displs[j] = (r - 1 - j) * SLOT;
    }
    for (int i = 0; i < MAX_RANKS * SLOT; i++) all[i] = -1;
    CALL(nb, Allgatherv, allgatherv, mine, c->local_rank + 1, MPI_INT, all, counts, displs, MPI_INT, c->comm);
    for (int j = 0; j < r; j++)
        for (int i = 0; i < SLOT; i++) {
            int at = displs[j] + i, expected = i < counts[j] ? value(c->remote_world[j], i) : -1;
            CHECK(all[at] == expected, "%sallgatherv block %d [%d] = %d, expected %d", c->label, j, i, all[at], expected);
        }
}

/* Elements local rank `from` sends to remote rank `to` in MPI_Alltoallv/w. */
static int pair_count(int from, int to) { return (from + to) % 3 + 1; }

static void alltoall(const struct inter *c, int nb)
{
    int send[MAX_RANKS * SLOT], recv[MAX_RANKS * SLOT], r = c->remote_size, me = c->local_rank;
    for (int j = 0; j < r; j++)
        for (int i = 0; i < N; i++) send[j * N + i] = value(rank, 100 * j + i);
    CALL(nb, Alltoall, alltoall, send, N, MPI_INT, recv, N, MPI_INT, c->comm);
    for (int j = 0; j < r; j++)
        for (int i = 0; i < N; i++)
            CHECK(recv[j * N + i] == value(c->remote_world[j], 100 * me + i), "%salltoall from %d [%d] = %d", c->label, j, i, recv[j * N + i]);

    /* Blocks of 1 to 3 elements in slots of 4, in reversed order. */
    int scounts[MAX_RANKS], sdispls[MAX_RANKS], rcounts[MAX_RANKS], rdispls[MAX_RANKS];
    int sbytes[MAX_RANKS], rbytes[MAX_RANKS];
    MPI_Datatype types[MAX_RANKS];
    for (int j = 0; j < r; j++) {
        scounts[j] = pair_count(me, j);
        rcounts[j] = pair_count(j, me);
        sdispls[j] = rdispls[j] = (r - 1 - j) * 4;
        sbytes[j] = sdispls[j] * (int)sizeof(int);
        rbytes[j] = rdispls[j] * (int)sizeof(int);
        types[j] = MPI_INT;
        for (int i = 0; i < 4; i++) send[sdispls[j] + i] = value(rank, 100 * j + i);
    }
    for (int w = 0; w < 2; w++) {
        for (int i = 0; i < MAX_RANKS * SLOT; i++) recv[i] = -1;
        if (w)
            CALL(nb, Alltoallw, alltoallw, send, scounts, sbytes, types, recv, rcounts, rbytes, types, c->comm);
        else
            CALL(nb, Alltoallv, alltoallv, send, scounts, sdispls, MPI_INT, recv, rcounts, rdispls, MPI_INT, c->comm);
        for (int j = 0; j < r; j++)
            for (int i = 0; i < 4; i++) {
                int expected = i < rcounts[j] ? value(c->remote_world[j], 100 * me + i) : -1;
                CHECK(recv[rdispls[j] + i] == expected, "%salltoall%s from %d [%d] = %d, expected %d", c->label, w ? "w" : "v", j, i, recv[rdispls[j] + i], expected);
            }
    }
}

static void reduce_scatter(const struct inter *c, int nb)
{
    /* Both groups reduce vectors of the same length, each cut per local rank. */
    int in[64], out[64], l = c->local_size, me = c->local_rank;
    int block = c->remote_size * 2, total = l * block;
    for (int i = 0; i < total; i++) in[i] = value(rank, i);
    CALL(nb, Reduce_scatter_block, reduce_scatter_block, in, out, block, MPI_INT, MPI_SUM, c->comm);
    for (int k = 0; k < block; k++)
        CHECK(out[k] == remote_sum(c, me * block + k), "%sreduce_scatter_block [%d] = %d, expected %d", c->label, k, out[k], remote_sum(c, me * block + k));

    /* 24 elements: local rank k gets k of them, the last rank the rest. */
    int counts[MAX_RANKS], offset = 0;
    for (int k = 0; k < l; k++) counts[k] = k;
    counts[l - 1] = 24 - (l - 1) * (l - 2) / 2;
    for (int k = 0; k < me; k++) offset += counts[k];
    for (int i = 0; i < 24; i++) in[i] = value(rank, i);
    for (int i = 0; i < 64; i++) out[i] = -1;
    CALL(nb, Reduce_scatter, reduce_scatter, in, out, counts, MPI_INT, MPI_SUM, c->comm);
    for (int k = 0; k < counts[me] + 1; k++) {
        int expected = k < counts[me] ? remote_sum(c, offset + k) : -1;
        CHECK(out[k] == expected, "%sreduce_scatter [%d] = %d, expected %d", c->label, k, out[k], expected);
    }
}

/* Messages large enough to take the rendezvous path and the large-message algorithms. */
static void large(const struct inter *c, int nb)
{
    enum { COUNT = 1 << 17 };
    int *in = malloc(sizeof(int) * COUNT), *out = malloc(sizeof(int) * COUNT);
    CHECK(in && out, "out of memory");
    for (int rg = 0; rg < 2; rg++) {
        int arg = root_arg(c, rg, 0), from = root_world(c, rg, 0);
        for (int i = 0; i < COUNT; i++) out[i] = arg == MPI_ROOT ? value(from, i) : -1;
        CALL(nb, Bcast, bcast, out, COUNT, MPI_INT, arg, c->comm);
        for (int i = 0; i < COUNT; i++) {
            int expected = arg == MPI_PROC_NULL ? -1 : value(from, i);
            CHECK(out[i] == expected, "%slarge bcast from %d/0: [%d] = %d, expected %d", c->label, rg, i, out[i], expected);
        }
    }
    for (int i = 0; i < COUNT; i++) in[i] = value(rank, i);
    CALL(nb, Allreduce, allreduce, in, out, COUNT, MPI_INT, MPI_SUM, c->comm);
    for (int i = 0; i < COUNT; i++) CHECK(out[i] == remote_sum(c, i), "%slarge allreduce [%d] = %d, expected %d", c->label, i, out[i], remote_sum(c, i));
    free(in);
    free(out);
}

/* Collectives in flight together, on the intercommunicator and on MPI_COMM_WORLD, completed in
 * reverse order, with an MPI_Comm_dup of the intercommunicator started meanwhile. */
static void overlapping(const struct inter *c)
{
    MPI_Request requests[4];
    int token = c->group == 0 && c->local_rank == 0 ? 4242 : -1, in[N], out[N], all[MAX_RANKS], world_sum = -1;
    for (int i = 0; i < N; i++) in[i] = value(rank, i);
    MPI_Ibcast(&token, 1, MPI_INT, c->group == 0 ? (c->local_rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, c->comm, &requests[0]);
    MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, c->comm, &requests[1]);
    MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, c->comm, &requests[2]);
    MPI_Iallreduce(&rank, &world_sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &requests[3]);
    MPI_Comm dup;
    CHECK(MPI_Comm_dup(c->comm, &dup) == MPI_SUCCESS, "%sMPI_Comm_dup with collectives in flight", c->label);
    int dup_sum = -1;
    CHECK(MPI_Allreduce(&rank, &dup_sum, 1, MPI_INT, MPI_SUM, dup) == MPI_SUCCESS, "%sMPI_Allreduce on the duplicate", c->label);
    MPI_Comm_free(&dup);
    for (int k = 3; k >= 0; k--) MPI_Wait(&requests[k], MPI_STATUS_IGNORE);
    if (c->group == 1) CHECK(token == 4242, "%sibcast in flight gave %d", c->label, token);
    for (int i = 0; i < N; i++) CHECK(out[i] == remote_sum(c, i), "%siallreduce in flight [%d] = %d", c->label, i, out[i]);
    int remote_ranks = 0;
    for (int j = 0; j < c->remote_size; j++) {
        CHECK(all[j] == c->remote_world[j], "%siallgather in flight [%d] = %d", c->label, j, all[j]);
        remote_ranks += c->remote_world[j];
    }
    CHECK(dup_sum == remote_ranks, "%sallreduce on the duplicate gave %d, expected %d", c->label, dup_sum, remote_ranks);
    CHECK(world_sum == size * (size - 1) / 2, "iallreduce on MPI_COMM_WORLD in flight gave %d", world_sum);
}

static void errors(const struct inter *c)
{
    int in = rank, out = -1, r = c->remote_size;
    MPI_Request req;
    CHECK(class_of(MPI_Scan(&in, &out, 1, MPI_INT, MPI_SUM, c->comm)) == MPI_ERR_COMM, "%sMPI_Scan on an intercommunicator", c->label);
    CHECK(class_of(MPI_Iscan(&in, &out, 1, MPI_INT, MPI_SUM, c->comm, &req)) == MPI_ERR_COMM, "%sMPI_Iscan on an intercommunicator", c->label);
    CHECK(class_of(MPI_Bcast(&in, 1, MPI_INT, r, c->comm)) == MPI_ERR_ROOT, "%sMPI_Bcast with root = remote size", c->label);
    CHECK(class_of(MPI_Bcast(&in, 1, MPI_INT, -7, c->comm)) == MPI_ERR_ROOT, "%sMPI_Bcast with root -7", c->label);
    CHECK(class_of(MPI_Ibcast(&in, 1, MPI_INT, r, c->comm, &req)) == MPI_ERR_ROOT, "%sMPI_Ibcast with root = remote size", c->label);
    CHECK(class_of(MPI_Reduce(&in, &out, 1, MPI_INT, MPI_SUM, r + 3, c->comm)) == MPI_ERR_ROOT, "%sMPI_Reduce with a bad root", c->label);
    CHECK(class_of(MPI_Gather(&in, 1, MPI_INT, &out, 1, MPI_INT, -5, c->comm)) == MPI_ERR_ROOT, "%sMPI_Gather with root -5", c->label);
#ifdef TEST_BRAID_ONLY
    CHECK(class_of(MPI_Exscan(&in, &out, 1, MPI_INT, MPI_SUM, c->comm)) == MPI_ERR_COMM, "%sMPI_Exscan on an intercommunicator", c->label);
    CHECK(class_of(MPI_Neighbor_allgather(&in, 1, MPI_INT, &out, 1, MPI_INT, c->comm)) == MPI_ERR_COMM, "%sMPI_Neighbor_allgather on an intercommunicator", c->label);
    CHECK(class_of(MPI_Allreduce(MPI_IN_PLACE, &out, 1, MPI_INT, MPI_SUM, c->comm)) == MPI_ERR_BUFFER, "%sMPI_Allreduce in place", c->label);
    CHECK(class_of(MPI_Iallgather(MPI_IN_PLACE, 1, MPI_INT, &out, 1, MPI_INT, c->comm, &req)) == MPI_ERR_BUFFER, "%sMPI_Iallgather in place", c->label);
    /* The errors took no collective's turn: the next collective still matches. */
    CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, c->comm) == MPI_SUCCESS, "%sMPI_Allreduce after the errors", c->label);
#endif
}

static void run(struct inter *c)
{
    for (int nb = 0; nb < 2; nb++) {
        const char *name = c->label;
        char label[64];
        snprintf(label, sizeof label, "%s%s", name, nb ? "non-blocking: " : "blocking: ");
        c->label = label;
        barrier(c, nb);
        bcast(c, nb);
        reduce(c, nb);
        allreduce(c, nb);
        gather(c, nb);
        scatter(c, nb);
        allgather(c, nb);
        alltoall(c, nb);
        reduce_scatter(c, nb);
        large(c, nb);
        c->label = name;
    }
    overlapping(c);
    errors(c);
    MPI_Comm_free(&c->comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    require_ranks(2, "intercomm_coll");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= MAX_RANKS, "intercomm_coll sizes its arrays for at most %d ranks, got %d", MAX_RANKS, size);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &matrix_type);
    MPI_Type_commit(&matrix_type);
    MPI_Op_create(multiply, 0, &matrix_product);

    struct inter even_odd = make("even/odd ", rank % 2, 1);
    run(&even_odd);
    struct inter lopsided = make("0/rest ", rank == 0 ? 0 : 1, 1);
    run(&lopsided);

    MPI_Op_free(&matrix_product);
    MPI_Type_free(&matrix_type);
    report_ok("intercomm_coll");
    MPI_Finalize();
    return 0;
}
