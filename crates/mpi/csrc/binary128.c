/* IEEE binary128 (Fortran REAL*16, C _Float128): reduction kernels for MPI_REAL16 and
 * MPI_COMPLEX32, and the long double <-> binary128 conversions of external32, whose 16-byte
 * floating point format is binary128. Rust has no such types.
 *
 * Buffers hold PACKED elements, so they may be unaligned: every load and store goes through
 * memcpy. Operation codes mirror LongDoubleOp in crates/mpi/src/op/kernels.rs.
 */
#include <stddef.h>
#include <string.h>

enum { BRAID_Q_MAX = 0, BRAID_Q_MIN = 1, BRAID_Q_SUM = 2, BRAID_Q_PROD = 3 };

_Static_assert(sizeof(_Float128) == 16, "_Float128 must take 16 bytes");

void braid_binary128_reduce(int op, const unsigned char *in, unsigned char *inout, size_t count) {
    const size_t step = sizeof(_Float128);
    for (size_t i = 0; i < count; i++) {
        _Float128 a, b;
        memcpy(&a, in + i * step, step);
        memcpy(&b, inout + i * step, step);
        switch (op) {
        case BRAID_Q_MAX: b = a > b ? a : b; break;
        case BRAID_Q_MIN: b = a < b ? a : b; break;
        case BRAID_Q_SUM: b = a + b; break;
        case BRAID_Q_PROD: b = a * b; break;
        default: return;
        }
        memcpy(inout + i * step, &b, step);
    }
}

void braid_binary128_complex_reduce(int op, const unsigned char *in, unsigned char *inout, size_t count) {
    const size_t step = sizeof(_Float128 _Complex);
    for (size_t i = 0; i < count; i++) {
        _Float128 _Complex a, b;
        memcpy(&a, in + i * step, step);
        memcpy(&b, inout + i * step, step);
        switch (op) {
        case BRAID_Q_SUM: b = a + b; break;
        case BRAID_Q_PROD: b = a * b; break;
        default: return;
        }
        memcpy(inout + i * step, &b, step);
    }
}

/* One long double to binary128, both in native byte order (exact: binary128 holds every long double). */
void braid_long_double_to_binary128(const unsigned char *native, unsigned char *binary128) {
    long double value;
    memcpy(&value, native, sizeof value);
    _Float128 wide = (_Float128)value;
    memcpy(binary128, &wide, sizeof wide);
}

/* One binary128 to long double, both in native byte order (rounded to the nearest long double). */
void braid_binary128_to_long_double(const unsigned char *binary128, unsigned char *native) {
    _Float128 wide;
    memcpy(&wide, binary128, sizeof wide);
    long double value = (long double)wide;
    memcpy(native, &value, sizeof value);
}
