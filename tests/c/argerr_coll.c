/* Argument errors of the collectives, each in its blocking and non-blocking form (and the
 * neighbourhood collectives): a null communicator, a negative count, a null or uncommitted
 * datatype, a root out of range, a null operation or one the datatype does not admit, negative
 * counts in the v-forms, an intercommunicator where MPI defines the call on intracommunicators
 * alone, a communicator without topology for the neighbourhood forms, and a NULL request
 * pointer. Every rank makes the same mistake, so no rank waits for another; the library still
 * works afterwards. Runs on any number of ranks (the intercommunicator part on 2 or more). */
#include <string.h>
#include "check.h"

static int rank, size;
static MPI_Datatype uncommitted;
static int *counts, *displs, *bad_counts;
static MPI_Datatype *types, *null_types;
static int sendbuf[64], recvbuf[64];

/* The blocking form, then the non-blocking one: the same arguments, the communicator, and the
 * request; either class will do. A non-blocking call that fails sets no request. */
#define EXPECT_COLLECTIVE_EITHER(expected, alternative, blocking, nonblocking, comm, ...)                   \
    do {                                                                                               \
        MPI_Request request_ = MPI_REQUEST_NULL;                                                       \
        expect_either_class(blocking(__VA_ARGS__, comm), expected, alternative, #blocking "(" #__VA_ARGS__ ", " #comm ")"); \
        expect_either_class(nonblocking(__VA_ARGS__, comm, &request_), expected, alternative,             \
                            #nonblocking "(" #__VA_ARGS__ ", " #comm ")");                                 \
        CHECK(request_ == MPI_REQUEST_NULL, "%s failed but set a request", #nonblocking);                \
    } while (0)
#define EXPECT_COLLECTIVE(expected, ...) EXPECT_COLLECTIVE_EITHER(expected, expected, __VA_ARGS__)

/* Errors every collective shares: the communicator, the counts and the datatypes. */
static void common_errors(void)
{
    int *s = sendbuf, *r = recvbuf;
    MPI_Comm null = MPI_COMM_NULL, world = MPI_COMM_WORLD;
    expect_class(MPI_Barrier(null), MPI_ERR_COMM, "MPI_Barrier(MPI_COMM_NULL)");
    MPI_Request request = MPI_REQUEST_NULL;
    expect_class(MPI_Ibarrier(null, &request), MPI_ERR_COMM, "MPI_Ibarrier(MPI_COMM_NULL)");

    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Bcast, MPI_Ibcast, null, s, 1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Bcast, MPI_Ibcast, world, s, -1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Bcast, MPI_Ibcast, world, s, 1, MPI_DATATYPE_NULL, 0);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Bcast, MPI_Ibcast, world, s, 1, uncommitted, 0);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Bcast, MPI_Ibcast, world, s, 1, MPI_INT, size);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Bcast, MPI_Ibcast, world, s, 1, MPI_INT, -2);

    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Gather, MPI_Igather, null, s, 1, MPI_INT, r, 1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Gather, MPI_Igather, world, s, -1, MPI_INT, r, 1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Gather, MPI_Igather, world, s, 1, MPI_DATATYPE_NULL, r, 1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Gather, MPI_Igather, world, s, 1, MPI_INT, r, 1, MPI_INT, size);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Gatherv, MPI_Igatherv, null, s, 1, MPI_INT, r, counts, displs, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Gatherv, MPI_Igatherv, world, s, -1, MPI_INT, r, counts, displs, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Gatherv, MPI_Igatherv, world, s, 1, uncommitted, r, counts, displs, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Gatherv, MPI_Igatherv, world, s, 1, MPI_INT, r, counts, displs, MPI_INT, -1);

    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Scatter, MPI_Iscatter, null, s, 1, MPI_INT, r, 1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Scatter, MPI_Iscatter, world, s, 1, MPI_INT, r, -1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Scatter, MPI_Iscatter, world, s, 1, MPI_INT, r, 1, MPI_DATATYPE_NULL, 0);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Scatter, MPI_Iscatter, world, s, 1, MPI_INT, r, 1, MPI_INT, size + 5);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Scatterv, MPI_Iscatterv, null, s, counts, displs, MPI_INT, r, 1, MPI_INT, 0);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Scatterv, MPI_Iscatterv, world, s, counts, displs, MPI_INT, r, -1, MPI_INT, 0);
