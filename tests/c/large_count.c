/* MPI 4's large-count (_c) functions. Small counts through every kind (point-to-point in each
 * mode, persistent and matched receives, the buffered-send buffer, collectives blocking,
 * non-blocking and persistent, datatype constructors and queries, packing, local reductions,
 * one-sided operations, the file calls), then, with "big", one message of more than INT_MAX
 * bytes sent and broadcast, whose count MPI_Get_count can only call MPI_UNDEFINED. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

enum { N = 64 };

static int rank, size;

static void point_to_point(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[N], in[N];
    for (int i = 0; i < N; i++)
        out[i] = rank * 1000 + i;
    MPI_Status status;
    MPI_Count count = -1;

    MPI_Sendrecv_c(out, N, MPI_INT, right, 1, in, N, MPI_INT, left, 1, MPI_COMM_WORLD, &status);
    MPI_Get_count_c(&status, MPI_INT, &count);
    CHECK(count == N && in[N - 1] == left * 1000 + N - 1, "sendrecv_c: count %lld in %d", (long long)count, in[N - 1]);
    MPI_Get_elements_c(&status, MPI_INT, &count);
    CHECK(count == N, "get_elements_c %lld", (long long)count);

    MPI_Request requests[2];
    MPI_Irecv_c(in, N, MPI_INT, left, 2, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend_c(out, N, MPI_INT, right, 2, MPI_COMM_WORLD, &requests[1]);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    CHECK(in[3] == left * 1000 + 3, "isend_c/irecv_c %d", in[3]);

    if (size >= 2 && rank < 2) {
        int peer = 1 - rank;
        if (rank == 0) {
            MPI_Ssend_c(out, N, MPI_INT, peer, 3, MPI_COMM_WORLD);
            MPI_Recv_c(in, N, MPI_INT, peer, 4, MPI_COMM_WORLD, &status);
        } else {
            MPI_Recv_c(in, N, MPI_INT, peer, 3, MPI_COMM_WORLD, &status);
            MPI_Send_c(out, N, MPI_INT, peer, 4, MPI_COMM_WORLD);
        }
        CHECK(in[5] == peer * 1000 + 5, "send_c/ssend_c %d", in[5]);
    }

    /* Ready send: the receive is posted before the barrier. */
    MPI_Request posted;
    MPI_Irecv_c(in, N, MPI_INT, left, 5, MPI_COMM_WORLD, &posted);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Rsend_c(out, N, MPI_INT, right, 5, MPI_COMM_WORLD);
    MPI_Wait(&posted, MPI_STATUS_IGNORE);
    CHECK(in[6] == left * 1000 + 6, "rsend_c %d", in[6]);

    /* Buffered sends through a buffer attached with a large-count size. */
    MPI_Count attached = N * sizeof(int) * 2 + 2 * MPI_BSEND_OVERHEAD;
    void *buffer = malloc(attached);
    MPI_Buffer_attach_c(buffer, attached);
    MPI_Bsend_c(out, N, MPI_INT, right, 6, MPI_COMM_WORLD);
    MPI_Request bsend;
    MPI_Ibsend_c(out, N, MPI_INT, right, 7, MPI_COMM_WORLD, &bsend);
    MPI_Recv_c(in, N, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv_c(in, N, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&bsend, MPI_STATUS_IGNORE);
    void *detached;
    MPI_Count detached_size = 0;
    MPI_Buffer_detach_c(&detached, &detached_size);
    CHECK(detached == buffer && detached_size == attached, "detach_c: %p %lld", detached, (long long)detached_size);
    free(buffer);

    /* Persistent requests, twice. */
    MPI_Request persistent[2];
    MPI_Recv_init_c(in, N, MPI_INT, left, 8, MPI_COMM_WORLD, &persistent[0]);
    MPI_Send_init_c(out, N, MPI_INT, right, 8, MPI_COMM_WORLD, &persistent[1]);
    for (int round = 0; round < 2; round++) {
        MPI_Startall(2, persistent);
        MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&persistent[0]);
    MPI_Request_free(&persistent[1]);
    MPI_Ssend_init_c(out, N, MPI_INT, right, 9, MPI_COMM_WORLD, &persistent[1]);
    MPI_Irecv_c(in, N, MPI_INT, left, 9, MPI_COMM_WORLD, &persistent[0]);
    MPI_Start(&persistent[1]);
    MPI_Wait(&persistent[0], MPI_STATUS_IGNORE);
    MPI_Wait(&persistent[1], MPI_STATUS_IGNORE);
    MPI_Request_free(&persistent[1]);

    /* Matched receives (the sends are non-blocking: a standard send need not be buffered). */
    MPI_Isend_c(out, N, MPI_INT, right, 10, MPI_COMM_WORLD, &requests[1]);
    MPI_Message message;
    MPI_Mprobe(left, 10, MPI_COMM_WORLD, &message, &status);
    MPI_Mrecv_c(in, N, MPI_INT, &message, &status);
    MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
    CHECK(in[7] == left * 1000 + 7, "mrecv_c %d", in[7]);
    MPI_Isend_c(out, N, MPI_INT, right, 11, MPI_COMM_WORLD, &requests[1]);
    MPI_Mprobe(left, 11, MPI_COMM_WORLD, &message, &status);
    MPI_Imrecv_c(in, N, MPI_INT, &message, &requests[0]);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);

    /* In place, and the non-blocking exchanges. */
    memcpy(in, out, sizeof out);
    MPI_Sendrecv_replace_c(in, N, MPI_INT, right, 12, left, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(in[8] == left * 1000 + 8, "sendrecv_replace_c %d", in[8]);
    MPI_Isendrecv_c(out, N, MPI_INT, right, 13, in, N, MPI_INT, left, 13, MPI_COMM_WORLD, &requests[0]);
    MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    memcpy(in, out, sizeof out);
    MPI_Isendrecv_replace_c(in, N, MPI_INT, right, 14, left, 14, MPI_COMM_WORLD, &requests[0]);
    MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    CHECK(in[9] == left * 1000 + 9, "isendrecv_replace_c %d", in[9]);
}

