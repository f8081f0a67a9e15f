/* Neighbourhood collectives, blocking and non-blocking: on a non-periodic 1-D Cartesian grid
 * (MPI_PROC_NULL at the ends), a periodic one (3 ranks or more, where every neighbour is
 * distinct) and a distributed-graph ring with one extra edge. */
#include <string.h>

#include "check.h"

static int rank, size;

static void check_cartesian(int periodic, int nonblocking)
{
    MPI_Comm cart;
    int dims[1], periods[1], left, right, i;
    int mine[2], got[4], sendv[4], counts[2] = {2, 2}, displs[2] = {0, 2};
    MPI_Request req;
    dims[0] = size;
    periods[0] = periodic;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Cart_shift(cart, 0, 1, &left, &right);

    mine[0] = rank * 10;
    mine[1] = rank * 10 + 1;
    for (i = 0; i < 4; i++) got[i] = -7;
    if (nonblocking) {
        MPI_Ineighbor_allgather(mine, 2, MPI_INT, got, 2, MPI_INT, cart, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Neighbor_allgather(mine, 2, MPI_INT, got, 2, MPI_INT, cart);
    }
    /* Block 0 comes from the -1 neighbour, block 1 from the +1 neighbour. */
    CHECK(left == MPI_PROC_NULL ? got[0] == -7 : got[0] == left * 10 && got[1] == left * 10 + 1, "allgather from left %d: %d %d", left, got[0], got[1]);
    CHECK(right == MPI_PROC_NULL ? got[2] == -7 : got[2] == right * 10 && got[3] == right * 10 + 1, "allgather from right %d: %d %d", right, got[2], got[3]);

    for (i = 0; i < 4; i++) got[i] = -7;
    if (nonblocking) {
        MPI_Ineighbor_allgatherv(mine, 2, MPI_INT, got, counts, displs, MPI_INT, cart, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Neighbor_allgatherv(mine, 2, MPI_INT, got, counts, displs, MPI_INT, cart);
    }
    CHECK(right == MPI_PROC_NULL || got[2] == right * 10, "allgatherv from right: %d", got[2]);

    /* Alltoall: block 0 goes to the -1 neighbour, block 1 to the +1 neighbour; the -1 neighbour's
     * block for me is its block 1 (I am its +1 neighbour). */
    sendv[0] = rank * 100 + 0;
    sendv[1] = rank * 100 + 1;
    for (i = 0; i < 4; i++) got[i] = -7;
    if (nonblocking) {
        MPI_Ineighbor_alltoall(sendv, 1, MPI_INT, got, 1, MPI_INT, cart, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Neighbor_alltoall(sendv, 1, MPI_INT, got, 1, MPI_INT, cart);
    }
    CHECK(left == MPI_PROC_NULL ? got[0] == -7 : got[0] == left * 100 + 1, "alltoall from left: %d", got[0]);
    CHECK(right == MPI_PROC_NULL ? got[1] == -7 : got[1] == right * 100 + 0, "alltoall from right: %d", got[1]);

    {
        int scounts[2] = {1, 1}, sdispls[2] = {1, 0}, rcounts[2] = {1, 1}, rdispls[2] = {1, 0};
        MPI_Aint sbytes[2] = {sizeof(int), 0}, rbytes[2] = {sizeof(int), 0};
        MPI_Datatype types[2] = {MPI_INT, MPI_INT};
        for (i = 0; i < 4; i++) got[i] = -7;
        /* Reversed layout: block for the -1 neighbour at index 1, and so on. */
        if (nonblocking) {
            MPI_Ineighbor_alltoallv(sendv, scounts, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT, cart, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Neighbor_alltoallv(sendv, scounts, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT, cart);
        }
        CHECK(left == MPI_PROC_NULL || got[1] == left * 100 + 0, "alltoallv from left: %d", got[1]);
        CHECK(right == MPI_PROC_NULL || got[0] == right * 100 + 1, "alltoallv from right: %d", got[0]);
        for (i = 0; i < 4; i++) got[i] = -7;
        if (nonblocking) {
            MPI_Ineighbor_alltoallw(sendv, scounts, sbytes, types, got, rcounts, rbytes, types, cart, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Neighbor_alltoallw(sendv, scounts, sbytes, types, got, rcounts, rbytes, types, cart);
        }
        CHECK(left == MPI_PROC_NULL || got[1] == left * 100 + 0, "alltoallw from left: %d", got[1]);
        CHECK(right == MPI_PROC_NULL || got[0] == right * 100 + 1, "alltoallw from right: %d", got[0]);
    }
    MPI_Comm_free(&cart);
}

static void check_dist_graph(void)
{
    MPI_Comm graph;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int sources[2], destinations[2], indegree = 1, outdegree = 1, got[2] = {-7, -7}, mine = rank + 1000;
    sources[0] = prev;
    destinations[0] = next;
    /* Rank 0 also sends to the last rank. */
    if (rank == 0 && size > 2) destinations[outdegree++] = size - 1;
    if (rank == size - 1 && size > 2) sources[indegree++] = 0;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indegree, sources, MPI_UNWEIGHTED, outdegree, destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, graph);
    CHECK(got[0] == prev + 1000, "graph allgather from %d: %d", prev, got[0]);
    if (indegree == 2) CHECK(got[1] == 1000, "graph allgather extra edge: %d", got[1]);
    MPI_Comm_free(&graph);
}

/* A periodic ring of 1 or 2 processes, where the same process is both neighbours: the block a
 * process sends toward +1 lands in its neighbour's block from -1, and the other way round (MPI
 * 4.0), blocking and not. Also a 1 x 2 periodic grid, where it holds per dimension. */
static void check_small_periodic_rings(int nonblocking)
{
    for (int members = 1; members <= 2 && members <= size; members++) {
        MPI_Comm part, ring;
        MPI_Comm_split(MPI_COMM_WORLD, rank < members ? 0 : MPI_UNDEFINED, rank, &part);
        if (part == MPI_COMM_NULL)
            continue;
        int dims[2] = {members, 1}, periods[2] = {1, 1};
        /* MPICH 4.0 pairs blocks across dimensions where the same process is a neighbour in
         * several of them (it receives dimension 1's +1 block from dimension 0's -1 neighbour on a
         * single process); it matches this ring in one dimension. */
#ifdef TEST_BRAID_ONLY
        const int most_dims = 2;
#else
        const int most_dims = 1;
#endif
        for (int ndims = 1; ndims <= most_dims; ndims++) {
            MPI_Cart_create(part, ndims, dims, periods, 0, &ring);
            int me, out[4], in[4] = {-1, -1, -1, -1};
            MPI_Comm_rank(ring, &me);
            for (int block = 0; block < 2 * ndims; block++)
                out[block] = 100 * me + block;
            if (nonblocking) {
                MPI_Request request;
                MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, ring, &request);
                MPI_Wait(&request, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, ring);
            }
            for (int d = 0; d < ndims; d++) {
                int below, above;
                MPI_Cart_shift(ring, d, 1, &below, &above);
                CHECK(in[2 * d] == 100 * below + 2 * d + 1 && in[2 * d + 1] == 100 * above + 2 * d,
                      "periodic ring of %d (%d dimension(s)), dimension %d: received %d from -1 and %d from +1, expected %d and %d", members, ndims, d, in[2 * d],
                      in[2 * d + 1], 100 * below + 2 * d + 1, 100 * above + 2 * d);
            }
            MPI_Comm_free(&ring);
        }
        MPI_Comm_free(&part);
    }
}

/* MPI_Neighbor_alltoallw with MPI_BOTTOM: the blocks are found by absolute addresses, given as
 * the displacements (MPI_Aint) or inside the datatypes (a struct on MPI_Get_address). */
static void check_alltoallw_bottom(void)
{
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int below, above, me;
    MPI_Comm_rank(ring, &me);
    MPI_Cart_shift(ring, 0, 1, &below, &above);
    for (int form = 0; form < 2; form++) {
        int out[2] = {1000 * me + 10, 1000 * me + 11}, in[2] = {-1, -1};
        int counts[2] = {1, 1};
        MPI_Aint sdispls[2], rdispls[2];
        MPI_Datatype stypes[2], rtypes[2];
        for (int i = 0; i < 2; i++) {
            MPI_Aint out_at, in_at;
            MPI_Get_address(&out[i], &out_at);
            MPI_Get_address(&in[i], &in_at);
            if (form == 0) {
                sdispls[i] = out_at, rdispls[i] = in_at;
                stypes[i] = rtypes[i] = MPI_INT;
            } else {
                int one = 1;
                MPI_Datatype ints = MPI_INT;
                sdispls[i] = rdispls[i] = 0;
                MPI_Type_create_struct(1, &one, &out_at, &ints, &stypes[i]);
                MPI_Type_create_struct(1, &one, &in_at, &ints, &rtypes[i]);
                MPI_Type_commit(&stypes[i]);
                MPI_Type_commit(&rtypes[i]);
            }
        }
        CHECK(MPI_Neighbor_alltoallw(MPI_BOTTOM, counts, sdispls, stypes, MPI_BOTTOM, counts, rdispls, rtypes, ring) == MPI_SUCCESS, "MPI_Neighbor_alltoallw on MPI_BOTTOM failed");
        /* Block 0 came from -1 (its block toward +1), block 1 from +1 (its block toward -1). */
        CHECK(in[0] == 1000 * below + 11 && in[1] == 1000 * above + 10, "MPI_Neighbor_alltoallw on MPI_BOTTOM (%s): received %d and %d", form ? "struct types" : "address displacements", in[0], in[1]);
        if (form == 1)
            for (int i = 0; i < 2; i++) {
                MPI_Type_free(&stypes[i]);
                MPI_Type_free(&rtypes[i]);
            }
    }
    MPI_Comm_free(&ring);
}

int main(int argc, char **argv)
{
    int x = 0, y = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_cartesian(0, 0);
    check_cartesian(0, 1);
    if (size >= 3) {
        check_cartesian(1, 0);
        check_cartesian(1, 1);
    }
    check_dist_graph();
    check_small_periodic_rings(0);
    check_small_periodic_rings(1);
    /* On rings of 1 or 2 processes MPICH 4.0's MPI_Neighbor_alltoallw swaps the blocks. */
#ifndef TEST_BRAID_ONLY
    if (size >= 3)
#endif
        check_alltoallw_bottom();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Open MPI 4.1 answers this with an unrelated class (MPI_ERR_IN_STATUS). */
#ifdef TEST_BRAID_ONLY
    {
        int code = MPI_Neighbor_allgather(&x, 1, MPI_INT, &y, 1, MPI_INT, MPI_COMM_WORLD), class = code;
        MPI_Error_class(code, &class);
        CHECK(class == MPI_ERR_TOPOLOGY, "neighbour collective without a topology: class %d", class);
    }
#else
    (void)x;
    (void)y;
#endif
    report_ok("neighbors");
    MPI_Finalize();
    return 0;
}
