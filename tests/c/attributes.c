/* Attributes: keyvals and cached values on communicators (MPI-2 and MPI-1 names), datatypes and
 * windows; copy callbacks on MPI_Comm_dup and MPI_Type_dup, delete callbacks on replacement,
 * deletion and free; keyvals that outlive MPI_*_free_keyval; the predefined attributes of
 * MPI_COMM_WORLD; a failing copy callback (MPI_Comm_dup fails, the new communicator is freed and
 * MPI_COMM_NULL returned); the delete callbacks of MPI_COMM_SELF run first thing in MPI_Finalize,
 * most recently set first, with MPI still usable. Errors are checked under MPI_ERRORS_RETURN.
 * Runs on any number of ranks. */
#include <string.h>
#include "check.h"

static int rank, size;

/* What the callbacks saw. */
static int copies, deletes;
static void *last_deleted;
static MPI_Comm last_comm;
static MPI_Datatype last_type;

/* The copy is the value plus 1000, to tell it from the original. */
static int copy_plus_1000(void *extra_state, void *value_in, void *value_out, int *flag)
{
    CHECK(extra_state == (void *)&copies, "the copy callback got extra_state %p", extra_state);
    copies++;
    *(void **)value_out = (char *)value_in + 1000;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(void *value, void *extra_state)
{
    CHECK(extra_state == (void *)&copies, "the delete callback got extra_state %p", extra_state);
    deletes++;
    last_deleted = value;
    return MPI_SUCCESS;
}

static int comm_copy(MPI_Comm oldcomm, int keyval, void *extra_state, void *value_in, void *value_out, int *flag)
{
    (void)keyval;
    last_comm = oldcomm;
    return copy_plus_1000(extra_state, value_in, value_out, flag);
}

static int comm_delete(MPI_Comm comm, int keyval, void *value, void *extra_state)
{
    (void)keyval;
    last_comm = comm;
    return count_delete(value, extra_state);
}

static int type_copy(MPI_Datatype oldtype, int keyval, void *extra_state, void *value_in, void *value_out, int *flag)
{
    (void)keyval;
    last_type = oldtype;
    return copy_plus_1000(extra_state, value_in, value_out, flag);
}

static int type_delete(MPI_Datatype datatype, int keyval, void *value, void *extra_state)
{
    (void)keyval;
    last_type = datatype;
    return count_delete(value, extra_state);
}

static int failing_copy(MPI_Comm comm, int keyval, void *extra_state, void *value_in, void *value_out, int *flag)
{
    (void)comm, (void)keyval, (void)extra_state, (void)value_in, (void)value_out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static void reset(void)
{
    copies = deletes = 0;
    last_deleted = NULL;
    last_comm = MPI_COMM_NULL;
    last_type = MPI_DATATYPE_NULL;
}

static void *attribute(MPI_Comm comm, int keyval, int *found)
{
    void *value = NULL;
    int err = MPI_Comm_get_attr(comm, keyval, &value, found);
    CHECK(err == MPI_SUCCESS, "MPI_Comm_get_attr returned %d", err);
    return value;
}

static void communicator_attributes(void)
{
    int keyval, found;
    reset();
    MPI_Comm_create_keyval(comm_copy, comm_delete, &keyval, &copies);
    CHECK(keyval != MPI_KEYVAL_INVALID, "MPI_Comm_create_keyval gave MPI_KEYVAL_INVALID");

    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    attribute(comm, keyval, &found);
    CHECK(!found, "a fresh communicator has a value");
    MPI_Comm_set_attr(comm, keyval, (void *)(size_t)(10 + rank));
    void *value = attribute(comm, keyval, &found);
    CHECK(found && value == (void *)(size_t)(10 + rank), "get_attr: found %d value %p", found, value);

    /* Replacing a value deletes the old one first. */
    MPI_Comm_set_attr(comm, keyval, (void *)(size_t)(20 + rank));
    CHECK(deletes == 1 && last_deleted == (void *)(size_t)(10 + rank), "replacing: %d deletes, last %p", deletes, last_deleted);
    CHECK(last_comm == comm, "the delete callback got another communicator");

    /* MPI_Comm_dup runs the copy callback; the duplicate has the copy. */
    MPI_Comm copy;
    MPI_Comm_dup(comm, &copy);
    CHECK(copies == 1 && last_comm == comm, "dup: %d copies (on the right communicator: %d)", copies, last_comm == comm);
    value = attribute(copy, keyval, &found);
    CHECK(found && value == (void *)(size_t)(1020 + rank), "the duplicate has %p (found %d)", value, found);
    value = attribute(comm, keyval, &found);
    CHECK(found && value == (void *)(size_t)(20 + rank), "the original changed to %p", value);

    /* Deleting runs the callback once; a second delete of a value that is gone is harmless. */
    MPI_Comm_delete_attr(comm, keyval);
    CHECK(deletes == 2 && last_deleted == (void *)(size_t)(20 + rank), "delete_attr: %d deletes, last %p", deletes, last_deleted);
    attribute(comm, keyval, &found);
    CHECK(!found, "the value survived MPI_Comm_delete_attr");

    /* A freed keyval stays usable while a value holds it: the free of the duplicate still runs
     * the delete callback with the copied value. */
    int handle = keyval;
    MPI_Comm_free_keyval(&handle);
    CHECK(handle == MPI_KEYVAL_INVALID, "MPI_Comm_free_keyval left %d", handle);
    value = attribute(copy, keyval, &found);
    CHECK(found && value == (void *)(size_t)(1020 + rank), "after free_keyval the value is %p (found %d)", value, found);
    MPI_Comm_free(&copy);
    CHECK(deletes == 3 && last_deleted == (void *)(size_t)(1020 + rank), "free: %d deletes, last %p", deletes, last_deleted);
    MPI_Comm_free(&comm);
    CHECK(deletes == 3, "freeing a communicator without values ran %d deletes", deletes);
}

static void predefined_callbacks(void)
{
    int dup_key, null_key, found;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &dup_key, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &null_key, NULL);
    static int payload;
    MPI_Comm_set_attr(MPI_COMM_WORLD, dup_key, &payload);
    MPI_Comm_set_attr(MPI_COMM_WORLD, null_key, &payload);
    MPI_Comm copy;
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    void *value = attribute(copy, dup_key, &found);
    CHECK(found && value == &payload, "MPI_COMM_DUP_FN copied %p (found %d)", value, found);
    attribute(copy, null_key, &found);
    CHECK(!found, "MPI_COMM_NULL_COPY_FN copied the value");
    MPI_Comm_free(&copy);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, dup_key);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, null_key);
    MPI_Comm_free_keyval(&dup_key);
    MPI_Comm_free_keyval(&null_key);

    /* The predefined callbacks are functions a program may also call. */
    void *out = NULL;
    int flag = -1;
    CHECK(MPI_COMM_DUP_FN(MPI_COMM_WORLD, 0, NULL, &payload, &out, &flag) == MPI_SUCCESS && flag == 1 && out == &payload, "calling MPI_COMM_DUP_FN");
    CHECK(MPI_TYPE_DUP_FN(MPI_INT, 0, NULL, &payload, &out, &flag) == MPI_SUCCESS && flag == 1, "calling MPI_TYPE_DUP_FN");
}

