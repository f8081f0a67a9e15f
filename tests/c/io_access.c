/* MPI-IO data access without views: explicit offsets (read_at/write_at and their _all forms) and
 * individual file pointers (read/write and _all, seek from SEEK_SET, SEEK_CUR and SEEK_END,
 * get_position, get_byte_offset), each rank writing its own block and reading back another's
 * after sync-barrier-sync; MPI_Get_count and MPI_Get_elements on the statuses; a read that runs
 * past the end of the file gives a short count and one past it a count of 0; a zero-count access;
 * memory datatypes that are not contiguous (vector, indexed) for both writes and reads; a
 * negative count fails with MPI_ERR_COUNT. Any number of ranks; the file lives in $TMPDIR (or
 * /tmp) and is removed. */
#define _POSIX_C_SOURCE 200809L
#include "io_files.h"

enum { BLOCK = 256 }; /* ints per rank */

static int rank, size;

static int value_of(int owner, int i, int round)
{
    return round * 1000000 + owner * 10000 + i;
}

static void fill(int *data, int owner, int round)
{
    for (int i = 0; i < BLOCK; i++)
        data[i] = value_of(owner, i, round);
}

static void check_block(const int *data, int owner, int round, const char *what)
{
    for (int i = 0; i < BLOCK; i++)
        CHECK(data[i] == value_of(owner, i, round), "%s: element %d of rank %d's block is %d, expected %d", what, i, owner, data[i],
              value_of(owner, i, round));
}

static MPI_Offset block_offset(int owner)
{
    return (MPI_Offset)owner * BLOCK * (MPI_Offset)sizeof(int);
}

