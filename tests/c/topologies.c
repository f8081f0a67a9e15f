/* Process topologies beyond the Cartesian basics of comms.c: MPI_Dims_create's balance, Cart_map,
 * graphs (create, queries, map), distributed graphs (adjacent and general creation, weights,
 * MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY), Topo_test of every kind, topologies kept by MPI_Comm_dup,
 * traffic on the new communicators, and argument errors under MPI_ERRORS_RETURN. Checks where
 * MPICH and Open MPI disagree (Open MPI's 12x6 for 72 nodes in 2-D, error classes one of them does
 * not raise) are Braid-only. Runs on any number of ranks. */
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int rank, size;

static void expect_failure(int code, const char *call)
{
    CHECK(code != MPI_SUCCESS, "%s succeeded", call);
}

static int compare_ints(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static void check_dims(int nnodes, int ndims, const int *expected)
{
    int dims[8] = {0};
    int rc = MPI_Dims_create(nnodes, ndims, dims);
    CHECK(rc == MPI_SUCCESS, "MPI_Dims_create(%d, %d) returned %d", nnodes, ndims, rc);
    for (int i = 0; i < ndims; i++)
        CHECK(dims[i] == expected[i], "MPI_Dims_create(%d, %d): dims[%d] = %d, expected %d", nnodes, ndims, i, dims[i], expected[i]);
}

static void dims_create(void)
{
    /* Answers MPICH and Open MPI agree on. */
    check_dims(24, 3, (int[]){4, 3, 2});
    check_dims(1000, 3, (int[]){10, 10, 10});
    check_dims(12, 4, (int[]){3, 2, 2, 1});
    check_dims(12, 2, (int[]){4, 3});
    check_dims(36, 2, (int[]){6, 6});
    check_dims(60, 3, (int[]){5, 4, 3});
    check_dims(64, 3, (int[]){4, 4, 4});
    check_dims(97, 2, (int[]){97, 1});
    check_dims(2, 5, (int[]){2, 1, 1, 1, 1});
    check_dims(4096, 3, (int[]){16, 16, 16});
    check_dims(65536, 5, (int[]){16, 8, 8, 8, 8});
    check_dims(100000, 6, (int[]){10, 10, 8, 5, 5, 5});
    check_dims(1, 3, (int[]){1, 1, 1});
#if defined(TEST_BRAID_ONLY) || defined(MPICH_VERSION)
    /* The most balanced answers (Open MPI's greedy assignment gives 12x6, 18x10 and 42x30x26x22). */
    check_dims(72, 2, (int[]){9, 8});
    check_dims(180, 2, (int[]){15, 12});
    check_dims(720720, 4, (int[]){33, 30, 28, 26});
#endif
    int fixed[3] = {0, 3, 0};
    MPI_Dims_create(12, 3, fixed);
    CHECK(fixed[0] == 2 && fixed[1] == 3 && fixed[2] == 2, "MPI_Dims_create(12, {0,3,0}) = %d %d %d", fixed[0], fixed[1], fixed[2]);
    int all_fixed[2] = {2, 3};
    expect_class(MPI_Dims_create(6, 2, all_fixed), MPI_SUCCESS, "MPI_Dims_create(6, {2,3})");
    CHECK(all_fixed[0] == 2 && all_fixed[1] == 3, "MPI_Dims_create changed fixed dims");
    int none = 0;
    expect_class(MPI_Dims_create(1, 0, &none), MPI_SUCCESS, "MPI_Dims_create(1, 0)");

    int not_divisible[2] = {0, 5};
    expect_class(MPI_Dims_create(12, 2, not_divisible), MPI_ERR_DIMS, "MPI_Dims_create(12, {0,5})");
    int negative[2] = {-2, 0};
    expect_class(MPI_Dims_create(4, 2, negative), MPI_ERR_DIMS, "MPI_Dims_create(4, {-2,0})");
    int dims[2] = {0, 0};
    expect_failure(MPI_Dims_create(4, -1, dims), "MPI_Dims_create with ndims -1");
    expect_failure(MPI_Dims_create(-4, 2, dims), "MPI_Dims_create with nnodes -4");
#ifdef TEST_BRAID_ONLY
    int wrong_product[2] = {2, 2};
    expect_class(MPI_Dims_create(6, 2, wrong_product), MPI_ERR_DIMS, "MPI_Dims_create(6, {2,2})");
    expect_class(MPI_Dims_create(4, -1, dims), MPI_ERR_DIMS, "MPI_Dims_create with ndims -1");
    expect_class(MPI_Dims_create(-4, 2, dims), MPI_ERR_ARG, "MPI_Dims_create with nnodes -4");
    expect_class(MPI_Dims_create(4, 0, dims), MPI_ERR_DIMS, "MPI_Dims_create(4, 0)");
#endif
}

static void cart_map(void)
{
    int newrank = -5;
    int dims[1] = {size}, periods[1] = {0};
    expect_class(MPI_Cart_map(MPI_COMM_WORLD, 1, dims, periods, &newrank), MPI_SUCCESS, "MPI_Cart_map(size)");
    CHECK(newrank == rank, "MPI_Cart_map over all ranks gave %d", newrank);
#if defined(TEST_BRAID_ONLY) || defined(MPICH_VERSION)
    /* Open MPI 4.1 gives every rank a place in a grid smaller than the communicator. */
    int one[2] = {1, 1}, two_periods[2] = {1, 0};
    MPI_Cart_map(MPI_COMM_WORLD, 2, one, two_periods, &newrank);
    CHECK(newrank == (rank == 0 ? 0 : MPI_UNDEFINED), "MPI_Cart_map 1x1 gave %d", newrank);
#endif
#ifdef TEST_BRAID_ONLY
    int too_big[2] = {size, 2}, zero[1] = {0};
    expect_class(MPI_Cart_map(MPI_COMM_WORLD, -1, too_big, two_periods, &newrank), MPI_ERR_ARG, "MPI_Cart_map with ndims -1");
    expect_class(MPI_Cart_map(MPI_COMM_WORLD, 2, too_big, two_periods, &newrank), MPI_ERR_DIMS, "MPI_Cart_map larger than the communicator");
    expect_class(MPI_Cart_map(MPI_COMM_WORLD, 1, zero, periods, &newrank), MPI_ERR_DIMS, "MPI_Cart_map with a dimension of 0");
#endif
}

/* A ring as a graph: node i's neighbours are i-1 and i+1 (modulo nnodes). */
static void ring_graph(int nnodes, int *index, int *edges)
{
    for (int node = 0; node < nnodes; node++) {
        index[node] = 2 * (node + 1);
        edges[2 * node] = (node + nnodes - 1) % nnodes;
        edges[2 * node + 1] = (node + 1) % nnodes;
    }
}

static void check_graph_queries(MPI_Comm graph, int nnodes, const int *index, const int *edges, const char *what)
{
    int kind, got_nodes, got_edges;
    MPI_Topo_test(graph, &kind);
    CHECK(kind == MPI_GRAPH, "%s: MPI_Topo_test gave %d", what, kind);
    MPI_Graphdims_get(graph, &got_nodes, &got_edges);
    CHECK(got_nodes == nnodes && got_edges == index[nnodes - 1], "%s: MPI_Graphdims_get gave %d nodes %d edges", what, got_nodes, got_edges);
    int *got_index = malloc(sizeof(int) * nnodes), *got_edge_list = malloc(sizeof(int) * (index[nnodes - 1] + 1));
    MPI_Graph_get(graph, nnodes, index[nnodes - 1], got_index, got_edge_list);
    CHECK(memcmp(got_index, index, sizeof(int) * nnodes) == 0, "%s: MPI_Graph_get index differs", what);
    CHECK(memcmp(got_edge_list, edges, sizeof(int) * index[nnodes - 1]) == 0, "%s: MPI_Graph_get edges differ", what);
    for (int node = 0; node < nnodes; node++) {
        int count, neighbors[16], start = node == 0 ? 0 : index[node - 1];
        MPI_Graph_neighbors_count(graph, node, &count);
        CHECK(count == index[node] - start && count <= 16, "%s: node %d has %d neighbours", what, node, count);
        MPI_Graph_neighbors(graph, node, 16, neighbors);
        for (int i = 0; i < count; i++)
            CHECK(neighbors[i] == edges[start + i], "%s: neighbour %d of node %d is %d, expected %d", what, i, node, neighbors[i], edges[start + i]);
    }
    free(got_index);
    free(got_edge_list);
}

static void graphs(void)
{
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size);
    ring_graph(size, index, edges);
    MPI_Comm graph;
    expect_class(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph), MPI_SUCCESS, "MPI_Graph_create(ring)");
    check_graph_queries(graph, size, index, edges, "ring graph");

    /* Traffic: every rank sends its rank to both neighbours and receives theirs. */
    int got[2] = {-1, -1}, graph_rank;
    MPI_Comm_rank(graph, &graph_rank);
    CHECK(graph_rank == rank, "reorder = 0 kept rank %d as %d", rank, graph_rank);
    MPI_Request requests[4];
    MPI_Irecv(&got[0], 1, MPI_INT, edges[2 * rank], 0, graph, &requests[0]);
    MPI_Irecv(&got[1], 1, MPI_INT, edges[2 * rank + 1], 1, graph, &requests[1]);
    MPI_Isend(&rank, 1, MPI_INT, edges[2 * rank], 1, graph, &requests[2]);
    MPI_Isend(&rank, 1, MPI_INT, edges[2 * rank + 1], 0, graph, &requests[3]);
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    CHECK(got[0] == edges[2 * rank] && got[1] == edges[2 * rank + 1], "ring graph traffic gave %d %d", got[0], got[1]);

    /* A duplicate keeps the topology. */
    MPI_Comm copy;
    MPI_Comm_dup(graph, &copy);
    check_graph_queries(copy, size, index, edges, "duplicate of the ring graph");
    MPI_Comm_free(&copy);

    /* Errors on the graph. */
    int count;
    expect_class(MPI_Graph_neighbors_count(graph, size + 2, &count), MPI_ERR_RANK, "MPI_Graph_neighbors_count of rank size + 2");
    int neighbors[2];
    expect_class(MPI_Graph_neighbors(graph, -1, 2, neighbors), MPI_ERR_RANK, "MPI_Graph_neighbors of rank -1");
    int ndims;
    expect_class(MPI_Cartdim_get(graph, &ndims), MPI_ERR_TOPOLOGY, "MPI_Cartdim_get on a graph");
    int indegree, outdegree, weighted;
    expect_class(MPI_Dist_graph_neighbors_count(graph, &indegree, &outdegree, &weighted), MPI_ERR_TOPOLOGY, "MPI_Dist_graph_neighbors_count on a graph");
