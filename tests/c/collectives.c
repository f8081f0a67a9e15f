/* Every collective, and every predefined reduction op on the types it applies to, against a
 * reference each rank computes locally (every rank's contribution is a known function of its rank).
 * Covers MPI_IN_PLACE forms, v-variants with uneven counts and displacements, every root, and
 * large buffers. Runs on any number of ranks. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int rank, size;

enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR, OP_COUNT };
static const char *op_names[OP_COUNT] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"};
static MPI_Op op_handle(int op)
{
    MPI_Op handles[OP_COUNT] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    return handles[op];
}

#define ELEMENTS 37

/* Small values so that SUM and PROD over 4 ranks fit even in a signed char. */
static int contribution(int op, int who, int i)
{
    switch (op) {
    case OP_PROD: return 1 + (who + i) % 3 * (i % 2);
    case OP_LAND: case OP_LOR: case OP_LXOR: return (who + i) % 3 == 0 ? 0 : 1 + i % 2;
    case OP_BAND: case OP_BOR: case OP_BXOR: return (who * 37 + i * 11 + 0x41) & 0x7f;
    default: return (who * 5 + i * 3) % 11 - (i % 3 == 0 ? 5 : 0);
    }
}

/* One reduction test per C type: Allreduce, Reduce at every root, and both MPI_IN_PLACE forms. */
#define DEFINE_REDUCTION_CHECK(NAME, CTYPE, COMBINE)                                                  \
    static void NAME(MPI_Datatype type, const char *type_name, int first_op, int last_op, int is_unsigned) \
    {                                                                                                 \
        CTYPE send[ELEMENTS], result[ELEMENTS], expected[ELEMENTS];                                   \
        for (int op = first_op; op <= last_op; op++) {                                                \
            for (int i = 0; i < ELEMENTS; i++) {                                                      \
                for (int who = 0; who < size; who++) {                                                \
                    int raw = contribution(op, who, i);                                               \
                    CTYPE v = (CTYPE)(is_unsigned && raw < 0 ? -raw : raw);                           \
                    if (who == rank)                                                                  \
                        send[i] = v;                                                                  \
                    if (who == 0)                                                                     \
                        expected[i] = v;                                                              \
                    else                                                                              \
                        COMBINE(op, expected[i], v);                                                  \
                }                                                                                     \
            }                                                                                         \
            memset(result, 0, sizeof result);                                                         \
            MPI_Allreduce(send, result, ELEMENTS, type, op_handle(op), MPI_COMM_WORLD);               \
            CHECK(memcmp(result, expected, sizeof result) == 0, "MPI_Allreduce %s on %s differs from the reference", op_names[op], type_name); \
            memcpy(result, send, sizeof result);                                                      \
            MPI_Allreduce(MPI_IN_PLACE, result, ELEMENTS, type, op_handle(op), MPI_COMM_WORLD);       \
            CHECK(memcmp(result, expected, sizeof result) == 0, "in-place MPI_Allreduce %s on %s differs", op_names[op], type_name); \
            for (int root = 0; root < size; root++) {                                                 \
                memset(result, 0, sizeof result);                                                     \
                MPI_Reduce(send, result, ELEMENTS, type, op_handle(op), root, MPI_COMM_WORLD);        \
                if (rank == root)                                                                     \
                    CHECK(memcmp(result, expected, sizeof result) == 0, "MPI_Reduce %s on %s to root %d differs", op_names[op], type_name, root); \
                memcpy(result, send, sizeof result);                                                  \
                MPI_Reduce(rank == root ? MPI_IN_PLACE : (void *)send, result, ELEMENTS, type, op_handle(op), root, MPI_COMM_WORLD); \
                if (rank == root)                                                                     \
                    CHECK(memcmp(result, expected, sizeof result) == 0, "in-place MPI_Reduce %s on %s to root %d differs", op_names[op], type_name, root); \
            }                                                                                         \
        }                                                                                             \
    }