#ifdef TEST_BRAID_ONLY
    /* MPICH agrees; Open MPI 4.1 does not check that MPI_Scatterv's receive type is committed (it crashes). */
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Scatterv, MPI_Iscatterv, world, s, counts, displs, MPI_INT, r, 1, uncommitted, 0);
#endif
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Scatterv, MPI_Iscatterv, world, s, counts, displs, MPI_INT, r, 1, MPI_INT, size);

#ifdef TEST_BRAID_ONLY
    /* MPICH agrees; Open MPI 4.1 crashes in MPI_Allgather and MPI_Iallgather on MPI_COMM_NULL. */
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Allgather, MPI_Iallgather, null, s, 1, MPI_INT, r, 1, MPI_INT);
#endif
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Allgather, MPI_Iallgather, world, s, -1, MPI_INT, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Allgather, MPI_Iallgather, world, s, 1, MPI_INT, r, -1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Allgather, MPI_Iallgather, world, s, 1, MPI_DATATYPE_NULL, r, 1, MPI_INT);
#ifdef TEST_BRAID_ONLY
    /* MPICH agrees; Open MPI 4.1 does not check that MPI_Allgather's receive type is committed (it crashes). */
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Allgather, MPI_Iallgather, world, s, 1, MPI_INT, r, 1, uncommitted);
#endif
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Allgatherv, MPI_Iallgatherv, null, s, 1, MPI_INT, r, counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Allgatherv, MPI_Iallgatherv, world, s, -1, MPI_INT, r, counts, displs, MPI_INT);
#ifdef TEST_BRAID_ONLY
    /* MPICH agrees; Open MPI 4.1 does not check MPI_Allgatherv's receive counts (it crashes). */
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Allgatherv, MPI_Iallgatherv, world, s, 1, MPI_INT, r, bad_counts, displs, MPI_INT);
#endif
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Allgatherv, MPI_Iallgatherv, world, s, 1, MPI_INT, r, counts, displs, MPI_DATATYPE_NULL);

    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Alltoall, MPI_Ialltoall, null, s, 1, MPI_INT, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Alltoall, MPI_Ialltoall, world, s, -1, MPI_INT, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Alltoall, MPI_Ialltoall, world, s, 1, uncommitted, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Alltoallv, MPI_Ialltoallv, null, s, counts, displs, MPI_INT, r, counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Alltoallv, MPI_Ialltoallv, world, s, bad_counts, displs, MPI_INT, r, counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Alltoallv, MPI_Ialltoallv, world, s, counts, displs, MPI_INT, r, bad_counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Alltoallv, MPI_Ialltoallv, world, s, counts, displs, MPI_DATATYPE_NULL, r, counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Alltoallw, MPI_Ialltoallw, null, s, counts, displs, types, r, counts, displs, types);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Alltoallw, MPI_Ialltoallw, world, s, bad_counts, displs, types, r, counts, displs, types);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Alltoallw, MPI_Ialltoallw, world, s, counts, displs, types, r, counts, displs, null_types);
}

