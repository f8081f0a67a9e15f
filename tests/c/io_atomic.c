/* MPI-IO atomic mode: a file opens in non-atomic mode, MPI_File_set_atomicity switches it (both
 * ways) and MPI_File_get_atomicity says so. With atomicity on, every rank writes the same
 * region at once, each its own value, through a contiguous view and through a view with holes
 * (every other int: written in pieces, or by reading and writing back the holes, unless the
 * implementation locks): after sync-barrier-sync every rank sees one rank's data whole, never a
 * mix, and the holes as they were. Reads that run while another rank rewrites the region see it
 * all old or all new, and a write is seen by another rank after a barrier alone. Any number of
 * ranks (with one, nothing overlaps); the file lives in $TMPDIR (or /tmp) and is removed. */
#define _POSIX_C_SOURCE 200809L
#include "io_files.h"

/* Ints each rank writes, rounds of overlapping writes, versions rank 0 writes under the reads. */
enum { N = 4096, ROUNDS = 8, VERSIONS = 32, HOLE = -1 };

static int rank, size;

static void atomicity_flag(MPI_File file)
{
    int flag = -1;
    EXPECT_OK(MPI_File_get_atomicity(file, &flag));
    CHECK(flag == 0, "a new file's atomicity is %d", flag);
    EXPECT_OK(MPI_File_set_atomicity(file, 1));
    EXPECT_OK(MPI_File_get_atomicity(file, &flag));
    CHECK(flag == 1, "after set_atomicity(1) get_atomicity gives %d", flag);
    EXPECT_OK(MPI_File_set_atomicity(file, 0));
    EXPECT_OK(MPI_File_get_atomicity(file, &flag));
    CHECK(flag == 0, "after set_atomicity(0) get_atomicity gives %d", flag);
    /* Any true value switches it on. */
    EXPECT_OK(MPI_File_set_atomicity(file, 7));
    EXPECT_OK(MPI_File_get_atomicity(file, &flag));
    CHECK(flag != 0, "after set_atomicity(7) get_atomicity gives 0");
}

/* The region of N * stride ints, the holes written to HOLE, through a byte view; then the view
 * (`filetype` takes one int in every `stride`). */
static void lay_out(MPI_File file, MPI_Datatype filetype)
{
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    if (rank == 0) {
        int *holes = malloc(sizeof(int) * 2 * N);
        for (int i = 0; i < 2 * N; i++)
            holes[i] = HOLE;
        EXPECT_OK(MPI_File_write_at(file, 0, holes, 2 * N, MPI_INT, MPI_STATUS_IGNORE));
        free(holes);
    }
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_INT, filetype, "native", MPI_INFO_NULL));
}

/* The whole region, read without a view: the N ints in the view all one writer's value, the
 * holes (the ints of 2 N outside it) untouched. Gives the value seen once every rank has read. */
static int check_region(MPI_File file, int stride, const char *what)
{
    int *whole = malloc(sizeof(int) * 2 * N);
    MPI_Status status;
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_read_at(file, 0, whole, 2 * N * sizeof(int), MPI_BYTE, &status));
    CHECK_COUNT(status, MPI_BYTE, 2 * N * (int)sizeof(int), what);
    int value = whole[0];
    for (int i = 0; i < 2 * N; i++) {
        if (i % stride != 0 || i >= N * stride)
            CHECK(whole[i] == HOLE, "%s: hole %d holds %d: a write reached past its view", what, i, whole[i]);
        else
            CHECK(whole[i] == value, "%s: int %d is %d where int 0 is %d: the writes mixed", what, i, whole[i], value);
    }
    free(whole);
    MPI_Barrier(MPI_COMM_WORLD);
    return value;
}

