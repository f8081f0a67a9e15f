/* MPI-IO data representations whose sizes differ from memory's.
 * external32: MPI_LONG takes 4 bytes (MPI-3.1 table 13.2; 8 in memory on LP64), so a view of a
 * vector of MPI_LONG interleaving the ranks is laid out with 4-byte elements, written
 * collectively, found big-endian at the right offsets by a byte view, and read back through the
 * same view; a struct of a char and two longs (no padding in the file) goes the same way
 * independently; MPI_File_get_type_extent gives the file's extents; status counts are in memory's
 * elements; a long that does not fit 4 bytes gives MPI_ERR_CONVERSION.
 * Braid only: neither peer agrees with itself on MPI_LONG in external32. MPICH 4.0.2 packs it in
 * 4 bytes (MPI_Pack_external_size) but its files give it an extent of 8; Open MPI 4.1 packs it in
 * 8 and gives that extent, but writes 4 bytes of each into the file. The sizes below are taken
 * from MPI_Pack_external_size all the same, so that the test holds a library to its own choice.
 * A user representation (MPI_Register_datarep, Braid only: MPICH's ROMIO and Open MPI refuse it)
 * that stores each int in 8 bytes: its extent function, write and read conversions run, the view
 * is laid out in its extents, and the file holds 64-bit integers.
 * Any number of ranks; the files live in $TMPDIR (or /tmp) and are removed. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io_files.h"

enum { PER_RANK = 6 };

static int rank, size;
static int long_size; /* MPI_LONG in external32, as MPI_Pack_external_size says */

static long value_of(int owner, int i)
{
    return (owner + 1) * 1000L + i;
}

/* The `bytes` bytes at `at` as a big-endian signed integer. */
static long big_endian(const unsigned char *at, int bytes)
{
    uint64_t value = at[0] & 0x80 ? UINT64_MAX : 0;
    for (int i = 0; i < bytes; i++)
        value = value << 8 | at[i];
    return (long)(int64_t)value;
}

static void external_longs(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    /* Every size-th long is this rank's: a vector of single longs strided by size. */
    MPI_Datatype interleaved;
    MPI_Type_vector(PER_RANK, 1, size, MPI_LONG, &interleaved);
    MPI_Type_commit(&interleaved);
    EXPECT_OK(MPI_File_set_view(file, long_size * rank, MPI_LONG, interleaved, "external32", MPI_INFO_NULL));
    MPI_Aint extent = -1;
    EXPECT_OK(MPI_File_get_type_extent(file, MPI_LONG, &extent));
    CHECK(extent == long_size, "MPI_LONG takes %ld bytes in a file in external32, %d packed", (long)extent, long_size);
    EXPECT_OK(MPI_File_get_type_extent(file, interleaved, &extent));
    CHECK(extent == long_size * ((PER_RANK - 1) * size + 1), "the vector spans %ld bytes in external32", (long)extent);

    long out[PER_RANK], in[PER_RANK];
    for (int i = 0; i < PER_RANK; i++)
        out[i] = value_of(rank, i) * (i % 2 ? -1 : 1);
    MPI_Status status;
    EXPECT_OK(MPI_File_write_all(file, out, PER_RANK, MPI_LONG, &status));
    CHECK_COUNT(status, MPI_LONG, PER_RANK, "an external32 write of longs");
    io_settle(file, MPI_COMM_WORLD);

    /* The file: big-endian longs, rank r's i-th at element i * size + r. */
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Offset bytes = -1;
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == (MPI_Offset)long_size * PER_RANK * size, "the file has %lld bytes, expected %lld", (long long)bytes, (long long)long_size * PER_RANK * size);
    int other = (rank + 1) % size;
    unsigned char raw[8];
    for (int i = 0; i < PER_RANK; i++) {
        EXPECT_OK(MPI_File_read_at(file, long_size * ((MPI_Offset)i * size + other), raw, long_size, MPI_BYTE, &status));
        long expected = value_of(other, i) * (i % 2 ? -1 : 1);
        CHECK(big_endian(raw, long_size) == expected, "long %d of rank %d is %ld in the file, expected %ld", i, other, big_endian(raw, long_size), expected);
    }

    /* Back through the other rank's view, independently. */
    MPI_Datatype theirs;
    MPI_Type_vector(PER_RANK, 1, size, MPI_LONG, &theirs);
    MPI_Type_commit(&theirs);
    EXPECT_OK(MPI_File_set_view(file, long_size * other, MPI_LONG, theirs, "external32", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_read_at(file, 0, in, PER_RANK, MPI_LONG, &status));
    CHECK_COUNT(status, MPI_LONG, PER_RANK, "an external32 read of longs");
    for (int i = 0; i < PER_RANK; i++)
        CHECK(in[i] == value_of(other, i) * (i % 2 ? -1 : 1), "long %d of rank %d read back as %ld", i, other, in[i]);

    /* Reading past the end counts only what was there: the elements of the view (tiles of the
     * vector, each one extent after the last) that end within the file. */
    int there = 0;
    for (int i = PER_RANK - 2; i < 2 * PER_RANK - 2; i++) {
        MPI_Offset at = long_size * other + (MPI_Offset)(i / PER_RANK) * extent + long_size * (MPI_Offset)(i % PER_RANK) * size;
        there += at + long_size <= bytes;
    }
    EXPECT_OK(MPI_File_read_at(file, PER_RANK - 2, in, PER_RANK, MPI_LONG, &status));
    CHECK_COUNT(status, MPI_LONG, there, "an external32 read across the end");

#if LONG_MAX > 2147483647L
    /* A value beyond the 4 bytes of external32 is not silently cut. */
    if (long_size == 4) {
        long huge = 1L << 40;
        int code = MPI_File_write_at(file, 0, &huge, 1, MPI_LONG, &status);
        CHECK(class_of(code) == MPI_ERR_CONVERSION, "writing 2^40 as an external32 long gave class %d", class_of(code));
    }
#endif
    MPI_Type_free(&theirs);
    MPI_Type_free(&interleaved);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
}