#ifdef TEST_BRAID_ONLY
    expect_class(MPI_Graph_neighbors_count(graph, size, &count), MPI_ERR_RANK, "MPI_Graph_neighbors_count of rank size");
    int short_index[1], short_edges[1];
    expect_class(MPI_Graph_get(graph, 0, 0, short_index, short_edges), MPI_ERR_ARG, "MPI_Graph_get with maxindex 0");
#endif
    MPI_Comm_free(&graph);

    /* A graph smaller than the communicator: the last rank is left out. */
    if (size > 1) {
        int small_index[4], small_edges[8];
        ring_graph(size - 1, small_index, small_edges);
        MPI_Graph_create(MPI_COMM_WORLD, size - 1, small_index, small_edges, 0, &graph);
        if (rank == size - 1) {
            CHECK(graph == MPI_COMM_NULL, "the rank outside the graph got a communicator");
        } else {
            check_graph_queries(graph, size - 1, small_index, small_edges, "smaller ring graph");
            MPI_Comm_free(&graph);
        }
    }
    /* An empty graph gives MPI_COMM_NULL everywhere. */
    MPI_Graph_create(MPI_COMM_WORLD, 0, index, edges, 0, &graph);
    CHECK(graph == MPI_COMM_NULL, "an empty graph gave a communicator");

    /* A star with a self-loop and a repeated edge at node 0: 0 -> {0, 1, ..., 1}. */
    int star_index[4], star_edges[16], star_nodes = size;
    star_edges[0] = 0;
    for (int node = 1; node < star_nodes; node++)
        star_edges[node] = node;
    star_edges[star_nodes] = star_nodes > 1 ? 1 : 0;
    star_index[0] = star_nodes + 1;
    for (int node = 1; node < star_nodes; node++) {
        star_index[node] = star_index[node - 1] + 1;
        star_edges[star_index[node] - 1] = 0;
    }
    MPI_Graph_create(MPI_COMM_WORLD, star_nodes, star_index, star_edges, 0, &graph);
    check_graph_queries(graph, star_nodes, star_index, star_edges, "star graph");
    MPI_Comm_free(&graph);

    int newrank;
    MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &newrank);
    CHECK(newrank == rank, "MPI_Graph_map over all ranks gave %d", newrank);