static void collectives(void)
{
    int mine[N], all[N * 16], sum[N];
    for (int i = 0; i < N; i++)
        mine[i] = rank + i;
    MPI_Count counts[16];
    MPI_Aint displs[16];
    for (int r = 0; r < size; r++) {
        counts[r] = N;
        displs[r] = (MPI_Aint)r * N;
    }
    int expected_sum = size * (size - 1) / 2;

    MPI_Allreduce_c(mine, sum, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum[2] == expected_sum + 2 * size, "allreduce_c %d", sum[2]);
    MPI_Reduce_c(mine, sum, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    CHECK(rank != 0 || sum[1] == expected_sum + size, "reduce_c %d", sum[1]);
    int value[N];
    memcpy(value, mine, sizeof value);
    MPI_Bcast_c(value, N, MPI_INT, size - 1, MPI_COMM_WORLD);
    CHECK(value[0] == size - 1, "bcast_c %d", value[0]);
    MPI_Allgather_c(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD);
    CHECK(all[(size - 1) * N] == size - 1, "allgather_c %d", all[(size - 1) * N]);
    MPI_Allgatherv_c(mine, N, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    CHECK(all[(size - 1) * N + 1] == size, "allgatherv_c %d", all[(size - 1) * N + 1]);
    MPI_Gather_c(mine, N, MPI_INT, all, N, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gatherv_c(mine, N, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(rank != 0 || all[(size - 1) * N] == size - 1, "gatherv_c %d", all[(size - 1) * N]);
    for (int i = 0; i < N * size; i++)
        all[i] = i;
    MPI_Scatter_c(all, N, MPI_INT, value, N, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(value[0] == rank * N, "scatter_c %d", value[0]);
    MPI_Scatterv_c(all, counts, displs, MPI_INT, value, N, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(value[1] == rank * N + 1, "scatterv_c %d", value[1]);
    int spread[N * 16], gathered[N * 16];
    for (int i = 0; i < N * size; i++)
        spread[i] = rank * 100000 + i;
    MPI_Alltoall_c(spread, N, MPI_INT, gathered, N, MPI_INT, MPI_COMM_WORLD);
    CHECK(gathered[0] == rank * N, "alltoall_c %d", gathered[0]);
    MPI_Alltoallv_c(spread, counts, displs, MPI_INT, gathered, counts, displs, MPI_INT, MPI_COMM_WORLD);
    CHECK(size < 2 || gathered[N] == 100000 + rank * N, "alltoallv_c %d", gathered[N]);
    MPI_Aint byte_displs[16];
    MPI_Datatype types[16];
    for (int r = 0; r < size; r++) {
        byte_displs[r] = displs[r] * (MPI_Aint)sizeof(int);
        types[r] = MPI_INT;
    }
    MPI_Alltoallw_c(spread, counts, byte_displs, types, gathered, counts, byte_displs, types, MPI_COMM_WORLD);
    CHECK(gathered[(size - 1) * N] == (size - 1) * 100000 + rank * N, "alltoallw_c %d", gathered[(size - 1) * N]);
    MPI_Reduce_scatter_block_c(spread, value, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(value[0] == expected_sum * 100000 + size * rank * N, "reduce_scatter_block_c %d", value[0]);
    MPI_Reduce_scatter_c(spread, value, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(value[1] == expected_sum * 100000 + size * (rank * N + 1), "reduce_scatter_c %d", value[1]);
    MPI_Scan_c(mine, value, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(value[0] == rank * (rank + 1) / 2, "scan_c %d", value[0]);
    MPI_Exscan_c(mine, value, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rank == 0 || value[0] == rank * (rank - 1) / 2, "exscan_c %d", value[0]);

    MPI_Request request;
    MPI_Iallreduce_c(mine, sum, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    CHECK(sum[0] == size - 1, "iallreduce_c %d", sum[0]);
    MPI_Ialltoallv_c(spread, counts, displs, MPI_INT, gathered, counts, displs, MPI_INT, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Bcast_init_c(value, N, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &request);
    for (int round = 0; round < 2; round++) {
        if (rank == 0)
            value[0] = 77 + round;
        MPI_Start(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        CHECK(value[0] == 77 + round, "bcast_init_c round %d: %d", round, value[0]);
    }
    MPI_Request_free(&request);

    /* Neighbours on a periodic ring. */
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int pair[2 * N];
    MPI_Neighbor_allgather_c(mine, N, MPI_INT, pair, N, MPI_INT, ring);
    int ring_rank;
    MPI_Comm_rank(ring, &ring_rank);
    CHECK(pair[0] == (ring_rank + size - 1) % size && pair[N] == (ring_rank + 1) % size, "neighbor_allgather_c %d %d", pair[0], pair[N]);
    MPI_Count two[2] = {N, N};
    MPI_Aint at[2] = {0, N};
    MPI_Neighbor_alltoallv_c(pair, two, at, MPI_INT, spread, two, at, MPI_INT, ring);
    MPI_Comm_free(&ring);

    MPI_Reduce_local_c(mine, value, N, MPI_INT, MPI_SUM);
}

static void datatypes(void)
{
    MPI_Datatype contiguous, vector, indexed, structure;
    MPI_Type_contiguous_c(4, MPI_INT, &contiguous);
    MPI_Type_vector_c(3, 2, 4, MPI_INT, &vector);
    MPI_Count lengths[2] = {1, 2}, displacements[2] = {0, 5};
    MPI_Type_indexed_c(2, lengths, displacements, MPI_INT, &indexed);
    MPI_Count block[2] = {1, 1};
    MPI_Count byte_displacements[2] = {0, 8};
    MPI_Datatype members[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct_c(2, block, byte_displacements, members, &structure);
    MPI_Datatype all[] = {contiguous, vector, indexed, structure};
    MPI_Count sizes[] = {16, 24, 12, 12}, extents[] = {16, 40, 28, 16};
    for (int i = 0; i < 4; i++) {
        MPI_Type_commit(&all[i]);
        MPI_Count type_size = 0, lb = -1, extent = 0, true_lb = -1, true_extent = 0;
        MPI_Type_size_c(all[i], &type_size);
        MPI_Type_get_extent_c(all[i], &lb, &extent);
        MPI_Type_get_true_extent_c(all[i], &true_lb, &true_extent);
        CHECK(type_size == sizes[i] && extent == extents[i] && lb == 0 && true_lb == 0, "type %d: size %lld extent %lld", i, (long long)type_size, (long long)extent);
    }
    /* Pack a vector and unpack it as contiguous ints. */
    int source[12], packed_ints[6];
    for (int i = 0; i < 12; i++)
        source[i] = i;
    char packed[256];
    MPI_Count position = 0, needed = 0;
    MPI_Pack_size_c(1, all[1], MPI_COMM_WORLD, &needed);
    MPI_Pack_c(source, 1, all[1], packed, sizeof packed, &position, MPI_COMM_WORLD);
    CHECK(position == 24 && needed >= 24, "pack_c: position %lld, size %lld", (long long)position, (long long)needed);
    position = 0;
    MPI_Unpack_c(packed, sizeof packed, &position, packed_ints, 6, MPI_INT, MPI_COMM_WORLD);
    CHECK(packed_ints[2] == 4 && packed_ints[5] == 9, "unpack_c %d %d", packed_ints[2], packed_ints[5]);
    MPI_Count external = 0;
    MPI_Pack_external_size_c("external32", 6, MPI_INT, &external);
    CHECK(external == 24, "pack_external_size_c %lld", (long long)external);
    position = 0;
    MPI_Pack_external_c("external32", packed_ints, 6, MPI_INT, packed, sizeof packed, &position);
    int back[6];
    MPI_Count read = 0;
    MPI_Unpack_external_c("external32", packed, position, &read, back, 6, MPI_INT);
    CHECK(back[5] == 9 && read == 24, "external32 round trip %d", back[5]);

    /* A large-count constructor reports its counts as large counts. */
    MPI_Count integers = -1, addresses = -1, large = -1, datatypes_n = -1;
    int combiner = -1;
    MPI_Type_get_envelope_c(all[1], &integers, &addresses, &large, &datatypes_n, &combiner);
    CHECK(combiner == MPI_COMBINER_VECTOR && datatypes_n == 1 && integers + large == 3, "envelope_c: %d, %lld ints, %lld large", combiner, (long long)integers, (long long)large);
    int ints[3];
    MPI_Aint aints[1];
    MPI_Count counts[3];
    MPI_Datatype inner;
    MPI_Type_get_contents_c(all[1], integers, addresses, large, datatypes_n, ints, aints, counts, &inner);
    long long first = large ? counts[0] : ints[0];
    CHECK(first == 3 && inner == MPI_INT, "contents_c: count %lld", first);
    for (int i = 0; i < 4; i++)
        MPI_Type_free(&all[i]);

    MPI_Datatype resized, hvector, hindexed, indexed_block, hindexed_block, subarray;
    MPI_Type_create_resized_c(MPI_INT, 0, 8, &resized);
    MPI_Type_create_hvector_c(2, 1, 16, MPI_INT, &hvector);
    MPI_Count offsets[2] = {0, 12};
    MPI_Type_create_hindexed_c(2, lengths, offsets, MPI_INT, &hindexed);
    MPI_Type_create_indexed_block_c(2, 2, displacements, MPI_INT, &indexed_block);
    MPI_Type_create_hindexed_block_c(2, 1, offsets, MPI_INT, &hindexed_block);
    MPI_Count full[2] = {4, 4}, part[2] = {2, 2}, start[2] = {1, 1};
    MPI_Type_create_subarray_c(2, full, part, start, MPI_ORDER_C, MPI_INT, &subarray);
    MPI_Datatype more[] = {resized, hvector, hindexed, indexed_block, hindexed_block, subarray};
    MPI_Count more_sizes[] = {4, 8, 12, 16, 8, 16};
    for (int i = 0; i < 6; i++) {
        MPI_Count type_size = 0;
        MPI_Type_size_c(more[i], &type_size);
        CHECK(type_size == more_sizes[i], "type %d: size %lld", i, (long long)type_size);
        MPI_Type_free(&more[i]);
    }
}

static void one_sided(void)
{
    int *memory;
    MPI_Win win;
    MPI_Win_allocate_c(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &memory, &win);
    for (int i = 0; i < N; i++)
        memory[i] = 0;
    int right = (rank + 1) % size, values[N], got[N];
    for (int i = 0; i < N; i++)
        values[i] = rank + 1;
    MPI_Win_fence(0, win);
    MPI_Put_c(values, N / 2, MPI_INT, right, 0, N / 2, MPI_INT, win);
    MPI_Accumulate_c(values, N / 2, MPI_INT, right, N / 2, N / 2, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Get_c(got, N, MPI_INT, right, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    int left = (rank + size - 1) % size;
    CHECK(memory[0] == left + 1 && memory[N - 1] == left + 1 && got[0] == rank + 1, "put_c/accumulate_c/get_c: %d %d %d", memory[0], memory[N - 1], got[0]);
    MPI_Win_free(&win);
}

/* The file calls' _c forms: each rank writes its block of N ints with a large count (explicit
 * offset, collective, non-blocking, through the individual pointer and split), reads its
 * neighbour's back, and asks for a type's extent in the file. */
static void files(void)
{
    char path[256];
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/braid-large-count-%ld", dir != NULL && dir[0] != '\0' ? dir : "/tmp", pid);
    MPI_File file;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &file) == MPI_SUCCESS, "open %s", path);
    int values[N], got[N];
    for (int i = 0; i < N; i++)
        values[i] = rank * 1000 + i;
    MPI_Count n = N, count = 0;
    MPI_Status status;
    MPI_Offset mine = (MPI_Offset)rank * N * (MPI_Offset)sizeof(int);
    CHECK(MPI_File_write_at_all_c(file, mine, values, n / 2, MPI_INT, &status) == MPI_SUCCESS, "write_at_all_c");
    MPI_Get_count_c(&status, MPI_INT, &count);
    CHECK(count == N / 2, "write_at_all_c count %lld", (long long)count);
    MPI_Request request;
    CHECK(MPI_File_iwrite_at_c(file, mine + N / 2 * (MPI_Offset)sizeof(int), values + N / 2, n / 2, MPI_INT, &request) == MPI_SUCCESS, "iwrite_at_c");
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_File_sync(file);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(file);
    int right = (rank + 1) % size;
    CHECK(MPI_File_read_at_c(file, (MPI_Offset)right * N * (MPI_Offset)sizeof(int), got, n, MPI_INT, &status) == MPI_SUCCESS, "read_at_c");
    MPI_Get_count_c(&status, MPI_INT, &count);
    CHECK(count == N && got[0] == right * 1000 && got[N - 1] == right * 1000 + N - 1, "read_at_c: count %lld, %d %d", (long long)count, got[0], got[N - 1]);
    CHECK(MPI_File_seek(file, mine, MPI_SEEK_SET) == MPI_SUCCESS, "seek");
    CHECK(MPI_File_read_all_begin_c(file, got, n, MPI_BYTE) == MPI_SUCCESS, "read_all_begin_c");
    CHECK(MPI_File_read_all_end(file, got, &status) == MPI_SUCCESS, "read_all_end");
    MPI_Get_count_c(&status, MPI_BYTE, &count);
    CHECK(count == N && got[0] == rank * 1000, "read_all_begin_c: count %lld, %d", (long long)count, got[0]);
    MPI_Count extent = 0;
    CHECK(MPI_File_get_type_extent_c(file, MPI_DOUBLE, &extent) == MPI_SUCCESS && extent == (MPI_Count)sizeof(double), "get_type_extent_c %lld", (long long)extent);
    MPI_File_close(&file);
}

static void big(void)
{
    /* INT_MAX + 9 bytes, sent from rank 0 to rank 1, then broadcast back from rank 1. */
    MPI_Count count = (MPI_Count)INT_MAX + 9;
    unsigned char *data = malloc(count);
    CHECK(data != NULL, "cannot allocate %lld bytes", (long long)count);
    if (rank == 0) {
        for (MPI_Count i = 0; i < count; i += 4096)
            data[i] = (unsigned char)(i / 4096);
        data[count - 1] = 0xAB;
        MPI_Send_c(data, count, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    } else if (rank == 1) {
        memset(data, 0, count);
        MPI_Status status;
        MPI_Recv_c(data, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &status);
        MPI_Count got = 0;
        int small = 0;
        MPI_Get_count_c(&status, MPI_BYTE, &got);
        MPI_Get_count(&status, MPI_BYTE, &small);
        CHECK(got == count && small == MPI_UNDEFINED, "count %lld, int count %d", (long long)got, small);
        for (MPI_Count i = 0; i < count; i += 4096)
            CHECK(data[i] == (unsigned char)(i / 4096), "byte %lld: %d", (long long)i, data[i]);
        CHECK(data[count - 1] == 0xAB, "last byte %d", data[count - 1]);
        data[count - 1] = 0xCD;
    }
    MPI_Bcast_c(data, count, MPI_BYTE, 1, MPI_COMM_WORLD);
    CHECK(data[count - 1] == 0xCD && data[4096 * 5] == 5, "bcast_c: %d %d", data[count - 1], data[4096 * 5]);
    free(data);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 16, "at most 16 ranks");
    if (argc > 1 && strcmp(argv[1], "big") == 0) {
        CHECK(size == 2, "big needs 2 ranks");
        big();
    } else {
        point_to_point();
        collectives();
        datatypes();
        one_sided();
        files();
    }
    if (rank == 0)
        printf("large_count%s: passed\n", argc > 1 ? " big" : "");
    MPI_Finalize();
    return 0;
}