struct record {
    char tag;
    long first, second;
};

static void external_struct(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    int lengths[2] = {1, 2};
    MPI_Aint displacements[2] = {offsetof(struct record, tag), offsetof(struct record, first)};
    MPI_Datatype types[2] = {MPI_CHAR, MPI_LONG}, record_type;
    MPI_Type_create_struct(2, lengths, displacements, types, &record_type);
    MPI_Type_commit(&record_type);
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
    MPI_Aint extent = -1;
    /* Byte displacements are the file's as given: the longs start at offsetof(first) there too. */
    EXPECT_OK(MPI_File_get_type_extent(file, record_type, &extent));
    CHECK(extent == (MPI_Aint)offsetof(struct record, first) + 2 * long_size, "the record spans %ld bytes in external32", (long)extent);

    /* Through a byte view each record is its packed external32 data: a char, then two longs. */
    const int record_bytes = 1 + 2 * long_size;
    struct record out[2] = {{(char)('a' + rank), rank * 10L, -rank * 10L - 1}, {(char)('A' + rank), rank * 20L + 1, 7}}, in[2];
    MPI_Status status;
    EXPECT_OK(MPI_File_write_at(file, (MPI_Offset)rank * 2 * record_bytes, out, 2, record_type, &status));
    CHECK_COUNT(status, record_type, 2, "an external32 write of records");
    io_settle(file, MPI_COMM_WORLD);
    int other = (rank + 1) % size;
    memset(in, 0, sizeof in);
    EXPECT_OK(MPI_File_read_at(file, (MPI_Offset)other * 2 * record_bytes, in, 2, record_type, &status));
    CHECK_COUNT(status, record_type, 2, "an external32 read of records");
    CHECK(in[0].tag == 'a' + other && in[0].first == other * 10L && in[0].second == -other * 10L - 1, "record 0 of rank %d: %c %ld %ld", other, in[0].tag, in[0].first, in[0].second);
    CHECK(in[1].tag == 'A' + other && in[1].first == other * 20L + 1 && in[1].second == 7, "record 1 of rank %d: %c %ld %ld", other, in[1].tag, in[1].first, in[1].second);
    unsigned char raw[17];
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_read_at(file, (MPI_Offset)other * 2 * record_bytes + record_bytes, raw, record_bytes, MPI_BYTE, &status));
    CHECK(raw[0] == 'A' + other && big_endian(raw + 1, long_size) == other * 20L + 1 && big_endian(raw + 1 + long_size, long_size) == 7, "record 1 of rank %d in the file", other);
    MPI_Type_free(&record_type);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
}

#ifdef TEST_BRAID_ONLY
/* "wide-int": every int takes 8 bytes in the file, a native int64_t. */
static int conversions;

static int wide_extent(MPI_Datatype datatype, MPI_Aint *extent, void *extra_state)
{
    (void)extra_state;
    if (datatype == MPI_INT) {
        *extent = 8;
        return MPI_SUCCESS;
    }
    MPI_Aint lb;
    return MPI_Type_get_extent(datatype, &lb, extent);
}

