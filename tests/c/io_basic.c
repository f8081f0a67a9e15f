/* MPI-IO files as objects: MPI_File_open in each access mode the standard allows, and the error
 * classes of the ones it forbids (a read-only mode with CREATE or EXCL, two or none of RDONLY,
 * WRONLY and RDWR, EXCL on an existing file, a missing file without CREATE); close, delete,
 * set_size, preallocate, get_size, get_amode, get_group, set_info/get_info, sync; DELETE_ON_CLOSE,
 * UNIQUE_OPEN, APPEND and SEQUENTIAL; a write to a read-only file and a read of a write-only one.
 * Error handlers: a file's default is MPI_ERRORS_RETURN (errors come back as codes while
 * MPI_COMM_WORLD keeps MPI_ERRORS_ARE_FATAL), a new file takes MPI_FILE_NULL's, a user handler set
 * on a file runs on its errors and on MPI_File_call_errhandler. Any number of ranks; the files
 * live in $TMPDIR (or /tmp) and are removed. */
#define _POSIX_C_SOURCE 200809L
#include "io_files.h"

static int rank, size;
static int file_errors, last_error_class;

static void count_file_error(MPI_File *file, int *code, ...)
{
    (void)file;
    file_errors++;
    last_error_class = class_of(*code);
}

/* Checks the handler MPI_File_get_errhandler gave and frees it. MPICH 4.0's
 * MPI_File_get_errhandler takes no reference on the handler (freeing it trips an assertion on the
 * reference count), so there it is left alone. */
static void check_handler(MPI_Errhandler got, MPI_Errhandler expected, const char *what)
{
    CHECK(got == expected, "%s", what);
#ifndef MPICH_VERSION
    MPI_Errhandler_free(&got);
#endif
}

static void default_handler(void)
{
    MPI_Errhandler handler;
    EXPECT_OK(MPI_File_get_errhandler(MPI_FILE_NULL, &handler));
    check_handler(handler, MPI_ERRORS_RETURN, "MPI_FILE_NULL's error handler is not MPI_ERRORS_RETURN");
    /* An error on MPI_FILE_NULL itself goes to that handler: back to the caller. */
    MPI_Offset bytes = -1;
    EXPECT_CLASS(MPI_File_get_size(MPI_FILE_NULL, &bytes), MPI_ERR_FILE);
}

static void access_modes(const char *path)
{
    MPI_File file = MPI_FILE_NULL;
    CHECK(!io_exists(path), "%s exists before the test", path);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &file), MPI_ERR_NO_SUCH_FILE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &file), MPI_ERR_NO_SUCH_FILE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &file), MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &file), MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &file), MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_INFO_NULL, &file), MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &file), MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE, MPI_INFO_NULL, &file), MPI_ERR_AMODE);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!io_exists(path), "a refused MPI_File_open created %s", path);

    /* EXCL creates a missing file and refuses an existing one. */
    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL);
    int amode = -1;
    EXPECT_OK(MPI_File_get_amode(file, &amode));
    CHECK(amode == (MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL), "MPI_File_get_amode gave %#x", amode);
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_exists(path) && io_disk_size(path) == 0, "MPI_File_open with CREATE made no empty %s", path);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &file), MPI_ERR_FILE_EXISTS);

    /* Every mode the standard allows on an existing file, each given back by get_amode. */
    static const int allowed[] = {
        MPI_MODE_RDONLY,
        MPI_MODE_RDWR,
        MPI_MODE_WRONLY,
        MPI_MODE_RDWR | MPI_MODE_CREATE,
        MPI_MODE_WRONLY | MPI_MODE_CREATE,
        MPI_MODE_RDONLY | MPI_MODE_UNIQUE_OPEN,
        MPI_MODE_RDWR | MPI_MODE_UNIQUE_OPEN,
        MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL,
        MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
        MPI_MODE_WRONLY | MPI_MODE_APPEND,
        MPI_MODE_RDWR | MPI_MODE_APPEND,
        MPI_MODE_RDONLY | MPI_MODE_APPEND,
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        file = io_open(MPI_COMM_WORLD, path, allowed[i]);
        amode = -1;
        EXPECT_OK(MPI_File_get_amode(file, &amode));
        CHECK(amode == allowed[i], "MPI_File_get_amode gave %#x for a file opened with %#x", amode, allowed[i]);
        io_close(&file);
    }

    /* APPEND: both file pointers start at the end. */
    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR);
    EXPECT_OK(MPI_File_set_size(file, 24));
    io_close(&file);
    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_APPEND);
    MPI_Offset position = -1;
    EXPECT_OK(MPI_File_get_position(file, &position));
    CHECK(position == 24, "with MPI_MODE_APPEND the individual pointer starts at %lld, not 24", (long long)position);
    position = -1;
    EXPECT_OK(MPI_File_get_position_shared(file, &position));
    CHECK(position == 24, "with MPI_MODE_APPEND the shared pointer starts at %lld, not 24", (long long)position);
    io_close(&file);

    /* Opened by one rank alone. */
    file = io_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
    EXPECT_EITHER_CLASS(MPI_File_delete(path, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE, MPI_ERR_IO);
}