static void mpi1_names(void)
{
    int keyval, found = 0;
    reset();
    MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &keyval, NULL);
    static int payload = 5;
    MPI_Attr_put(MPI_COMM_WORLD, keyval, &payload);
    int *value = NULL;
    MPI_Attr_get(MPI_COMM_WORLD, keyval, &value, &found);
    CHECK(found && value == &payload && *value == 5, "MPI_Attr_get: found %d", found);
    MPI_Comm copy;
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    MPI_Attr_get(copy, keyval, &value, &found);
    CHECK(found && value == &payload, "MPI_DUP_FN did not copy (found %d)", found);
    MPI_Comm_free(&copy);
    MPI_Attr_delete(MPI_COMM_WORLD, keyval);
    MPI_Attr_get(MPI_COMM_WORLD, keyval, &value, &found);
    CHECK(!found, "MPI_Attr_delete left the value");
    MPI_Keyval_free(&keyval);
    CHECK(keyval == MPI_KEYVAL_INVALID, "MPI_Keyval_free left %d", keyval);

    int null_key;
    MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &null_key, NULL);
    MPI_Attr_put(MPI_COMM_WORLD, null_key, &payload);
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    MPI_Attr_get(copy, null_key, &value, &found);
    CHECK(!found, "MPI_NULL_COPY_FN copied the value");
    MPI_Comm_free(&copy);
    MPI_Attr_delete(MPI_COMM_WORLD, null_key);
    MPI_Keyval_free(&null_key);
}

