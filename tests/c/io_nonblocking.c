/* Non-blocking MPI-IO: iwrite_at/iread_at, iwrite/iread (the individual pointer moves when the
 * call starts, before the request completes), iwrite_shared/iread_shared, completed by MPI_Wait,
 * MPI_Waitall, MPI_Waitany, MPI_Testall and MPI_Test, with counts in the statuses; MPI 3.1's
 * non-blocking collectives (iwrite_at_all, iread_at_all, iwrite_all, iread_all); the split
 * collectives (write_all_begin/end, read_all_begin/end, write_at_all_begin/end,
 * read_at_all_begin/end); and a request that completes under MPI_Test alone, the program never
 * waiting. Any number of ranks; the file lives in $TMPDIR (or /tmp) and is removed. */
#define _POSIX_C_SOURCE 200809L
#include "io_files.h"

enum { BLOCK = 1024, BIG = 1 << 18 }; /* ints per rank block; ints of the large request */

static int rank, size;

static int value_of(int owner, int i, int round)
{
    return round * 10000000 + owner * 100000 + i;
}

static void fill(int *data, int owner, int round)
{
    for (int i = 0; i < BLOCK; i++)
        data[i] = value_of(owner, i, round);
}

static void check_block(const int *data, int owner, int round, const char *what)
{
    for (int i = 0; i < BLOCK; i++)
        CHECK(data[i] == value_of(owner, i, round), "%s: int %d of rank %d's block is %d, expected %d", what, i, owner, data[i],
              value_of(owner, i, round));
}

static MPI_Offset block_offset(int owner)
{
    return (MPI_Offset)owner * BLOCK * (MPI_Offset)sizeof(int);
}

/* MPI_Test until the request completes, for at most 30 s; gives the number of tests. */
static long test_until_done(MPI_Request *request, MPI_Status *status, const char *what)
{
    double deadline = MPI_Wtime() + 30.0;
    long tests = 0;
    int done = 0;
    while (!done) {
        EXPECT_OK(MPI_Test(request, &done, status));
        tests++;
        CHECK(done || MPI_Wtime() < deadline, "%s: not complete after %ld calls of MPI_Test in 30 s", what, tests);
    }
    CHECK(*request == MPI_REQUEST_NULL, "%s: MPI_Test left the request", what);
    return tests;
}

