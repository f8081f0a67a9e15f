/* What a job started by the launcher can rely on in failure: it has no parent
 * (MPI_Comm_get_parent gives MPI_COMM_NULL); an I/O error comes back to the caller under the
 * default file error handler even when MPI_COMM_WORLD's is MPI_ERRORS_ARE_FATAL, or goes to the
 * handler set on MPI_FILE_NULL; a call on MPI_WIN_NULL fails under MPI_ERRORS_RETURN. With the
 * argument "fatal" it calls MPI_Win_fence on MPI_WIN_NULL under MPI_ERRORS_ARE_FATAL, which must
 * end the job with a message naming MPI_Win_fence. Runs on any number of ranks. */
#include <string.h>
#include "check.h"

static int file_errors;

static void count_file_error(MPI_File *file, int *code, ...)
{
    (void)file;
    (void)code;
    file_errors++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc == 2 && strcmp(argv[1], "fatal") == 0) {
        MPI_Win_fence(0, MPI_WIN_NULL);
        fprintf(stderr, "MPI_Win_fence on MPI_WIN_NULL returned instead of ending the job\n");
        return 1;
    }

    MPI_Comm parent = MPI_COMM_WORLD;
    CHECK(MPI_Comm_get_parent(&parent) == MPI_SUCCESS, "MPI_Comm_get_parent failed");
    CHECK(parent == MPI_COMM_NULL, "MPI_Comm_get_parent did not give MPI_COMM_NULL");

    /* Files have their own error handler, MPI_ERRORS_RETURN: MPI_COMM_WORLD's fatal one does not
     * apply. A handler set on MPI_FILE_NULL is called instead. */
    MPI_File file = MPI_FILE_NULL;
    int code = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-braid-directory/file", MPI_MODE_RDONLY, MPI_INFO_NULL, &file);
    CHECK(code != MPI_SUCCESS, "MPI_File_open of a file in a missing directory succeeded");
    MPI_Errhandler counting;
    MPI_File_create_errhandler(count_file_error, &counting);
    MPI_File_set_errhandler(MPI_FILE_NULL, counting);
    code = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-braid-directory/file", MPI_MODE_RDONLY, MPI_INFO_NULL, &file);
    CHECK(code != MPI_SUCCESS && file_errors == 1, "MPI_File_open returned %d and called MPI_FILE_NULL's handler %d times", code, file_errors);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&counting);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Win_fence(0, MPI_WIN_NULL) != MPI_SUCCESS, "MPI_Win_fence on MPI_WIN_NULL succeeded");
    report_ok("unsupported");
    MPI_Finalize();
    return 0;
}