/* The reductions: the operation must exist and admit the datatype (MPI 3.1 section 5.9.2). */
static void reduction_errors(void)
{
    /* A null or uncommitted datatype: Braid and Open MPI say MPI_ERR_TYPE; MPICH first asks
     * whether the operation admits the datatype and says MPI_ERR_OP. Both describe the mistake. */
    int *s = sendbuf, *r = recvbuf;
    MPI_Comm null = MPI_COMM_NULL, world = MPI_COMM_WORLD;
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Reduce, MPI_Ireduce, null, s, r, 1, MPI_INT, MPI_SUM, 0);
    EXPECT_COLLECTIVE_EITHER(MPI_ERR_TYPE, MPI_ERR_OP, MPI_Reduce, MPI_Ireduce, world, s, r, 1, MPI_DATATYPE_NULL, MPI_SUM, 0);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Reduce, MPI_Ireduce, world, s, r, 1, MPI_INT, MPI_OP_NULL, 0);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Reduce, MPI_Ireduce, world, s, r, 1, MPI_INT, MPI_SUM, size);

    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Allreduce, MPI_Iallreduce, null, s, r, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE_EITHER(MPI_ERR_TYPE, MPI_ERR_OP, MPI_Allreduce, MPI_Iallreduce, world, s, r, 1, uncommitted, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Allreduce, MPI_Iallreduce, world, s, r, 1, MPI_INT, MPI_OP_NULL);
    /* Operations the datatype does not admit: sums of bytes, bitwise ands of floats, MPI_MAXLOC
     * of plain integers, logical ors of doubles. */
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Allreduce, MPI_Iallreduce, world, s, r, 1, MPI_FLOAT, MPI_BAND);
#ifdef TEST_BRAID_ONLY
    /* MPICH agrees; Open MPI 4.1 sums bytes (MPI 3.1 admits only the bitwise operations). */
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Allreduce, MPI_Iallreduce, world, s, r, 1, MPI_BYTE, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, world, s, r, 1, MPI_BYTE, MPI_PROD);
    /* Open MPI agrees; MPICH 4.0 lets MPI_LOR through on a double (it asserts on 2 ranks). */
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Allreduce, MPI_Iallreduce, world, s, r, 1, MPI_DOUBLE, MPI_LOR);
#endif
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Allreduce, MPI_Iallreduce, world, s, r, 1, MPI_INT, MPI_MAXLOC);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Reduce, MPI_Ireduce, world, s, r, 1, MPI_2INT, MPI_SUM, 0);

    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Reduce_scatter, MPI_Ireduce_scatter, null, s, r, counts, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Reduce_scatter, MPI_Ireduce_scatter, world, s, r, bad_counts, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE_EITHER(MPI_ERR_TYPE, MPI_ERR_OP, MPI_Reduce_scatter, MPI_Ireduce_scatter, world, s, r, counts, MPI_DATATYPE_NULL, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Reduce_scatter, MPI_Ireduce_scatter, world, s, r, counts, MPI_INT, MPI_OP_NULL);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, null, s, r, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE_EITHER(MPI_ERR_TYPE, MPI_ERR_OP, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, world, s, r, 1, uncommitted, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, world, s, r, 1, MPI_FLOAT, MPI_BOR);

    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Scan, MPI_Iscan, null, s, r, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE_EITHER(MPI_ERR_TYPE, MPI_ERR_OP, MPI_Scan, MPI_Iscan, world, s, r, 1, MPI_DATATYPE_NULL, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Scan, MPI_Iscan, world, s, r, 1, MPI_INT, MPI_OP_NULL);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Exscan, MPI_Iexscan, null, s, r, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE_EITHER(MPI_ERR_TYPE, MPI_ERR_OP, MPI_Exscan, MPI_Iexscan, world, s, r, 1, uncommitted, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_OP, MPI_Exscan, MPI_Iexscan, world, s, r, 1, MPI_FLOAT, MPI_BXOR);

    /* MPI_Reduce_local has no communicator: its errors go to MPI_COMM_WORLD's handler. */
    EXPECT_EITHER_CLASS(MPI_Reduce_local(s, r, 1, MPI_DATATYPE_NULL, MPI_SUM), MPI_ERR_TYPE, MPI_ERR_OP);
    EXPECT_EITHER_CLASS(MPI_Reduce_local(s, r, 1, uncommitted, MPI_SUM), MPI_ERR_TYPE, MPI_ERR_OP);
    EXPECT_CLASS(MPI_Reduce_local(s, r, 1, MPI_INT, MPI_OP_NULL), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Reduce_local(s, r, 1, MPI_DOUBLE, MPI_BOR), MPI_ERR_OP);
#ifdef TEST_BRAID_ONLY
    /* A negative count: Open MPI agrees; MPICH 4.0 checks it only in MPI_Reduce_scatter (the
     * others copy -4 bytes and crash, MPI_Iscan says MPI_ERR_OTHER). */
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Allreduce, MPI_Iallreduce, world, s, r, -1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, world, s, r, -1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Scan, MPI_Iscan, world, s, r, -1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Exscan, MPI_Iexscan, world, s, r, -1, MPI_INT, MPI_SUM);
    EXPECT_CLASS(MPI_Reduce_local(s, r, -1, MPI_INT, MPI_SUM), MPI_ERR_COUNT);
#endif
}

/* Send and receive buffers that overlap (other than by MPI_IN_PLACE) are erroneous; MPICH
 * reports MPI_ERR_BUFFER. Open MPI 4.1 does not check (it reduces into the aliased buffer). */
