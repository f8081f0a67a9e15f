/* Topology constructors with reorder: the process that gets rank v in the new communicator plays
 * vertex v of the declared graph, whatever the library chose, and exchanges along vertex v's
 * edges give the same results as without reordering.
 *
 * Usage: graph_reorder [adjacent|general|graph|cart [REORDER [BYTES [ITERATIONS]]]]
 * The graph: vertex v exchanges BYTES (default 65536) with its partner (for 8 vertices the pairs
 * 0-3 1-6 2-5 4-7, which blocked and round-robin placement on nodes of 2 both split; otherwise
 * v and n-1-v) with weight 100, and 64 bytes with v+1 around a ring with weight 1. `cart` builds a
 * periodic 1-D grid instead (the ring alone). Rank 0 prints
 * `graph_reorder: KIND reorder R: M of N processes renumbered`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define LIGHT 64

static int size;

static int partner(int v)
{
    static const int eight[] = {3, 6, 5, 0, 7, 2, 1, 4};
    return size == 8 ? eight[v] : size - 1 - v;
}

/* Vertex v's out-edges (destinations) and in-edges (sources), with weights; the graph is
 * symmetric, so both lists are alike. Returns the count. */
static int edges_of(int v, int *peers, int *weights)
{
    int count = 0;
    if (partner(v) != v) {
        peers[count] = partner(v);
        weights[count++] = 100;
    }
    int next = (v + 1) % size, previous = (v + size - 1) % size;
    if (size > 1 && next != partner(v)) {
        peers[count] = next;
        weights[count++] = 1;
    }
    if (size > 2 && previous != partner(v) && previous != next) {
        peers[count] = previous;
        weights[count++] = 1;
    }
    return count;
}

static int value(int from, int to, long index)
{
    return from * 1000003 + to * 101 + (int)(index % 97);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *kind = argc > 1 ? argv[1] : "adjacent";
    int reorder = argc > 2 ? atoi(argv[2]) : 1;
    long bytes = argc > 3 ? atol(argv[3]) : 65536;
    int iterations = argc > 4 ? atoi(argv[4]) : 3;

    int peers[3], weights[3];
    int degree = edges_of(rank, peers, weights);
    MPI_Comm graph;
    if (strcmp(kind, "adjacent") == 0) {
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, degree, peers, weights, degree, peers, weights, MPI_INFO_NULL, reorder, &graph);
    } else if (strcmp(kind, "general") == 0) {
        /* Each process names the edges out of the vertex after it: any process may name any edge. */
        int named = (rank + 1) % size, named_peers[3], named_weights[3];
        int named_degree = edges_of(named, named_peers, named_weights);
        MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &named, &named_degree, named_peers, named_weights, MPI_INFO_NULL, reorder, &graph);
    } else if (strcmp(kind, "graph") == 0) {
        int *index = malloc(sizeof(int) * (size_t)size), *all = malloc(sizeof(int) * (size_t)size * 3), total = 0;
        for (int v = 0; v < size; v++) {
            int w[3];
            total += edges_of(v, all + total, w);
            index[v] = total;
        }
        MPI_Graph_create(MPI_COMM_WORLD, size, index, all, reorder, &graph);
        free(index);
        free(all);
    } else {
        int dims[1] = {size}, periods[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, reorder, &graph);
    }
    int v;
    MPI_Comm_rank(graph, &v);
    int renumbered = v != rank, moved = 0;
    MPI_Reduce(&renumbered, &moved, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);

    /* The neighbours the communicator reports are vertex v's. */
    int expected[3], expected_weights[3], sources[3], destinations[3], count = 0;
    if (strcmp(kind, "cart") == 0) {
        int below, above;
        MPI_Cart_shift(graph, 0, 1, &below, &above);
        CHECK(below == (v + size - 1) % size && above == (v + 1) % size, "vertex %d: shift gives %d and %d", v, below, above);
        count = 2;
        sources[0] = destinations[0] = below;
        sources[1] = destinations[1] = above;
    } else {
        int expected_count = edges_of(v, expected, expected_weights);
        if (strcmp(kind, "graph") == 0) {
            MPI_Graph_neighbors_count(graph, v, &count);
            CHECK(count == expected_count, "vertex %d: %d neighbours, expected %d", v, count, expected_count);
            MPI_Graph_neighbors(graph, v, 3, sources);
            memcpy(destinations, sources, sizeof sources);
        } else {
            int indegree, outdegree, weighted, sw[3], dw[3];
            MPI_Dist_graph_neighbors_count(graph, &indegree, &outdegree, &weighted);
            CHECK(indegree == expected_count && outdegree == expected_count && weighted, "vertex %d: degrees %d %d", v, indegree, outdegree);
            /* MPICH 4.0 copies the weights of an empty list from NULL: ask only when there are some. */
            if (expected_count > 0)
                MPI_Dist_graph_neighbors(graph, 3, sources, sw, 3, destinations, dw);
            count = expected_count;
        }
        for (int i = 0; i < count; i++) {
            int in = 0, out = 0;
            for (int j = 0; j < count; j++) {
                in |= sources[j] == expected[i];
                out |= destinations[j] == expected[i];
            }
            CHECK(in && out, "vertex %d: neighbour %d missing", v, expected[i]);
        }
    }

    /* Exchange along the edges: BYTES with the partner, LIGHT bytes with the others. */
    int *send_counts = calloc(3, sizeof(int)), *recv_counts = calloc(3, sizeof(int)), *sdispls = calloc(3, sizeof(int)), *rdispls = calloc(3, sizeof(int));
    long send_total = 0, recv_total = 0;
    for (int i = 0; i < count; i++) {
        send_counts[i] = (int)((destinations[i] == partner(v) && strcmp(kind, "cart") != 0 ? bytes : LIGHT) / (long)sizeof(int));
        recv_counts[i] = (int)((sources[i] == partner(v) && strcmp(kind, "cart") != 0 ? bytes : LIGHT) / (long)sizeof(int));
        sdispls[i] = (int)send_total;
        rdispls[i] = (int)recv_total;
        send_total += send_counts[i];
        recv_total += recv_counts[i];
    }
    int *out = malloc(sizeof(int) * (size_t)(send_total + 1)), *in = malloc(sizeof(int) * (size_t)(recv_total + 1));
    for (int iteration = 0; iteration < iterations; iteration++) {
        for (int i = 0; i < count; i++)
            for (int k = 0; k < send_counts[i]; k++)
                out[sdispls[i] + k] = value(v, destinations[i], k + iteration);
        MPI_Neighbor_alltoallv(out, send_counts, sdispls, MPI_INT, in, recv_counts, rdispls, MPI_INT, graph);
        for (int i = 0; i < count; i++)
            for (int k = 0; k < recv_counts[i]; k++)
                CHECK(in[rdispls[i] + k] == value(sources[i], v, k + iteration), "vertex %d: element %d from %d", v, k, sources[i]);
    }
    if (rank == 0)
        printf("graph_reorder: %s reorder %d: %d of %d processes renumbered\n", kind, reorder, moved, size);
    free(out);
    free(in);
    free(send_counts);
    free(recv_counts);
    free(sdispls);
    free(rdispls);
    MPI_Comm_free(&graph);
    MPI_Finalize();
    return 0;
}