static void sizes(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
    MPI_Offset bytes = -1;
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == 0, "a new file has size %lld", (long long)bytes);
    /* A rank may finish its part of a collective size change before another has asked the size:
     * every size is read between barriers. */
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_set_size(file, 1000));
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == 1000, "after MPI_File_set_size(1000) the size is %lld", (long long)bytes);
    EXPECT_OK(MPI_File_sync(file));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_disk_size(path) == 1000, "the file system says %lld bytes, not 1000", io_disk_size(path));
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_set_size(file, 100));
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == 100, "after shrinking to 100 the size is %lld", (long long)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_preallocate(file, 4096));
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == 4096, "after MPI_File_preallocate(4096) the size is %lld", (long long)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Preallocating less than the size changes nothing. */
    EXPECT_OK(MPI_File_preallocate(file, 10));
    EXPECT_OK(MPI_File_get_size(file, &bytes));
    CHECK(bytes == 4096, "after MPI_File_preallocate(10) the size is %lld", (long long)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Data written before a shrink below it is cut; what stays is kept. */
    char text[8] = "abcdefg";
    if (rank == 0)
        EXPECT_OK(MPI_File_write_at(file, 0, text, 8, MPI_CHAR, MPI_STATUS_IGNORE));
    io_settle(file, MPI_COMM_WORLD);
    EXPECT_OK(MPI_File_set_size(file, 4));
    MPI_Barrier(MPI_COMM_WORLD);
    char back[8] = {0};
    MPI_Status status;
    EXPECT_OK(MPI_File_read_at(file, 0, back, 8, MPI_CHAR, &status));
    CHECK_COUNT(status, MPI_CHAR, 4, "a read of 8 bytes of a 4-byte file");
    CHECK(memcmp(back, "abcd", 4) == 0, "the first bytes after the shrink are '%.4s'", back);
    EXPECT_OK(MPI_File_sync(file));
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_disk_size(path) == 4, "after close the file system says %lld bytes, not 4", io_disk_size(path));
    io_delete(path, MPI_COMM_WORLD);
}

