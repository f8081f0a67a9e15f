/* Error handlers and user error codes: MPI_Add_error_class/code/string with MPI_Error_class,
 * MPI_Error_string and MPI_LASTUSEDCODE; user communicator handlers (called with the failing
 * communicator and code, may change the code and call MPI, inherited by duplicates, alive while
 * attached after MPI_Errhandler_free); MPI_Comm_call_errhandler; window handlers (no window
 * exists yet: calls on one fail with MPI_ERR_WIN); MPI_FILE_NULL's handler; the MPI-1 names
 * (not in Open MPI, which removed them). Error classes are checked under MPI_ERRORS_RETURN; checks
 * where MPICH or Open MPI is lenient are Braid-only. Runs on any number of ranks. */
#include <string.h>
#include "check.h"

static int rank, size;

/* What the recording handler saw last. */
static int calls;
static MPI_Comm last_comm;
static int last_code;
static char last_text[MPI_MAX_ERROR_STRING];

static void record(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_comm = *comm;
    last_code = *code;
    /* A handler may call MPI. */
    int length;
    MPI_Error_string(*code, last_text, &length);
}

/* Replaces every error by the code in `replacement`. */
static int replacement;
static void replace(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    calls++;
    *code = replacement;
}

static int file_calls;
static MPI_File last_file;
static void record_file(MPI_File *file, int *code, ...)
{
    file_calls++;
    last_file = *file;
    last_code = *code;
}

static void record_window(MPI_Win *win, int *code, ...)
{
    (void)win;
    (void)code;
}

static int lastusedcode(void)
{
    int *value, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &value, &flag);
    CHECK(flag, "MPI_LASTUSEDCODE is not set");
    return *value;
}

