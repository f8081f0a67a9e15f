/* MPI-IO file views: MPI_File_set_view with a displacement past a header, an etype of MPI_INT
 * and a filetype that interleaves the ranks (a contiguous block resized so that rank r owns every
 * size-th block; then a vector), written collectively and checked by rank 0 reading the whole
 * file without a view; offsets, seeks and get_byte_offset count etypes inside the view; set_view
 * puts both file pointers back to 0; MPI_File_get_view gives back what was set and
 * MPI_File_get_type_extent the extents in the file. A 2-D array of doubles split in blocks over a
 * grid of ranks (subarray filetypes, and subarray memory types that skip a ghost border: the
 * checkpoint pattern) written collectively and read back by other ranks. Data representations:
 * "native", "external32" (big-endian in the file, read back through the same view), and an unknown
 * one refused with MPI_ERR_UNSUPPORTED_DATAREP. Any number of ranks; the files live in $TMPDIR
 * (or /tmp) and are removed. */
#define _POSIX_C_SOURCE 200809L
#include "io_files.h"

enum { HEADER = 64, K = 8, N = 16 }; /* header bytes, ints per block, blocks per rank */

static int rank, size;

static int value_of(int owner, int block, int j, int round)
{
    return round * 1000000 + owner * 10000 + block * K + j;
}

/* Rank 0 reads the whole file through a byte view and checks the header and that block b of the
 * file holds block b / size of rank b % size. */
