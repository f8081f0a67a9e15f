/* Windows as objects and bad input: the predefined attributes of every flavor, names, info,
 * groups, error handlers on windows, MPI_Win_shared_query, dynamic attach/detach; then, under
 * MPI_ERRORS_RETURN on the window, the error classes of bad arguments and of mismatched
 * synchronisation (operations outside an epoch, unlock without lock, wait without post...),
 * after which the window still works. Any number of ranks. */
#include "check.h"
#include <string.h>

static int rank, size;
static int window_errors;

static void count_window_error(MPI_Win *win, int *code, ...)
{
    (void)win;
    (void)code;
    window_errors++;
}

static void check_attributes(MPI_Win win, void *base, MPI_Aint bytes, int disp_unit, int flavor)
{
    void *value;
    int found = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &value, &found);
    CHECK(found && value == base, "MPI_WIN_BASE %p, expected %p", value, base);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &value, &found);
    CHECK(found && *(MPI_Aint *)value == bytes, "MPI_WIN_SIZE %ld, expected %ld", (long)*(MPI_Aint *)value, (long)bytes);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &value, &found);
    CHECK(found && *(int *)value == disp_unit, "MPI_WIN_DISP_UNIT %d", *(int *)value);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &value, &found);
    CHECK(found && *(int *)value == flavor, "MPI_WIN_CREATE_FLAVOR %d, expected %d", *(int *)value, flavor);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &value, &found);
    CHECK(found && (*(int *)value == MPI_WIN_UNIFIED || *(int *)value == MPI_WIN_SEPARATE), "MPI_WIN_MODEL %d", *(int *)value);
}

static void objects(void)
{
    int memory[8];
    MPI_Win win;
    expect_class(MPI_Win_create(memory, sizeof memory, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_SUCCESS, "MPI_Win_create");
    check_attributes(win, memory, sizeof memory, sizeof(int), MPI_WIN_FLAVOR_CREATE);
    char name[MPI_MAX_OBJECT_NAME];
    int length = -1;
    MPI_Win_get_name(win, name, &length);
#ifdef TEST_BRAID_ONLY
    /* Open MPI names new windows. */
    CHECK(length == 0, "a new window's name has length %d", length);
#endif
    MPI_Win_set_name(win, "my window");
    MPI_Win_get_name(win, name, &length);
    CHECK(strcmp(name, "my window") == 0 && length == 9, "MPI_Win_get_name gave '%s'", name);
    MPI_Group group, world_group;
    MPI_Win_get_group(win, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int result;
    MPI_Group_compare(group, world_group, &result);
    CHECK(result == MPI_IDENT, "the window's group compares %d with MPI_COMM_WORLD's", result);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "false");
    MPI_Win_set_info(win, info);
    MPI_Info_free(&info);
    MPI_Win_get_info(win, &used);
    CHECK(used != MPI_INFO_NULL, "MPI_Win_get_info gave MPI_INFO_NULL");
    MPI_Info_free(&used);
    /* Error handlers: a window's own, called by MPI_Win_call_errhandler. */
    MPI_Errhandler handler, got;
    MPI_Win_get_errhandler(win, &got);
    CHECK(got == MPI_ERRORS_ARE_FATAL, "a new window's handler is not MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&got);
    MPI_Win_create_errhandler(count_window_error, &handler);
    expect_class(MPI_Win_set_errhandler(win, handler), MPI_SUCCESS, "MPI_Win_set_errhandler");
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    CHECK(window_errors == 1, "the window's handler ran %d times", window_errors);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&handler);
    /* A user attribute is deleted at MPI_Win_free. */
    int keyval;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &keyval, NULL);
    MPI_Win_set_attr(win, keyval, &rank);
    void *value;
    int found = 0;
    MPI_Win_get_attr(win, keyval, &value, &found);
    CHECK(found && value == &rank, "a window attribute did not come back");
    MPI_Win_free_keyval(&keyval);
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "MPI_Win_free");
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free left the handle");

    /* MPI_Win_allocate: a base this rank can use. */
    double *allocated = NULL;
    MPI_Win_allocate(4 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &allocated, &win);
    CHECK(allocated != NULL, "MPI_Win_allocate gave no memory");
    allocated[3] = 1.5;
    check_attributes(win, allocated, 4 * sizeof(double), sizeof(double), MPI_WIN_FLAVOR_ALLOCATE);
#ifdef TEST_BRAID_ONLY
    /* MPI 4.1 lets MPI_Win_shared_query ask any window (the peers here, MPI 4.0 and 3.1, refuse):
     * memory it cannot share is size 0, or the real thing. */
    {
        MPI_Aint bytes = -1;
        int unit = -1;
        double *theirs = allocated;
        CHECK(MPI_Win_shared_query(win, 0, &bytes, &unit, &theirs) == MPI_SUCCESS, "MPI_Win_shared_query on an allocated window");
        CHECK((bytes == 0 && theirs == NULL) || bytes == 4 * (MPI_Aint)sizeof(double), "MPI_Win_shared_query: %ld bytes at %p", (long)bytes, (void *)theirs);
    }
