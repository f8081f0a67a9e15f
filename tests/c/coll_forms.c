/* Collectives whose forms change with the size: small ones pass through a node's shared slots,
 * larger ones as messages. Each collective runs at sizes on both sides of the switch, many times
 * in a row with changing roots (so that the slots are reused call after call), allgatherv with
 * uneven blocks, a non-commutative operation (which must be applied in rank order), a derived
 * datatype on some ranks and a contiguous one on others (the same type signature: bcast,
 * allgather, gather, scatter), beside
 * non-blocking collectives in flight on the same communicator, and (argument `mixed`) with the
 * ranks at different thread levels. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

/* An affine map x -> a x + b (mod 1000003), composed: not commutative, associative. */
typedef struct {
    long a, b;
} affine;

#define MODULUS 1000003L

static affine compose(affine outer, affine inner)
{
    affine r = {(outer.a * inner.a) % MODULUS, (outer.a * inner.b + outer.b) % MODULUS};
    return r;
}

/* inout = in op inout, where op applies inout first, then in: (in o inout). MPI's result for
 * ranks 0..n-1 is x0 op x1 op ... op x(n-1). */
static void compose_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    affine *x = in, *y = inout;
    for (int i = 0; i < *len; i++)
        y[i] = compose(x[i], y[i]);
}

static affine element(int who, int i, int call)
{
    affine e = {2 + (who * 7 + i + call) % 13, (who * 31 + i * 3 + call) % 101};
    return e;
}

static affine fold(int from, int to, int i, int call)
{
    affine acc = element(to - 1, i, call);
    for (int r = to - 2; r >= from; r--)
        acc = compose(element(r, i, call), acc);
    return acc;
}

static MPI_Datatype affine_type;
static MPI_Op compose_affine_op;

