/* More datatypes: subarray and darray types, MPI_Type_get_envelope / get_contents for every
 * combiner, MPI_Type_match_size and the F90 types, external32 packing, the MPI-1 calls
 * (MPI_Type_struct with MPI_LB / MPI_UB, MPI_Type_extent/lb/ub, MPI_Address, MPI_Type_hindexed),
 * the Fortran and C++ predefined types with their reductions, messages shorter than the receive
 * datatype, attributes on datatypes, and the error classes of bad arguments. Runs on any number
 * of ranks. */
/* Open MPI: declare none of the removed MPI-1 calls (the test declares them below). */
#define OMPI_OMIT_MPI1_COMPAT_DECLS 1
#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

/* MPI-3.0 removed the MPI-1 calls below. MPICH and Open MPI still export them but no longer
 * declare them (nor does Open MPI define MPI_LB and MPI_UB), so the test declares them. */
#if defined(OPEN_MPI)
extern struct ompi_predefined_datatype_t ompi_mpi_lb, ompi_mpi_ub;
#define MPI_LB ((MPI_Datatype)&ompi_mpi_lb)
#define MPI_UB ((MPI_Datatype)&ompi_mpi_ub)
int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype);
#endif
#if !defined(BRAID)
int MPI_Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[], MPI_Datatype array_of_types[],
                    MPI_Datatype *newtype);
int MPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                      MPI_Datatype *newtype);
int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent);
int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement);
int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement);
int MPI_Address(void *location, MPI_Aint *address);
#endif

#define UNTOUCHED (-555)

static int rank, size, next, previous;