#endif
    MPI_Win_free(&win);

    /* MPI_Win_allocate_shared on a node: contiguous by default, every rank's part reachable. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_rank, node_size;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    int *shared = NULL;
    MPI_Win_allocate_shared((node_rank + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &shared, &win);
    check_attributes(win, shared, (node_rank + 1) * sizeof(int), sizeof(int), MPI_WIN_FLAVOR_SHARED);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i <= node_rank; i++)
        shared[i] = node_rank * 100 + i;
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    for (int r = 0; r < node_size; r++) {
        MPI_Aint bytes;
        int unit;
        int *theirs;
        MPI_Win_shared_query(win, r, &bytes, &unit, &theirs);
        CHECK(bytes == (MPI_Aint)((r + 1) * sizeof(int)) && unit == (int)sizeof(int), "shared_query of %d: %ld bytes, unit %d", r, (long)bytes, unit);
        for (int i = 0; i <= r; i++)
            CHECK(theirs[i] == r * 100 + i, "rank %d's shared element %d is %d", r, i, theirs[i]);
        if (r > 0) {
            int *previous;
            MPI_Win_shared_query(win, r - 1, &bytes, &unit, &previous);
            CHECK(previous + r == theirs, "the shared window is not contiguous between %d and %d", r - 1, r);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);

    /* Dynamic windows: attach and detach. */
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    check_attributes(win, MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int region[4];
    expect_class(MPI_Win_attach(win, region, sizeof region), MPI_SUCCESS, "MPI_Win_attach");
#ifdef TEST_BRAID_ONLY
    /* MPICH accepts any address here. */
    expect_class(MPI_Win_detach(win, region + 1), MPI_ERR_RMA_ATTACH, "MPI_Win_detach of an address never attached");
#endif
    expect_class(MPI_Win_detach(win, region), MPI_SUCCESS, "MPI_Win_detach");
    MPI_Win_free(&win);
}

static void bad_input(void)
{
    int memory[8] = {0};
    MPI_Win win;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    expect_class(MPI_Win_create(memory, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE, "MPI_Win_create with a negative size");
    expect_class(MPI_Win_create(memory, sizeof memory, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_DISP, "MPI_Win_create with disp_unit 0");
    expect_class(MPI_Win_create(memory, sizeof memory, 1, MPI_INFO_NULL, MPI_COMM_NULL, &win), MPI_ERR_COMM, "MPI_Win_create on MPI_COMM_NULL");
    expect_class(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_WIN, "MPI_Win_fence(MPI_WIN_NULL)");
    MPI_Win_create(memory, sizeof memory, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int value = 1;
    int right = (rank + 1) % size;
#ifdef TEST_BRAID_ONLY
    /* Synchronisation and range checks that MPICH or Open MPI leave out. */
    expect_class(MPI_Put(&value, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "MPI_Put outside an epoch");
    expect_class(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC, "MPI_Win_unlock without MPI_Win_lock");
    expect_class(MPI_Win_complete(win), MPI_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start");
    expect_class(MPI_Win_wait(win), MPI_ERR_RMA_SYNC, "MPI_Win_wait without MPI_Win_post");
    expect_class(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC, "MPI_Win_flush outside a passive-target epoch");
#endif
    /* MPICH reports MPI_ERR_ARG. */
    expect_either_class(MPI_Win_lock(12345, right, 0, win), MPI_ERR_LOCKTYPE, MPI_ERR_ARG, "MPI_Win_lock with a bad lock type");
    expect_class(MPI_Win_lock(MPI_LOCK_SHARED, size, 0, win), MPI_ERR_RANK, "MPI_Win_lock of a rank outside the window");
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
#ifdef TEST_BRAID_ONLY
    expect_class(MPI_Put(&value, 1, MPI_INT, right, 8, 1, MPI_INT, win), MPI_ERR_RMA_RANGE, "MPI_Put past the window");
    expect_class(MPI_Put(&value, 1, MPI_INT, right, -1, 1, MPI_INT, win), MPI_ERR_RMA_RANGE, "MPI_Put before the window");
#endif
    expect_class(MPI_Put(&value, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK, "MPI_Put to a rank outside the window");
    expect_class(MPI_Put(&value, -1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_COUNT, "MPI_Put with a negative count");
    expect_class(MPI_Put(&value, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE, "MPI_Put with MPI_DATATYPE_NULL");
    expect_class(MPI_Accumulate(&value, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_OP_NULL, win), MPI_ERR_OP, "MPI_Accumulate with MPI_OP_NULL");
    expect_class(MPI_Put(&value, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win), MPI_SUCCESS, "MPI_Put to MPI_PROC_NULL");
#ifdef TEST_BRAID_ONLY
    expect_class(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC, "MPI_Win_lock of a locked rank");
    expect_class(MPI_Win_free(&win), MPI_ERR_RMA_SYNC, "MPI_Win_free with a lock held");
#endif
    /* Nothing was written and the window still works. */
    expect_class(MPI_Put(&value, 1, MPI_INT, right, 7, 1, MPI_INT, win), MPI_SUCCESS, "MPI_Put in range");
    expect_class(MPI_Win_unlock(right, win), MPI_SUCCESS, "MPI_Win_unlock");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < 8; i++)
        CHECK(memory[i] == (i == 7), "element %d is %d after the bad calls", i, memory[i]);
    MPI_Win_unlock(rank, win);
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "MPI_Win_free");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    objects();
    bad_input();
    report_ok("rma_win");
    MPI_Finalize();
    return 0;
}