#if defined(TEST_BRAID_ONLY) || defined(MPICH_VERSION)
    /* Open MPI 4.1 gives every rank a node of a graph smaller than the communicator. */
    MPI_Graph_map(MPI_COMM_WORLD, 1, index, edges, &newrank);
    CHECK(newrank == (rank == 0 ? 0 : MPI_UNDEFINED), "MPI_Graph_map of one node gave %d", newrank);
#endif

    int nnodes, nedges;
    expect_class(MPI_Graphdims_get(MPI_COMM_WORLD, &nnodes, &nedges), MPI_ERR_TOPOLOGY, "MPI_Graphdims_get on MPI_COMM_WORLD");
    expect_class(MPI_Graph_create(MPI_COMM_WORLD, size + 1, index, edges, 0, &graph), MPI_ERR_ARG, "MPI_Graph_create with nnodes > size");
#ifdef TEST_BRAID_ONLY
    expect_class(MPI_Graph_create(MPI_COMM_WORLD, -1, index, edges, 0, &graph), MPI_ERR_ARG, "MPI_Graph_create with nnodes -1");
    int bad_edges[2] = {size, 0};
    expect_class(MPI_Graph_create(MPI_COMM_WORLD, 1, (int[]){1}, bad_edges, 0, &graph), MPI_ERR_ARG, "MPI_Graph_create with an edge to no node");
    expect_class(MPI_Graph_map(MPI_COMM_WORLD, size + 1, index, edges, &newrank), MPI_ERR_ARG, "MPI_Graph_map with nnodes > size");
