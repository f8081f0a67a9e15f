/* The tool information interface (MPI_T): it works before MPI_Init, initialisation is counted,
 * every call before it fails with MPI_T_ERR_NOT_INITIALIZED, indexes past the variable counts and
 * unknown names are refused, and performance-variable sessions are created and freed. Under
 * TEST_BRAID_ONLY: Braid exports no variables and no categories, and the interface works again
 * after MPI_Finalize. Runs on any number of ranks. */
#include "check.h"

/* Outside MPI_Init..MPI_Finalize a failed check cannot use MPI_Abort: it exits instead. */
static void expect_code(int code, int expected, const char *call)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
        CHECK(code == expected, "%s returned %d, expected %d", call, code, expected);
    } else if (code != expected) {
        fprintf(stderr, "check failed outside MPI_Init..MPI_Finalize: %s returned %d, expected %d\n", call, code, expected);
        exit(1);
    }
}

/* An index out of range: MPI_T_ERR_INVALID_INDEX (Open MPI 4.1 answers MPI_T_ERR_INVALID for some). */
static void expect_refused(int code, const char *call)
{
#ifdef TEST_BRAID_ONLY
    expect_code(code, MPI_T_ERR_INVALID_INDEX, call);
#else
    CHECK(code == MPI_T_ERR_INVALID_INDEX || code == MPI_T_ERR_INVALID, "%s returned %d, expected MPI_T_ERR_INVALID_INDEX", call, code);
#endif
}

/* The variable and category counts; checks that an index just past each is refused. */
static void counts_and_indexes(void)
{
    int cvars = -1, pvars = -1, categories = -1, stamp = -1;
    expect_code(MPI_T_cvar_get_num(&cvars), MPI_SUCCESS, "MPI_T_cvar_get_num");
    expect_code(MPI_T_pvar_get_num(&pvars), MPI_SUCCESS, "MPI_T_pvar_get_num");
    expect_code(MPI_T_category_get_num(&categories), MPI_SUCCESS, "MPI_T_category_get_num");
    expect_code(MPI_T_category_changed(&stamp), MPI_SUCCESS, "MPI_T_category_changed");
    CHECK(cvars >= 0 && pvars >= 0 && categories >= 0, "negative counts %d %d %d", cvars, pvars, categories);
#ifdef TEST_BRAID_ONLY
    CHECK(cvars == 0 && pvars == 0 && categories == 0, "Braid exports no variables, got %d, %d and %d", cvars, pvars, categories);
#endif

    char name[256], desc[256];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope, count;
    int num_cvars, num_pvars, num_categories, index = -1;
    MPI_Datatype datatype;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle cvar_handle;
    expect_refused(MPI_T_cvar_get_info(cvars, name, &name_len, &verbosity, &datatype, &enumtype, desc, &desc_len, &bind, &scope),
                   "MPI_T_cvar_get_info past the last variable");
    expect_refused(MPI_T_category_get_info(categories, name, &name_len, desc, &desc_len, &num_cvars, &num_pvars, &num_categories),
                   "MPI_T_category_get_info past the last category");
    expect_refused(MPI_T_cvar_handle_alloc(cvars, NULL, &cvar_handle, &count), "MPI_T_cvar_handle_alloc past the last variable");
#ifdef TEST_BRAID_ONLY
    /* MPICH 4.0 and Open MPI 4.1 crash on a performance variable index out of range. */
    int var_class, readonly, continuous, atomic;
    expect_refused(MPI_T_pvar_get_info(pvars, name, &name_len, &verbosity, &var_class, &datatype, &enumtype, desc, &desc_len, &bind, &readonly,
                                       &continuous, &atomic),
                   "MPI_T_pvar_get_info past the last variable");
    expect_refused(MPI_T_pvar_get_info(-1, name, &name_len, &verbosity, &var_class, &datatype, &enumtype, desc, &desc_len, &bind, &readonly,
                                       &continuous, &atomic),
                   "MPI_T_pvar_get_info of index -1");
#endif
    expect_code(MPI_T_cvar_get_index("braid_no_such_variable", &index), MPI_T_ERR_INVALID_NAME, "MPI_T_cvar_get_index of an unknown name");
    expect_code(MPI_T_pvar_get_index("braid_no_such_variable", MPI_T_PVAR_CLASS_COUNTER, &index), MPI_T_ERR_INVALID_NAME,
                "MPI_T_pvar_get_index of an unknown name");
    expect_code(MPI_T_category_get_index("braid_no_such_category", &index), MPI_T_ERR_INVALID_NAME, "MPI_T_category_get_index of an unknown name");
}

static void sessions(void)
{
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL, other = MPI_T_PVAR_SESSION_NULL;
    expect_code(MPI_T_pvar_session_create(&session), MPI_SUCCESS, "MPI_T_pvar_session_create");
    expect_code(MPI_T_pvar_session_create(&other), MPI_SUCCESS, "a second MPI_T_pvar_session_create");
    CHECK(session != MPI_T_PVAR_SESSION_NULL && other != session, "sessions are not distinct handles");
    expect_code(MPI_T_pvar_session_free(&other), MPI_SUCCESS, "MPI_T_pvar_session_free");
    CHECK(other == MPI_T_PVAR_SESSION_NULL, "MPI_T_pvar_session_free did not reset the handle");
    expect_code(MPI_T_pvar_session_free(&session), MPI_SUCCESS, "MPI_T_pvar_session_free of the first session");
}

int main(int argc, char **argv)
{
    int provided = -1, stamp = 0, count = 0;
    expect_code(MPI_T_cvar_get_num(&count), MPI_T_ERR_NOT_INITIALIZED, "MPI_T_cvar_get_num before MPI_T_init_thread");
    expect_code(MPI_T_category_changed(&stamp), MPI_T_ERR_NOT_INITIALIZED, "MPI_T_category_changed before MPI_T_init_thread");
    expect_code(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED, "MPI_T_finalize before MPI_T_init_thread");

    /* Before MPI_Init, nested twice. */
    expect_code(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS, "MPI_T_init_thread before MPI_Init");
    expect_code(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, 1, "the level MPI_T_init_thread provided is a thread level");
    expect_code(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS, "a nested MPI_T_init_thread");
    MPI_Init(&argc, &argv);
    counts_and_indexes();
    sessions();
    expect_code(MPI_T_finalize(), MPI_SUCCESS, "the inner MPI_T_finalize");
    expect_code(MPI_T_cvar_get_num(&count), MPI_SUCCESS, "MPI_T_cvar_get_num after the inner MPI_T_finalize");
    expect_code(MPI_T_finalize(), MPI_SUCCESS, "the outer MPI_T_finalize");
    expect_code(MPI_T_cvar_get_num(&count), MPI_T_ERR_NOT_INITIALIZED, "MPI_T_cvar_get_num after the last MPI_T_finalize");

    report_ok("tool_interface");
    MPI_Finalize();

#ifdef TEST_BRAID_ONLY
    /* After MPI_Finalize the interface can be initialized again (MPICH 4.0 crashes on it). */
    expect_code(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS, "MPI_T_init_thread after MPI_Finalize");
    int cvars = -1;
    expect_code(MPI_T_cvar_get_num(&cvars), MPI_SUCCESS, "MPI_T_cvar_get_num after MPI_Finalize");
    expect_code(MPI_T_finalize(), MPI_SUCCESS, "MPI_T_finalize after MPI_Finalize");
#endif
    return 0;
}