static void check_interleaved(MPI_File file, int round)
{
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Offset bytes = -1;
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    MPI_Offset expected_bytes = HEADER + (MPI_Offset)size * N * K * sizeof(int);
    CHECK(bytes == expected_bytes, "the file has %lld bytes, expected %lld", (long long)bytes, (long long)expected_bytes);
    if (rank == 0) {
        char *whole = malloc(expected_bytes);
        MPI_Status status;
        EXPECT_OK(MPI_File_read_at(file, 0, whole, (int)expected_bytes, MPI_BYTE, &status));
        CHECK_COUNT(status, MPI_BYTE, (int)expected_bytes, "the read of the whole file");
        for (int i = 0; i < HEADER; i++)
            CHECK(whole[i] == 'H', "header byte %d is %d", i, whole[i]);
        const int *data = (const int *)(whole + HEADER);
        for (int b = 0; b < size * N; b++)
            for (int j = 0; j < K; j++)
                CHECK(data[b * K + j] == value_of(b % size, b / size, j, round), "round %d: int %d of file block %d is %d, expected %d", round, j, b,
                      data[b * K + j], value_of(b % size, b / size, j, round));
        free(whole);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The view is `disp`, `etype` and a filetype of that extent and size in "native". The filetype
 * comes back as a new derived handle whose combiner is left open (Open MPI gives a
 * MPI_COMBINER_DUP, MPICH a contiguous type of one), so only its extent and size are compared. */
static void check_view(MPI_File file, MPI_Offset disp, MPI_Datatype etype, MPI_Aint extent, int type_size)
{
    MPI_Offset got_disp = -1;
    MPI_Datatype got_etype, got_filetype;
    char datarep[MPI_MAX_DATAREP_STRING] = "";
    EXPECT_OK(MPI_File_get_view(file, &got_disp, &got_etype, &got_filetype, datarep));
    CHECK(got_disp == disp, "MPI_File_get_view: displacement %lld, expected %lld", (long long)got_disp, (long long)disp);
    CHECK(got_etype == etype, "MPI_File_get_view gave another etype");
    CHECK(strcmp(datarep, "native") == 0, "MPI_File_get_view: datarep '%s'", datarep);
    int integers, addresses, types, got_combiner;
    MPI_Type_get_envelope(got_filetype, &integers, &addresses, &types, &got_combiner);
    CHECK(got_combiner != MPI_COMBINER_NAMED, "MPI_File_get_view gave a predefined filetype for a derived one");
    MPI_Aint lb, got_extent;
    int got_size;
    MPI_Type_get_extent(got_filetype, &lb, &got_extent);
    MPI_Type_size(got_filetype, &got_size);
    CHECK(lb == 0 && got_extent == extent && got_size == type_size, "the filetype has lb %ld, extent %ld, size %d", (long)lb, (long)got_extent,
          got_size);
    MPI_Type_free(&got_filetype);
    MPI_Aint file_extent = -1;
    EXPECT_OK(MPI_File_get_type_extent(file, MPI_INT, &file_extent));
    CHECK(file_extent == (MPI_Aint)sizeof(int), "MPI_File_get_type_extent(MPI_INT) is %ld", (long)file_extent);
}

static void interleaved(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    MPI_Status status;
    if (rank == 0) {
        char header[HEADER];
        memset(header, 'H', sizeof header);
        EXPECT_OK(MPI_File_write_at(file, 0, header, HEADER, MPI_BYTE, &status));
    }
    /* One block of K ints, its extent stretched over one block of every rank. */
    MPI_Datatype block, stretched;
    MPI_Type_contiguous(K, MPI_INT, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)size * K * sizeof(int), &stretched);
    MPI_Type_commit(&stretched);
    MPI_Offset disp = HEADER + (MPI_Offset)rank * K * sizeof(int);
    /* Pointers moved before the view are put back to 0 by it. */
    EXPECT_OK(MPI_File_seek(file, 12, MPI_SEEK_SET));
    EXPECT_OK(MPI_File_set_view(file, disp, MPI_INT, stretched, "native", MPI_INFO_NULL));
    MPI_Offset position = -1;
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == 0, "after MPI_File_set_view the individual pointer is at %lld", (long long)position);
    EXPECT_OK(MPI_File_get_position_shared(file, &position));
    CHECK(position == 0, "after MPI_File_set_view the shared pointer is at %lld", (long long)position);
    check_view(file, disp, MPI_INT, (MPI_Aint)size * K * sizeof(int), K * sizeof(int));
    MPI_Aint file_extent = -1;
    EXPECT_OK(MPI_File_get_type_extent(file, stretched, &file_extent));
    CHECK(file_extent == (MPI_Aint)(size * K * sizeof(int)), "MPI_File_get_type_extent of the filetype is %ld", (long)file_extent);
    /* Element K + 1 of the view: the second int of this rank's second block. */
    MPI_Offset byte_offset = -1;
    EXPECT_OK(MPI_File_get_byte_offset(file, K + 1, &byte_offset));
    MPI_Offset expected = disp + (MPI_Offset)size * K * sizeof(int) + sizeof(int);
    CHECK(byte_offset == expected, "MPI_File_get_byte_offset(%d) is %lld, expected %lld", K + 1, (long long)byte_offset, (long long)expected);

    int out[N * K], in[N * K];
    for (int b = 0; b < N; b++)
        for (int j = 0; j < K; j++)
            out[b * K + j] = value_of(rank, b, j, 1);
    EXPECT_OK(MPI_File_write_all(file, out, N * K, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, N * K, "MPI_File_write_all through the view");
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == N * K, "after the write the pointer is at %lld etypes, expected %d", (long long)position, N * K);
    io_settle(file, MPI_COMM_WORLD);
    /* Seeks count etypes of the view. */
    EXPECT_OK(MPI_File_seek(file, 2 * K + 3, MPI_SEEK_SET));
    EXPECT_OK(MPI_File_read(file, in, 1, MPI_INT, &status));
    CHECK(in[0] == value_of(rank, 2, 3, 1), "element %d of the view is %d", 2 * K + 3, in[0]);
#ifndef OPEN_MPI
    /* The end of the file is past every rank's last block. Open MPI 4.1 (OMPIO) puts the end of a
     * view with holes one filetype from its start. */
    EXPECT_OK(MPI_File_seek(file, -K, MPI_SEEK_END));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == (N - 1) * K, "SEEK_END back %d etypes gives %lld, expected %d", K, (long long)position, (N - 1) * K);