static void check_affine(const affine *got, int from, int to, int count, int call, const char *what)
{
    for (int i = 0; i < count; i++) {
        affine want = fold(from, to, i, call);
        if (got[i].a != want.a || got[i].b != want.b) {
            fprintf(stderr, "rank %d: %s call %d count %d element %d: (%ld,%ld) not (%ld,%ld)\n", rank, what, call, count, i, got[i].a, got[i].b, want.a, want.b);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* Counts of 16-byte elements: 1 element, a few hundred bytes, just under and over 16 KiB per
 * rank, and 64 KiB. */
static const int counts[] = {1, 20, 1000, 1030, 4096};
#define COUNTS (int)(sizeof counts / sizeof counts[0])

static void noncommutative_reductions(void)
{
    for (int c = 0; c < COUNTS; c++) {
        int count = counts[c];
        affine *send = malloc(sizeof(affine) * count * size), *recv = malloc(sizeof(affine) * count * size);
        for (int call = 0; call < 6; call++) {
            for (int i = 0; i < count; i++)
                send[i] = element(rank, i, call);
            MPI_Allreduce(send, recv, count, affine_type, compose_affine_op, MPI_COMM_WORLD);
            check_affine(recv, 0, size, count, call, "allreduce");
            int root = (call * 5 + c) % size;
            MPI_Reduce(send, recv, count, affine_type, compose_affine_op, root, MPI_COMM_WORLD);
            if (rank == root)
                check_affine(recv, 0, size, count, call, "reduce");
            MPI_Scan(send, recv, count, affine_type, compose_affine_op, MPI_COMM_WORLD);
            check_affine(recv, 0, rank + 1, count, call, "scan");
            MPI_Exscan(send, recv, count, affine_type, compose_affine_op, MPI_COMM_WORLD);
            if (rank > 0)
                check_affine(recv, 0, rank, count, call, "exscan");
            /* In place: the input is the receive buffer. */
            for (int i = 0; i < count; i++)
                recv[i] = element(rank, i, call);
            MPI_Allreduce(MPI_IN_PLACE, recv, count, affine_type, compose_affine_op, MPI_COMM_WORLD);
            check_affine(recv, 0, size, count, call, "allreduce in place");
            /* Reduce_scatter_block: each rank's block of the full vector. */
            for (int r = 0; r < size; r++)
                for (int i = 0; i < count; i++)
                    send[r * count + i] = element(rank, r * count + i, call);
            MPI_Reduce_scatter_block(send, recv, count, affine_type, compose_affine_op, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++) {
                affine want = fold(0, size, rank * count + i, call);
                CHECK(recv[i].a == want.a && recv[i].b == want.b, "reduce_scatter_block element %d of %d", i, count);
            }
        }
        free(send);
        free(recv);
    }
}

static int value(int owner, int to, int i, int call) { return owner * 100000 + to * 1000 + i * 3 + call; }

/* Ints per rank: under and over the 16 KiB slot, and the alltoall's n blocks both ways. */
static const int int_counts[] = {1, 2, 250, 4000, 4200, 16384};
#define INT_COUNTS (int)(sizeof int_counts / sizeof int_counts[0])

static void data_movement(void)
{
    for (int c = 0; c < INT_COUNTS; c++) {
        int count = int_counts[c];
        int *mine = malloc(sizeof(int) * count * size), *all = malloc(sizeof(int) * count * size);
        /* Odd ranks see their buffer through a vector type: every other int of twice the space. */
        int *spread = malloc(sizeof(int) * 2 * count);
        MPI_Datatype every_other;
        MPI_Type_vector(count, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        for (int call = 0; call < 5; call++) {
            int root = (call + c) % size;
            /* Bcast: the root's contiguous ints, received contiguous or spread. */
            for (int i = 0; i < count; i++) {
                mine[i] = rank == root ? value(root, 0, i, call) : -1;
                spread[2 * i] = rank == root ? value(root, 0, i, call) : -1;
            }
            if (rank % 2)
                MPI_Bcast(spread, 1, every_other, root, MPI_COMM_WORLD);
            else
                MPI_Bcast(mine, count, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                CHECK((rank % 2 ? spread[2 * i] : mine[i]) == value(root, 0, i, call), "bcast count %d call %d element %d", count, call, i);
            /* Allgather. */
            for (int i = 0; i < count; i++)
                mine[i] = value(rank, 0, i, call);
            MPI_Allgather(mine, count, MPI_INT, all, count, MPI_INT, MPI_COMM_WORLD);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < count; i++)
                    CHECK(all[r * count + i] == value(r, 0, i, call), "allgather count %d from %d", count, r);
            /* Allgatherv: rank r gives count / (r + 1) ints, blocks in reverse rank order with a
             * gap of one int between them; in place on odd calls. */
            {
                int *counts_v = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size), total = 0;
                for (int r = size - 1; r >= 0; r--) {
                    counts_v[r] = count / (r + 1);
                    displs[r] = total;
                    total += counts_v[r] + 1;
                }
                int *spread_all = malloc(sizeof(int) * (total + 1));
                for (int i = 0; i < total; i++)
                    spread_all[i] = -1;
                for (int i = 0; i < counts_v[rank]; i++) {
                    mine[i] = value(rank, 1, i, call);
                    if (call % 2)
                        spread_all[displs[rank] + i] = mine[i];
                }
                MPI_Allgatherv(call % 2 ? MPI_IN_PLACE : mine, counts_v[rank], MPI_INT, spread_all, counts_v, displs, MPI_INT, MPI_COMM_WORLD);
                for (int r = 0; r < size; r++) {
                    for (int i = 0; i < counts_v[r]; i++)
                        CHECK(spread_all[displs[r] + i] == value(r, 1, i, call), "allgatherv count %d from %d element %d", counts_v[r], r, i);
                    CHECK(spread_all[displs[r] + counts_v[r]] == -1, "allgatherv wrote past block %d", r);
                }
                free(spread_all);
                free(displs);
                free(counts_v);
            }
            /* Gather and scatter at the root, in place and not. */
            for (int i = 0; i < count; i++)
                mine[i] = value(rank, 0, i, call);
            memset(all, 0xff, sizeof(int) * count * size);
            if (rank == root && call % 2)
                memcpy(all + root * count, mine, sizeof(int) * count);
            MPI_Gather(rank == root && call % 2 ? MPI_IN_PLACE : mine, count, MPI_INT, all, count, MPI_INT, root, MPI_COMM_WORLD);
            if (rank == root)
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < count; i++)
                        CHECK(all[r * count + i] == value(r, 0, i, call), "gather count %d from %d", count, r);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < count; i++)
                    all[r * count + i] = value(root, r, i, call);
            for (int i = 0; i < count; i++)
                mine[i] = -1;
            if (rank == root && call % 2)
                MPI_Scatter(all, count, MPI_INT, MPI_IN_PLACE, count, MPI_INT, root, MPI_COMM_WORLD);
            else {
                MPI_Scatter(all, count, MPI_INT, mine, count, MPI_INT, root, MPI_COMM_WORLD);
                for (int i = 0; i < count; i++)
                    CHECK(mine[i] == value(root, rank, i, call), "scatter count %d element %d", count, i);
            }
            /* Alltoall: block d of rank s goes to rank d. The whole vector is count ints, so the
             * blocks are count / size ints. */
            int block = count / size;
            if (block > 0) {
                for (int d = 0; d < size; d++)
                    for (int i = 0; i < block; i++)
                        mine[d * block + i] = value(rank, d, i, call);
                MPI_Alltoall(mine, block, MPI_INT, all, block, MPI_INT, MPI_COMM_WORLD);
                for (int s = 0; s < size; s++)
                    for (int i = 0; i < block; i++)
                        CHECK(all[s * block + i] == value(s, rank, i, call), "alltoall block %d from %d", block, s);
            }
            /* The same signature, other layouts: odd ranks send or receive through the vector
             * type (so some ranks may take a direct path and others the general one). */
            for (int i = 0; i < count; i++) {
                mine[i] = value(rank, 2, i, call);
                spread[2 * i] = value(rank, 2, i, call);
            }
            MPI_Allgather(rank % 2 ? (void *)spread : (void *)mine, rank % 2 ? 1 : count, rank % 2 ? every_other : MPI_INT, all, count, MPI_INT, MPI_COMM_WORLD);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < count; i++)
                    CHECK(all[r * count + i] == value(r, 2, i, call), "allgather from a vector type, count %d from %d", count, r);
            memset(all, 0xff, sizeof(int) * count * size);
            MPI_Gather(rank % 2 ? (void *)spread : (void *)mine, rank % 2 ? 1 : count, rank % 2 ? every_other : MPI_INT, all, count, MPI_INT, root, MPI_COMM_WORLD);
            if (rank == root)
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < count; i++)
                        CHECK(all[r * count + i] == value(r, 2, i, call), "gather from a vector type, count %d from %d", count, r);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < count; i++)
                    all[r * count + i] = value(root, r + 3, i, call);
            for (int i = 0; i < count; i++)
                spread[2 * i] = mine[i] = -1;
            MPI_Scatter(all, count, MPI_INT, rank % 2 ? (void *)spread : (void *)mine, rank % 2 ? 1 : count, rank % 2 ? every_other : MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                CHECK((rank % 2 ? spread[2 * i] : mine[i]) == value(root, rank + 3, i, call), "scatter into a vector type, count %d element %d", count, i);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        MPI_Type_free(&every_other);
        free(spread);
        free(mine);
        free(all);
    }
}

