/* The shared file pointer of MPI-IO: MPI_File_write_shared from every rank at once (the file
 * holds every rank's records exactly once, whole, and is as long as all of them), read_shared
 * (every record is read by exactly one rank), write_ordered/read_ordered and their split forms
 * (the data in rank order), seek_shared from SEEK_SET, SEEK_CUR and SEEK_END with
 * get_position_shared, in a view of ints; the shared pointer and the individual pointers move
 * apart. Any number of ranks; the files live in $TMPDIR (or /tmp) and are removed. */
#define _POSIX_C_SOURCE 200809L
#include "io_files.h"

enum { RECORD = 16, RECORDS = 3 }; /* ints per record, records per rank */

static int rank, size;

static int value_of(int owner, int record, int i)
{
    return owner * 100000 + record * 1000 + i;
}

/* The shared pointer is at `expected`; checked between barriers, since any rank's next access
 * moves it for all. */
static void expect_shared_position(MPI_File file, MPI_Offset expected, const char *what)
{
    MPI_Offset position = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_get_position_shared(file, &position));
    CHECK(position == expected, "%s: the shared pointer is at %lld, expected %lld", what, (long long)position, (long long)expected);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Whose record `data` is: sets owner and number after checking that it is whole. */
static void identify(const int *data, int *owner, int *number, const char *what)
{
    *owner = data[0] / 100000;
    *number = data[0] / 1000 % 100;
    CHECK(*owner >= 0 && *owner < size && *number >= 0 && *number < RECORDS, "%s: a record starts with %d", what, data[0]);
    for (int i = 0; i < RECORD; i++)
        CHECK(data[i] == value_of(*owner, *number, i), "%s: int %d of rank %d's record %d is %d (torn or misplaced)", what, i, *owner, *number,
              data[i]);
}