static void explicit_offsets(MPI_File file)
{
    int out[BLOCK], in[BLOCK];
    MPI_Request request;
    MPI_Status status;
    int other = (rank + 1) % size;
    fill(out, rank, 1);
    EXPECT_OK(MPI_File_iwrite_at(file, block_offset(rank), out, BLOCK, MPI_INT, &request));
    EXPECT_OK(MPI_Wait(&request, &status));
    CHECK(request == MPI_REQUEST_NULL, "MPI_Wait left the request");
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iwrite_at");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_iread_at(file, block_offset(other), in, BLOCK, MPI_INT, &request));
    test_until_done(&request, &status, "MPI_File_iread_at");
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iread_at");
    check_block(in, other, 1, "MPI_File_iread_at");
    /* Several at once, each half of a block, completed in whatever order MPI_Waitany gives. */
    int halves[2][BLOCK / 2];
    MPI_Request requests[2];
    EXPECT_OK(MPI_File_iread_at(file, block_offset(other), halves[0], BLOCK / 2, MPI_INT, &requests[0]));
    EXPECT_OK(MPI_File_iread_at(file, block_offset(other) + BLOCK / 2 * sizeof(int), halves[1], BLOCK / 2, MPI_INT, &requests[1]));
    int seen = 0;
    for (int k = 0; k < 2; k++) {
        int index = -1;
        EXPECT_OK(MPI_Waitany(2, requests, &index, &status));
        CHECK(index == 0 || index == 1, "MPI_Waitany gave index %d", index);
        CHECK(!(seen & (1 << index)), "MPI_Waitany gave index %d twice", index);
        seen |= 1 << index;
        CHECK_COUNT(status, MPI_INT, BLOCK / 2, "MPI_File_iread_at of half a block");
    }
    CHECK(halves[0][0] == value_of(other, 0, 1) && halves[1][0] == value_of(other, BLOCK / 2, 1), "the halves start with %d and %d", halves[0][0],
          halves[1][0]);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void individual_pointers(MPI_File file)
{
    int out[BLOCK], in[BLOCK];
    MPI_Request requests[2];
    MPI_Status statuses[2];
    MPI_Offset position = -1;
    fill(out, rank, 2);
    EXPECT_OK(MPI_File_seek(file, block_offset(rank), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_iwrite(file, out, BLOCK / 2, MPI_INT, &requests[0]));
    /* The pointer moved when the write started. */
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(rank) + BLOCK / 2 * (MPI_Offset)sizeof(int), "after MPI_File_iwrite started the pointer is at %lld",
          (long long)position);
    EXPECT_OK(MPI_File_iwrite(file, out + BLOCK / 2, BLOCK / 2, MPI_INT, &requests[1]));
    EXPECT_OK(MPI_Waitall(2, requests, statuses));
    CHECK_COUNT(statuses[0], MPI_INT, BLOCK / 2, "the first MPI_File_iwrite");
    CHECK_COUNT(statuses[1], MPI_INT, BLOCK / 2, "the second MPI_File_iwrite");
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(rank + 1), "after both writes the pointer is at %lld", (long long)position);
    io_settle(file, MPI_COMM_WORLD);

    int previous = (rank + size - 1) % size;
    EXPECT_OK(MPI_File_seek(file, block_offset(previous), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_iread(file, in, BLOCK / 2, MPI_INT, &requests[0]));
    EXPECT_OK(MPI_File_iread(file, in + BLOCK / 2, BLOCK / 2, MPI_INT, &requests[1]));
#ifdef MPICH_VERSION
    /* MPICH 4.0's MPI_Testall breaks the reference count of ROMIO's file requests (an assertion
     * fails once they complete), so there each is tested alone. */
    test_until_done(&requests[0], &statuses[0], "the first MPI_File_iread");
    test_until_done(&requests[1], &statuses[1], "the second MPI_File_iread");
#else
    int done = 0;
    double deadline = MPI_Wtime() + 30.0;
    while (!done) {
        EXPECT_OK(MPI_Testall(2, requests, &done, statuses));
        CHECK(done || MPI_Wtime() < deadline, "MPI_Testall: two reads not complete in 30 s");
    }
#endif
    CHECK_COUNT(statuses[1], MPI_INT, BLOCK / 2, "the second MPI_File_iread");
    check_block(in, previous, 2, "MPI_File_iread");
    MPI_Barrier(MPI_COMM_WORLD);
}

static void shared_pointer(MPI_File file)
{
    /* Every rank appends one block through the shared pointer, after the blocks. */
    EXPECT_OK(MPI_File_seek_shared(file, block_offset(size), MPI_SEEK_SET));
    int out[BLOCK], in[BLOCK];
    fill(out, rank, 3);
    MPI_Request request;
    MPI_Status status;
    EXPECT_OK(MPI_File_iwrite_shared(file, out, BLOCK, MPI_INT, &request));
    EXPECT_OK(MPI_Wait(&request, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iwrite_shared");
    io_settle(file, MPI_COMM_WORLD);
    MPI_Offset position = -1;
    EXPECT_OK(MPI_File_get_position_shared(file, &position));
    CHECK(position == block_offset(2 * size), "after iwrite_shared the shared pointer is at %lld", (long long)position);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Each block read back by exactly one rank. */
    EXPECT_OK(MPI_File_seek_shared(file, block_offset(size), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_iread_shared(file, in, BLOCK, MPI_INT, &request));
    test_until_done(&request, &status, "MPI_File_iread_shared");
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iread_shared");
    int owner = in[0] / 100000 % 100;
    CHECK(owner >= 0 && owner < size, "MPI_File_iread_shared read a block starting with %d", in[0]);
    check_block(in, owner, 3, "MPI_File_iread_shared");
    int *owners = malloc(sizeof(int) * size);
    MPI_Allgather(&owner, 1, MPI_INT, owners, 1, MPI_INT, MPI_COMM_WORLD);
    for (int a = 0; a < size; a++)
        for (int b = a + 1; b < size; b++)
            CHECK(owners[a] != owners[b], "ranks %d and %d both read rank %d's block", a, b, owners[a]);
    free(owners);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void collectives(MPI_File file)
{
    int out[BLOCK], in[BLOCK];
    MPI_Request request;
    MPI_Status status;
    int other = (rank + 1) % size;

    fill(out, rank, 4);
    EXPECT_OK(MPI_File_iwrite_at_all(file, block_offset(rank), out, BLOCK, MPI_INT, &request));
    EXPECT_OK(MPI_Wait(&request, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iwrite_at_all");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_iread_at_all(file, block_offset(other), in, BLOCK, MPI_INT, &request));
    test_until_done(&request, &status, "MPI_File_iread_at_all");
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iread_at_all");
    check_block(in, other, 4, "MPI_File_iread_at_all");
    MPI_Barrier(MPI_COMM_WORLD);

    fill(out, rank, 5);
    EXPECT_OK(MPI_File_seek(file, block_offset(rank), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_iwrite_all(file, out, BLOCK, MPI_INT, &request));
    test_until_done(&request, &status, "MPI_File_iwrite_all");
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iwrite_all");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_seek(file, block_offset(other), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_iread_all(file, in, BLOCK, MPI_INT, &request));
    EXPECT_OK(MPI_Wait(&request, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_iread_all");
    check_block(in, other, 5, "MPI_File_iread_all");
    MPI_Offset position = -1;
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == block_offset(other + 1), "after MPI_File_iread_all the pointer is at %lld", (long long)position);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Split collectives. */
    fill(out, rank, 6);
    EXPECT_OK(MPI_File_seek(file, block_offset(rank), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_write_all_begin(file, out, BLOCK, MPI_INT));
    EXPECT_OK(MPI_File_write_all_end(file, out, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_write_all_end");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_read_at_all_begin(file, block_offset(other), in, BLOCK, MPI_INT));
    EXPECT_OK(MPI_File_read_at_all_end(file, in, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_read_at_all_end");
    check_block(in, other, 6, "MPI_File_read_at_all_begin/end");
    MPI_Barrier(MPI_COMM_WORLD);
    fill(out, rank, 7);
    EXPECT_OK(MPI_File_write_at_all_begin(file, block_offset(rank), out, BLOCK, MPI_INT));
    EXPECT_OK(MPI_File_write_at_all_end(file, out, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_write_at_all_end");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_seek(file, block_offset(other), MPI_SEEK_SET));
    EXPECT_OK(MPI_File_read_all_begin(file, in, BLOCK, MPI_INT));
    EXPECT_OK(MPI_File_read_all_end(file, in, &status));
    CHECK_COUNT(status, MPI_INT, BLOCK, "MPI_File_read_all_end");
    check_block(in, other, 7, "MPI_File_read_all_begin/end");
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A large write that the program only tests: MPI_Test alone must bring it to completion. */
static void progress_by_test(MPI_File file)
{
    int *big = malloc(sizeof(int) * BIG);
    for (int i = 0; i < BIG; i++)
        big[i] = rank * BIG + i;
    MPI_Offset at = block_offset(2 * size) + (MPI_Offset)rank * BIG * sizeof(int);
    MPI_Request request;
    MPI_Status status;
    EXPECT_OK(MPI_File_iwrite_at(file, at, big, BIG, MPI_INT, &request));
    test_until_done(&request, &status, "a large MPI_File_iwrite_at");
    CHECK_COUNT(status, MPI_INT, BIG, "a large MPI_File_iwrite_at");
    for (int i = 0; i < BIG; i++)
        big[i] = -1;
    EXPECT_OK(MPI_File_iread_at(file, at, big, BIG, MPI_INT, &request));
    test_until_done(&request, &status, "a large MPI_File_iread_at");
    for (int i = 0; i < BIG; i++)
        CHECK(big[i] == rank * BIG + i, "int %d of the large request read back as %d", i, big[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    /* And a collective one, every rank testing. */
    EXPECT_OK(MPI_File_iwrite_at_all(file, at, big, BIG, MPI_INT, &request));
    test_until_done(&request, &status, "a large MPI_File_iwrite_at_all");
    CHECK_COUNT(status, MPI_INT, BIG, "a large MPI_File_iwrite_at_all");
    free(big);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "nonblocking", "blocks");
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    explicit_offsets(file);
    individual_pointers(file);
    shared_pointer(file);
    collectives(file);
    progress_by_test(file);
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    long long expected = (long long)block_offset(2 * size) + (long long)size * BIG * sizeof(int);
    CHECK(io_disk_size(path) == expected, "the file has %lld bytes, expected %lld", io_disk_size(path), expected);
    io_delete(path, MPI_COMM_WORLD);
    report_ok("io_nonblocking");
    MPI_Finalize();
    return 0;
}