static void groups_and_info(const char *path)
{
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE);
    MPI_Group group, world_group;
    int result = -1;
    EXPECT_OK(MPI_File_get_group(file, &group));
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_compare(group, world_group, &result);
    CHECK(result == MPI_IDENT, "the file's group compares %d with MPI_COMM_WORLD's", result);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);

    /* set_info with a reserved hint is accepted; get_info gives a new info object to free. */
    MPI_Info info, used = MPI_INFO_NULL;
    MPI_Info_create(&info);
    MPI_Info_set(info, "access_style", "read_mostly");
    EXPECT_OK(MPI_File_set_info(file, info));
    MPI_Info_free(&info);
    EXPECT_OK(MPI_File_get_info(file, &used));
    CHECK(used != MPI_INFO_NULL, "MPI_File_get_info gave MPI_INFO_NULL");
    int keys = -1;
    MPI_Info_get_nkeys(used, &keys);
    CHECK(keys >= 0, "the file's info has %d keys", keys);
    MPI_Info_free(&used);
    EXPECT_OK(MPI_File_sync(file));
    io_close(&file);

    /* A file opened by half of the ranks: its group is theirs. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    char own_path[IO_PATH_MAX + 16];
    snprintf(own_path, sizeof own_path, "%s-%d", path, rank % 2);
    file = io_open(half, own_path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE);
    MPI_Group half_group;
    EXPECT_OK(MPI_File_get_group(file, &group));
    MPI_Comm_group(half, &half_group);
    MPI_Group_compare(group, half_group, &result);
    CHECK(result == MPI_IDENT, "the group of a file opened on a split compares %d with the split's", result);
    MPI_Group_free(&group);
    MPI_Group_free(&half_group);
    io_close(&file);
    MPI_Comm_free(&half);
    io_delete(path, MPI_COMM_WORLD);
}

static void special_modes(const char *path)
{
    int values[4] = {rank, rank + 1, rank + 2, rank + 3};
    MPI_Status status;

    /* DELETE_ON_CLOSE: the file is gone once every rank has closed it. */
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE);
    EXPECT_OK(MPI_File_write_at(file, rank * (MPI_Offset)sizeof values, values, 4, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 4, "MPI_File_write_at");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_exists(path), "%s is gone before its close", path);
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!io_exists(path), "%s opened with MPI_MODE_DELETE_ON_CLOSE is still there after close", path);

    /* UNIQUE_OPEN: an ordinary file. */
    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_UNIQUE_OPEN);
    EXPECT_OK(MPI_File_write_at(file, rank * (MPI_Offset)sizeof values, values, 4, MPI_INT, &status));
    io_settle(file, MPI_COMM_WORLD);
    int other = (rank + 1) % size, back[4] = {-1, -1, -1, -1};
    EXPECT_OK(MPI_File_read_at(file, other * (MPI_Offset)sizeof values, back, 4, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 4, "MPI_File_read_at");
    CHECK(back[0] == other && back[3] == other + 3, "rank %d's values read back as %d..%d", other, back[0], back[3]);
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);

    /* SEQUENTIAL: the shared pointer works; explicit offsets and the individual pointer do not. */
    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_SEQUENTIAL);
    EXPECT_OK(MPI_File_write_ordered(file, values, 4, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 4, "MPI_File_write_ordered");
    EXPECT_OK(MPI_File_write_shared(file, values, 1, MPI_INT, &status));
#ifndef OPEN_MPI
    /* The standard calls these erroneous; Open MPI 4.1 does not check and writes. */
    EXPECT_EITHER_CLASS(MPI_File_write_at(file, 0, values, 1, MPI_INT, &status), MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_AMODE);
    EXPECT_EITHER_CLASS(MPI_File_write(file, values, 1, MPI_INT, &status), MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_AMODE);
#endif
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(io_disk_size(path) == (long long)(5 * size * sizeof(int)), "the sequential file has %lld bytes, expected %lld", io_disk_size(path),
          (long long)(5 * size * sizeof(int)));
    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL);
    EXPECT_OK(MPI_File_read_ordered(file, back, 4, MPI_INT, &status));
    CHECK_COUNT(status, MPI_INT, 4, "MPI_File_read_ordered");
    CHECK(back[0] == rank && back[3] == rank + 3, "read_ordered gave %d..%d on rank %d", back[0], back[3], rank);
#ifndef OPEN_MPI
    EXPECT_EITHER_CLASS(MPI_File_read_at(file, 0, back, 1, MPI_INT, &status), MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_AMODE);
#endif
    io_close(&file);
    io_delete(path, MPI_COMM_WORLD);
}