#endif
    free(index);
    free(edges);
}

static void check_dist_neighbors(MPI_Comm comm, int indegree, const int *sources, const int *sourceweights, int outdegree,
                                 const int *destinations, const int *destweights, int sorted, const char *what)
{
    int kind, got_in, got_out, weighted;
    MPI_Topo_test(comm, &kind);
    CHECK(kind == MPI_DIST_GRAPH, "%s: MPI_Topo_test gave %d", what, kind);
    MPI_Dist_graph_neighbors_count(comm, &got_in, &got_out, &weighted);
    CHECK(got_in == indegree && got_out == outdegree, "%s: degrees %d %d, expected %d %d", what, got_in, got_out, indegree, outdegree);
    CHECK(weighted == (sourceweights != MPI_UNWEIGHTED), "%s: weighted is %d", what, weighted);
    int in[8], in_weights[8], out[8], out_weights[8];
    MPI_Dist_graph_neighbors(comm, indegree, in, weighted ? in_weights : MPI_UNWEIGHTED, outdegree, out, weighted ? out_weights : MPI_UNWEIGHTED);
    if (sorted) {
        /* MPI_Dist_graph_create leaves the order open: compare (rank, weight) pairs sorted. */
        int pairs_in[16], pairs_out[16], expected_in[16], expected_out[16];
        for (int i = 0; i < indegree; i++) {
            pairs_in[i] = in[i] * 1000 + (weighted ? in_weights[i] : 0);
            expected_in[i] = sources[i] * 1000 + (weighted ? sourceweights[i] : 0);
        }
        for (int i = 0; i < outdegree; i++) {
            pairs_out[i] = out[i] * 1000 + (weighted ? out_weights[i] : 0);
            expected_out[i] = destinations[i] * 1000 + (weighted ? destweights[i] : 0);
        }
        qsort(pairs_in, indegree, sizeof(int), compare_ints);
        qsort(expected_in, indegree, sizeof(int), compare_ints);
        qsort(pairs_out, outdegree, sizeof(int), compare_ints);
        qsort(expected_out, outdegree, sizeof(int), compare_ints);
        CHECK(memcmp(pairs_in, expected_in, sizeof(int) * indegree) == 0, "%s: the in-edges differ", what);
        CHECK(memcmp(pairs_out, expected_out, sizeof(int) * outdegree) == 0, "%s: the out-edges differ", what);
        return;
    }
    for (int i = 0; i < indegree; i++) {
        CHECK(in[i] == sources[i], "%s: source %d is %d, expected %d", what, i, in[i], sources[i]);
        CHECK(!weighted || in_weights[i] == sourceweights[i], "%s: source weight %d is %d", what, i, in_weights[i]);
    }
    for (int i = 0; i < outdegree; i++) {
        CHECK(out[i] == destinations[i], "%s: destination %d is %d, expected %d", what, i, out[i], destinations[i]);
        CHECK(!weighted || out_weights[i] == destweights[i], "%s: destination weight %d is %d", what, i, out_weights[i]);
    }
}