static int wide_write(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position, void *extra_state)
{
    if (datatype != MPI_INT)
        return MPI_ERR_TYPE;
    for (int i = 0; i < count; i++)
        ((int64_t *)filebuf)[i] = ((const int *)userbuf)[position + i];
    ++*(int *)extra_state;
    return MPI_SUCCESS;
}

static int wide_read(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position, void *extra_state)
{
    if (datatype != MPI_INT)
        return MPI_ERR_TYPE;
    for (int i = 0; i < count; i++)
        ((int *)userbuf)[position + i] = (int)((const int64_t *)filebuf)[i];
    ++*(int *)extra_state;
    return MPI_SUCCESS;
}

static void user_representation(const char *path)
{
    static int registered;
    if (!registered) {
        EXPECT_OK(MPI_Register_datarep("wide-int", wide_read, wide_write, wide_extent, &conversions));
        registered = 1;
    }
    EXPECT_CLASS(MPI_Register_datarep("wide-int", wide_read, wide_write, wide_extent, &conversions), MPI_ERR_DUP_DATAREP);
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    MPI_Datatype interleaved;
    MPI_Type_vector(PER_RANK, 1, size, MPI_INT, &interleaved);
    MPI_Type_commit(&interleaved);
    EXPECT_OK(MPI_File_set_view(file, 8 * rank, MPI_INT, interleaved, "wide-int", MPI_INFO_NULL));
    MPI_Aint extent = -1;
    EXPECT_OK(MPI_File_get_type_extent(file, MPI_INT, &extent));
    CHECK(extent == 8, "MPI_INT takes %ld bytes in wide-int", (long)extent);
    int out[PER_RANK], in[PER_RANK];
    for (int i = 0; i < PER_RANK; i++)
        out[i] = (int)value_of(rank, i) - 5000;
    MPI_Status status;
    int before = conversions;
    EXPECT_OK(MPI_File_write_all(file, out, PER_RANK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, PER_RANK, "a wide-int write");
    CHECK(conversions > before, "the write conversion did not run");
    io_settle(file, MPI_COMM_WORLD);
    before = conversions;
    EXPECT_OK(MPI_File_read_at(file, 0, in, PER_RANK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, PER_RANK, "a wide-int read");
    CHECK(conversions > before, "the read conversion did not run");
    for (int i = 0; i < PER_RANK; i++)
        CHECK(in[i] == out[i], "int %d read back as %d, wrote %d", i, in[i], out[i]);
    char datarep[MPI_MAX_DATAREP_STRING] = "";
    MPI_Offset disp;
    MPI_Datatype etype, filetype;
    EXPECT_OK(MPI_File_get_view(file, &disp, &etype, &filetype, datarep));
    CHECK(strcmp(datarep, "wide-int") == 0 && disp == 8 * rank, "MPI_File_get_view: %s at %lld", datarep, (long long)disp);
    if (filetype != MPI_INT)
        MPI_Type_free(&filetype);

    /* In the file: native 64-bit integers, rank r's i-th at element i * size + r. */
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    int other = (rank + 1) % size;
    for (int i = 0; i < PER_RANK; i++) {
        int64_t stored = 0;
        EXPECT_OK(MPI_File_read_at(file, 8 * ((MPI_Offset)i * size + other), &stored, 8, MPI_BYTE, &status));
        CHECK(stored == value_of(other, i) - 5000, "int %d of rank %d is %lld in the file", i, other, (long long)stored);
    }
    /* A conversion that fails reports MPI_ERR_CONVERSION. */
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_DOUBLE, MPI_DOUBLE, "wide-int", MPI_INFO_NULL));
    double one = 1.0;
    int code = MPI_File_write_at(file, 0, &one, 1, MPI_DOUBLE, &status);
    CHECK(class_of(code) == MPI_ERR_CONVERSION, "a failing conversion gave class %d", class_of(code));
    MPI_Type_free(&interleaved);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Aint packed = 0;
    MPI_Pack_external_size("external32", 1, MPI_LONG, &packed);
    long_size = (int)packed;
#ifdef TEST_BRAID_ONLY
    CHECK(long_size == 4, "MPI_LONG packs in %d bytes in external32, not the standard's 4", long_size);
#endif
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "datarep", "longs");
    external_longs(path);
    io_path(path, MPI_COMM_WORLD, "datarep", "records");
    external_struct(path);
#ifdef TEST_BRAID_ONLY
    io_path(path, MPI_COMM_WORLD, "datarep", "wide");
    user_representation(path);
#endif
    report_ok("io_datarep");
    MPI_Finalize();
    return 0;
}