static void predefined_attributes(void)
{
    int *value, found;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    CHECK(found && *value >= 32767, "MPI_TAG_UB: found %d value %d", found, found ? *value : 0);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &value, &found);
    CHECK(found && (*value == MPI_PROC_NULL || (*value >= 0 && *value < size)), "MPI_HOST: found %d value %d", found, found ? *value : 0);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &value, &found);
    CHECK(found && (*value == MPI_ANY_SOURCE || *value == MPI_PROC_NULL || (*value >= 0 && *value < size)), "MPI_IO: value %d", found ? *value : 0);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &value, &found);
    CHECK(!found || *value == 0 || *value == 1, "MPI_WTIME_IS_GLOBAL is %d", *value);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &value, &found);
    CHECK(!found || *value >= 1, "MPI_UNIVERSE_SIZE is %d", *value);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &value, &found);
    CHECK(found && *value == 0, "MPI_APPNUM: found %d value %d", found, found ? *value : -1);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &value, &found);
    CHECK(found && *value >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE: found %d value %d", found, found ? *value : -1);
#ifdef TEST_BRAID_ONLY
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &value, &found);
    /* braid run counts the CPUs it may use, and at least the job. */
    CHECK(found && *value >= size, "MPI_UNIVERSE_SIZE: found %d value %d", found, found ? *value : -1);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &value, &found);
    CHECK(*value == MPI_PROC_NULL, "MPI_HOST is %d", *value);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &value, &found);
    CHECK(*value == MPI_ANY_SOURCE, "MPI_IO is %d", *value);
#endif

    /* Predefined attributes cannot be set, deleted or freed. */
    int err = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, &found);
    CHECK(err != MPI_SUCCESS, "setting MPI_TAG_UB succeeded");
    err = MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB);
    CHECK(err != MPI_SUCCESS, "deleting MPI_TAG_UB succeeded");
    int predefined = MPI_APPNUM;
    err = MPI_Comm_free_keyval(&predefined);
    CHECK(err != MPI_SUCCESS, "freeing MPI_APPNUM succeeded");
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    CHECK(found && *value >= 32767, "MPI_TAG_UB changed: %d", *value);
#ifdef TEST_BRAID_ONLY
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, &found) == MPI_ERR_KEYVAL, "setting MPI_TAG_UB: not MPI_ERR_KEYVAL");
    CHECK(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_HOST) == MPI_ERR_KEYVAL, "deleting MPI_HOST: not MPI_ERR_KEYVAL");
    CHECK(MPI_Comm_free_keyval(&predefined) == MPI_ERR_KEYVAL, "freeing MPI_APPNUM: not MPI_ERR_KEYVAL");
    CHECK(MPI_Attr_put(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &found) == MPI_ERR_KEYVAL, "MPI_Attr_put(MPI_LASTUSEDCODE): not MPI_ERR_KEYVAL");
#endif
}