static void wrong_direction_and_handlers(const char *path)
{
    int values[4] = {1, 2, 3, 4};
    MPI_Status status;
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE);
    /* A new file's handler is MPI_FILE_NULL's: MPI_ERRORS_RETURN. */
    MPI_Errhandler handler;
    EXPECT_OK(MPI_File_get_errhandler(file, &handler));
    check_handler(handler, MPI_ERRORS_RETURN, "a new file's error handler is not MPI_ERRORS_RETURN");
    EXPECT_OK(MPI_File_write_at(file, rank * (MPI_Offset)sizeof values, values, 4, MPI_INT, &status));
    EXPECT_CLASS(MPI_File_read_at(file, 0, values, 4, MPI_INT, &status), MPI_ERR_ACCESS);
    io_close(&file);

    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY);
    EXPECT_EITHER_CLASS(MPI_File_write_at(file, 0, values, 4, MPI_INT, &status), MPI_ERR_READ_ONLY, MPI_ERR_ACCESS);
    EXPECT_EITHER_CLASS(MPI_File_write(file, values, 4, MPI_INT, &status), MPI_ERR_READ_ONLY, MPI_ERR_ACCESS);

    /* A user handler on the file: runs on the file's errors, with the code the call returns. */
    MPI_Errhandler counting;
    EXPECT_OK(MPI_File_create_errhandler(count_file_error, &counting));
    EXPECT_OK(MPI_File_set_errhandler(file, counting));
    EXPECT_OK(MPI_File_get_errhandler(file, &handler));
    check_handler(handler, counting, "MPI_File_get_errhandler did not give the handler set");
    int code = MPI_File_write_at(file, 0, values, 4, MPI_INT, &status);
    CHECK(code != MPI_SUCCESS && file_errors == 1, "a write to a read-only file returned %d and ran the handler %d times", code, file_errors);
    CHECK(last_error_class == class_of(code), "the handler saw class %d, the call returned class %d", last_error_class, class_of(code));
    EXPECT_OK(MPI_File_call_errhandler(file, MPI_ERR_OTHER));
    CHECK(file_errors == 2 && last_error_class == MPI_ERR_OTHER, "MPI_File_call_errhandler: %d calls, class %d", file_errors, last_error_class);
    /* Reads still work and run no handler. */
    int back[4] = {0};
    EXPECT_OK(MPI_File_read_at(file, 0, back, 4, MPI_INT, &status));
    CHECK(back[3] == 4 && file_errors == 2, "read %d, handler ran %d times", back[3], file_errors);
    EXPECT_OK(MPI_File_set_errhandler(file, MPI_ERRORS_RETURN));
    io_close(&file);

    /* A handler set on MPI_FILE_NULL is taken by files opened afterwards, and runs on a failed open. */
    EXPECT_OK(MPI_File_set_errhandler(MPI_FILE_NULL, counting));
    file = io_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY);
    EXPECT_OK(MPI_File_get_errhandler(file, &handler));
    check_handler(handler, counting, "a file opened after MPI_File_set_errhandler(MPI_FILE_NULL) has another handler");
    io_close(&file);
    MPI_File missing = MPI_FILE_NULL;
    char missing_path[IO_PATH_MAX + 16];
    snprintf(missing_path, sizeof missing_path, "%s-missing", path);
    code = MPI_File_open(MPI_COMM_WORLD, missing_path, MPI_MODE_RDONLY, MPI_INFO_NULL, &missing);
    CHECK(code != MPI_SUCCESS && file_errors == 3 && last_error_class == MPI_ERR_NO_SUCH_FILE,
          "a failed open returned class %d, ran MPI_FILE_NULL's handler %d times (class %d)", class_of(code), file_errors - 2, last_error_class);
    EXPECT_OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    EXPECT_OK(MPI_Errhandler_free(&counting));
    io_delete(path, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[IO_PATH_MAX];
    default_handler();
    io_path(path, MPI_COMM_WORLD, "basic", "modes");
    access_modes(path);
    io_path(path, MPI_COMM_WORLD, "basic", "sizes");
    sizes(path);
    io_path(path, MPI_COMM_WORLD, "basic", "groups");
    groups_and_info(path);
    io_path(path, MPI_COMM_WORLD, "basic", "special");
    special_modes(path);
    io_path(path, MPI_COMM_WORLD, "basic", "handlers");
    wrong_direction_and_handlers(path);
    report_ok("io_basic");
    MPI_Finalize();
    return 0;
}
