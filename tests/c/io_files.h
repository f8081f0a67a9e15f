/* Shared by the MPI-IO tests: file names unique to one run, in $TMPDIR (or /tmp), so that runs
 * side by side or a run left behind by a crash never meet; and small checks of what a file holds
 * as seen from outside MPI. The program must define _POSIX_C_SOURCE before any header. */
#ifndef BRAID_TEST_IO_FILES_H
#define BRAID_TEST_IO_FILES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

enum { IO_PATH_MAX = 512 };

/* Writes into `path` the name "$TMPDIR/braid-io-PROGRAM-PID-WHAT", where PID is rank 0's of
 * `comm` (broadcast: every rank gets the same name). Collective over `comm`. */
static inline void io_path(char *path, MPI_Comm comm, const char *program, const char *what)
{
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, comm);
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    int length = snprintf(path, IO_PATH_MAX, "%s/braid-io-%s-%ld-%s", dir, program, pid, what);
    CHECK(length > 0 && length < IO_PATH_MAX, "the file name under '%s' is too long", dir);
}

/* Whether the file exists, asked of the file system directly. */
static inline int io_exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

/* The file's size in bytes from the file system, -1 if it is missing. */
static inline long long io_disk_size(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0 ? (long long)info.st_size : -1;
}

/* Rank 0 of `comm` removes the file with MPI_File_delete, which must succeed; afterwards no rank
 * sees it. Collective over `comm`. */
static inline void io_delete(const char *path, MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Barrier(comm);
    if (rank == 0)
        expect_class_at(__FILE__, __LINE__, MPI_File_delete(path, MPI_INFO_NULL), MPI_SUCCESS, MPI_SUCCESS, "MPI_File_delete");
    MPI_Barrier(comm);
    CHECK(!io_exists(path), "%s is still there after MPI_File_delete", path);
}

/* Opens `path` on `comm`, which must succeed. */
static inline MPI_File io_open(MPI_Comm comm, const char *path, int amode)
{
    MPI_File file = MPI_FILE_NULL;
    int code = MPI_File_open(comm, path, amode, MPI_INFO_NULL, &file);
    expect_class_at(__FILE__, __LINE__, code, MPI_SUCCESS, MPI_SUCCESS, "MPI_File_open");
    CHECK(file != MPI_FILE_NULL, "MPI_File_open of %s succeeded and gave MPI_FILE_NULL", path);
    return file;
}

/* Closes the file, which must succeed and leave MPI_FILE_NULL. */
static inline void io_close(MPI_File *file)
{
    expect_class_at(__FILE__, __LINE__, MPI_File_close(file), MPI_SUCCESS, MPI_SUCCESS, "MPI_File_close");
    CHECK(*file == MPI_FILE_NULL, "MPI_File_close left the handle");
}

/* Makes writes of every rank visible to every rank in non-atomic mode: the standard's
 * sync-barrier-sync. Collective over the file's communicator `comm`. */
static inline void io_settle(MPI_File file, MPI_Comm comm)
{
    expect_class_at(__FILE__, __LINE__, MPI_File_sync(file), MPI_SUCCESS, MPI_SUCCESS, "MPI_File_sync");
    MPI_Barrier(comm);
    expect_class_at(__FILE__, __LINE__, MPI_File_sync(file), MPI_SUCCESS, MPI_SUCCESS, "MPI_File_sync");
}

/* The element count of a status for `type`, checked to be `expected`. */
#define CHECK_COUNT(status, type, expected, what)                                                           \
    do {                                                                                                   \
        int count_ = -1;                                                                                   \
        MPI_Get_count(&(status), (type), &count_);                                                         \
        CHECK(count_ == (expected), "%s: MPI_Get_count gave %d, expected %d", (what), count_, (int)(expected)); \
    } while (0)

/* EXPECT_OK(MPI_File_...(...)): the call succeeded (file calls return under MPI_ERRORS_RETURN). */
#define EXPECT_OK(call) EXPECT_CLASS(call, MPI_SUCCESS)

#endif
