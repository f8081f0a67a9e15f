/* What a job started by the launcher can rely on outside Braid's supported families: it has no
 * parent (MPI_Comm_get_parent gives MPI_COMM_NULL); an I/O error comes back to the caller under
 * the default file error handler even when MPI_COMM_WORLD's is MPI_ERRORS_ARE_FATAL, or goes to
 * the handler set on MPI_FILE_NULL; a call on MPI_WIN_NULL fails under MPI_ERRORS_RETURN. Under
 * TEST_BRAID_ONLY: every call of MPI-IO returns MPI_ERR_UNSUPPORTED_OPERATION (dynamic
 * processes: connect.c and spawn.c). With the argument "fatal" it calls MPI_Win_fence on
 * MPI_WIN_NULL under MPI_ERRORS_ARE_FATAL, which must end the job with a message naming
 * MPI_Win_fence. Runs on any number of ranks. */
#include <string.h>
#include "check.h"

#ifdef TEST_BRAID_ONLY
static void expect_unsupported(int code, const char *call)
{
    int class_of_code = -1, length = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(code, &class_of_code);
    MPI_Error_string(code, text, &length);
    CHECK(class_of_code == MPI_ERR_UNSUPPORTED_OPERATION, "%s returned class %d (%s), expected MPI_ERR_UNSUPPORTED_OPERATION", call, class_of_code,
          text);
}

static void io(void)
{
    MPI_File file = MPI_FILE_NULL;
    MPI_Offset offset = 0;
    MPI_Status status;
    MPI_Request request;
    int data[4] = {0}, flag = 0;
    expect_unsupported(MPI_File_open(MPI_COMM_WORLD, "braid-io-test", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &file), "MPI_File_open");
    expect_unsupported(MPI_File_delete("braid-io-test", MPI_INFO_NULL), "MPI_File_delete");
    expect_unsupported(MPI_File_close(&file), "MPI_File_close");
    expect_unsupported(MPI_File_set_view(file, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), "MPI_File_set_view");
    expect_unsupported(MPI_File_write_at_all(file, 0, data, 4, MPI_INT, &status), "MPI_File_write_at_all");
    expect_unsupported(MPI_File_iread(file, data, 4, MPI_INT, &request), "MPI_File_iread");
    expect_unsupported(MPI_File_read_ordered_begin(file, data, 4, MPI_INT), "MPI_File_read_ordered_begin");
    expect_unsupported(MPI_File_get_position_shared(file, &offset), "MPI_File_get_position_shared");
    expect_unsupported(MPI_File_seek(file, 0, MPI_SEEK_END), "MPI_File_seek");
    expect_unsupported(MPI_File_get_atomicity(file, &flag), "MPI_File_get_atomicity");
    expect_unsupported(MPI_File_sync(file), "MPI_File_sync");
    expect_unsupported(MPI_Register_datarep("mine", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, NULL, NULL), "MPI_Register_datarep");
}
#endif

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
#ifdef TEST_BRAID_ONLY
    io();
#endif
    report_ok("unsupported");
    MPI_Finalize();
    return 0;
}