static void argument_errors(void)
{
    int keyval, found, err;
    void *value;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    err = MPI_Comm_set_attr(MPI_COMM_NULL, keyval, NULL);
    CHECK(class_of(err) == MPI_ERR_COMM, "set_attr on MPI_COMM_NULL returned class %d", class_of(err));
    err = MPI_Comm_get_attr(MPI_COMM_NULL, keyval, &value, &found);
    CHECK(class_of(err) == MPI_ERR_COMM, "get_attr on MPI_COMM_NULL returned class %d", class_of(err));
    err = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &value, &found);
    CHECK(err != MPI_SUCCESS, "get_attr with MPI_KEYVAL_INVALID succeeded");
    err = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, NULL, NULL);
    CHECK(class_of(err) == MPI_ERR_ARG, "create_keyval with a NULL keyval pointer returned class %d", class_of(err));
    err = MPI_Win_get_attr(MPI_WIN_NULL, MPI_WIN_BASE, &value, &found);
    CHECK(class_of(err) == MPI_ERR_WIN, "MPI_Win_get_attr(MPI_WIN_NULL) returned class %d", class_of(err));
    int freed = keyval;
    MPI_Comm_free_keyval(&freed);
    err = MPI_Comm_free_keyval(&freed);
    CHECK(err != MPI_SUCCESS, "freeing MPI_KEYVAL_INVALID succeeded");
#ifdef TEST_BRAID_ONLY
    /* A keyval freed while no value holds it is gone at once (and its number may be reused). */
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, &value, &found) == MPI_ERR_KEYVAL, "a freed keyval without values");
    int again = keyval;
    CHECK(MPI_Comm_free_keyval(&again) == MPI_ERR_KEYVAL, "a keyval freed twice");
    int type_key, comm_key;
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &type_key, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &comm_key, NULL);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, type_key, &value, &found) == MPI_ERR_KEYVAL, "a datatype keyval on a communicator");
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, type_key, NULL) == MPI_ERR_KEYVAL, "setting a datatype keyval on a communicator");
    CHECK(MPI_Type_get_attr(MPI_INT, comm_key, &value, &found) == MPI_ERR_KEYVAL, "a communicator keyval on a datatype");
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, 424242, &value, &found) == MPI_ERR_KEYVAL, "an unknown keyval");
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WIN_BASE, &value, &found) == MPI_ERR_KEYVAL, "a window keyval on a communicator");
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL, &found) == MPI_ERR_ARG, "a NULL attribute_val");
    CHECK(MPI_Type_set_attr(MPI_DATATYPE_NULL, type_key, NULL) == MPI_ERR_TYPE, "a datatype attribute on MPI_DATATYPE_NULL");
    CHECK(MPI_Win_set_attr(MPI_WIN_NULL, type_key, NULL) == MPI_ERR_WIN, "a window attribute on MPI_WIN_NULL");
    CHECK(MPI_Comm_delete_attr(MPI_COMM_WORLD, comm_key) == MPI_SUCCESS, "deleting a value that is not there");
    MPI_Type_free_keyval(&type_key);
    MPI_Comm_free_keyval(&comm_key);
#endif
}

