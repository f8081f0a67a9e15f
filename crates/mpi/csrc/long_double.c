/* Reduction kernels for long double and long double complex: Rust has no such types.
 *
 * Buffers hold PACKED elements, so they may be unaligned: every load and store goes through
 * memcpy. Operation codes mirror LongDoubleOp in crates/mpi/src/op/kernels.rs.
 */
#include <complex.h>
#include <stddef.h>
#include <string.h>

enum { BRAID_LD_MAX = 0, BRAID_LD_MIN = 1, BRAID_LD_SUM = 2, BRAID_LD_PROD = 3 };

/* crates/mpi/src/datatype/predefined.rs assumes this layout (LONG_DOUBLE_SIZE, LONG_DOUBLE_ALIGN). */
_Static_assert(sizeof(long double) == 16, "long double must take 16 bytes");
_Static_assert(_Alignof(long double) == 16, "long double must be 16-byte aligned");

void braid_long_double_reduce(int op, const unsigned char *in, unsigned char *inout, size_t count) {
    const size_t step = sizeof(long double);
    for (size_t i = 0; i < count; i++) {
        long double a, b;
        memcpy(&a, in + i * step, step);
        memcpy(&b, inout + i * step, step);
        switch (op) {
        case BRAID_LD_MAX: b = a > b ? a : b; break;
        case BRAID_LD_MIN: b = a < b ? a : b; break;
        case BRAID_LD_SUM: b = a + b; break;
        case BRAID_LD_PROD: b = a * b; break;
        default: return;
        }
        memcpy(inout + i * step, &b, step);
    }
}

void braid_long_double_complex_reduce(int op, const unsigned char *in, unsigned char *inout, size_t count) {
    const size_t step = sizeof(long double _Complex);
    for (size_t i = 0; i < count; i++) {
        long double _Complex a, b;
        memcpy(&a, in + i * step, step);
        memcpy(&b, inout + i * step, step);
        switch (op) {
        case BRAID_LD_SUM: b = a + b; break;
        case BRAID_LD_PROD: b = a * b; break;
        default: return;
        }
        memcpy(inout + i * step, &b, step);
    }
}

/* MPI_LONG_DOUBLE_INT packed: the long double, then the int index, no padding. */
void braid_long_double_int_loc(int want_max, const unsigned char *in, unsigned char *inout, size_t count) {
    const size_t value_size = sizeof(long double);
    const size_t step = value_size + sizeof(int);
    for (size_t i = 0; i < count; i++) {
        long double a, b;
        int a_index, b_index;
        memcpy(&a, in + i * step, value_size);
        memcpy(&a_index, in + i * step + value_size, sizeof(int));
        memcpy(&b, inout + i * step, value_size);
        memcpy(&b_index, inout + i * step + value_size, sizeof(int));
        int input_wins = want_max ? a > b : a < b;
        if (input_wins) {
            memcpy(inout + i * step, in + i * step, step);
        } else if (a == b && a_index < b_index) {
            memcpy(inout + i * step + value_size, &a_index, sizeof(int));
        }
    }
}