/* Blocking collectives while a non-blocking one is in flight on the same communicator. */
static void beside_nonblocking(void)
{
    for (int call = 0; call < 20; call++) {
        int early = rank + call, total = -1, sum = -1;
        MPI_Request request;
        MPI_Iallreduce(&early, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request);
        int mine = rank * call;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == call * size * (size - 1) / 2, "allreduce beside iallreduce: %d", sum);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        CHECK(total == size * (size - 1) / 2 + size * call, "iallreduce: %d", total);
    }
}

/* A communicator of half the ranks: its slots are its own. */
static void on_a_split(void)
{
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int half_rank, half_size;
    MPI_Comm_rank(half, &half_rank);
    MPI_Comm_size(half, &half_size);
    for (int call = 0; call < 10; call++) {
        int mine = half_rank + call, sum = -1, world = -1;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, half);
        MPI_Allreduce(&mine, &world, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(sum == half_size * (half_size - 1) / 2 + half_size * call, "split allreduce: %d", sum);
    }
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    /* `mixed`: odd ranks (by the launcher's PMI_RANK) ask for MPI_THREAD_MULTIPLE, even ones
     * for the default level: every rank must still take the same form of each collective. */
    if (argc > 1 && strcmp(argv[1], "mixed") == 0) {
        const char *launcher_rank = getenv("PMI_RANK");
        if (!launcher_rank) {
            fprintf(stderr, "coll_forms mixed: the launcher sets no PMI_RANK\n");
            return 1;
        }
        int provided;
        MPI_Init_thread(&argc, &argv, atoi(launcher_rank) % 2 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_contiguous(2, MPI_LONG, &affine_type);
    MPI_Type_commit(&affine_type);
    MPI_Op_create(compose_op, 0, &compose_affine_op);
    noncommutative_reductions();
    data_movement();
    beside_nonblocking();
    on_a_split();
    MPI_Op_free(&compose_affine_op);
    MPI_Type_free(&affine_type);
    if (rank == 0)
        printf("coll_forms: %d ranks passed\n", size);
    MPI_Finalize();
    return 0;
}