static void datatype_attributes(void)
{
    int keyval, found;
    void *value;
    reset();
    MPI_Type_create_keyval(type_copy, type_delete, &keyval, &copies);
    MPI_Datatype pair, copy;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Type_set_attr(pair, keyval, (void *)(size_t)7);
    MPI_Type_get_attr(pair, keyval, &value, &found);
    CHECK(found && value == (void *)(size_t)7, "MPI_Type_get_attr: found %d value %p", found, value);

    MPI_Type_dup(pair, &copy);
    CHECK(copies == 1 && last_type == pair, "MPI_Type_dup ran %d copies (on the right datatype: %d)", copies, last_type == pair);
    MPI_Type_get_attr(copy, keyval, &value, &found);
    CHECK(found && value == (void *)(size_t)1007, "the duplicate datatype has %p (found %d)", value, found);
    int copy_size;
    MPI_Type_size(copy, &copy_size);
    CHECK(copy_size == 2 * (int)sizeof(int), "the duplicate datatype has size %d", copy_size);

    MPI_Type_free(&copy);
    CHECK(deletes == 1 && last_deleted == (void *)(size_t)1007 && copy == MPI_DATATYPE_NULL, "MPI_Type_free ran %d deletes, last %p", deletes, last_deleted);
    MPI_Type_delete_attr(pair, keyval);
    CHECK(deletes == 2 && last_deleted == (void *)(size_t)7, "MPI_Type_delete_attr ran %d deletes", deletes);
    MPI_Type_get_attr(pair, keyval, &value, &found);
    CHECK(!found, "the value survived MPI_Type_delete_attr");

    /* Predefined datatypes carry attributes too. */
    MPI_Type_set_attr(MPI_DOUBLE, keyval, (void *)(size_t)3);
    MPI_Type_get_attr(MPI_DOUBLE, keyval, &value, &found);
    CHECK(found && value == (void *)(size_t)3, "an attribute on MPI_DOUBLE: found %d", found);
    MPI_Type_get_attr(MPI_INT, keyval, &value, &found);
    CHECK(!found, "MPI_INT shares MPI_DOUBLE's attributes");
    MPI_Type_delete_attr(MPI_DOUBLE, keyval);
    CHECK(deletes == 3 && last_type == MPI_DOUBLE, "deleting MPI_DOUBLE's attribute ran %d deletes", deletes);

    MPI_Type_free_keyval(&keyval);
    CHECK(keyval == MPI_KEYVAL_INVALID, "MPI_Type_free_keyval left %d", keyval);
    MPI_Type_free(&pair);
}

static void window_keyvals(void)
{
    int keyval = MPI_KEYVAL_INVALID;
    int err = MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, &keyval, NULL);
    CHECK(err == MPI_SUCCESS && keyval != MPI_KEYVAL_INVALID, "MPI_Win_create_keyval: %d", err);
    int other;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &other, NULL);
    CHECK(other != keyval, "two window keyvals are both %d", keyval);
    MPI_Win_free_keyval(&keyval);
    MPI_Win_free_keyval(&other);
    CHECK(keyval == MPI_KEYVAL_INVALID && other == MPI_KEYVAL_INVALID, "MPI_Win_free_keyval left %d %d", keyval, other);
    CHECK(MPI_WIN_FLAVOR_CREATE != MPI_WIN_FLAVOR_ALLOCATE && MPI_WIN_SEPARATE != MPI_WIN_UNIFIED, "window constants");
}

/* A copy callback that fails makes MPI_Comm_dup fail with its error; the copies already made are
 * deleted, the new communicator freed and MPI_COMM_NULL returned. */