#endif
    MPI_Barrier(MPI_COMM_WORLD);
    check_interleaved(file, 1);

    /* SEEK_END in a contiguous view of ints after the header: the last int is the last rank's. */
    EXPECT_OK(MPI_File_set_view(file, HEADER, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_seek(file, -1, MPI_SEEK_END));
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == size * N * K - 1, "SEEK_END back 1 int after the header gives %lld, expected %d", (long long)position, size * N * K - 1);
    EXPECT_OK(MPI_File_read(file, in, 1, MPI_INT, &status));
    CHECK(in[0] == value_of(size - 1, N - 1, K - 1, 1), "the last int is %d", in[0]);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Another rank's view, collectively: its blocks come back in order. */
    int other = (rank + 1) % size;
    EXPECT_OK(MPI_File_set_view(file, HEADER + (MPI_Offset)other * K * sizeof(int), MPI_INT, stretched, "native", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_read_at_all(file, 0, in, N * K, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, N * K, "MPI_File_read_at_all through another rank's view");
    for (int i = 0; i < N * K; i++)
        CHECK(in[i] == value_of(other, i / K, i % K, 1), "element %d of rank %d's view is %d", i, other, in[i]);
    MPI_Barrier(MPI_COMM_WORLD);

    /* The same layout from a vector filetype, and explicit offsets in etypes. */
    MPI_Datatype vector;
    MPI_Type_vector(N, K, size * K, MPI_INT, &vector);
    MPI_Type_commit(&vector);
    EXPECT_OK(MPI_File_set_view(file, disp, MPI_INT, vector, "native", MPI_INFO_NULL));
    check_view(file, disp, MPI_INT, (MPI_Aint)((N - 1) * size * K + K) * sizeof(int), N * K * sizeof(int));
    for (int i = 0; i < N * K; i++)
        out[i] = value_of(rank, i / K, i % K, 2);
    /* In two collective calls: the second starts at etype K * N / 2. */
    EXPECT_OK(MPI_File_write_at_all(file, 0, out, N * K / 2, MPI_INT, &status));
    EXPECT_OK(MPI_File_write_at_all(file, N * K / 2, out + N * K / 2, N * K / 2, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, N * K / 2, "MPI_File_write_at_all through a vector view");
    check_interleaved(file, 2);
    EXPECT_OK(MPI_File_set_view(file, disp, MPI_INT, vector, "native", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_read_at_all(file, K, in, K, MPI_INT, &status));
    for (int j = 0; j < K; j++)
        CHECK(in[j] == value_of(rank, 1, j, 2), "etype %d of the vector view is %d", K + j, in[j]);
    MPI_Type_free(&vector);
    MPI_Type_free(&block);
    MPI_Type_free(&stretched);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
}

/* A GLOBAL_ROWS x GLOBAL_COLUMNS array of doubles split in blocks over a 2-D grid of ranks. */
enum { GLOBAL_ROWS = 12, GLOBAL_COLUMNS = 12 };

static double cell(int row, int column)
{
    return row * GLOBAL_COLUMNS + column + 0.5;
}

/* The filetype of rank `who`'s block; sets its first row and column and the block's shape. */
static MPI_Datatype block_type(const int dims[2], int who, int *first_row, int *first_column, int *rows, int *columns)
{
    *rows = GLOBAL_ROWS / dims[0];
    *columns = GLOBAL_COLUMNS / dims[1];
    *first_row = who / dims[1] * *rows;
    *first_column = who % dims[1] * *columns;
    int sizes[2] = {GLOBAL_ROWS, GLOBAL_COLUMNS}, subsizes[2] = {*rows, *columns}, starts[2] = {*first_row, *first_column};
    MPI_Datatype type;
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
    return type;
}

/* The local block in memory with a ghost border of one cell on every side. */
static MPI_Datatype interior_type(int rows, int columns)
{
    int sizes[2] = {rows + 2, columns + 2}, subsizes[2] = {rows, columns}, starts[2] = {1, 1};
    MPI_Datatype type;
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
    return type;
}

static void checkpoint(const char *path)
{
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    CHECK(GLOBAL_ROWS % dims[0] == 0 && GLOBAL_COLUMNS % dims[1] == 0, "a %d x %d grid does not divide the array", dims[0], dims[1]);
    int first_row, first_column, rows, columns;
    MPI_Datatype filetype = block_type(dims, rank, &first_row, &first_column, &rows, &columns);
    MPI_Datatype interior = interior_type(rows, columns);
    int stride = columns + 2;
    double *local = malloc(sizeof(double) * (rows + 2) * stride);
    for (int i = 0; i < rows + 2; i++)
        for (int j = 0; j < stride; j++)
            local[i * stride + j] = (i == 0 || j == 0 || i == rows + 1 || j == columns + 1) ? -1.0 : cell(first_row + i - 1, first_column + j - 1);

    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL);
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL));
    MPI_Status status;
    EXPECT_OK(MPI_File_write_all(file, local, 1, interior, &status));
    CHECK_COUNT(status, interior, 1, "the collective write of the block");
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_disk_size(path) == (long long)(GLOBAL_ROWS * GLOBAL_COLUMNS * sizeof(double)), "the checkpoint has %lld bytes", io_disk_size(path));

    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY);
    if (rank == 0) {
        double whole[GLOBAL_ROWS * GLOBAL_COLUMNS];
        EXPECT_OK(MPI_File_read_at(file, 0, whole, GLOBAL_ROWS * GLOBAL_COLUMNS, MPI_DOUBLE, &status));
        CHECK_COUNT(status, MPI_DOUBLE, GLOBAL_ROWS * GLOBAL_COLUMNS, "the read of the whole checkpoint");
        for (int i = 0; i < GLOBAL_ROWS; i++)
            for (int j = 0; j < GLOBAL_COLUMNS; j++)
                CHECK(whole[i * GLOBAL_COLUMNS + j] == cell(i, j), "cell (%d, %d) of the checkpoint is %g", i, j, whole[i * GLOBAL_COLUMNS + j]);
    }
    /* A restart on other ranks: each reads the block of the next rank into its interior. */
    int other = (rank + 1) % size;
    MPI_Type_free(&filetype);
    filetype = block_type(dims, other, &first_row, &first_column, &rows, &columns);
    for (int i = 0; i < (rows + 2) * stride; i++)
        local[i] = -2.0;
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_read_all(file, local, 1, interior, &status));
    CHECK_COUNT(status, interior, 1, "the collective read of a block");
    for (int i = 0; i < rows + 2; i++)
        for (int j = 0; j < stride; j++) {
            double expected = (i == 0 || j == 0 || i == rows + 1 || j == columns + 1) ? -2.0 : cell(first_row + i - 1, first_column + j - 1);
            CHECK(local[i * stride + j] == expected, "cell (%d, %d) of rank %d's block read back as %g, expected %g", i, j, other,
                  local[i * stride + j], expected);
        }
    io_close(&file);
    free(local);
    MPI_Type_free(&filetype);
    MPI_Type_free(&interior);
    io_delete(path, MPI_COMM_WORLD);
}