static void user_codes(void)
{
    CHECK(lastusedcode() >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d is below MPI_ERR_LASTCODE %d", lastusedcode(), MPI_ERR_LASTCODE);
    int class, code, arg_code;
    expect_class(MPI_Add_error_class(&class), MPI_SUCCESS, "MPI_Add_error_class");
    CHECK(class > MPI_ERR_LASTCODE, "the new class %d is not above MPI_ERR_LASTCODE", class);
    CHECK(lastusedcode() >= class, "MPI_LASTUSEDCODE %d is below the new class %d", lastusedcode(), class);
    expect_class(MPI_Add_error_code(class, &code), MPI_SUCCESS, "MPI_Add_error_code");
    CHECK(code != class && code > MPI_ERR_LASTCODE, "the new code is %d (class %d)", code, class);
#ifdef TEST_BRAID_ONLY
    CHECK(lastusedcode() == code, "MPI_LASTUSEDCODE is %d, not the new code %d", lastusedcode(), code);
#endif
    expect_class(MPI_Add_error_code(MPI_ERR_ARG, &arg_code), MPI_SUCCESS, "MPI_Add_error_code(MPI_ERR_ARG)");
    int found;
    MPI_Error_class(code, &found);
    CHECK(found == class, "MPI_Error_class of the new code gave %d, expected %d", found, class);
#if defined(TEST_BRAID_ONLY) || defined(MPICH_VERSION)
    /* Open MPI 4.1 gives MPI_ERR_UNKNOWN for an added class. */
    MPI_Error_class(class, &found);
    CHECK(found == class, "MPI_Error_class of the new class gave %d", found);
#endif
    MPI_Error_class(arg_code, &found);
    CHECK(found == MPI_ERR_ARG, "MPI_Error_class of a code of MPI_ERR_ARG gave %d", found);

    char text[MPI_MAX_ERROR_STRING];
    int length = -1;
    expect_class(MPI_Error_string(code, text, &length), MPI_SUCCESS, "MPI_Error_string of a code without a string");
    CHECK(length == 0 && text[0] == '\0', "a code without a string has the text '%s'", text);
    MPI_Add_error_string(code, "the disk is on fire");
    MPI_Add_error_string(class, "hardware trouble");
    MPI_Error_string(code, text, &length);
    CHECK(strcmp(text, "the disk is on fire") == 0 && length == (int)strlen(text), "MPI_Error_string gave '%s' (%d)", text, length);
    MPI_Add_error_string(code, "the disk is still on fire");
    MPI_Error_string(code, text, &length);
    CHECK(strcmp(text, "the disk is still on fire") == 0, "a second MPI_Add_error_string gave '%s'", text);
    MPI_Error_string(class, text, &length);
    CHECK(strcmp(text, "hardware trouble") == 0, "the class's text is '%s'", text);

    /* A user code raised through a handler reaches the program unchanged. */
    expect_class(MPI_Comm_call_errhandler(MPI_COMM_WORLD, code), MPI_SUCCESS, "MPI_Comm_call_errhandler under MPI_ERRORS_RETURN");
#ifdef TEST_BRAID_ONLY
    expect_class(MPI_Add_error_string(MPI_ERR_ARG, "mine now"), MPI_ERR_ARG, "MPI_Add_error_string of a predefined code");
    expect_class(MPI_Add_error_string(code + 1000, "nobody's"), MPI_ERR_ARG, "MPI_Add_error_string of an unknown code");
    int other;
    expect_class(MPI_Add_error_code(code, &other), MPI_ERR_ARG, "MPI_Add_error_code of a code that is not a class");
    expect_class(MPI_Error_class(code + 1000, &found), MPI_ERR_ARG, "MPI_Error_class of an unknown code");
    expect_class(MPI_Error_string(code + 1000, text, &length), MPI_ERR_ARG, "MPI_Error_string of an unknown code");
    char long_text[MPI_MAX_ERROR_STRING + 8];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    expect_class(MPI_Add_error_string(code, long_text), MPI_ERR_ARG, "MPI_Add_error_string longer than MPI_MAX_ERROR_STRING");
#endif
}

static void communicator_handlers(void)
{
    MPI_Errhandler handler;
    expect_class(MPI_Comm_create_errhandler(record, &handler), MPI_SUCCESS, "MPI_Comm_create_errhandler");
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    expect_class(MPI_Comm_set_errhandler(comm, handler), MPI_SUCCESS, "MPI_Comm_set_errhandler(user handler)");
    MPI_Errhandler got;
    MPI_Comm_get_errhandler(comm, &got);
    CHECK(got == handler, "MPI_Comm_get_errhandler gave another handler");
    MPI_Errhandler_free(&got);

    /* A failing call runs the handler with the communicator and the code, then returns the code. */
    int value = 1;
    calls = 0;
    int rc = MPI_Send(&value, 1, MPI_INT, size, 0, comm);
    expect_class(rc, MPI_ERR_RANK, "MPI_Send to rank size under a user handler");
    CHECK(calls == 1 && last_comm == comm && last_code == rc, "the handler saw %d calls, comm %d, code %d (call returned %d)", calls,
          (int)(last_comm == comm), last_code, rc);
    CHECK(strlen(last_text) > 0, "MPI_Error_string inside the handler gave an empty text");

    /* MPI_Comm_call_errhandler runs it with the given code and returns MPI_SUCCESS. */
    int class, code;
    MPI_Add_error_class(&class);
    MPI_Add_error_code(class, &code);
    calls = 0;
    expect_class(MPI_Comm_call_errhandler(comm, code), MPI_SUCCESS, "MPI_Comm_call_errhandler(user handler)");
    CHECK(calls == 1 && last_code == code && last_comm == comm, "MPI_Comm_call_errhandler: %d calls, code %d (expected %d)", calls, last_code, code);

    /* Freed while attached: the handler stays until the communicator lets go; duplicates inherit it. */
    expect_class(MPI_Errhandler_free(&handler), MPI_SUCCESS, "MPI_Errhandler_free of an attached handler");
    CHECK(handler == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not reset the handle");
    MPI_Comm copy;
    MPI_Comm_dup(comm, &copy);
    calls = 0;
    rc = MPI_Send(&value, 1, MPI_INT, 0, -5, copy);
    expect_class(rc, MPI_ERR_TAG, "MPI_Send with tag -5 on a duplicate");
    CHECK(calls == 1 && last_comm == copy, "the duplicate's error reached the handler %d times", calls);
    calls = 0;
    rc = MPI_Send(&value, 1, MPI_INT, size, 0, comm);
    CHECK(calls == 1 && last_comm == comm, "after MPI_Errhandler_free the attached handler ran %d times", calls);
    MPI_Comm_free(&copy);
    MPI_Comm_free(&comm);

    /* A handler may replace the code the call returns (its argument is the code to return). */
    MPI_Errhandler replacing;
    MPI_Comm_create_errhandler(replace, &replacing);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, replacing);
    MPI_Errhandler_free(&replacing);
    replacement = code;
    calls = 0;
    rc = MPI_Send(&value, 1, MPI_INT, size, 0, comm);
    CHECK(calls == 1 && rc != MPI_SUCCESS, "the replacing handler ran %d times and the call returned %d", calls, rc);
#if defined(TEST_BRAID_ONLY) || defined(MPICH_VERSION)
    /* Open MPI 4.1 returns the original code. */
    CHECK(rc == code, "the call returned %d, not the handler's code %d", rc, code);
#endif
    MPI_Comm_free(&comm);

    /* MPI_COMM_WORLD with a user handler; errors on an invalid communicator use it too. */
    MPI_Comm_create_errhandler(record, &handler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
    calls = 0;
    MPI_Send(&value, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(calls == 1 && last_comm == MPI_COMM_WORLD, "MPI_COMM_WORLD's handler ran %d times", calls);
    calls = 0;
    expect_class(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER), MPI_SUCCESS, "MPI_Comm_call_errhandler(MPI_COMM_WORLD)");
    CHECK(calls == 1 && last_code == MPI_ERR_OTHER, "MPI_Comm_call_errhandler on MPI_COMM_WORLD: %d calls, code %d", calls, last_code);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&handler);

    /* Handlers made and dropped again and again. */
    for (int round = 0; round < 50; round++) {
        MPI_Comm_create_errhandler(record, &handler);
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, handler);
        MPI_Errhandler_free(&handler);
        calls = 0;
        MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
        CHECK(calls == 1, "round %d: the handler ran %d times", round, calls);
        MPI_Comm_free(&comm);
    }

    expect_class(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER), MPI_SUCCESS, "MPI_Comm_call_errhandler under MPI_ERRORS_RETURN");
    expect_class(MPI_Comm_call_errhandler(MPI_COMM_NULL, MPI_ERR_OTHER), MPI_ERR_COMM, "MPI_Comm_call_errhandler(MPI_COMM_NULL)");
    expect_class(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL), MPI_ERR_ARG, "MPI_Comm_set_errhandler(MPI_ERRHANDLER_NULL)");
    MPI_Errhandler null_handle = MPI_ERRHANDLER_NULL;
    expect_class(MPI_Errhandler_free(&null_handle), MPI_ERR_ARG, "MPI_Errhandler_free(MPI_ERRHANDLER_NULL)");
    expect_class(MPI_Comm_create_errhandler(NULL, &handler), MPI_ERR_ARG, "MPI_Comm_create_errhandler(NULL)");
    MPI_Errhandler predefined = MPI_ERRORS_RETURN;
    expect_class(MPI_Errhandler_free(&predefined), MPI_SUCCESS, "MPI_Errhandler_free(MPI_ERRORS_RETURN)");
    CHECK(predefined == MPI_ERRHANDLER_NULL, "freeing MPI_ERRORS_RETURN did not reset the handle");
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == MPI_ERRORS_RETURN, "MPI_COMM_WORLD lost MPI_ERRORS_RETURN");
}