static void overlapping_writes(MPI_File file, MPI_Datatype filetype, int stride)
{
    int *mine = malloc(sizeof(int) * N);
    MPI_Status status;
    for (int round = 0; round < ROUNDS; round++) {
        lay_out(file, filetype);
        for (int i = 0; i < N; i++)
            mine[i] = round * 1000 + rank;
        /* Start together, so that the writes overlap in time as well as in the file. */
        MPI_Barrier(MPI_COMM_WORLD);
        EXPECT_OK(MPI_File_write_at(file, 0, mine, N, MPI_INT, &status));
        CHECK_COUNT(status, MPI_INT, N, "an overlapping write");
        io_settle(file, MPI_COMM_WORLD);
        int value = check_region(file, stride, "after overlapping writes");
        CHECK(value >= round * 1000 && value < round * 1000 + size, "round %d: the region holds %d, written by no rank", round, value);
        /* Every rank sees the same winner. */
        int lowest = 0, highest = 0;
        MPI_Allreduce(&value, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&value, &highest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lowest == highest, "round %d: ranks see %d and %d in the same region", round, lowest, highest);
    }
    free(mine);
}

/* A write seen after a barrier alone; then rank 0 rewrites the region again and again, and with
 * `concurrent_reads` the others read it meanwhile: each read sees one version whole. */
static void reads_during_writes(MPI_File file, MPI_Datatype filetype, int stride, int concurrent_reads)
{
    lay_out(file, filetype);
    int *data = malloc(sizeof(int) * N);
    MPI_Status status;
    for (int i = 0; i < N; i++)
        data[i] = 0;
    if (rank == 0)
        EXPECT_OK(MPI_File_write_at(file, 0, data, N, MPI_INT, &status));
    /* Atomic mode: a barrier alone makes the write visible. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        EXPECT_OK(MPI_File_read_at(file, 0, data, N, MPI_INT, &status));
        CHECK_COUNT(status, MPI_INT, N, "a read after a barrier");
        for (int i = 0; i < N; i++)
            CHECK(data[i] == 0, "after rank 0's write and a barrier int %d reads %d", i, data[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int last_seen = 0;
    for (int version = 1; version <= VERSIONS; version++) {
        if (rank == 0) {
            for (int i = 0; i < N; i++)
                data[i] = version;
            EXPECT_OK(MPI_File_write_at(file, 0, data, N, MPI_INT, &status));
        } else if (concurrent_reads) {
            EXPECT_OK(MPI_File_read_at(file, 0, data, N, MPI_INT, &status));
            CHECK_COUNT(status, MPI_INT, N, "a read during writes");
            for (int i = 1; i < N; i++)
                CHECK(data[i] == data[0], "a read during writes saw %d at int %d and %d at int 0: a mix of two versions", data[i], i, data[0]);
            /* Not in step with the writer, but never older than a version seen before. */
            CHECK(data[0] >= last_seen && data[0] <= VERSIONS, "a read during writes saw version %d after version %d", data[0], last_seen);
            last_seen = data[0];
        }
    }
    free(data);
    MPI_Barrier(MPI_COMM_WORLD);
    int value = check_region(file, stride, "after the reads during writes");
    CHECK(value == VERSIONS, "in the end the region holds version %d, expected %d", value, VERSIONS);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "atomic", "region");
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    atomicity_flag(file);
    MPI_Datatype pair, every_other;
    MPI_Type_contiguous(1, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, 2 * sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    overlapping_writes(file, MPI_INT, 1);
#ifdef OPEN_MPI
    /* Open MPI 4.1 (OMPIO) takes no lock in atomic mode: a read that runs during a write can see
     * part of it, and writes through a view with holes, done piece by piece, mix. */
    reads_during_writes(file, MPI_INT, 1, 0);
#else
    reads_during_writes(file, MPI_INT, 1, 1);
    overlapping_writes(file, every_other, 2);
    reads_during_writes(file, every_other, 2, 1);
#endif
    MPI_Type_free(&every_other);
    MPI_Type_free(&pair);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
    report_ok("io_atomic");
    MPI_Finalize();
    return 0;
}