static void representations(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    EXPECT_CLASS(MPI_File_set_view(file, 0, MPI_INT, MPI_INT, "no-such-representation", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP);

    /* external32: each rank writes 4 ints, big-endian in the file. */
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    char datarep[MPI_MAX_DATAREP_STRING] = "";
    MPI_Offset disp;
    MPI_Datatype etype, filetype;
    EXPECT_OK(MPI_File_get_view(file, &disp, &etype, &filetype, datarep));
    CHECK(strcmp(datarep, "external32") == 0, "MPI_File_get_view: datarep '%s'", datarep);
    MPI_Aint extent = -1;
    EXPECT_OK(MPI_File_get_type_extent(file, MPI_INT, &extent));
    CHECK(extent == 4, "MPI_INT takes %ld bytes in external32", (long)extent);
    EXPECT_OK(MPI_File_get_type_extent(file, MPI_DOUBLE, &extent));
    CHECK(extent == 8, "MPI_DOUBLE takes %ld bytes in external32", (long)extent);
    int out[4], in[4];
    for (int i = 0; i < 4; i++)
        out[i] = 0x01020304 + rank * 0x10 + i * 0x100000;
    MPI_Status status;
    EXPECT_OK(MPI_File_write_at_all(file, rank * 4, out, 4, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 4, "a write in external32");
    io_settle(file, MPI_COMM_WORLD);
    int other = (rank + 1) % size;
    EXPECT_OK(MPI_File_read_at_all(file, other * 4, in, 4, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 4, "a read in external32");
    for (int i = 0; i < 4; i++)
        CHECK(in[i] == 0x01020304 + other * 0x10 + i * 0x100000, "int %d of rank %d read back in external32 as %#x", i, other, in[i]);
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char bytes[16];
    EXPECT_OK(MPI_File_read_at(file, other * 16, bytes, 16, MPI_BYTE, &status));
    for (int i = 0; i < 4; i++) {
        unsigned value = (unsigned)bytes[4 * i] << 24 | (unsigned)bytes[4 * i + 1] << 16 | (unsigned)bytes[4 * i + 2] << 8 | bytes[4 * i + 3];
        CHECK(value == (unsigned)(0x01020304 + other * 0x10 + i * 0x100000), "int %d of rank %d is %#x big-endian in the file", i, other, value);
    }
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "views", "interleaved");
    interleaved(path);
    io_path(path, MPI_COMM_WORLD, "views", "checkpoint");
    checkpoint(path);
    io_path(path, MPI_COMM_WORLD, "views", "datarep");
    representations(path);
    report_ok("io_views");
    MPI_Finalize();
    return 0;
}