/* Sends this rank to every destination and checks that every source's rank arrives. */
static void dist_graph_traffic(MPI_Comm comm, int indegree, const int *sources, int outdegree, const int *destinations, const char *what)
{
    MPI_Request requests[16];
    int got[8];
    for (int i = 0; i < indegree; i++)
        MPI_Irecv(&got[i], 1, MPI_INT, sources[i], 7, comm, &requests[i]);
    for (int i = 0; i < outdegree; i++)
        MPI_Isend(&rank, 1, MPI_INT, destinations[i], 7, comm, &requests[indegree + i]);
    MPI_Waitall(indegree + outdegree, requests, MPI_STATUSES_IGNORE);
    int expected[8];
    memcpy(expected, sources, sizeof(int) * indegree);
    qsort(got, indegree, sizeof(int), compare_ints);
    qsort(expected, indegree, sizeof(int), compare_ints);
    CHECK(memcmp(got, expected, sizeof(int) * indegree) == 0, "%s: traffic from the sources differs", what);
}

static void dist_graphs_adjacent(void)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int sources[1] = {left}, destinations[1] = {right}, sourceweights[1] = {10 + left}, destweights[1] = {10 + rank};
    MPI_Comm ring;
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, sourceweights, 1, destinations, destweights, MPI_INFO_NULL, 0, &ring),
                 MPI_SUCCESS, "MPI_Dist_graph_create_adjacent(weighted ring)");
    check_dist_neighbors(ring, 1, sources, sourceweights, 1, destinations, destweights, 0, "weighted ring");
    dist_graph_traffic(ring, 1, sources, 1, destinations, "weighted ring");
    MPI_Comm copy;
    MPI_Comm_dup(ring, &copy);
    check_dist_neighbors(copy, 1, sources, sourceweights, 1, destinations, destweights, 0, "duplicate of the weighted ring");
    MPI_Comm_free(&copy);
    int dims;
    expect_class(MPI_Cartdim_get(ring, &dims), MPI_ERR_TOPOLOGY, "MPI_Cartdim_get on a distributed graph");
    MPI_Comm_free(&ring);

    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, MPI_UNWEIGHTED, 1, destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    check_dist_neighbors(ring, 1, sources, MPI_UNWEIGHTED, 1, destinations, MPI_UNWEIGHTED, 0, "unweighted ring");
    MPI_Comm_free(&ring);

    /* A weighted star into rank 0: empty sides use MPI_WEIGHTS_EMPTY. */
    int others[4], weights[4];
    for (int i = 1; i < size; i++) {
        others[i - 1] = i;
        weights[i - 1] = i;
    }
    int to_root[1] = {0}, my_weight[1] = {rank};
    MPI_Comm star;
    if (rank == 0)
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, size - 1, others, weights, 0, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &star);
    else
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 1, to_root, my_weight, MPI_INFO_NULL, 0, &star);
    if (rank == 0)
        check_dist_neighbors(star, size - 1, others, weights, 0, NULL, weights, 0, "star root");
    else
        check_dist_neighbors(star, 0, NULL, weights, 1, to_root, my_weight, 0, "star leaf");
    MPI_Comm_free(&star);

    /* MPI_PROC_NULL neighbours are accepted. */
    int nobody[1] = {MPI_PROC_NULL};
    MPI_Comm lonely;
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, nobody, MPI_UNWEIGHTED, 1, nobody, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &lonely),
                 MPI_SUCCESS, "MPI_Dist_graph_create_adjacent with MPI_PROC_NULL");
    check_dist_neighbors(lonely, 1, nobody, MPI_UNWEIGHTED, 1, nobody, MPI_UNWEIGHTED, 0, "MPI_PROC_NULL neighbours");
    MPI_Comm_free(&lonely);

    MPI_Comm bad;
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, sources, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad), MPI_ERR_ARG,
                 "MPI_Dist_graph_create_adjacent with indegree -1");