static void window_handlers(void)
{
    MPI_Errhandler handler, got;
    expect_class(MPI_Win_create_errhandler(record_window, &handler), MPI_SUCCESS, "MPI_Win_create_errhandler");
    expect_class(MPI_Win_set_errhandler(MPI_WIN_NULL, handler), MPI_ERR_WIN, "MPI_Win_set_errhandler(MPI_WIN_NULL)");
    expect_class(MPI_Win_get_errhandler(MPI_WIN_NULL, &got), MPI_ERR_WIN, "MPI_Win_get_errhandler(MPI_WIN_NULL)");
    expect_class(MPI_Win_call_errhandler(MPI_WIN_NULL, MPI_ERR_OTHER), MPI_ERR_WIN, "MPI_Win_call_errhandler(MPI_WIN_NULL)");
#ifdef TEST_BRAID_ONLY
    expect_class(MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler), MPI_ERR_ARG, "MPI_Comm_set_errhandler(window handler)");
#endif
    expect_class(MPI_Errhandler_free(&handler), MPI_SUCCESS, "MPI_Errhandler_free(window handler)");
}

static void file_handlers(void)
{
    MPI_Errhandler got, handler, comm_handler;
    expect_class(MPI_File_get_errhandler(MPI_FILE_NULL, &got), MPI_SUCCESS, "MPI_File_get_errhandler(MPI_FILE_NULL)");
    CHECK(got == MPI_ERRORS_RETURN, "the default file error handler is not MPI_ERRORS_RETURN");
    expect_class(MPI_File_create_errhandler(record_file, &handler), MPI_SUCCESS, "MPI_File_create_errhandler");
    expect_class(MPI_File_set_errhandler(MPI_FILE_NULL, handler), MPI_SUCCESS, "MPI_File_set_errhandler(MPI_FILE_NULL)");
    MPI_File_get_errhandler(MPI_FILE_NULL, &got);
    CHECK(got == handler, "MPI_File_get_errhandler does not give the handler just set");
    MPI_Errhandler_free(&got);
#if defined(TEST_BRAID_ONLY) || defined(MPICH_VERSION)
    /* Open MPI 4.1 rejects MPI_FILE_NULL here. */
    file_calls = 0;
    expect_class(MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO), MPI_SUCCESS, "MPI_File_call_errhandler(MPI_FILE_NULL)");
    CHECK(file_calls == 1 && last_file == MPI_FILE_NULL && last_code == MPI_ERR_IO, "the file handler ran %d times with code %d", file_calls,
          last_code);