#define COMBINE_ARITHMETIC(op, acc, v)                          \
    switch (op) {                                               \
    case OP_SUM: acc = acc + v; break;                          \
    case OP_PROD: acc = acc * v; break;                         \
    case OP_MAX: acc = acc > v ? acc : v; break;                \
    case OP_MIN: acc = acc < v ? acc : v; break;                \
    }

#define COMBINE_LOGICAL(op, acc, v)                             \
    switch (op) {                                               \
    case OP_LAND: acc = (acc && v); break;                      \
    case OP_LOR: acc = (acc || v); break;                       \
    case OP_LXOR: acc = (!acc != !v); break;                    \
    }

#define COMBINE_INTEGER(op, acc, v)                             \
    switch (op) {                                               \
    case OP_LAND: case OP_LOR: case OP_LXOR:                    \
        COMBINE_LOGICAL(op, acc, v) break;                      \
    case OP_BAND: acc = acc & v; break;                         \
    case OP_BOR: acc = acc | v; break;                          \
    case OP_BXOR: acc = acc ^ v; break;                         \
    default: COMBINE_ARITHMETIC(op, acc, v)                     \
    }

DEFINE_REDUCTION_CHECK(reduce_char, char, COMBINE_ARITHMETIC)
DEFINE_REDUCTION_CHECK(reduce_schar, signed char, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_uchar, unsigned char, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_short, short, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_int, int, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_unsigned, unsigned, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_long, long, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_ulong, unsigned long, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_longlong, long long, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_int8, int8_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_uint16, uint16_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_int32, int32_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_uint64, uint64_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_ushort, unsigned short, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_ulonglong, unsigned long long, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_int16, int16_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_int64, int64_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_uint8, uint8_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_uint32, uint32_t, COMBINE_INTEGER)
DEFINE_REDUCTION_CHECK(reduce_bool, _Bool, COMBINE_LOGICAL)
DEFINE_REDUCTION_CHECK(reduce_float, float, COMBINE_ARITHMETIC)
DEFINE_REDUCTION_CHECK(reduce_double, double, COMBINE_ARITHMETIC)