static void aliasing(void)
{
#ifdef TEST_BRAID_ONLY
    int *b = sendbuf;
    MPI_Comm world = MPI_COMM_WORLD;
    EXPECT_COLLECTIVE(MPI_ERR_BUFFER, MPI_Allreduce, MPI_Iallreduce, world, b, b, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_BUFFER, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, world, b, b, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_BUFFER, MPI_Scan, MPI_Iscan, world, b, b, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_BUFFER, MPI_Exscan, MPI_Iexscan, world, b, b, 1, MPI_INT, MPI_SUM);
    EXPECT_COLLECTIVE(MPI_ERR_BUFFER, MPI_Allgather, MPI_Iallgather, world, b, 1, MPI_INT, b, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_BUFFER, MPI_Alltoall, MPI_Ialltoall, world, b, 1, MPI_INT, b, 1, MPI_INT);
#endif
}

/* NULL where the request goes: MPICH says MPI_ERR_ARG; Open MPI 4.1 writes through it (it crashes). */
static void null_requests(void)
{
#ifdef TEST_BRAID_ONLY
    int *s = sendbuf, *r = recvbuf;
    expect_class(MPI_Ibarrier(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Ibarrier with a NULL request");
    expect_class(MPI_Ibcast(s, 1, MPI_INT, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Ibcast with a NULL request");
    expect_class(MPI_Iallreduce(s, r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
                        "MPI_Iallreduce with a NULL request");
    expect_class(MPI_Ialltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
                        "MPI_Ialltoallv with a NULL request");
#endif
}

/* MPI defines MPI_Scan, MPI_Exscan and the neighbourhood collectives on intracommunicators alone. */
static void intercommunicator_errors(void)
{
    if (size < 2)
        return;
    MPI_Comm half, inter;
    int color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 77, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int *s = sendbuf, *r = recvbuf;
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Scan, MPI_Iscan, inter, s, r, 1, MPI_INT, MPI_SUM);
#ifdef TEST_BRAID_ONLY
    /* MPICH agrees; Open MPI 4.1 crashes in MPI_Exscan on an intercommunicator. */
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Exscan, MPI_Iexscan, inter, s, r, 1, MPI_INT, MPI_SUM);
    /* MPICH 4.0 asserts ("Only intra-communicator allowed") and Open MPI 4.1 says
     * MPI_ERR_TOPOLOGY (an intercommunicator has no topology) or crashes. */
    MPI_Request request = MPI_REQUEST_NULL;
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, inter, s, 1, MPI_INT, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Neighbor_allgather, MPI_Ineighbor_allgather, inter, s, 1, MPI_INT, r, 1, MPI_INT);
#endif
    /* A root on an intercommunicator is MPI_ROOT, MPI_PROC_NULL or a rank of the remote group. */
    int remote;
    MPI_Comm_remote_size(inter, &remote);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Bcast, MPI_Ibcast, inter, s, 1, MPI_INT, remote);
    EXPECT_COLLECTIVE(MPI_ERR_ROOT, MPI_Reduce, MPI_Ireduce, inter, s, r, 1, MPI_INT, MPI_SUM, -7);
    /* The intercommunicator still works: a broadcast from the remote group's rank 0. */
    int value = 500 + color;
    if (color == 0)
        MPI_Bcast(&value, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    else
        MPI_Bcast(&value, 1, MPI_INT, 0, inter);
    CHECK(color == 0 || value == 500, "MPI_Bcast on the intercommunicator after the errors gave %d", value);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

/* The neighbourhood collectives need a topology; their counts and datatypes are checked too. */
static void neighborhood_errors(void)
{
    int *s = sendbuf, *r = recvbuf;
    MPI_Comm world = MPI_COMM_WORLD, null = MPI_COMM_NULL, ring;
    int periodic = 1;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &periodic, 0, &ring);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    MPI_Aint byte_displs[64] = {0};
#ifdef TEST_BRAID_ONLY
    /* Open MPI agrees on these two; MPICH 4.0 returns MPI_ERR_TOPOLOGY from MPI_Neighbor_alltoall
     * but is left broken (a later valid neighbourhood collective crashes now and then), and
     * crashes in MPI_Ineighbor_alltoall without a topology on 1 rank. */
    EXPECT_CLASS(MPI_Neighbor_alltoall(s, 1, MPI_INT, r, 1, MPI_INT, world), MPI_ERR_TOPOLOGY);
    MPI_Request request = MPI_REQUEST_NULL;
    EXPECT_CLASS(MPI_Ineighbor_alltoall(s, 1, MPI_INT, r, 1, MPI_INT, world, &request), MPI_ERR_TOPOLOGY);
    /* No topology: MPICH 4.0 says MPI_ERR_TOPOLOGY for MPI_Neighbor_allgather, MPI_ERR_COUNT or
     * MPI_ERR_TYPE for the v and w forms (it reads the counts of a topology that is not there) and
     * crashes in MPI_Neighbor_allgatherv on 1 rank; Open MPI 4.1 says MPI_ERR_INTERN,
     * MPI_ERR_ARG or MPI_ERR_COMM for some. Both crash in MPI_Neighbor_allgather on MPI_COMM_NULL. */
    EXPECT_COLLECTIVE(MPI_ERR_TOPOLOGY, MPI_Neighbor_allgather, MPI_Ineighbor_allgather, world, s, 1, MPI_INT, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TOPOLOGY, MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv, world, s, 1, MPI_INT, r, counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TOPOLOGY, MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, world, s, counts, displs, MPI_INT, r, counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TOPOLOGY, MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, world, s, counts, byte_displs, types, r, counts, byte_displs, types);
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Neighbor_allgather, MPI_Ineighbor_allgather, null, s, 1, MPI_INT, r, 1, MPI_INT);
    /* With a topology: MPICH 4.0 crashes in MPI_Neighbor_alltoallw on MPI_COMM_NULL and checks
     * few counts; Open MPI 4.1 does not check MPI_Ineighbor_allgatherv's counts. */
    EXPECT_COLLECTIVE(MPI_ERR_COMM, MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, null, s, counts, byte_displs, types, r, counts, byte_displs, types);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Neighbor_allgather, MPI_Ineighbor_allgather, ring, s, -1, MPI_INT, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Neighbor_allgather, MPI_Ineighbor_allgather, ring, s, 1, MPI_INT, r, 1, MPI_DATATYPE_NULL);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv, ring, s, 1, MPI_INT, r, bad_counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, ring, s, 1, uncommitted, r, 1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, ring, s, 1, MPI_INT, r, -1, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_COUNT, MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, ring, s, bad_counts, displs, MPI_INT, r, counts, displs, MPI_INT);
    EXPECT_COLLECTIVE(MPI_ERR_TYPE, MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, ring, s, counts, byte_displs, null_types, r, counts, byte_displs, types);