static int failing_type_copy(MPI_Datatype oldtype, int keyval, void *extra_state, void *value_in, void *value_out, int *flag)
{
    (void)oldtype, (void)keyval, (void)extra_state, (void)value_in, (void)value_out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static void failing_copy_fails_dup(void)
{
    int good, bad;
    reset();
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_create_keyval(comm_copy, comm_delete, &good, &copies);
    MPI_Comm_create_keyval(failing_copy, MPI_COMM_NULL_DELETE_FN, &bad, NULL);
    MPI_Comm_set_attr(comm, good, (void *)(size_t)1);
    MPI_Comm_set_attr(comm, bad, (void *)(size_t)2);
    MPI_Comm copy = MPI_COMM_WORLD;
    int err = MPI_Comm_dup(comm, &copy);
    CHECK(class_of(err) == MPI_ERR_OTHER, "MPI_Comm_dup returned class %d, not the callback's MPI_ERR_OTHER", class_of(err));
    CHECK(copy == MPI_COMM_NULL, "a failed MPI_Comm_dup did not return MPI_COMM_NULL");
#ifdef TEST_BRAID_ONLY
    /* The values are copied in the order they were set: the good one was copied, then deleted. */
    CHECK(copies == 1 && deletes == 1 && last_deleted == (void *)(size_t)1001, "the copy made before the failure: %d copies, %d deletes, last %p", copies, deletes,
          last_deleted);
#endif
    CHECK(copies == deletes, "%d copies made but %d deleted", copies, deletes);
    /* The original is untouched. */
    int found;
    void *value = attribute(comm, good, &found);
    CHECK(found && value == (void *)(size_t)1, "the original's value is %p (found %d)", value, found);
    MPI_Comm_delete_attr(comm, bad);
    MPI_Comm_free(&comm);
    MPI_Comm_free_keyval(&good);
    MPI_Comm_free_keyval(&bad);

    /* The same for MPI_Type_dup. */
    int type_bad;
    MPI_Type_create_keyval(failing_type_copy, MPI_TYPE_NULL_DELETE_FN, &type_bad, NULL);
    MPI_Datatype pair, pair_copy = MPI_INT;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_set_attr(pair, type_bad, NULL);
    err = MPI_Type_dup(pair, &pair_copy);
    CHECK(err != MPI_SUCCESS, "MPI_Type_dup succeeded although a copy callback failed");
#ifdef TEST_BRAID_ONLY
    CHECK(err == MPI_ERR_OTHER, "MPI_Type_dup returned %d, not the callback's MPI_ERR_OTHER", err);
    CHECK(pair_copy == MPI_DATATYPE_NULL, "a failed MPI_Type_dup did not return MPI_DATATYPE_NULL");
#endif
    MPI_Type_delete_attr(pair, type_bad);
    MPI_Type_free(&pair);
    MPI_Type_free_keyval(&type_bad);
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first, most recently set first. */
static int finalize_order[4], finalize_count, finalize_used_mpi;

static int finalize_delete(MPI_Comm comm, int keyval, void *value, void *extra_state)
{
    (void)keyval, (void)extra_state;
    if (finalize_count < 4)
        finalize_order[finalize_count] = (int)(size_t)value;
    finalize_count++;
    /* MPI is still fully usable: a collective on MPI_COMM_WORLD works. */
    int finalized = 1, sum = 0, one = 1;
    MPI_Finalized(&finalized);
    if (!finalized && comm == MPI_COMM_SELF && MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && sum == size)
        finalize_used_mpi++;
    return MPI_SUCCESS;
}

static void cache_on_self(void)
{
    int first, second, third;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_delete, &first, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_delete, &second, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_delete, &third, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, second, (void *)(size_t)2);
    MPI_Comm_set_attr(MPI_COMM_SELF, first, (void *)(size_t)1);
    MPI_Comm_set_attr(MPI_COMM_SELF, third, (void *)(size_t)3);
    /* Freed keyvals still delete their values at MPI_Finalize. */
    MPI_Comm_free_keyval(&third);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    communicator_attributes();
    predefined_callbacks();
    mpi1_names();
    predefined_attributes();
    argument_errors();
    datatype_attributes();
    window_keyvals();
    failing_copy_fails_dup();
    cache_on_self();
    report_ok("attributes (before MPI_Finalize)");
    MPI_Finalize();
    if (finalize_count != 3 || finalize_order[0] != 3 || finalize_order[1] != 1 || finalize_order[2] != 2 || finalize_used_mpi != 3) {
        fprintf(stderr, "rank %d: check failed: MPI_Finalize ran %d delete callbacks of MPI_COMM_SELF in the order %d %d %d (expected 3 1 2), %d of them used MPI\n", rank,
                finalize_count, finalize_order[0], finalize_order[1], finalize_order[2], finalize_used_mpi);
        return 1;
    }
    if (rank == 0)
        printf("attributes: MPI_COMM_SELF's delete callbacks ran first in MPI_Finalize\n");
    return 0;
}