static void predefined_ops(void)
{
    reduce_char(MPI_CHAR, "MPI_CHAR", OP_SUM, OP_SUM, 0);
    reduce_schar(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", OP_SUM, OP_BXOR, 0);
    reduce_uchar(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", OP_SUM, OP_BXOR, 1);
    reduce_uchar(MPI_BYTE, "MPI_BYTE", OP_BAND, OP_BXOR, 1);
    reduce_short(MPI_SHORT, "MPI_SHORT", OP_SUM, OP_BXOR, 0);
    reduce_int(MPI_INT, "MPI_INT", OP_SUM, OP_BXOR, 0);
    reduce_unsigned(MPI_UNSIGNED, "MPI_UNSIGNED", OP_SUM, OP_BXOR, 1);
    reduce_long(MPI_LONG, "MPI_LONG", OP_SUM, OP_BXOR, 0);
    reduce_ulong(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", OP_SUM, OP_BXOR, 1);
    reduce_longlong(MPI_LONG_LONG, "MPI_LONG_LONG", OP_SUM, OP_BXOR, 0);
    reduce_int8(MPI_INT8_T, "MPI_INT8_T", OP_SUM, OP_BXOR, 0);
    reduce_uint16(MPI_UINT16_T, "MPI_UINT16_T", OP_SUM, OP_BXOR, 1);
    reduce_int32(MPI_INT32_T, "MPI_INT32_T", OP_SUM, OP_BXOR, 0);
    reduce_uint64(MPI_UINT64_T, "MPI_UINT64_T", OP_SUM, OP_BXOR, 1);
    reduce_ushort(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", OP_SUM, OP_BXOR, 1);
    reduce_ulonglong(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", OP_SUM, OP_BXOR, 1);
    reduce_int16(MPI_INT16_T, "MPI_INT16_T", OP_SUM, OP_BXOR, 0);
    reduce_int64(MPI_INT64_T, "MPI_INT64_T", OP_SUM, OP_BXOR, 0);
    reduce_uint8(MPI_UINT8_T, "MPI_UINT8_T", OP_SUM, OP_BXOR, 1);
    reduce_uint32(MPI_UINT32_T, "MPI_UINT32_T", OP_SUM, OP_BXOR, 1);
    reduce_bool(MPI_C_BOOL, "MPI_C_BOOL", OP_LAND, OP_LXOR, 0);
    reduce_float(MPI_FLOAT, "MPI_FLOAT", OP_SUM, OP_MIN, 0);
    reduce_double(MPI_DOUBLE, "MPI_DOUBLE", OP_SUM, OP_MIN, 0);
}

/* MAXLOC/MINLOC on every pair type; values tie across ranks so the lower index must win. */
#define DEFINE_LOC_CHECK(NAME, VTYPE)                                                                 \
    static void NAME(MPI_Datatype type, const char *type_name)                                        \
    {                                                                                                 \
        struct { VTYPE value; int index; } send[ELEMENTS], result[ELEMENTS], expected_max[ELEMENTS], expected_min[ELEMENTS]; \
        memset(send, 0, sizeof send);                                                                 \
        memset(expected_max, 0, sizeof expected_max);                                                 \
        memset(expected_min, 0, sizeof expected_min);                                                 \
        for (int i = 0; i < ELEMENTS; i++) {                                                          \
            for (int who = size - 1; who >= 0; who--) {                                               \
                VTYPE value = (VTYPE)((who * 3 + i) % 4) - (VTYPE)(i % 5);                            \
                if (who == rank) {                                                                    \
                    send[i].value = value;                                                            \
                    send[i].index = who * 10 + 1;                                                     \
                }                                                                                     \
                if (who == size - 1 || value >= expected_max[i].value) {                              \
                    expected_max[i].value = value;                                                    \
                    expected_max[i].index = who * 10 + 1;                                             \
                }                                                                                     \
                if (who == size - 1 || value <= expected_min[i].value) {                              \
                    expected_min[i].value = value;                                                    \
                    expected_min[i].index = who * 10 + 1;                                             \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
        for (int root = 0; root < size; root++) {                                                     \
            memcpy(result, send, sizeof result);                                                      \
            MPI_Reduce(rank == root ? MPI_IN_PLACE : (void *)send, result, ELEMENTS, type, MPI_MAXLOC, root, MPI_COMM_WORLD); \
            for (int i = 0; rank == root && i < ELEMENTS; i++)                                        \
                CHECK(result[i].value == expected_max[i].value && result[i].index == expected_max[i].index, \
                      "MAXLOC %s element %d: got index %d, expected %d", type_name, i, result[i].index, expected_max[i].index); \
        }                                                                                             \
        MPI_Allreduce(send, result, ELEMENTS, type, MPI_MINLOC, MPI_COMM_WORLD);                      \
        for (int i = 0; i < ELEMENTS; i++)                                                            \
            CHECK(result[i].value == expected_min[i].value && result[i].index == expected_min[i].index, \
                  "MINLOC %s element %d: got index %d, expected %d", type_name, i, result[i].index, expected_min[i].index); \
        MPI_Allreduce(send, result, ELEMENTS, type, MPI_MAXLOC, MPI_COMM_WORLD);                      \
        for (int i = 0; i < ELEMENTS; i++)                                                            \
            CHECK(result[i].value == expected_max[i].value && result[i].index == expected_max[i].index, \
                  "MAXLOC %s element %d: got index %d, expected %d", type_name, i, result[i].index, expected_max[i].index); \
    }

DEFINE_LOC_CHECK(loc_2int, int)
DEFINE_LOC_CHECK(loc_short_int, short)
DEFINE_LOC_CHECK(loc_long_int, long)
DEFINE_LOC_CHECK(loc_float_int, float)
DEFINE_LOC_CHECK(loc_double_int, double)

static void location_ops(void)
{
    loc_2int(MPI_2INT, "MPI_2INT");
    loc_short_int(MPI_SHORT_INT, "MPI_SHORT_INT");
    loc_long_int(MPI_LONG_INT, "MPI_LONG_INT");
    loc_float_int(MPI_FLOAT_INT, "MPI_FLOAT_INT");
    loc_double_int(MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
}

static int cell(int owner, int slot) { return owner * 100000 + slot * 7 + 3; }

static void bcast_every_root(void)
{
    const int counts[] = {1, 1000, 300000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int count = counts[c];
        int *buffer = malloc(sizeof(int) * (size_t)count);
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < count; i++)
                buffer[i] = rank == root ? cell(root, i) : -1;
            MPI_Bcast(buffer, count, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                CHECK(buffer[i] == cell(root, i), "MPI_Bcast of %d ints from %d: element %d is %d", count, root, i, buffer[i]);
        }
        free(buffer);
    }
}

static void gather_scatter_family(void)
{
    enum { PER_RANK = 5 };
    int mine[PER_RANK], all[PER_RANK * 4 * 2];
    for (int i = 0; i < PER_RANK; i++)
        mine[i] = cell(rank, i);
    for (int root = 0; root < size; root++) {
        memset(all, 0xff, sizeof all);
        MPI_Gather(mine, PER_RANK, MPI_INT, all, PER_RANK, MPI_INT, root, MPI_COMM_WORLD);
        for (int i = 0; rank == root && i < PER_RANK * size; i++)
            CHECK(all[i] == cell(i / PER_RANK, i % PER_RANK), "MPI_Gather to %d: slot %d is %d", root, i, all[i]);

        memset(all, 0xff, sizeof all);
        if (rank == root)
            memcpy(all + PER_RANK * root, mine, sizeof mine);
        MPI_Gather(rank == root ? MPI_IN_PLACE : mine, PER_RANK, MPI_INT, all, PER_RANK, MPI_INT, root, MPI_COMM_WORLD);
        for (int i = 0; rank == root && i < PER_RANK * size; i++)
            CHECK(all[i] == cell(i / PER_RANK, i % PER_RANK), "in-place MPI_Gather to %d: slot %d is %d", root, i, all[i]);

        for (int i = 0; i < PER_RANK * size; i++)
            all[i] = rank == root ? cell(i / PER_RANK, i % PER_RANK) : -1;
        int got[PER_RANK];
        MPI_Scatter(all, PER_RANK, MPI_INT, got, PER_RANK, MPI_INT, root, MPI_COMM_WORLD);
        CHECK(memcmp(got, mine, sizeof got) == 0, "MPI_Scatter from %d gave rank %d the wrong block", root, rank);
        if (rank == root) {
            MPI_Scatter(all, PER_RANK, MPI_INT, MPI_IN_PLACE, PER_RANK, MPI_INT, root, MPI_COMM_WORLD);
            CHECK(all[PER_RANK * root] == cell(root, 0), "in-place MPI_Scatter touched the root's block");
        } else {
            memset(got, 0, sizeof got);
            MPI_Scatter(NULL, 0, MPI_INT, got, PER_RANK, MPI_INT, root, MPI_COMM_WORLD);
            CHECK(memcmp(got, mine, sizeof got) == 0, "in-place MPI_Scatter from %d gave rank %d the wrong block", root, rank);
        }
    }
    memset(all, 0xff, sizeof all);
    MPI_Allgather(mine, PER_RANK, MPI_INT, all, PER_RANK, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < PER_RANK * size; i++)
        CHECK(all[i] == cell(i / PER_RANK, i % PER_RANK), "MPI_Allgather slot %d is %d", i, all[i]);
    memset(all, 0xff, sizeof all);
    memcpy(all + PER_RANK * rank, mine, sizeof mine);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, PER_RANK, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < PER_RANK * size; i++)
        CHECK(all[i] == cell(i / PER_RANK, i % PER_RANK), "in-place MPI_Allgather slot %d is %d", i, all[i]);
}

/* Rank r contributes r + 1 elements, placed in reverse rank order with a gap of 2 slots. */
static void v_variants(void)
{
    int counts[4], displs[4], total = 0;
    for (int r = size - 1; r >= 0; r--) {
        counts[r] = r + 1;
        displs[r] = total;
        total += counts[r] + 2;
    }
    int *all = malloc(sizeof(int) * (size_t)total);
    int mine[4];
    for (int i = 0; i < counts[rank]; i++)
        mine[i] = cell(rank, i);
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < total; i++)
            all[i] = -7;
        MPI_Gatherv(mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
        for (int r = 0; rank == root && r < size; r++) {
            for (int i = 0; i < counts[r]; i++)
                CHECK(all[displs[r] + i] == cell(r, i), "MPI_Gatherv to %d: block of %d element %d is %d", root, r, i, all[displs[r] + i]);
            CHECK(all[displs[r] + counts[r]] == -7, "MPI_Gatherv wrote into the gap after rank %d's block", r);
        }
        if (rank == root)
            MPI_Gatherv(MPI_IN_PLACE, 0, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
        else
            MPI_Gatherv(mine, counts[rank], MPI_INT, NULL, NULL, NULL, MPI_INT, root, MPI_COMM_WORLD);
        for (int r = 0; rank == root && r < size; r++)
            for (int i = 0; i < counts[r]; i++)
                CHECK(all[displs[r] + i] == cell(r, i), "in-place MPI_Gatherv to %d: rank %d element %d", root, r, i);

        int got[4] = {0};
        MPI_Scatterv(all, counts, displs, MPI_INT, got, counts[rank], MPI_INT, root, MPI_COMM_WORLD);
        CHECK(memcmp(got, mine, sizeof(int) * (size_t)counts[rank]) == 0, "MPI_Scatterv from %d gave rank %d the wrong block", root, rank);
        memset(got, 0, sizeof got);
        if (rank == root)
            MPI_Scatterv(all, counts, displs, MPI_INT, MPI_IN_PLACE, 0, MPI_INT, root, MPI_COMM_WORLD);
        else
            MPI_Scatterv(NULL, NULL, NULL, MPI_INT, got, counts[rank], MPI_INT, root, MPI_COMM_WORLD);
        CHECK(rank == root || memcmp(got, mine, sizeof(int) * (size_t)counts[rank]) == 0, "in-place MPI_Scatterv from %d", root);
    }
    for (int i = 0; i < total; i++)
        all[i] = -7;
    MPI_Allgatherv(mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            CHECK(all[displs[r] + i] == cell(r, i), "MPI_Allgatherv: rank %d element %d is %d", r, i, all[displs[r] + i]);
    for (int i = 0; i < total; i++)
        all[i] = -7;
    memcpy(all + displs[rank], mine, sizeof(int) * (size_t)counts[rank]);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            CHECK(all[displs[r] + i] == cell(r, i), "in-place MPI_Allgatherv: rank %d element %d", r, i);
    free(all);
}

/* Element (from, to, i) carries a value both ends can compute. */
static int exchange_value(int from, int to, int i) { return from * 1000 + to * 10 + i; }

static void all_to_all_family(void)
{
    enum { BLOCK = 3 };
    int send[BLOCK * 4], receive[BLOCK * 4];
    for (int to = 0; to < size; to++)
        for (int i = 0; i < BLOCK; i++)
            send[to * BLOCK + i] = exchange_value(rank, to, i);
    MPI_Alltoall(send, BLOCK, MPI_INT, receive, BLOCK, MPI_INT, MPI_COMM_WORLD);
    for (int from = 0; from < size; from++)
        for (int i = 0; i < BLOCK; i++)
            CHECK(receive[from * BLOCK + i] == exchange_value(from, rank, i), "MPI_Alltoall block from %d element %d", from, i);
    memcpy(receive, send, sizeof send);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, receive, BLOCK, MPI_INT, MPI_COMM_WORLD);
    for (int from = 0; from < size; from++)
        for (int i = 0; i < BLOCK; i++)
            CHECK(receive[from * BLOCK + i] == exchange_value(from, rank, i), "in-place MPI_Alltoall block from %d element %d", from, i);

    /* v-variant: rank r sends (to + r) % 3 elements to rank `to`, packed in reverse order. */
    int send_counts[4], send_displs[4], receive_counts[4], receive_displs[4], offset = 0;
    for (int to = size - 1; to >= 0; to--) {
        send_counts[to] = (to + rank) % 3;
        send_displs[to] = offset;
        for (int i = 0; i < send_counts[to]; i++)
            send[offset + i] = exchange_value(rank, to, i);
        offset += send_counts[to];
    }
    offset = 0;
    for (int from = 0; from < size; from++) {
        receive_counts[from] = (rank + from) % 3;
        receive_displs[from] = offset;
        offset += receive_counts[from];
    }
    memset(receive, 0xff, sizeof receive);
    MPI_Alltoallv(send, send_counts, send_displs, MPI_INT, receive, receive_counts, receive_displs, MPI_INT, MPI_COMM_WORLD);
    for (int from = 0; from < size; from++)
        for (int i = 0; i < receive_counts[from]; i++)
            CHECK(receive[receive_displs[from] + i] == exchange_value(from, rank, i), "MPI_Alltoallv from %d element %d", from, i);
}

static void reduce_scatter_and_scans(void)
{
    enum { BLOCK = 4 };
    int send[BLOCK * 4], result[BLOCK * 4], counts[4];
    for (int i = 0; i < BLOCK * size; i++)
        send[i] = rank * 3 + i;
    /* sum over r of (3r + i) = 3 * size(size-1)/2 + size * i */
    int base = 3 * size * (size - 1) / 2;
    MPI_Reduce_scatter_block(send, result, BLOCK, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < BLOCK; i++)
        CHECK(result[i] == base + size * (rank * BLOCK + i), "MPI_Reduce_scatter_block element %d is %d", i, result[i]);
    memcpy(result, send, sizeof send);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, result, BLOCK, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < BLOCK; i++)
        CHECK(result[i] == base + size * (rank * BLOCK + i), "in-place MPI_Reduce_scatter_block element %d is %d", i, result[i]);

    int offset_of_mine = 0, total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = 1 + r % 3;
        if (r < rank)
            offset_of_mine += counts[r];
        total += counts[r];
    }
    for (int i = 0; i < total; i++)
        send[i] = rank * 3 + i;
    MPI_Reduce_scatter(send, result, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < counts[rank]; i++)
        CHECK(result[i] == base + size * (offset_of_mine + i), "MPI_Reduce_scatter element %d is %d", i, result[i]);

    int value = rank + 1, prefix = 0;
    MPI_Scan(&value, &prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(prefix == (rank + 1) * (rank + 2) / 2, "MPI_Scan gave %d", prefix);
    prefix = value;
    MPI_Scan(MPI_IN_PLACE, &prefix, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD);
    int factorial = 1;
    for (int r = 1; r <= rank + 1; r++)
        factorial *= r;
    CHECK(prefix == factorial, "in-place MPI_Scan PROD gave %d, expected %d", prefix, factorial);
    prefix = -99;
    MPI_Exscan(&value, &prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rank == 0 || prefix == rank * (rank + 1) / 2, "MPI_Exscan gave %d", prefix);
    int maximum = -99;
    value = (rank * 7) % 5;
    MPI_Exscan(&value, &maximum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int expected_maximum = -1;
    for (int r = 0; r < rank; r++)
        expected_maximum = (r * 7) % 5 > expected_maximum ? (r * 7) % 5 : expected_maximum;
    CHECK(rank == 0 || maximum == expected_maximum, "MPI_Exscan MAX gave %d, expected %d", maximum, expected_maximum);
}

/* Several megabytes, not a whole number of any chunk size, twice in a row, and out of place on
 * another type: the sizes at which a node-wide shared segment may carry the node phases. */
static void large_allreduce(void)
{
    enum { COUNT = (1 << 19) + 37 };
    double *data = malloc(sizeof(double) * COUNT);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < COUNT; i++)
            data[i] = (double)(rank + i % 1000 + pass);
        MPI_Allreduce(MPI_IN_PLACE, data, COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double ranks_sum = (double)size * (size - 1) / 2;
        for (int i = 0; i < COUNT; i++)
            CHECK(data[i] == ranks_sum + (double)size * (i % 1000 + pass), "large MPI_Allreduce (pass %d) element %d is %g", pass, i, data[i]);
    }
    free(data);
    int *send = malloc(sizeof(int) * COUNT), *result = malloc(sizeof(int) * COUNT);
    for (int i = 0; i < COUNT; i++)
        send[i] = (i + rank) % size == 0 ? i : -i;
    MPI_Allreduce(send, result, COUNT, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT; i++)
        CHECK(result[i] == i, "large MPI_Allreduce MAX element %d is %d", i, result[i]);
    free(send);
    free(result);
}

/* A commutative user operation that adds ints, in either layout of user_op_allreduce: a plain
 * MPI_INT run, or elements of the vector type that picks every other int. */
static MPI_Datatype every_other;
static int every_other_count;

static void add_ints(void *input, void *inout, int *len, MPI_Datatype *datatype)
{
    const int *in = input;
    int *acc = inout;
    if (*datatype == MPI_INT) {
        for (int i = 0; i < *len; i++)
            acc[i] += in[i];
        return;
    }
    int extent = 2 * every_other_count - 1;
    for (int e = 0; e < *len; e++)
        for (int j = 0; j < every_other_count; j++)
            acc[e * extent + 2 * j] += in[e * extent + 2 * j];
}

/* A user operation on a contiguous int array (a short one may skip the schedule) and on every
 * other int of a twice-as-long one (a vector type, which always runs the schedule), from one
 * element to past the point where the vector is split, in and out of place. */
static void user_op_allreduce(void)
{
    enum { MAX = 4200 };
    static int data[2 * MAX], result[2 * MAX];
    const int counts[] = {1, 2, 7, 64, 257, 1025, MAX};
    MPI_Op add;
    MPI_Op_create(add_ints, 1, &add);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int count = counts[c];
        every_other_count = count;
        MPI_Type_vector(count, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        for (int strided = 0; strided < 2; strided++) {
            int stride = strided ? 2 : 1;
            for (int in_place = 0; in_place < 2; in_place++) {
                for (int i = 0; i < 2 * count; i++)
                    data[i] = i % stride == 0 ? rank * 1000 + i / stride : -1;
                memcpy(result, data, sizeof(int) * 2 * count);
                int *out = in_place ? data : result;
                const void *in = in_place ? MPI_IN_PLACE : data;
                if (strided)
                    MPI_Allreduce(in, out, 1, every_other, add, MPI_COMM_WORLD);
                else
                    MPI_Allreduce(in, out, count, MPI_INT, add, MPI_COMM_WORLD);
                for (int i = 0; i < count; i++) {
                    CHECK(out[stride * i] == 1000 * size * (size - 1) / 2 + size * i, "user-op MPI_Allreduce (count %d, strided %d, in place %d) element %d is %d", count, strided, in_place, i, out[stride * i]);
                    CHECK(!strided || i == count - 1 || out[2 * i + 1] == -1, "user-op MPI_Allreduce (count %d) wrote the gap at %d", count, 2 * i + 1);
                }
            }
        }
        MPI_Type_free(&every_other);
    }
    MPI_Op_free(&add);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 4, "collectives sizes its buffers for at most 4 ranks, got %d", size);
    MPI_Barrier(MPI_COMM_WORLD);
    predefined_ops();
    location_ops();
    bcast_every_root();
    gather_scatter_family();
    v_variants();
    all_to_all_family();
    reduce_scatter_and_scans();
    large_allreduce();
    user_op_allreduce();
    report_ok("collectives");
    MPI_Finalize();
    return 0;
}