#endif
    /* The ring still works: each rank gets both neighbours' ranks. */
    int mine = rank, got[2] = {-1, -1};
    EXPECT_CLASS(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, ring), MPI_SUCCESS);
    CHECK(got[0] == (rank + size - 1) % size && got[1] == (rank + 1) % size, "MPI_Neighbor_allgather after the errors gave %d %d", got[0], got[1]);
    MPI_Comm_free(&ring);
}

static void still_works(void)
{
    int value = rank + 1, total = 0;
    EXPECT_CLASS(MPI_Allreduce(&value, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(total == size * (size + 1) / 2, "MPI_Allreduce after the errors gave %d", total);
    MPI_Request request;
    int root_value = rank == 0 ? 42 : 0;
    EXPECT_CLASS(MPI_Ibcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD, &request), MPI_SUCCESS);
    EXPECT_CLASS(MPI_Wait(&request, MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(root_value == 42, "MPI_Ibcast after the errors gave %d", root_value);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_vector(2, 1, 2, MPI_INT, &uncommitted);
    /* Room for every rank, and for the two neighbours of a ring of 1 rank. */
    int entries = size < 2 ? 2 : size;
    counts = calloc(entries, sizeof *counts);
    displs = calloc(entries, sizeof *displs);
    bad_counts = calloc(entries, sizeof *bad_counts);
    types = calloc(entries, sizeof *types);
    null_types = calloc(entries, sizeof *null_types);
    for (int i = 0; i < entries; i++) {
        counts[i] = 1;
        displs[i] = i;
        bad_counts[i] = i == 0 ? 1 : -1;
        types[i] = MPI_INT;
        null_types[i] = MPI_DATATYPE_NULL;
    }
    if (size == 1)
        bad_counts[0] = -1;

    common_errors();
    reduction_errors();
    aliasing();
    null_requests();
    intercommunicator_errors();
    neighborhood_errors();
    still_works();

    free(counts);
    free(displs);
    free(bad_counts);
    free(types);
    free(null_types);
    MPI_Type_free(&uncommitted);
    report_ok("argerr_coll");
    MPI_Finalize();
    return 0;
}