#endif
    MPI_Comm_create_errhandler(record, &comm_handler);
    expect_class(MPI_File_set_errhandler(MPI_FILE_NULL, comm_handler), MPI_ERR_ARG, "MPI_File_set_errhandler(communicator handler)");
    MPI_Errhandler_free(&comm_handler);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&handler);
}

#if !defined(OPEN_MPI)
static void mpi1_names(void)
{
    MPI_Errhandler handler, got;
    expect_class(MPI_Errhandler_create(record, &handler), MPI_SUCCESS, "MPI_Errhandler_create");
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    expect_class(MPI_Errhandler_set(comm, handler), MPI_SUCCESS, "MPI_Errhandler_set");
    MPI_Errhandler_get(comm, &got);
    CHECK(got == handler, "MPI_Errhandler_get gave another handler");
    MPI_Errhandler_free(&got);
    calls = 0;
    MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    CHECK(calls == 1 && last_comm == comm, "the MPI-1 handler ran %d times", calls);
    MPI_Errhandler_free(&handler);
    MPI_Comm_free(&comm);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    user_codes();
    communicator_handlers();
    window_handlers();
    file_handlers();
#if !defined(OPEN_MPI)
    mpi1_names();
#endif
    report_ok("errhandlers");
    MPI_Finalize();
    return 0;
}