#define CHECK_CLASS(call, expected)                                                                         \
    do {                                                                                                    \
        int class_ = class_of(call);                                                                        \
        CHECK(class_ == (expected), "%s returned class %d, expected %s (%d)", #call, class_, #expected, expected); \
    } while (0)

#define CHECK_FAILS(call)                                                                                   \
    do {                                                                                                    \
        int code_ = (call);                                                                                 \
        CHECK(code_ != MPI_SUCCESS, "%s succeeded", #call);                                                 \
    } while (0)

static void check_bounds(MPI_Datatype type, const char *name, int size_expected, MPI_Aint lb_expected, MPI_Aint extent_expected)
{
    int type_size;
    MPI_Aint lb, extent;
    MPI_Type_size(type, &type_size);
    MPI_Type_get_extent(type, &lb, &extent);
    CHECK(type_size == size_expected && lb == lb_expected && extent == extent_expected, "%s: size %d lb %ld extent %ld, expected %d %ld %ld", name,
          type_size, (long)lb, (long)extent, size_expected, (long)lb_expected, (long)extent_expected);
}

static void ring_exchange(const void *send, int send_count, MPI_Datatype send_type, void *receive, int receive_count,
                          MPI_Datatype receive_type, MPI_Status *status)
{
    MPI_Sendrecv(send, send_count, send_type, next, 9, receive, receive_count, receive_type, previous, 9, MPI_COMM_WORLD, status);
}

/* ---- Fortran and C++ predefined types ---- */

static void fortran_and_cxx_types(void)
{
    const struct {
        MPI_Datatype type;
        const char *name;
        int size;
    } types[] = {
        {MPI_CHARACTER, "MPI_CHARACTER", 1},
        {MPI_LOGICAL, "MPI_LOGICAL", 4},
        {MPI_INTEGER, "MPI_INTEGER", 4},
        {MPI_REAL, "MPI_REAL", 4},
        {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8},
        {MPI_COMPLEX, "MPI_COMPLEX", 8},
        {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 16},
        {MPI_2INTEGER, "MPI_2INTEGER", 8},
        {MPI_2REAL, "MPI_2REAL", 8},
        {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", 16},
        {MPI_INTEGER1, "MPI_INTEGER1", 1},
        {MPI_INTEGER2, "MPI_INTEGER2", 2},
        {MPI_INTEGER4, "MPI_INTEGER4", 4},
        {MPI_INTEGER8, "MPI_INTEGER8", 8},
        {MPI_REAL4, "MPI_REAL4", 4},
        {MPI_REAL8, "MPI_REAL8", 8},
        {MPI_COMPLEX8, "MPI_COMPLEX8", 8},
        {MPI_COMPLEX16, "MPI_COMPLEX16", 16},
        {MPI_CXX_BOOL, "MPI_CXX_BOOL", (int)sizeof(bool)},
        {MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", 8},
        {MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", 16},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", (int)(2 * sizeof(long double))},
    };
    for (unsigned i = 0; i < sizeof types / sizeof types[0]; i++) {
        int type_size = -1, length = 0;
        char name[MPI_MAX_OBJECT_NAME];
        MPI_Type_size(types[i].type, &type_size);
        CHECK(type_size == types[i].size, "MPI_Type_size(%s) = %d, expected %d", types[i].name, type_size, types[i].size);
        MPI_Type_get_name(types[i].type, name, &length);
        CHECK(strcmp(name, types[i].name) == 0 && length == (int)strlen(types[i].name), "MPI_Type_get_name gives '%s' for %s", name, types[i].name);
    }

    /* Arithmetic reductions on the Fortran numeric types. */
    int integers[2] = {rank + 1, -rank}, integer_sums[2];
    MPI_Allreduce(integers, integer_sums, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD);
    CHECK(integer_sums[0] == size * (size + 1) / 2 && integer_sums[1] == -size * (size - 1) / 2, "MPI_INTEGER sum: %d %d", integer_sums[0],
          integer_sums[1]);
    int64_t wide = (int64_t)rank << 40, widest;
    MPI_Allreduce(&wide, &widest, 1, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD);
    CHECK(widest == (int64_t)(size - 1) << 40, "MPI_INTEGER8 max: %lld", (long long)widest);
    float real = 0.5f * (float)(rank + 1), real_product;
    MPI_Allreduce(&real, &real_product, 1, MPI_REAL, MPI_PROD, MPI_COMM_WORLD);
    float expected_product = 1.0f;
    for (int r = 0; r < size; r++)
        expected_product *= 0.5f * (float)(r + 1);
    CHECK(real_product == expected_product, "MPI_REAL product: %g, expected %g", real_product, expected_product);
    double precise = rank * 0.25, precise_min;
    MPI_Allreduce(&precise, &precise_min, 1, MPI_DOUBLE_PRECISION, MPI_MIN, MPI_COMM_WORLD);
    CHECK(precise_min == 0.0, "MPI_DOUBLE_PRECISION min: %g", precise_min);
    double complex_value[2] = {1.0, (double)rank}, complex_sum[2];
    MPI_Allreduce(complex_value, complex_sum, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    CHECK(complex_sum[0] == size && complex_sum[1] == size * (size - 1) / 2.0, "MPI_DOUBLE_COMPLEX sum: %g %g", complex_sum[0], complex_sum[1]);
    double _Complex unit = rank % 2 ? I : 1.0, unit_product;
    MPI_Allreduce(&unit, &unit_product, 1, MPI_CXX_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
    double _Complex expected_unit = 1.0;
    for (int r = 0; r < size; r++)
        expected_unit *= r % 2 ? I : 1.0;
    CHECK(unit_product == expected_unit, "MPI_CXX_DOUBLE_COMPLEX product: %g%+gi", creal(unit_product), cimag(unit_product));

    /* Logical reductions on LOGICAL (an int, nonzero true) and C++ bool. */
    int logical = rank == 0, all_true, any_true;
    MPI_Allreduce(&logical, &all_true, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&logical, &any_true, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD);
    CHECK(all_true == (size == 1) && any_true == 1, "MPI_LOGICAL land %d lor %d", all_true, any_true);
    bool flag = rank == size - 1, any_flag = false;
    MPI_Allreduce(&flag, &any_flag, 1, MPI_CXX_BOOL, MPI_LOR, MPI_COMM_WORLD);
    CHECK(any_flag, "MPI_CXX_BOOL lor is false");

    /* MAXLOC / MINLOC on the Fortran pairs: the index has the value's type. */
    int integer_pair[2] = {rank % 2, rank}, integer_loc[2];
    MPI_Allreduce(integer_pair, integer_loc, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(integer_loc[0] == (size > 1) && integer_loc[1] == (size > 1), "MPI_2INTEGER maxloc: %d at %d", integer_loc[0], integer_loc[1]);
    float real_pair[2] = {(float)(10 - rank), (float)rank}, real_loc[2];
    MPI_Allreduce(real_pair, real_loc, 1, MPI_2REAL, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(real_loc[0] == (float)(11 - size) && real_loc[1] == (float)(size - 1), "MPI_2REAL minloc: %g at %g", real_loc[0], real_loc[1]);
    double double_pair[2] = {3.0, (double)rank}, double_loc[2];
    MPI_Allreduce(double_pair, double_loc, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(double_loc[0] == 3.0 && double_loc[1] == 0.0, "MPI_2DOUBLE_PRECISION maxloc ties keep the lowest index: %g at %g", double_loc[0],
          double_loc[1]);

    /* They travel point to point like any type. */
    double complex_send[4] = {rank, -rank, 0.5, 2.0}, complex_received[4];
    ring_exchange(complex_send, 2, MPI_DOUBLE_COMPLEX, complex_received, 2, MPI_COMPLEX16, MPI_STATUS_IGNORE);
    CHECK(complex_received[0] == previous && complex_received[1] == -previous && complex_received[3] == 2.0, "MPI_DOUBLE_COMPLEX ring: %g %g",
          complex_received[0], complex_received[1]);
}

/* ---- Subarrays ---- */

static int cube_index(int order_c, const int sizes[3], int i0, int i1, int i2)
{
    /* C order: the last index varies fastest; Fortran order: the first. */
    return order_c ? (i0 * sizes[1] + i1) * sizes[2] + i2 : (i2 * sizes[1] + i1) * sizes[0] + i0;
}

static void subarrays(void)
{
    int sizes[3] = {4, 5, 6}, subsizes[3] = {2, 3, 2}, starts[3] = {1, 1, 3};
    int cube[120], received[120], packed[12];
    for (int i = 0; i < 120; i++)
        cube[i] = rank * 1000 + i;
    for (int order_c = 0; order_c <= 1; order_c++) {
        MPI_Datatype sub;
        MPI_Type_create_subarray(3, sizes, subsizes, starts, order_c ? MPI_ORDER_C : MPI_ORDER_FORTRAN, MPI_INT, &sub);
        MPI_Type_commit(&sub);
        check_bounds(sub, order_c ? "subarray C" : "subarray Fortran", 12 * 4, 0, 120 * 4);
        MPI_Aint true_lb, true_extent;
        MPI_Type_get_true_extent(sub, &true_lb, &true_extent);
        int first = cube_index(order_c, sizes, 1, 1, 3), last = cube_index(order_c, sizes, 2, 3, 4);
        CHECK(true_lb == first * 4 && true_extent == (last - first + 1) * 4, "subarray true extent %ld %ld", (long)true_lb, (long)true_extent);

        /* Send a subarray, receive it contiguous; then receive into a subarray. */
        MPI_Status status;
        ring_exchange(cube, 1, sub, packed, 12, MPI_INT, &status);
        int expected[12], n = 0;
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 2; c++) {
                    /* Type-map order: the fastest dimension innermost. */
                    int i0 = order_c ? 1 + a : 1 + c, i2 = order_c ? 3 + c : 3 + a;
                    expected[n++] = previous * 1000 + cube_index(order_c, sizes, i0, 1 + b, i2);
                }
        for (int i = 0; i < 12; i++)
            CHECK(packed[i] == expected[i], "subarray (%s) element %d is %d, expected %d", order_c ? "C" : "Fortran", i, packed[i], expected[i]);
        for (int i = 0; i < 120; i++)
            received[i] = UNTOUCHED;
        ring_exchange(packed, 12, MPI_INT, received, 1, sub, &status);
        for (int i = 0; i < 120; i++) {
            int i0, i1, i2, in = 0;
            if (order_c) {
                i0 = i / 30, i1 = i / 6 % 5, i2 = i % 6;
            } else {
                i0 = i % 4, i1 = i / 4 % 5, i2 = i / 20;
            }
            in = i0 >= 1 && i0 < 3 && i1 >= 1 && i1 < 4 && i2 >= 3 && i2 < 5;
            /* The data came from the rank before the previous one, through the previous one. */
            int want = in ? (rank + 2 * size - 2) % size * 1000 + i : UNTOUCHED;
            CHECK(received[i] == want, "subarray receive (%s) wrote [%d] = %d, expected %d", order_c ? "C" : "Fortran", i, received[i], want);
        }

        int integers[11], combiner, ni, na, nd;
        MPI_Aint addresses[1];
        MPI_Datatype old;
        MPI_Type_get_envelope(sub, &ni, &na, &nd, &combiner);
        CHECK(combiner == MPI_COMBINER_SUBARRAY && ni == 11 && na == 0 && nd == 1, "subarray envelope %d: %d %d %d", combiner, ni, na, nd);
        MPI_Type_get_contents(sub, 11, 0, 1, integers, addresses, &old);
        CHECK(integers[0] == 3 && integers[1] == 4 && integers[3] == 6 && integers[4] == 2 && integers[7] == 1 && integers[9] == 3 &&
                  integers[10] == (order_c ? MPI_ORDER_C : MPI_ORDER_FORTRAN) && old == MPI_INT,
              "subarray contents");
        MPI_Type_free(&sub);
    }

    /* A subarray of a struct: the extent of the old type scales the array. */
    MPI_Datatype pair, sub_pairs;
    int lengths[2] = {1, 1};
    MPI_Aint displacements[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, lengths, displacements, types, &pair);
    int row_sizes[1] = {10}, row_subsizes[1] = {4}, row_starts[1] = {3};
    MPI_Type_create_subarray(1, row_sizes, row_subsizes, row_starts, MPI_ORDER_C, pair, &sub_pairs);
    check_bounds(sub_pairs, "subarray of {int, double}", 4 * 12, 0, 10 * 16);
    MPI_Type_free(&pair);
    MPI_Type_free(&sub_pairs);
}

/* ---- Distributed arrays ---- */

/* The process coordinate that owns index `g` of a dimension (the standard's definition). */
static int owner(int g, int gsize, int distrib, int darg, int procs)
{
    if (distrib == MPI_DISTRIBUTE_NONE)
        return 0;
    if (distrib == MPI_DISTRIBUTE_BLOCK) {
        int block = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + procs - 1) / procs : darg;
        return g / block;
    }
    int block = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    return g / block % procs;
}

/* The elements (global offsets, in type-map order) that process `who` owns; returns how many. */
static int owned(int who, int ndims, const int gsizes[], const int distribs[], const int dargs[], const int psizes[], int order_c, int out[])
{
    int coords[3], rest = who, total = 1, n = 0;
    for (int d = ndims - 1; d >= 0; d--) {
        coords[d] = rest % psizes[d];
        rest /= psizes[d];
    }
    for (int d = 0; d < ndims; d++)
        total *= gsizes[d];
    for (int offset = 0; offset < total; offset++) {
        /* Decompose the memory offset into indices. */
        int index[3], left = offset, mine = 1;
        if (order_c) {
            for (int d = ndims - 1; d >= 0; d--) {
                index[d] = left % gsizes[d];
                left /= gsizes[d];
            }
        } else {
            for (int d = 0; d < ndims; d++) {
                index[d] = left % gsizes[d];
                left /= gsizes[d];
            }
        }
        for (int d = 0; d < ndims; d++)
            mine &= owner(index[d], gsizes[d], distribs[d], dargs[d], psizes[d]) == coords[d];
        if (mine)
            out[n++] = offset;
    }
    return n;
}

static void check_darray(int ndims, const int gsizes[], const int distribs[], const int dargs[], const int psizes[], int order_c, const char *name)
{
    enum { MAX = 512 };
    int total = 1;
    for (int d = 0; d < ndims; d++)
        total *= gsizes[d];
    CHECK(total <= MAX, "%s: array too large for the test", name);
    MPI_Datatype darray;
    int rc = MPI_Type_create_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order_c ? MPI_ORDER_C : MPI_ORDER_FORTRAN, MPI_INT, &darray);
    CHECK(rc == MPI_SUCCESS, "%s: MPI_Type_create_darray failed", name);
    MPI_Type_commit(&darray);
    int mine[MAX], theirs[MAX];
    int count = owned(rank, ndims, gsizes, distribs, dargs, psizes, order_c, mine);
    int previous_count = owned(previous, ndims, gsizes, distribs, dargs, psizes, order_c, theirs);
    check_bounds(darray, name, count * 4, 0, (MPI_Aint)total * 4);

    int global[MAX], packed[MAX], position = 0;
    for (int i = 0; i < total; i++)
        global[i] = rank * 10000 + i;
    MPI_Pack(global, 1, darray, packed, (int)sizeof packed, &position, MPI_COMM_WORLD);
    CHECK(position == count * 4, "%s: packed %d bytes, expected %d", name, position, count * 4);
    for (int i = 0; i < count; i++)
        CHECK(packed[i] == rank * 10000 + mine[i], "%s: element %d is %d, expected offset %d", name, i, packed[i], mine[i]);

    /* Every element belongs to exactly one process. */
    int ownership[MAX] = {0}, owners[MAX];
    for (int i = 0; i < count; i++)
        ownership[mine[i]] = 1;
    MPI_Allreduce(ownership, owners, total, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < total; i++)
        CHECK(owners[i] == 1, "%s: element %d has %d owners", name, i, owners[i]);

    /* Point to point: the previous rank's part arrives in its order. */
    int received[MAX];
    ring_exchange(global, 1, darray, received, previous_count, MPI_INT, MPI_STATUS_IGNORE);
    for (int i = 0; i < previous_count; i++)
        CHECK(received[i] == previous * 10000 + theirs[i], "%s: received element %d is %d", name, i, received[i]);

    int ni, na, nd, combiner;
    MPI_Type_get_envelope(darray, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_DARRAY && ni == 4 * ndims + 4 && na == 0 && nd == 1, "%s: envelope %d: %d %d %d", name, combiner, ni, na, nd);
    int integers[16];
    MPI_Aint no_addresses[1];
    MPI_Datatype old;
    MPI_Type_get_contents(darray, 16, 0, 1, integers, no_addresses, &old);
    CHECK(integers[0] == size && integers[1] == rank && integers[2] == ndims && integers[3] == gsizes[0] && integers[3 + ndims] == distribs[0] &&
              integers[3 + 2 * ndims] == dargs[0] && integers[3 + 3 * ndims] == psizes[0] &&
              integers[3 + 4 * ndims] == (order_c ? MPI_ORDER_C : MPI_ORDER_FORTRAN) && old == MPI_INT,
          "%s: contents", name);
    MPI_Type_free(&darray);
}

static void darrays(void)
{
    int grid[2] = {0, 0};
    MPI_Dims_create(size, 2, grid);
    for (int order_c = 0; order_c <= 1; order_c++) {
        int gsizes[2] = {7, 10}, distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2};
        check_darray(2, gsizes, distribs, dargs, grid, order_c, order_c ? "darray 7x10 block/cyclic(2) C" : "darray 7x10 block/cyclic(2) Fortran");
        /* Blocks larger than the default: the last process may get a short block, or none. */
        int cyclic_dims[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, cyclic_args[2] = {MPI_DISTRIBUTE_DFLT_DARG, (10 + grid[1] - 1) / grid[1] + 1};
        int wide[2] = {9, 10};
        check_darray(2, wide, cyclic_dims, cyclic_args, grid, order_c, "darray 9x10 cyclic/block(5)");
        int gsizes3[3] = {4, 5, 3}, distribs3[3] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK};
        int dargs3[3] = {3, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, psizes3[3] = {grid[0], 1, grid[1]};
        if (grid[1] <= 3)
            check_darray(3, gsizes3, distribs3, dargs3, psizes3, order_c, "darray 4x5x3 cyclic(3)/none/block");
    }
}

/* ---- Envelopes and contents ---- */

static void check_envelope(MPI_Datatype type, int combiner_expected, int ni_expected, int na_expected, int nd_expected, const char *name)
{
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    CHECK(combiner == combiner_expected && ni == ni_expected && na == na_expected && nd == nd_expected,
          "%s: envelope combiner %d (%d %d %d), expected %d (%d %d %d)", name, combiner, ni, na, nd, combiner_expected, ni_expected, na_expected,
          nd_expected);
}

static void envelopes(void)
{
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(MPI_DOUBLE, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "MPI_DOUBLE envelope %d", combiner);

    int integers[8];
    MPI_Aint addresses[4];
    MPI_Datatype types[4];
    MPI_Datatype contiguous, vector, hvector, indexed, hindexed, indexed_block, hindexed_block, structure, resized, duplicate;

    MPI_Type_contiguous(3, MPI_SHORT, &contiguous);
    check_envelope(contiguous, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, "contiguous");
    MPI_Type_get_contents(contiguous, 1, 0, 1, integers, addresses, types);
    CHECK(integers[0] == 3 && types[0] == MPI_SHORT, "contiguous contents %d", integers[0]);

    MPI_Type_vector(2, 3, -4, contiguous, &vector);
    check_envelope(vector, MPI_COMBINER_VECTOR, 3, 0, 1, "vector");
    MPI_Type_get_contents(vector, 3, 0, 1, integers, addresses, types);
    CHECK(integers[0] == 2 && integers[1] == 3 && integers[2] == -4, "vector contents");
    /* A derived input comes back as a handle of an equal type, which the caller frees. */
    check_envelope(types[0], MPI_COMBINER_CONTIGUOUS, 1, 0, 1, "vector's old type");
    check_bounds(types[0], "vector's old type", 6, 0, 6);
    MPI_Type_free(&types[0]);

    MPI_Type_create_hvector(4, 1, 24, MPI_FLOAT, &hvector);
    check_envelope(hvector, MPI_COMBINER_HVECTOR, 2, 1, 1, "hvector");
    MPI_Type_get_contents(hvector, 2, 1, 1, integers, addresses, types);
    CHECK(integers[0] == 4 && integers[1] == 1 && addresses[0] == 24 && types[0] == MPI_FLOAT, "hvector contents");

    int lengths[3] = {2, 0, 1}, displacements[3] = {5, 1, -2};
    MPI_Aint byte_displacements[3] = {40, 8, -16};
    MPI_Type_indexed(3, lengths, displacements, MPI_LONG, &indexed);
    check_envelope(indexed, MPI_COMBINER_INDEXED, 7, 0, 1, "indexed");
    MPI_Type_get_contents(indexed, 7, 0, 1, integers, addresses, types);
    CHECK(integers[0] == 3 && integers[1] == 2 && integers[3] == 1 && integers[4] == 5 && integers[6] == -2 && types[0] == MPI_LONG, "indexed contents");

    MPI_Type_create_hindexed(3, lengths, byte_displacements, MPI_INT, &hindexed);
    check_envelope(hindexed, MPI_COMBINER_HINDEXED, 4, 3, 1, "hindexed");
    MPI_Type_get_contents(hindexed, 4, 3, 1, integers, addresses, types);
    CHECK(integers[0] == 3 && integers[2] == 0 && addresses[0] == 40 && addresses[2] == -16, "hindexed contents");

    MPI_Type_create_indexed_block(3, 2, displacements, MPI_INT, &indexed_block);
    check_envelope(indexed_block, MPI_COMBINER_INDEXED_BLOCK, 5, 0, 1, "indexed_block");
    MPI_Type_get_contents(indexed_block, 5, 0, 1, integers, addresses, types);
    CHECK(integers[0] == 3 && integers[1] == 2 && integers[2] == 5 && integers[4] == -2, "indexed_block contents");

    MPI_Type_create_hindexed_block(3, 2, byte_displacements, MPI_INT, &hindexed_block);
    check_envelope(hindexed_block, MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1, "hindexed_block");
    MPI_Type_get_contents(hindexed_block, 2, 3, 1, integers, addresses, types);
    CHECK(integers[0] == 3 && integers[1] == 2 && addresses[1] == 8, "hindexed_block contents");

    MPI_Datatype members[3] = {MPI_CHAR, vector, MPI_DOUBLE};
    MPI_Type_create_struct(3, lengths, byte_displacements, members, &structure);
    check_envelope(structure, MPI_COMBINER_STRUCT, 4, 3, 3, "struct");
    MPI_Type_get_contents(structure, 4, 3, 3, integers, addresses, types);
    CHECK(integers[0] == 3 && integers[1] == 2 && addresses[0] == 40 && types[0] == MPI_CHAR && types[2] == MPI_DOUBLE, "struct contents");
    check_envelope(types[1], MPI_COMBINER_VECTOR, 3, 0, 1, "struct's vector");
    MPI_Type_free(&types[1]);

    MPI_Type_create_resized(MPI_INT, -4, 16, &resized);
    check_envelope(resized, MPI_COMBINER_RESIZED, 0, 2, 1, "resized");
    MPI_Type_get_contents(resized, 0, 2, 1, integers, addresses, types);
    CHECK(addresses[0] == -4 && addresses[1] == 16 && types[0] == MPI_INT, "resized contents");

    MPI_Type_dup(hvector, &duplicate);
    check_envelope(duplicate, MPI_COMBINER_DUP, 0, 0, 1, "dup");
    MPI_Type_get_contents(duplicate, 0, 0, 1, integers, addresses, types);
    check_envelope(types[0], MPI_COMBINER_HVECTOR, 2, 1, 1, "dup's old type");
    MPI_Type_free(&types[0]);
    MPI_Datatype named_duplicate;
    MPI_Type_dup(MPI_INT, &named_duplicate);
    MPI_Type_get_contents(named_duplicate, 0, 0, 1, integers, addresses, types);
    CHECK(types[0] == MPI_INT, "dup of MPI_INT names MPI_INT");
    MPI_Type_free(&named_duplicate);

    /* Input types freed before the query still come back, as new handles. */
    MPI_Datatype outer;
    MPI_Type_contiguous(2, vector, &outer);
    MPI_Type_free(&vector);
    MPI_Type_get_contents(outer, 1, 0, 1, integers, addresses, types);
    check_envelope(types[0], MPI_COMBINER_VECTOR, 3, 0, 1, "freed input type");
    check_bounds(types[0], "freed input type", 36, -24, 42);
    MPI_Type_free(&types[0]);
    MPI_Type_free(&outer);

    MPI_Datatype all[] = {contiguous, hvector, indexed, hindexed, indexed_block, hindexed_block, structure, resized, duplicate};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
        MPI_Type_free(&all[i]);

    /* Errors: a named type has no contents; arrays too small. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_FAILS(MPI_Type_get_contents(MPI_INT, 1, 1, 1, integers, addresses, types));
#ifdef TEST_BRAID_ONLY
    CHECK_CLASS(MPI_Type_get_contents(MPI_INT, 1, 1, 1, integers, addresses, types), MPI_ERR_TYPE);
    MPI_Datatype small;
    MPI_Type_indexed(3, lengths, displacements, MPI_INT, &small);
    CHECK_CLASS(MPI_Type_get_contents(small, 6, 0, 1, integers, addresses, types), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_get_contents(small, 7, 0, 0, integers, addresses, types), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_get_envelope(MPI_DATATYPE_NULL, &ni, &na, &nd, &combiner), MPI_ERR_TYPE);
    MPI_Type_free(&small);
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* ---- Types by size and by Fortran kind ---- */

static void sized_types(void)
{
    const struct {
        int typeclass, size;
    } matches[] = {{MPI_TYPECLASS_INTEGER, 1}, {MPI_TYPECLASS_INTEGER, 2}, {MPI_TYPECLASS_INTEGER, 4}, {MPI_TYPECLASS_INTEGER, 8},
                   {MPI_TYPECLASS_REAL, 4},    {MPI_TYPECLASS_REAL, 8},    {MPI_TYPECLASS_COMPLEX, 8}, {MPI_TYPECLASS_COMPLEX, 16}};
    for (unsigned i = 0; i < sizeof matches / sizeof matches[0]; i++) {
        MPI_Datatype type = MPI_DATATYPE_NULL;
        int type_size = -1, ni, na, nd, combiner;
        MPI_Type_match_size(matches[i].typeclass, matches[i].size, &type);
        MPI_Type_size(type, &type_size);
        MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
        CHECK(type_size == matches[i].size && combiner == MPI_COMBINER_NAMED, "MPI_Type_match_size(%d, %d) has size %d, combiner %d",
              matches[i].typeclass, matches[i].size, type_size, combiner);
    }
    /* A matched real type reduces as a real. */
    MPI_Datatype real8;
    MPI_Type_match_size(MPI_TYPECLASS_REAL, (int)sizeof(double), &real8);
    double half = 0.5, total;
    MPI_Allreduce(&half, &total, 1, real8, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == 0.5 * size, "sum over a matched real type: %g", total);

    MPI_Datatype real, again, integer, complex_type;
    int type_size, ni, na, nd, combiner, integers[2];
    MPI_Aint no_addresses[1];
    MPI_Datatype no_types[1];
    MPI_Type_create_f90_real(10, MPI_UNDEFINED, &real);
    MPI_Type_size(real, &type_size);
    CHECK(type_size == 8, "f90 real(10) has %d bytes", type_size);
    MPI_Type_get_envelope(real, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_F90_REAL && ni == 2 && na == 0 && nd == 0, "f90 real envelope %d: %d %d %d", combiner, ni, na, nd);
    MPI_Type_get_contents(real, 2, 0, 0, integers, no_addresses, no_types);
    CHECK(integers[0] == 10 && integers[1] == MPI_UNDEFINED, "f90 real contents %d %d", integers[0], integers[1]);
    MPI_Type_create_f90_real(10, MPI_UNDEFINED, &again);
    CHECK(again == real, "the same f90 arguments give the same handle");
    double values[2] = {1.5, rank}, maxima[2];
    MPI_Allreduce(values, maxima, 2, real, MPI_MAX, MPI_COMM_WORLD);
    CHECK(maxima[0] == 1.5 && maxima[1] == size - 1, "max over an f90 real type: %g %g", maxima[0], maxima[1]);

    MPI_Type_create_f90_integer(9, &integer);
    MPI_Type_size(integer, &type_size);
    MPI_Type_get_envelope(integer, &ni, &na, &nd, &combiner);
    CHECK(type_size == 4 && combiner == MPI_COMBINER_F90_INTEGER && ni == 1, "f90 integer(9): %d bytes, combiner %d (%d)", type_size, combiner, ni);
    MPI_Type_create_f90_integer(10, &integer);
    MPI_Type_size(integer, &type_size);
    CHECK(type_size == 8, "f90 integer(10) has %d bytes", type_size);
    MPI_Type_create_f90_complex(5, 30, &complex_type);
    MPI_Type_size(complex_type, &type_size);
    MPI_Type_get_envelope(complex_type, &ni, &na, &nd, &combiner);
    CHECK(type_size == 8 && combiner == MPI_COMBINER_F90_COMPLEX && ni == 2, "f90 complex(5, 30): %d bytes, combiner %d", type_size, combiner);

#ifdef TEST_BRAID_ONLY
    /* Braid has MPI_INTEGER16 (optional in MPI): 30 digits fit in it. */
    MPI_Type_create_f90_integer(30, &integer);
    MPI_Type_size(integer, &type_size);
    CHECK(type_size == 16, "f90 integer(30) has %d bytes", type_size);
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype none;
    CHECK_FAILS(MPI_Type_create_f90_real(40, MPI_UNDEFINED, &none));
    /* 39 digits is beyond any integer kind (gfortran's largest, INTEGER(16), has 38). */
    CHECK_FAILS(MPI_Type_create_f90_integer(39, &none));
    CHECK_FAILS(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &none));
#ifdef TEST_BRAID_ONLY
    CHECK_CLASS(MPI_Type_match_size(MPI_TYPECLASS_REAL, 2, &none), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_match_size(99, 4, &none), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_create_f90_real(MPI_UNDEFINED, MPI_UNDEFINED, &none), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_free(&real), MPI_ERR_TYPE);
    MPI_Datatype real16;
    CHECK_CLASS(MPI_Type_create_f90_real(30, MPI_UNDEFINED, &real16), MPI_SUCCESS);
    MPI_Type_size(real16, &type_size);
    CHECK(type_size == 16, "f90 real(30) has %d bytes", type_size);
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* ---- external32 ---- */

static void external32(void)
{
    /* MPICH 4.0 aborts (SIGILL) on the external32 size of a struct type: the struct part runs on
     * Braid and Open MPI only. */
    MPI_Aint external_size = 0, position = 0;
#if !defined(MPICH_VERSION)
    struct record {
        char tag;
        short small;
        int number;
        long long big;
        float single;
        double real;
    } record = {'Q', -2, 0x01020304, -3, 1.5f, -0.75};
    int lengths[6] = {1, 1, 1, 1, 1, 1};
    MPI_Aint displacements[6] = {offsetof(struct record, tag),    offsetof(struct record, small),  offsetof(struct record, number),
                                 offsetof(struct record, big),    offsetof(struct record, single), offsetof(struct record, real)};
    MPI_Datatype types[6] = {MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG_LONG, MPI_FLOAT, MPI_DOUBLE};
    MPI_Datatype record_type;
    MPI_Type_create_struct(6, lengths, displacements, types, &record_type);
    MPI_Type_commit(&record_type);

    MPI_Pack_external_size("external32", 2, record_type, &external_size);
    CHECK(external_size == 2 * 27, "external32 size of 2 records: %ld", (long)external_size);
    unsigned char buffer[64];
    struct record two[2] = {record, record};
    two[1].number = -1;
    MPI_Pack_external("external32", two, 2, record_type, buffer, sizeof buffer, &position);
    CHECK(position == 54, "packed %ld bytes", (long)position);
    const unsigned char image[27] = {'Q', 0xff, 0xfe, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd, 0x3f, 0xc0, 0, 0, 0xbf, 0xe8, 0, 0, 0, 0, 0, 0};
    CHECK(memcmp(buffer, image, 27) == 0, "external32 image of the record differs");
    CHECK(buffer[27 + 3] == 0xff && buffer[27 + 6] == 0xff, "external32 image of the second record differs");

    struct record back[2];
    memset(back, 0, sizeof back);
    position = 0;
    MPI_Unpack_external("external32", buffer, 54, &position, back, 2, record_type);
    CHECK(position == 54 && back[0].tag == 'Q' && back[0].small == -2 && back[0].number == 0x01020304 && back[0].big == -3 && back[0].single == 1.5f &&
              back[0].real == -0.75 && back[1].number == -1,
          "external32 round trip differs");
#endif

    /* A strided type: only its elements are written back; external32 passes between ranks. */
    int column[12], received_column[12];
    for (int i = 0; i < 12; i++)
        column[i] = rank * 100 + i, received_column[i] = UNTOUCHED;
    MPI_Datatype every_third;
    MPI_Type_vector(4, 1, 3, MPI_INT, &every_third);
    MPI_Type_commit(&every_third);
    unsigned char wire[16], from_previous[16];
    position = 0;
    MPI_Pack_external("external32", column, 1, every_third, wire, sizeof wire, &position);
    CHECK(position == 16 && wire[0] == 0 && wire[3] == (unsigned char)(rank * 100) && wire[7] == (unsigned char)(rank * 100 + 3),
          "external32 of a vector");
    MPI_Sendrecv(wire, 16, MPI_BYTE, next, 3, from_previous, 16, MPI_BYTE, previous, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    position = 0;
    MPI_Unpack_external("external32", from_previous, 16, &position, received_column, 1, every_third);
    for (int i = 0; i < 12; i++)
        CHECK(received_column[i] == (i % 3 == 0 ? previous * 100 + i : UNTOUCHED), "external32 vector unpack [%d] = %d", i, received_column[i]);

    /* Fixed sizes of the standard's table. */
    const struct {
        MPI_Datatype type;
        const char *name;
        MPI_Aint bytes;
    } fixed[] = {{MPI_CHAR, "MPI_CHAR", 1},         {MPI_SHORT, "MPI_SHORT", 2},         {MPI_INT, "MPI_INT", 4},
                 {MPI_LONG_LONG, "MPI_LONG_LONG", 8}, {MPI_FLOAT, "MPI_FLOAT", 4},         {MPI_DOUBLE, "MPI_DOUBLE", 8},
                 {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", 16}, {MPI_C_BOOL, "MPI_C_BOOL", 1}, {MPI_INT64_T, "MPI_INT64_T", 8},
                 {MPI_AINT, "MPI_AINT", 8},           {MPI_COUNT, "MPI_COUNT", 8},         {MPI_OFFSET, "MPI_OFFSET", 8},
                 {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 16}, {MPI_LOGICAL, "MPI_LOGICAL", 4}, {MPI_CHARACTER, "MPI_CHARACTER", 1},
                 {MPI_CXX_BOOL, "MPI_CXX_BOOL", 1},   {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", 32}};
    for (unsigned i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        MPI_Pack_external_size("external32", 3, fixed[i].type, &external_size);
        CHECK(external_size == 3 * fixed[i].bytes, "external32 size of %s is %ld, expected %ld", fixed[i].name, (long)(external_size / 3),
              (long)fixed[i].bytes);
    }

    /* C _Bool: any nonzero byte reads back as true. */
    unsigned char truth[2] = {0, 0x40};
    bool flags[2] = {true, false};
    position = 0;
    MPI_Unpack_external("external32", truth, 2, &position, flags, 2, MPI_C_BOOL);
    CHECK(!flags[0] && flags[1], "external32 bool: %d %d", flags[0], flags[1]);

#ifdef TEST_BRAID_ONLY
    /* The standard's table: MPI_LONG takes 4 bytes and MPI_WCHAR 2 (Open MPI uses 8 and 4), and
     * long double is IEEE binary128 (Open MPI copies the x87 bytes). */
    MPI_Pack_external_size("external32", 1, MPI_LONG, &external_size);
    CHECK(external_size == 4, "external32 MPI_LONG is %ld bytes", (long)external_size);
    MPI_Pack_external_size("external32", 1, MPI_WCHAR, &external_size);
    CHECK(external_size == 2, "external32 MPI_WCHAR is %ld bytes", (long)external_size);
    MPI_Pack_external_size("external32", 1, MPI_DOUBLE_INT, &external_size);
    CHECK(external_size == 12, "external32 MPI_DOUBLE_INT is %ld bytes", (long)external_size);
    long double one_and_half = 1.5L, back_again = 0;
    long negative = -2, negative_back = 0;
    unsigned char quad[20];
    position = 0;
    MPI_Pack_external("external32", &one_and_half, 1, MPI_LONG_DOUBLE, quad, sizeof quad, &position);
    MPI_Pack_external("external32", &negative, 1, MPI_LONG, quad, sizeof quad, &position);
    const unsigned char quad_image[20] = {0x3f, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe};
    CHECK(position == 20 && memcmp(quad, quad_image, 20) == 0, "external32 image of 1.5L and -2L differs");
    position = 0;
    MPI_Unpack_external("external32", quad, 20, &position, &back_again, 1, MPI_LONG_DOUBLE);
    MPI_Unpack_external("external32", quad, 20, &position, &negative_back, 1, MPI_LONG);
    CHECK(back_again == 1.5L && negative_back == -2, "external32 long double / long round trip");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_CLASS(MPI_Pack_external_size("native", 1, MPI_INT, &external_size), MPI_ERR_UNSUPPORTED_DATAREP);
    position = 0;
    CHECK_CLASS(MPI_Pack_external("external32", two, 2, record_type, buffer, 40, &position), MPI_ERR_TRUNCATE);
    CHECK(position == 0, "a failed MPI_Pack_external moved the position to %ld", (long)position);
    CHECK_CLASS(MPI_Pack_external("external32", two, -1, record_type, buffer, 64, &position), MPI_ERR_COUNT);
    long too_wide = 1L << 40;
    CHECK_CLASS(MPI_Pack_external("external32", &too_wide, 1, MPI_LONG, buffer, 64, &position), MPI_ERR_CONVERSION);
    MPI_Datatype uncommitted;
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    CHECK_CLASS(MPI_Pack_external_size("external32", 1, uncommitted, &external_size), MPI_ERR_TYPE);
    MPI_Type_free(&uncommitted);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
#endif
    MPI_Type_free(&every_third);
#if !defined(MPICH_VERSION)
    MPI_Type_free(&record_type);
#endif
}

/* ---- MPI-1 calls ---- */

static void mpi1_calls(void)
{
    int lengths[3] = {1, 1, 1};
    MPI_Aint displacements[3] = {4, 8, 2};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_LB};
    MPI_Datatype with_lb, with_ub, low_ub, only_ub, pair_of;
    MPI_Aint extent, lb, ub;

    MPI_Type_struct(3, lengths, displacements, types, &with_lb);
    check_bounds(with_lb, "struct {int@4, double@8, MPI_LB@2}", 12, 2, 18);
    types[2] = MPI_UB, displacements[2] = 30;
    MPI_Type_struct(3, lengths, displacements, types, &with_ub);
    check_bounds(with_ub, "struct {int@4, double@8, MPI_UB@30}", 12, 4, 26);
    MPI_Type_extent(with_ub, &extent);
    MPI_Type_lb(with_ub, &lb);
    MPI_Type_ub(with_ub, &ub);
    CHECK(extent == 26 && lb == 4 && ub == 30, "MPI_Type_extent/lb/ub: %ld %ld %ld", (long)extent, (long)lb, (long)ub);
    displacements[2] = 13;
    MPI_Type_struct(3, lengths, displacements, types, &low_ub);
    check_bounds(low_ub, "struct {int@4, double@8, MPI_UB@13}", 12, 4, 9);
    MPI_Datatype marker_first[2] = {MPI_UB, MPI_INT};
    MPI_Aint marker_displacements[2] = {16, 4};
    MPI_Type_struct(2, lengths, marker_displacements, marker_first, &only_ub);
    check_bounds(only_ub, "struct {MPI_UB@16, int@4}", 4, 4, 12);
    /* Markers stick: a contiguous type of it repeats the marked extent. */
    MPI_Type_contiguous(2, only_ub, &pair_of);
    check_bounds(pair_of, "contiguous(2) of it", 8, 4, 24);
    check_bounds(MPI_LB, "MPI_LB", 0, 0, 0);
    check_bounds(MPI_UB, "MPI_UB", 0, 0, 0);
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(with_lb, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_STRUCT && ni == 4 && na == 3 && nd == 3, "MPI_Type_struct envelope %d", combiner);
#ifdef TEST_BRAID_ONLY
    /* A resized type's bounds are markers too, which win over the data of other members
     * (MPI-3.1 4.1.6; Open MPI agrees, MPICH 4.0 gives lb 0 extent 8). */
    MPI_Datatype shifted, both;
    MPI_Type_create_resized(MPI_INT, 4, 4, &shifted);
    MPI_Datatype members[2] = {shifted, MPI_INT};
    MPI_Aint at_zero[2] = {0, 0};
    MPI_Type_create_struct(2, lengths, at_zero, members, &both);
    check_bounds(both, "struct {resized(int, 4, 4)@0, int@0}", 8, 4, 4);
    MPI_Type_free(&shifted);
    MPI_Type_free(&both);
#endif

    /* The marked extent is what communication strides by. */
    MPI_Type_commit(&pair_of);
    int source[8] = {0, 1, 2, 3, 4, 5, 6, 7}, received[2];
    MPI_Status status;
    for (int i = 0; i < 8; i++)
        source[i] += rank * 10;
    ring_exchange(source, 1, pair_of, received, 2, MPI_INT, &status);
    CHECK(received[0] == previous * 10 + 1 && received[1] == previous * 10 + 4, "contiguous of a marked struct sent %d %d", received[0], received[1]);

    double values[4];
    MPI_Aint first, third;
    MPI_Address(&values[0], &first);
    MPI_Address(&values[2], &third);
    CHECK(third - first == 2 * (MPI_Aint)sizeof(double), "MPI_Address difference %ld", (long)(third - first));

    int hlengths[2] = {2, 1};
    MPI_Aint hdisplacements[2] = {12, 0};
    MPI_Datatype hindexed, hvector;
    MPI_Type_hindexed(2, hlengths, hdisplacements, MPI_INT, &hindexed);
    check_bounds(hindexed, "MPI_Type_hindexed", 12, 0, 20);
    MPI_Type_get_envelope(hindexed, &ni, &na, &nd, &combiner);
    CHECK(combiner == MPI_COMBINER_HINDEXED && ni == 3 && na == 2, "MPI_Type_hindexed envelope %d", combiner);
    MPI_Type_hvector(3, 1, 8, MPI_INT, &hvector);
    check_bounds(hvector, "MPI_Type_hvector", 12, 0, 20);

    MPI_Datatype all[] = {with_lb, with_ub, low_ub, only_ub, pair_of, hindexed, hvector};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
        MPI_Type_free(&all[i]);
}

/* ---- Messages shorter than the receive datatype ---- */

static void short_messages(void)
{
    struct pair {
        int number;
        double real;
    };
    int lengths[2] = {1, 1};
    MPI_Aint displacements[2] = {offsetof(struct pair, number), offsetof(struct pair, real)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Datatype pair_type, triple_type, every_other;
    MPI_Type_create_struct(2, lengths, displacements, types, &pair_type);
    MPI_Type_commit(&pair_type);
    MPI_Status status;
    int count, elements;

    /* One int into a {int, double}: the int lands, the double stays. */
    struct pair pairs[2] = {{UNTOUCHED, -1.0}, {UNTOUCHED, -1.0}};
    int number = rank + 40;
    ring_exchange(&number, 1, MPI_INT, pairs, 2, pair_type, &status);
    MPI_Get_count(&status, pair_type, &count);
    MPI_Get_elements(&status, pair_type, &elements);
    CHECK(pairs[0].number == previous + 40 && pairs[0].real == -1.0 && pairs[1].number == UNTOUCHED, "short struct receive: %d %g %d",
          pairs[0].number, pairs[0].real, pairs[1].number);
    CHECK(count == MPI_UNDEFINED && elements == 1, "short struct receive: Get_count %d, Get_elements %d", count, elements);

    /* {int, double, int} into two {int, double}: the second pair gets its int only. */
    int triple_lengths[3] = {1, 1, 1};
    MPI_Aint triple_displacements[3] = {0, 8, 16};
    MPI_Datatype triple_types[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, triple_lengths, triple_displacements, triple_types, &triple_type);
    MPI_Type_commit(&triple_type);
    unsigned char triple[24];
    int first = rank, second = rank + 7;
    double middle = rank + 0.5;
    memcpy(triple, &first, 4);
    memcpy(triple + 8, &middle, 8);
    memcpy(triple + 16, &second, 4);
    pairs[0] = (struct pair){UNTOUCHED, -1.0};
    pairs[1] = (struct pair){UNTOUCHED, -1.0};
    MPI_Request request;
    MPI_Irecv(pairs, 2, pair_type, previous, 10, MPI_COMM_WORLD, &request);
    MPI_Send(triple, 1, triple_type, next, 10, MPI_COMM_WORLD);
    MPI_Wait(&request, &status);
    MPI_Get_count(&status, pair_type, &count);
    MPI_Get_elements(&status, pair_type, &elements);
    CHECK(pairs[0].number == previous && pairs[0].real == previous + 0.5 && pairs[1].number == previous + 7 && pairs[1].real == -1.0,
          "1.5 structs received: %d %g %d %g", pairs[0].number, pairs[0].real, pairs[1].number, pairs[1].real);
    CHECK(count == MPI_UNDEFINED && elements == 3, "1.5 structs: Get_count %d, Get_elements %d", count, elements);

    /* Two ints into a vector of three: a strided type partly filled. */
    MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int spread[6], two[2] = {rank * 3, rank * 3 + 1};
    for (int i = 0; i < 6; i++)
        spread[i] = UNTOUCHED;
    ring_exchange(two, 2, MPI_INT, spread, 1, every_other, &status);
    MPI_Get_count(&status, every_other, &count);
    MPI_Get_elements(&status, every_other, &elements);
    CHECK(spread[0] == previous * 3 && spread[2] == previous * 3 + 1 && spread[4] == UNTOUCHED && spread[1] == UNTOUCHED,
          "short vector receive: %d %d %d", spread[0], spread[2], spread[4]);
    CHECK(count == MPI_UNDEFINED && elements == 2, "short vector receive: Get_count %d, Get_elements %d", count, elements);
    MPI_Count elements_x;
    MPI_Get_elements_x(&status, every_other, &elements_x);
    CHECK(elements_x == 2, "MPI_Get_elements_x %lld", (long long)elements_x);

    MPI_Type_free(&pair_type);
    MPI_Type_free(&triple_type);
    MPI_Type_free(&every_other);
}

/* ---- Argument errors ---- */

static void argument_errors(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype type = MPI_DATATYPE_NULL, predefined = MPI_INT;
    int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
    CHECK_CLASS(MPI_Type_contiguous(-1, MPI_INT, &type), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_free(&predefined), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Type_create_subarray(2, sizes, subsizes, starts, 99, MPI_INT, &type), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DATATYPE_NULL, &type), MPI_ERR_TYPE);
#ifdef TEST_BRAID_ONLY
    int gsizes[2] = {10, 7}, distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2};
    int psizes[2] = {2, 2};
    CHECK_CLASS(MPI_Type_create_subarray(0, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    int past_end[2] = {3, 1};
    CHECK_CLASS(MPI_Type_create_subarray(2, sizes, subsizes, past_end, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    int negative[2] = {-1, 3};
    CHECK_CLASS(MPI_Type_create_subarray(2, sizes, negative, starts, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_create_darray(4, 1, 2, gsizes, distribs, dargs, psizes, 99, MPI_INT, &type), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_create_darray(3, 1, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_create_darray(4, 4, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    int bad_distribs[2] = {77, MPI_DISTRIBUTE_CYCLIC};
    CHECK_CLASS(MPI_Type_create_darray(4, 1, 2, gsizes, bad_distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    int small_blocks[2] = {2, 2};
    CHECK_CLASS(MPI_Type_create_darray(4, 1, 2, gsizes, distribs, small_blocks, psizes, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    int none_distribs[2] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC};
    CHECK_CLASS(MPI_Type_create_darray(4, 1, 2, gsizes, none_distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    int negative_dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, -3};
    CHECK_CLASS(MPI_Type_create_darray(4, 1, 2, gsizes, distribs, negative_dargs, psizes, MPI_ORDER_C, MPI_INT, &type), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_create_darray(4, 1, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, NULL), MPI_ERR_ARG);
    CHECK_CLASS(MPI_Type_vector(-2, 1, 1, MPI_INT, &type), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Type_free(&(MPI_Datatype){MPI_LB}), MPI_ERR_TYPE);
    CHECK(type == MPI_DATATYPE_NULL, "a failed constructor wrote a handle");
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* ---- Attributes on datatypes ---- */

static int deleted_total;

static int copy_doubled(MPI_Datatype oldtype, int keyval, void *extra_state, void *value_in, void *value_out, int *flag)
{
    (void)oldtype, (void)keyval, (void)extra_state;
    *(void **)value_out = (void *)((intptr_t)value_in * 2);
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_deleted(MPI_Datatype datatype, int keyval, void *value, void *extra_state)
{
    (void)datatype, (void)keyval;
    CHECK(extra_state == &deleted_total, "the delete callback got extra_state %p", extra_state);
    deleted_total += (int)(intptr_t)value;
    return MPI_SUCCESS;
}

static void attributes(void)
{
    int keyval, plain_keyval, flag = -1;
    void *value = NULL;
    MPI_Type_create_keyval(copy_doubled, count_deleted, &keyval, &deleted_total);
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &plain_keyval, NULL);
    MPI_Datatype pair, duplicate;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_set_attr(pair, keyval, (void *)(intptr_t)21);
    MPI_Type_set_attr(pair, plain_keyval, (void *)(intptr_t)7);
    MPI_Type_get_attr(pair, keyval, &value, &flag);
    CHECK(flag && value == (void *)(intptr_t)21, "MPI_Type_get_attr: flag %d value %p", flag, value);

    /* MPI_Type_dup runs the copy callbacks; MPI_TYPE_NULL_COPY_FN copies nothing. */
    MPI_Type_dup(pair, &duplicate);
    MPI_Type_get_attr(duplicate, keyval, &value, &flag);
    CHECK(flag && value == (void *)(intptr_t)42, "copied attribute: flag %d value %p", flag, value);
    MPI_Type_get_attr(duplicate, plain_keyval, &value, &flag);
    CHECK(!flag, "MPI_TYPE_NULL_COPY_FN copied the attribute");

    /* Replacing, deleting and freeing run the delete callback. */
    deleted_total = 0;
    MPI_Type_set_attr(pair, keyval, (void *)(intptr_t)5);
    CHECK(deleted_total == 21, "replacing an attribute deleted %d", deleted_total);
    MPI_Type_delete_attr(pair, keyval);
    CHECK(deleted_total == 26, "MPI_Type_delete_attr deleted %d", deleted_total - 21);
    MPI_Type_get_attr(pair, keyval, &value, &flag);
    CHECK(!flag, "a deleted attribute is still there");
    MPI_Type_free(&duplicate);
    CHECK(deleted_total == 26 + 42, "MPI_Type_free deleted %d", deleted_total - 26);

    /* Predefined types take attributes too. */
    MPI_Type_set_attr(MPI_DOUBLE, keyval, (void *)(intptr_t)100);
    MPI_Type_get_attr(MPI_DOUBLE, keyval, &value, &flag);
    CHECK(flag && value == (void *)(intptr_t)100, "attribute on MPI_DOUBLE: flag %d", flag);
    MPI_Type_delete_attr(MPI_DOUBLE, keyval);
    CHECK(deleted_total == 26 + 42 + 100, "deleting the MPI_DOUBLE attribute deleted %d", deleted_total - 68);

    MPI_Type_free(&pair);
    MPI_Type_free_keyval(&keyval);
    MPI_Type_free_keyval(&plain_keyval);
    CHECK(keyval == MPI_KEYVAL_INVALID && plain_keyval == MPI_KEYVAL_INVALID, "MPI_Type_free_keyval did not reset the keyvals");

    MPI_Datatype round_trip = MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE));
    CHECK(round_trip == MPI_DOUBLE, "MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) differs");
#ifdef TEST_BRAID_ONLY
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_CLASS(MPI_Type_set_attr(MPI_INT, 77, NULL), MPI_ERR_KEYVAL);
    CHECK_CLASS(MPI_Type_delete_attr(MPI_INT, 77), MPI_ERR_KEYVAL);
    CHECK_CLASS(MPI_Type_get_attr(MPI_DATATYPE_NULL, 77, &value, &flag), MPI_ERR_TYPE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
#endif
}

static void sizes_as_counts(void)
{
    MPI_Datatype vector;
    MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &vector);
    MPI_Count type_size, lb, extent, true_lb, true_extent;
    MPI_Type_size_x(vector, &type_size);
    MPI_Type_get_extent_x(vector, &lb, &extent);
    MPI_Type_get_true_extent_x(vector, &true_lb, &true_extent);
    CHECK(type_size == 48 && lb == 0 && extent == 96 && true_lb == 0 && true_extent == 96, "_x queries: %lld %lld %lld", (long long)type_size,
          (long long)lb, (long long)extent);
    MPI_Type_free(&vector);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    previous = (rank + size - 1) % size;

    fortran_and_cxx_types();
    subarrays();
    darrays();
    envelopes();
    sized_types();
    external32();
    mpi1_calls();
    short_messages();
    argument_errors();
    attributes();
    sizes_as_counts();

    report_ok("datatypes_more");
    MPI_Finalize();
    return 0;
}