static void explicit_offsets(MPI_File file)
{
    int out[BLOCK], in[BLOCK];
    MPI_Status status;
    int other = (rank + 1) % size;

    /* Independent. */
    fill(out, rank, 1);
    EXPECT_OK(MPI_File_write_at(file, block_offset(rank), out, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_write_at");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_read_at(file, block_offset(other), in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_read_at");
    check_block(in, other, 1, "MPI_File_read_at");
    int elements = -1;
    MPI_Get_elements(&status, MPI_INT, &elements);
    CHECK(elements == BLOCK, "MPI_Get_elements gave %d", elements);
    /* In bytes, the same data. */
    EXPECT_OK(MPI_File_read_at(file, block_offset(other), in, BLOCK * sizeof(int), MPI_BYTE, &status));
    CHECK_COUNT(status, MPI_BYTE, BLOCK * (int)sizeof(int), "MPI_File_read_at of bytes");
    check_block(in, other, 1, "MPI_File_read_at of bytes");
    MPI_Offset bytes = -1;
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == block_offset(size), "the file has %lld bytes, expected %lld", (long long)bytes, (long long)block_offset(size));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Collective, with the neighbour on the other side. */
    int previous = (rank + size - 1) % size;
    fill(out, rank, 2);
    EXPECT_OK(MPI_File_write_at_all(file, block_offset(rank), out, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_write_at_all");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_read_at_all(file, block_offset(previous), in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_read_at_all");
    check_block(in, previous, 2, "MPI_File_read_at_all");
    /* A collective call need not synchronise: nobody overwrites a block before all have read it. */
    MPI_Barrier(MPI_COMM_WORLD);

    /* Collective calls in which some ranks access nothing. */
    int count = rank % 2 == 0 ? BLOCK : 0;
    fill(out, rank, 3);
    EXPECT_OK(MPI_File_write_at_all(file, block_offset(rank), out, count, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, count, "MPI_File_write_at_all with some counts 0");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_read_at_all(file, block_offset(rank), in, BLOCK, MPI_INT, &status));
    check_block(in, rank, rank % 2 == 0 ? 3 : 2, "MPI_File_read_at_all after a partial collective write");
    MPI_Barrier(MPI_COMM_WORLD);

    /* A negative count is refused and writes nothing. */
    EXPECT_CLASS(MPI_File_write_at(file, 0, out, -1, MPI_INT, &status), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_File_read_at(file, 0, in, -1, MPI_INT, &status), MPI_ERR_COUNT);
    /* A zero-count access succeeds with a count of 0. */
    EXPECT_OK(MPI_File_write_at(file, block_offset(size) + 64, out, 0, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 0, "a zero-count write");
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == block_offset(size), "a zero-count write past the end changed the size to %lld", (long long)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void end_of_file(MPI_File file)
{
    int in[BLOCK];
    MPI_Status status;
    int last = size - 1;
    /* Ask for a whole block starting half a block before the end: half comes. */
    EXPECT_OK(MPI_File_read_at(file, block_offset(last) + BLOCK / 2 * sizeof(int), in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK / 2, "a read across the end of the file");
    int round = last % 2 == 0 ? 3 : 2;
    CHECK(in[0] == value_of(last, BLOCK / 2, round), "a read across the end gave %d first", in[0]);
    /* At and beyond the end: nothing. */
    EXPECT_OK(MPI_File_read_at(file, block_offset(size), in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 0, "a read at the end of the file");
    EXPECT_OK(MPI_File_read_at(file, block_offset(size) + 4096, in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 0, "a read beyond the end of the file");
    /* A count that ends inside an element: MPI_Get_count says MPI_UNDEFINED, the bytes are there. */
    EXPECT_OK(MPI_File_read_at(file, block_offset(size) - 6, in, 2, MPI_INT, &status));
    int count = 0, bytes = 0;
    MPI_Get_count(&status, MPI_INT, &count);
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    CHECK(count == MPI_UNDEFINED && bytes == 6, "a read of 6 bytes as 2 ints: count %d, %d bytes", count, bytes);
#ifdef TEST_BRAID_ONLY
    /* Collective: ranks ask from different places, each gets what is there. MPICH 4.0 (ROMIO) and
     * Open MPI 4.1 (OMPIO) both give the count asked for, not the count read. */
    MPI_Offset start = block_offset(size) - (MPI_Offset)rank * sizeof(int);
    EXPECT_OK(MPI_File_read_at_all(file, start, in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, rank, "a collective read near the end of the file");
#endif
    MPI_Barrier(MPI_COMM_WORLD);
}

static void individual_pointers(MPI_File file)
{
    int out[BLOCK], in[BLOCK];
    MPI_Status status;
    MPI_Offset position = -1, byte_offset = -1;
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == 0, "the individual pointer starts at %lld", (long long)position);

    EXPECT_OK(MPI_File_seek(file, block_offset(rank), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(rank), "after SEEK_SET the pointer is at %lld", (long long)position);
    fill(out, rank, 4);
    /* In two halves: the pointer moves by what each wrote. */
    EXPECT_OK(MPI_File_write(file, out, BLOCK / 2, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK / 2, "MPI_File_write");
    EXPECT_OK(MPI_File_write(file, out + BLOCK / 2, BLOCK / 2, MPI_INT, &status));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(rank + 1), "after the writes the pointer is at %lld, expected %lld", (long long)position,
          (long long)block_offset(rank + 1));
    EXPECT_OK(MPI_File_get_byte_offset(file, position, &byte_offset));
    CHECK(byte_offset == position, "without a view get_byte_offset(%lld) is %lld", (long long)position, (long long)byte_offset);

    /* Back over the own block from where the pointer is, and read it. */
    EXPECT_OK(MPI_File_seek(file, -(MPI_Offset)(BLOCK * sizeof(int)), MPI_SEEK_CUR));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(rank), "after SEEK_CUR back the pointer is at %lld", (long long)position);
    EXPECT_OK(MPI_File_read(file, in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_read");
    check_block(in, rank, 4, "MPI_File_read of the own block");
    io_settle(file, MPI_COMM_WORLD);

    /* The last rank's block from the end. */
    EXPECT_OK(MPI_File_seek(file, -(MPI_Offset)(BLOCK * sizeof(int)), MPI_SEEK_END));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(size - 1), "SEEK_END back one block gives %lld", (long long)position);
    EXPECT_OK(MPI_File_read(file, in, BLOCK, MPI_INT, &status));
    check_block(in, size - 1, 4, "MPI_File_read after SEEK_END");
    EXPECT_OK(MPI_File_seek(file, 0, MPI_SEEK_END));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(size), "SEEK_END gives %lld", (long long)position);
    /* Explicit offsets leave the individual pointer alone. */
    EXPECT_OK(MPI_File_read_at(file, 0, in, 4, MPI_INT, &status));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(size), "MPI_File_read_at moved the individual pointer to %lld", (long long)position);
    /* Reading at the end: nothing. (Where the pointer goes then is left open: MPICH leaves it,
     * Open MPI moves it by the count asked for.) */
    EXPECT_OK(MPI_File_read(file, in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 0, "MPI_File_read at the end");
    MPI_Barrier(MPI_COMM_WORLD);

    /* Collective forms. */
    EXPECT_OK(MPI_File_seek(file, block_offset(rank), MPI_SEEK_SET));
    fill(out, rank, 5);
    EXPECT_OK(MPI_File_write_all(file, out, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_write_all");
    io_settle(file, MPI_COMM_WORLD);
    int other = (rank + 1) % size;
    EXPECT_OK(MPI_File_seek(file, block_offset(other), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_read_all(file, in, BLOCK, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_read_all");
    check_block(in, other, 5, "MPI_File_read_all");
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(other + 1), "after MPI_File_read_all the pointer is at %lld", (long long)position);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void noncontiguous_memory(MPI_File file)
{
    /* Every other int of `spread` goes to the file, packed; read back into every third int. */
    enum { STRIDE_OUT = 2, STRIDE_IN = 3 };
    int spread[BLOCK * STRIDE_IN], in[BLOCK];
    MPI_Datatype every_other, every_third;
    MPI_Type_vector(BLOCK, 1, STRIDE_OUT, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Type_vector(BLOCK, 1, STRIDE_IN, MPI_INT, &every_third);
    MPI_Type_commit(&every_third);
    MPI_Status status;
    for (int i = 0; i < BLOCK * STRIDE_OUT; i++)
        spread[i] = i % STRIDE_OUT == 0 ? value_of(rank, i / STRIDE_OUT, 6) : -1;
    EXPECT_OK(MPI_File_write_at(file, block_offset(rank), spread, 1, every_other, &status));
    CHECK_COUNT(status, every_other, 1, "a write of one vector");
    int elements = -1;
    MPI_Get_elements(&status, MPI_INT, &elements);
    CHECK(elements == BLOCK, "a write of one vector: MPI_Get_elements gave %d", elements);
    io_settle(file, MPI_COMM_WORLD);
    int other = (rank + 1) % size;
    EXPECT_OK(MPI_File_read_at(file, block_offset(other), in, BLOCK, MPI_INT, &status));
    check_block(in, other, 6, "a contiguous read of a block written from a vector");

    for (int i = 0; i < BLOCK * STRIDE_IN; i++)
        spread[i] = -7;
    EXPECT_OK(MPI_File_read_at_all(file, block_offset(other), spread, 1, every_third, &status));
    CHECK_COUNT(status, every_third, 1, "a collective read into one vector");
    for (int i = 0; i < BLOCK * STRIDE_IN; i++) {
        int expected = i % STRIDE_IN == 0 ? value_of(other, i / STRIDE_IN, 6) : -7;
        CHECK(spread[i] == expected, "a read into a vector: int %d is %d, expected %d", i, spread[i], expected);
    }

    MPI_Barrier(MPI_COMM_WORLD);

#ifndef MPICH_VERSION
    /* A read into a vector that stops at the end of the file: the elements that came. MPICH 4.0
     * (ROMIO) gives the count asked for whenever memory is not contiguous. */
    if (rank == 0) {
        for (int i = 0; i < BLOCK * STRIDE_IN; i++)
            spread[i] = -7;
        EXPECT_OK(MPI_File_read_at(file, block_offset(size) - 10 * sizeof(int), spread, 1, every_third, &status));
        MPI_Get_elements(&status, MPI_INT, &elements);
        int count = 0;
        MPI_Get_count(&status, every_third, &count);
        CHECK(elements == 10 && count == MPI_UNDEFINED, "a read of a vector across the end: %d elements, count %d", elements, count);
        CHECK(spread[9 * STRIDE_IN] == value_of(size - 1, BLOCK - 1, 6) && spread[10 * STRIDE_IN] == -7, "a short read into a vector ends with %d, %d",
              spread[9 * STRIDE_IN], spread[10 * STRIDE_IN]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
#endif

    /* Indexed blocks of different lengths, collectively through the individual pointer. */
    int lengths[3] = {1, BLOCK / 2 - 1, BLOCK / 2}, displacements[3] = {0, 2, BLOCK + 4};
    MPI_Datatype pieces;
    MPI_Type_indexed(3, lengths, displacements, MPI_INT, &pieces);
    MPI_Type_commit(&pieces);
    int scattered[BLOCK * 2];
    for (int i = 0; i < BLOCK * 2; i++)
        scattered[i] = -1;
    int next = 0;
    for (int piece = 0; piece < 3; piece++)
        for (int i = 0; i < lengths[piece]; i++)
            scattered[displacements[piece] + i] = value_of(rank, next++, 7);
    EXPECT_OK(MPI_File_seek(file, block_offset(rank), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_write_all(file, scattered, 1, pieces, &status));
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_read_at(file, block_offset(other), in, BLOCK, MPI_INT, &status));
    check_block(in, other, 7, "a block written from an indexed type");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&pieces);
    MPI_Type_free(&every_other);
    MPI_Type_free(&every_third);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "access", "blocks");
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    explicit_offsets(file);
    end_of_file(file);
    individual_pointers(file);
    noncontiguous_memory(file);
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_disk_size(path) == (long long)block_offset(size), "the closed file has %lld bytes", io_disk_size(path));
    io_delete(path, MPI_COMM_WORLD);
    report_ok("io_access");
    MPI_Finalize();
    return 0;
}