#ifdef TEST_BRAID_ONLY
    int beyond[1] = {size};
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, beyond, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad), MPI_ERR_RANK,
                 "MPI_Dist_graph_create_adjacent with source size");
    int negative[1] = {-1};
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, negative, 0, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &bad), MPI_ERR_ARG,
                 "MPI_Dist_graph_create_adjacent with a negative weight");
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, MPI_UNWEIGHTED, 1, destinations, destweights, MPI_INFO_NULL, 0, &bad),
                 MPI_ERR_ARG, "MPI_Dist_graph_create_adjacent with MPI_UNWEIGHTED on one side only");
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, MPI_WEIGHTS_EMPTY, 0, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &bad),
                 MPI_ERR_ARG, "MPI_Dist_graph_create_adjacent with MPI_WEIGHTS_EMPTY for one weight");
#endif
}

static void dist_graphs_general(void)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm ring;

    /* Rank 0 names every edge of a weighted ring: i -> i+1 of weight 100 + i. */
    int sources[4], degrees[4], destinations[4], weights[4];
    for (int i = 0; i < size; i++) {
        sources[i] = i;
        degrees[i] = 1;
        destinations[i] = (i + 1) % size;
        weights[i] = 100 + i;
    }
    int n = rank == 0 ? size : 0;
    expect_class(MPI_Dist_graph_create(MPI_COMM_WORLD, n, sources, degrees, destinations, weights, MPI_INFO_NULL, 0, &ring), MPI_SUCCESS,
                 "MPI_Dist_graph_create(ring named by rank 0)");
    int expected_in[1] = {left}, expected_in_weight[1] = {100 + left}, expected_out[1] = {right}, expected_out_weight[1] = {100 + rank};
    check_dist_neighbors(ring, 1, expected_in, expected_in_weight, 1, expected_out, expected_out_weight, 1, "ring named by rank 0");
    dist_graph_traffic(ring, 1, expected_in, 1, expected_out, "ring named by rank 0");
    MPI_Comm copy;
    MPI_Comm_dup(ring, &copy);
    check_dist_neighbors(copy, 1, expected_in, expected_in_weight, 1, expected_out, expected_out_weight, 1, "duplicate of the ring named by rank 0");
    MPI_Comm_free(&copy);
    MPI_Comm_free(&ring);

    /* Every rank names its edge into rank 0, and its edges out to every other rank (unweighted). */
    int mine_sources[2] = {rank, rank}, mine_degrees[2] = {1, size - 1}, mine_destinations[8];
    mine_destinations[0] = 0;
    for (int i = 0, other = 0; other < size; other++)
        if (other != rank)
            mine_destinations[1 + i++] = other;
    MPI_Comm mesh;
    MPI_Dist_graph_create(MPI_COMM_WORLD, 2, mine_sources, mine_degrees, mine_destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &mesh);
    int in[8], in_count = 0, out[8], out_count = 0;
    for (int other = 0; other < size; other++) {
        if (rank == 0)
            in[in_count++] = other;
        if (other != rank) {
            in[in_count++] = other;
            out[out_count++] = other;
        }
    }
    out[out_count++] = 0;
    check_dist_neighbors(mesh, in_count, in, MPI_UNWEIGHTED, out_count, out, MPI_UNWEIGHTED, 1, "mesh named by the sources");
    dist_graph_traffic(mesh, in_count, in, out_count, out, "mesh named by the sources");
    MPI_Comm_free(&mesh);

    /* No edges at all, weighted. */
    MPI_Comm empty;
    MPI_Dist_graph_create(MPI_COMM_WORLD, 0, NULL, NULL, NULL, MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &empty);
    check_dist_neighbors(empty, 0, NULL, weights, 0, NULL, weights, 0, "graph without edges");
    MPI_Comm_free(&empty);

    MPI_Comm bad;
    expect_class(MPI_Dist_graph_create(MPI_COMM_WORLD, -1, sources, degrees, destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad), MPI_ERR_ARG,
                 "MPI_Dist_graph_create with n -1");