static void shared_records(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    MPI_Offset position = -1;
    expect_shared_position(file, 0, "at the start");
    int record[RECORD];
    MPI_Status status;
    for (int k = 0; k < RECORDS; k++) {
        for (int i = 0; i < RECORD; i++)
            record[i] = value_of(rank, k, i);
        EXPECT_OK(MPI_File_write_shared(file, record, RECORD, MPI_INT, &status));
        CHECK_COUNT(status, MPI_INT, RECORD, "MPI_File_write_shared");
    }
    /* The individual pointer stayed where it was. */
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == 0, "MPI_File_write_shared moved the individual pointer to %lld", (long long)position);
    io_settle(file, MPI_COMM_WORLD);
    MPI_Offset total = (MPI_Offset)size * RECORDS * RECORD * sizeof(int);
    expect_shared_position(file, total, "after every write");
    MPI_Offset bytes = -1;
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == total, "the file has %lld bytes, expected %lld", (long long)bytes, (long long)total);

    /* Every record exactly once, whole. */
    if (rank == 0) {
        int *whole = malloc(total);
        char *seen = calloc(size * RECORDS, 1);
        EXPECT_OK(MPI_File_read_at(file, 0, whole, size * RECORDS * RECORD, MPI_INT, &status));
        for (int r = 0; r < size * RECORDS; r++) {
            int owner, number;
            identify(whole + r * RECORD, &owner, &number, "the file after write_shared");
            CHECK(!seen[owner * RECORDS + number], "rank %d's record %d is in the file twice", owner, number);
            seen[owner * RECORDS + number] = 1;
        }
        /* Each rank's own records in the order it wrote them. */
        int next[64] = {0};
        for (int r = 0; r < size * RECORDS; r++) {
            int owner = whole[r * RECORD] / 100000, number = whole[r * RECORD] / 1000 % 100;
            if (owner < 64) {
                CHECK(number == next[owner], "rank %d's record %d comes before its record %d", owner, number, next[owner]);
                next[owner]++;
            }
        }
        free(seen);
        free(whole);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Back to the start; every rank reads records through the shared pointer until none is left. */
    EXPECT_OK(MPI_File_seek_shared(file, 0, MPI_SEEK_SET));
    expect_shared_position(file, 0, "after seek_shared to 0");
    int read_ids[RECORDS * 64], read_count = 0;
    for (;;) {
        EXPECT_OK(MPI_File_read_shared(file, record, RECORD, MPI_INT, &status));
        int count = -1;
        MPI_Get_count(&status, MPI_INT, &count);
        if (count == 0)
            break;
        CHECK(count == RECORD, "MPI_File_read_shared read %d ints of a record", count);
        CHECK(read_count < size * RECORDS, "more records read than written");
        int owner, number;
        identify(record, &owner, &number, "MPI_File_read_shared");
        read_ids[read_count++] = owner * RECORDS + number;
    }
    /* Together the ranks read each record once. */
    int *counts = malloc(sizeof(int) * size), *displacements = malloc(sizeof(int) * size);
    MPI_Allgather(&read_count, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    int sum = 0;
    for (int r = 0; r < size; r++) {
        displacements[r] = sum;
        sum += counts[r];
    }
    CHECK(sum == size * RECORDS, "the ranks read %d records through the shared pointer, expected %d", sum, size * RECORDS);
    int *all_ids = malloc(sizeof(int) * sum);
    MPI_Allgatherv(read_ids, read_count, MPI_INT, all_ids, counts, displacements, MPI_INT, MPI_COMM_WORLD);
    char *seen = calloc(sum, 1);
    for (int i = 0; i < sum; i++) {
        CHECK(!seen[all_ids[i]], "record %d was read twice", all_ids[i]);
        seen[all_ids[i]] = 1;
    }
    free(seen);
    free(all_ids);
    free(counts);
    free(displacements);
    MPI_Barrier(MPI_COMM_WORLD);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
}

/* Rank r writes r + 1 ints in the ordered calls: its data starts at r (r + 1) / 2. */
static int ordered_start(int r)
{
    return r * (r + 1) / 2;
}

static void ordered(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int total = ordered_start(size);
    int out[64], in[64];
    MPI_Status status;
    for (int i = 0; i <= rank; i++)
        out[i] = rank * 100 + i;
    EXPECT_OK(MPI_File_write_ordered(file, out, rank + 1, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, rank + 1, "MPI_File_write_ordered");
    expect_shared_position(file, total, "after write_ordered");
    io_settle(file, MPI_COMM_WORLD);
    if (rank == 0) {
        int *whole = malloc(sizeof(int) * total);
        EXPECT_OK(MPI_File_read_at(file, 0, whole, total, MPI_INT, &status));
        CHECK_COUNT(status, MPI_INT, total, "the read of the ordered file");
        for (int r = 0; r < size; r++)
            for (int i = 0; i <= r; i++)
                CHECK(whole[ordered_start(r) + i] == r * 100 + i, "int %d of rank %d's ordered data is %d", i, r, whole[ordered_start(r) + i]);
        free(whole);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* read_ordered from the start: each rank gets its own data back. */
    EXPECT_OK(MPI_File_seek_shared(file, 0, MPI_SEEK_SET));
    EXPECT_OK(MPI_File_read_ordered(file, in, rank + 1, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, rank + 1, "MPI_File_read_ordered");
    for (int i = 0; i <= rank; i++)
        CHECK(in[i] == rank * 100 + i, "read_ordered: int %d is %d", i, in[i]);
    expect_shared_position(file, total, "after read_ordered");

    /* seek_shared in ints of the view: SEEK_CUR back over the last rank's data, SEEK_END. */
    EXPECT_OK(MPI_File_seek_shared(file, -size, MPI_SEEK_CUR));
    expect_shared_position(file, total - size, "after SEEK_CUR back");
    EXPECT_OK(MPI_File_seek_shared(file, 0, MPI_SEEK_END));
    expect_shared_position(file, total, "after SEEK_END");
    EXPECT_OK(MPI_File_seek_shared(file, -1, MPI_SEEK_END));
    if (rank == size - 1) {
        EXPECT_OK(MPI_File_read_shared(file, in, 1, MPI_INT, &status));
        CHECK_COUNT(status, MPI_INT, 1, "read_shared of the last int");
        CHECK(in[0] == rank * 100 + rank, "the last int is %d", in[0]);
    }
    expect_shared_position(file, total, "after reading the last int");

    /* Split forms, appending at the end: each rank writes 2 ints in rank order. */
    int pair[2] = {rank * 100 + 50, rank * 100 + 51};
    EXPECT_OK(MPI_File_write_ordered_begin(file, pair, 2, MPI_INT));
    EXPECT_OK(MPI_File_write_ordered_end(file, pair, &status));
    CHECK_COUNT(status, MPI_INT, 2, "MPI_File_write_ordered_end");
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_seek_shared(file, total, MPI_SEEK_SET));
    expect_shared_position(file, total, "after seek_shared to the appended data");
    int back[2] = {-1, -1};
    EXPECT_OK(MPI_File_read_ordered_begin(file, back, 2, MPI_INT));
    EXPECT_OK(MPI_File_read_ordered_end(file, back, &status));
    CHECK_COUNT(status, MPI_INT, 2, "MPI_File_read_ordered_end");
    CHECK(back[0] == rank * 100 + 50 && back[1] == rank * 100 + 51, "the split ordered read gave %d, %d", back[0], back[1]);
    /* The individual pointer never moved. */
    MPI_Offset position = -1;
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == 0, "the ordered calls moved the individual pointer to %lld", (long long)position);
    MPI_Barrier(MPI_COMM_WORLD);
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_disk_size(path) == (long long)((total + 2 * size) * sizeof(int)), "the ordered file has %lld bytes", io_disk_size(path));
    io_delete(path, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "io_shared runs on at most 64 ranks, not %d", size);
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "shared", "records");
    shared_records(path);
    io_path(path, MPI_COMM_WORLD, "shared", "ordered");
    ordered(path);
    report_ok("io_shared");
    MPI_Finalize();
    return 0;
}
