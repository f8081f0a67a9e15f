/* MPI-IO failures that come from the file system, not from the arguments: `io_errors DIR`, where
 * DIR is a nearly full file system (the runner mounts a 1 MiB tmpfs there). A write larger than
 * the room left fails with MPI_ERR_NO_SPACE (or MPI_ERR_IO), returned under the default file error
 * handler, and the program goes on: the file still closes and deletes; a directory opened for
 * writing is MPI_ERR_BAD_FILE. Braid only: MPI_ERR_DUP_DATAREP for a data representation
 * registered twice, MPI_ERR_UNSUPPORTED_DATAREP for a view in one; a file removed
 * by another program while it is open is reported by MPI_File_sync and MPI_File_close
 * (MPI_ERR_IO, or MPI_ERR_NO_SUCH_FILE) instead of its data vanishing without a word (the
 * other implementations let the writes land in the unlinked file). Runs on any number of
 * ranks. */
#define _POSIX_C_SOURCE 200809L
#include "io_files.h"

enum { BIG = 4 << 20 };

static void full_file_system(const char *dir)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[IO_PATH_MAX];
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/braid-io-errors-%ld-full", dir, pid);
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY);
    char *data = calloc(BIG, 1);
    CHECK(data != NULL, "no memory");
    int code = MPI_SUCCESS;
    if (rank == 0)
        code = MPI_File_write_at(file, 0, data, BIG, MPI_BYTE, MPI_STATUS_IGNORE);
    if (rank == 0)
        expect_class_at(__FILE__, __LINE__, code, MPI_ERR_NO_SPACE, MPI_ERR_IO, "a write larger than the file system");
    free(data);
    io_close(&file);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        expect_class_at(__FILE__, __LINE__, MPI_File_delete(path, MPI_INFO_NULL), MPI_SUCCESS, MPI_SUCCESS, "MPI_File_delete of the full file");
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A directory is no file to write: MPI_ERR_BAD_FILE (MPI_ERR_IO accepted). */
static void directory(const char *dir)
{
    MPI_File file = MPI_FILE_NULL;
    expect_class_at(__FILE__, __LINE__, MPI_File_open(MPI_COMM_WORLD, dir, MPI_MODE_RDWR, MPI_INFO_NULL, &file), MPI_ERR_BAD_FILE, MPI_ERR_IO,
                    "MPI_File_open of a directory for writing");
    CHECK(file == MPI_FILE_NULL, "a failed MPI_File_open gave a file");
}

#ifdef TEST_BRAID_ONLY
/* Data representations: a name registers once (the predefined ones never), and only with an
 * extent function; with no conversion functions the data goes as in memory, which a file whose
 * extents differ from memory's cannot hold: MPI_ERR_CONVERSION. MPICH and Open MPI refuse
 * MPI_Register_datarep altogether. (Conversions: io_datarep.c.) */
static int doubled_extent(MPI_Datatype datatype, MPI_Aint *extent, void *extra_state)
{
    (void)extra_state;
    MPI_Aint lb;
    int code = MPI_Type_get_extent(datatype, &lb, extent);
    *extent *= *(int *)extra_state;
    return code;
}

static void representations(void)
{
    static int same = 1, twice = 2;
    expect_class_at(__FILE__, __LINE__, MPI_Register_datarep("braid-test-rep", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, NULL, NULL), MPI_ERR_ARG,
                    MPI_ERR_ARG, "MPI_Register_datarep without an extent function");
    expect_class_at(__FILE__, __LINE__, MPI_Register_datarep("braid-test-rep", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, doubled_extent, &same),
                    MPI_SUCCESS, MPI_SUCCESS, "MPI_Register_datarep");
    expect_class_at(__FILE__, __LINE__, MPI_Register_datarep("braid-test-rep", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, doubled_extent, &same),
                    MPI_ERR_DUP_DATAREP, MPI_ERR_DUP_DATAREP, "MPI_Register_datarep of a name twice");
    expect_class_at(__FILE__, __LINE__, MPI_Register_datarep("native", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, doubled_extent, &same),
                    MPI_ERR_DUP_DATAREP, MPI_ERR_DUP_DATAREP, "MPI_Register_datarep of native");
    expect_class_at(__FILE__, __LINE__, MPI_Register_datarep("braid-test-doubled", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, doubled_extent, &twice),
                    MPI_SUCCESS, MPI_SUCCESS, "MPI_Register_datarep");
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "errors", "datarep");
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE);
    int value = 42, back = 0;
    MPI_Status status;
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_INT, MPI_INT, "braid-test-rep", MPI_INFO_NULL));
    EXPECT_OK(MPI_File_write_at(file, 0, &value, 1, MPI_INT, &status));
    EXPECT_OK(MPI_File_read_at(file, 0, &back, 1, MPI_INT, &status));
    CHECK(back == 42, "an int written as in memory read back as %d", back);
    EXPECT_OK(MPI_File_set_view(file, 0, MPI_INT, MPI_INT, "braid-test-doubled", MPI_INFO_NULL));
    EXPECT_CLASS(MPI_File_write_at(file, 0, &value, 1, MPI_INT, &status), MPI_ERR_CONVERSION);
    io_close(&file);
}

static void removed_while_open(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[IO_PATH_MAX];
    io_path(path, MPI_COMM_WORLD, "errors", "removed");
    MPI_File file = io_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR);
    int value = 42;
    expect_class_at(__FILE__, __LINE__, MPI_File_write_at(file, rank, &value, 1, MPI_BYTE, MPI_STATUS_IGNORE), MPI_SUCCESS, MPI_SUCCESS,
                    "a write before the file goes");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(unlink(path) == 0, "cannot remove %s behind MPI's back", path);
    MPI_Barrier(MPI_COMM_WORLD);
    expect_class_at(__FILE__, __LINE__, MPI_File_sync(file), MPI_ERR_IO, MPI_ERR_NO_SUCH_FILE, "MPI_File_sync of a removed file");
    int code = MPI_File_close(&file);
    expect_class_at(__FILE__, __LINE__, code, MPI_ERR_IO, MPI_ERR_NO_SUCH_FILE, "MPI_File_close of a removed file");
    CHECK(file == MPI_FILE_NULL, "MPI_File_close of a removed file kept the handle");
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK(argc == 2, "usage: io_errors DIR (a file system of about 1 MiB)");
    full_file_system(argv[1]);
    directory(argv[1]);
#ifdef TEST_BRAID_ONLY
    representations();
    removed_while_open();
#endif
    report_ok("io_errors");
    MPI_Finalize();
    return 0;
}