#ifdef TEST_BRAID_ONLY
    int beyond[1] = {size}, one[1] = {1}, minus_one[1] = {-1};
    expect_class(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, sources, one, beyond, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad), MPI_ERR_RANK,
                 "MPI_Dist_graph_create with destination size");
    expect_class(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, sources, minus_one, destinations, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &bad), MPI_ERR_ARG,
                 "MPI_Dist_graph_create with degree -1");
    expect_class(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, sources, one, destinations, minus_one, MPI_INFO_NULL, 0, &bad), MPI_ERR_ARG,
                 "MPI_Dist_graph_create with weight -1");
#endif
    int indegree, outdegree, weighted;
    expect_class(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &indegree, &outdegree, &weighted), MPI_ERR_TOPOLOGY,
                 "MPI_Dist_graph_neighbors_count on MPI_COMM_WORLD");
}

static void topo_test_of_every_kind(void)
{
    int kind;
    MPI_Topo_test(MPI_COMM_WORLD, &kind);
    CHECK(kind == MPI_UNDEFINED, "MPI_Topo_test(MPI_COMM_WORLD) gave %d", kind);
    MPI_Comm cart, copy;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Comm_dup(cart, &copy);
    MPI_Topo_test(copy, &kind);
    CHECK(kind == MPI_CART, "MPI_Topo_test of a duplicated Cartesian communicator gave %d", kind);
    int got_dims[1], got_periods[1], coords[1];
    MPI_Cart_get(copy, 1, got_dims, got_periods, coords);
    CHECK(got_dims[0] == size && got_periods[0] == 1 && coords[0] == rank, "MPI_Cart_get on the duplicate disagrees");
    MPI_Comm_free(&copy);
    /* A split does not keep the topology. */
    MPI_Comm split;
    MPI_Comm_split(cart, 0, rank, &split);
    MPI_Topo_test(split, &kind);
    CHECK(kind == MPI_UNDEFINED, "MPI_Topo_test of a split of a Cartesian communicator gave %d", kind);
    MPI_Comm_free(&split);
    MPI_Comm_free(&cart);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(size <= 4, "this test is written for at most 4 ranks, got %d", size);
    dims_create();
    cart_map();
    graphs();
    dist_graphs_adjacent();
    dist_graphs_general();
    topo_test_of_every_kind();
    report_ok("topologies");
    MPI_Finalize();
    return 0;
}
