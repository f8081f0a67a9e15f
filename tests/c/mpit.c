/* The MPI tool information interface (MPI_T): initialisation before MPI_Init, reference counted;
 * enumeration of every control variable, performance variable, category and enumeration (reading
 * each variable bound to no object); the error codes of bad indices, names and handles. Built with
 * -DTEST_BRAID_ONLY for Braid, which also checks its own variables: settings as control variables
 * (BRAID_EAGER_MAX, BRAID_WAIT, BRAID_RAILS, a writable collective threshold), and that the
 * message, byte, queue and wait counters move by exactly what the program did, with each
 * performance-variable class's start/stop/reset/write rules; and MPI_T after MPI_Finalize.
 * Runs on any number of ranks. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>
#include "check.h"

/* Checks outside MPI_Init..MPI_Finalize, where MPI_Abort is not available. */
#define EARLY_CHECK(condition, ...)                                                         \
    do {                                                                                    \
        if (!(condition)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #condition);  \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fputc('\n', stderr);                                                            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static int rank, size;

/* A bad variable index: MPI 3.1 says MPI_T_ERR_INVALID_INDEX, which Braid and MPICH answer;
 * Open MPI answers MPI_T_ERR_INVALID for control variables. */
#ifdef TEST_BRAID_ONLY
#define IS_INDEX_ERROR(code) ((code) == MPI_T_ERR_INVALID_INDEX)
#else
#define IS_INDEX_ERROR(code) ((code) == MPI_T_ERR_INVALID_INDEX || (code) == MPI_T_ERR_INVALID)
#endif

/* An index below the count may name a variable or category that has been deleted: Open MPI has
 * such, and answers MPI_T_ERR_INVALID_INDEX or MPI_T_ERR_INVALID for them. Braid deletes none. */
static int is_deleted(int code)
{
#ifdef TEST_BRAID_ONLY
    (void)code;
    return 0;
#else
    return code == MPI_T_ERR_INVALID_INDEX || code == MPI_T_ERR_INVALID;
#endif
}

/* The types MPI 3.1 allows for variables (Open MPI also uses others, such as MPI_C_BOOL). */
static int is_allowed_type(MPI_Datatype type)
{
#ifndef TEST_BRAID_ONLY
    if (type != MPI_DATATYPE_NULL)
        return 1;
#endif
    return type == MPI_INT || type == MPI_UNSIGNED || type == MPI_UNSIGNED_LONG || type == MPI_UNSIGNED_LONG_LONG ||
           type == MPI_COUNT || type == MPI_CHAR || type == MPI_DOUBLE;
}

static void check_enumeration(MPI_T_enum enumtype, const char *variable)
{
    int items = -1, name_len = 256;
    char name[256];
    int code = MPI_T_enum_get_info(enumtype, &items, name, &name_len);
    EARLY_CHECK(code == MPI_SUCCESS && items > 0, "enumeration of %s: code %d, %d items", variable, code, items);
    EARLY_CHECK(name_len == (int)strlen(name) + 1, "enumeration of %s: name_len %d for \"%s\"", variable, name_len, name);
    for (int item = 0; item < items; item++) {
        int value = 0;
        char item_name[256];
        int item_len = sizeof item_name;
        code = MPI_T_enum_get_item(enumtype, item, &value, item_name, &item_len);
        EARLY_CHECK(code == MPI_SUCCESS && item_len == (int)strlen(item_name) + 1, "item %d of %s's enumeration: code %d", item, variable, code);
    }
    int value;
    code = MPI_T_enum_get_item(enumtype, items, &value, name, &name_len);
    /* MPI 3.1 says MPI_T_ERR_INVALID_ITEM; MPI 4 implementations answer MPI_T_ERR_INVALID_INDEX. */
    EARLY_CHECK(code == MPI_T_ERR_INVALID_ITEM || code == MPI_T_ERR_INVALID_INDEX, "item past the end of %s's enumeration: code %d", variable, code);
#ifdef TEST_BRAID_ONLY
    EARLY_CHECK(code == MPI_T_ERR_INVALID_ITEM, "item past the end: code %d", code);
#endif
}

/* Every control variable: its description, its type, and its value when bound to no object
 * (`read_values`: Open MPI 4 crashes reading some of its variables after MPI_Init). */
static void enumerate_cvars(int read_values)
{
    int count = -1;
    int code = MPI_T_cvar_get_num(&count);
    EARLY_CHECK(code == MPI_SUCCESS && count >= 0, "MPI_T_cvar_get_num: code %d, %d variables", code, count);
    for (int index = 0; index < count; index++) {
        char name[256], desc[4096];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        code = MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len, &bind, &scope);
        if (is_deleted(code))
            continue;
        EARLY_CHECK(code == MPI_SUCCESS, "MPI_T_cvar_get_info(%d): code %d", index, code);
        EARLY_CHECK(name_len == (int)strlen(name) + 1 && name_len > 1, "cvar %d: name_len %d for \"%s\"", index, name_len, name);
        EARLY_CHECK(is_allowed_type(type), "cvar %s has a datatype variables may not have", name);
        EARLY_CHECK(verbosity >= MPI_T_VERBOSITY_USER_BASIC && verbosity <= MPI_T_VERBOSITY_MPIDEV_ALL, "cvar %s: verbosity %d", name, verbosity);
        EARLY_CHECK(scope >= MPI_T_SCOPE_CONSTANT && scope <= MPI_T_SCOPE_ALL_EQ, "cvar %s: scope %d", name, scope);
        int index_of_name = -1;
        code = MPI_T_cvar_get_index(name, &index_of_name);
        EARLY_CHECK(code == MPI_SUCCESS && index_of_name == index, "MPI_T_cvar_get_index(%s) gave code %d index %d, not %d", name, code, index_of_name, index);
        if (enumtype != MPI_T_ENUM_NULL)
            check_enumeration(enumtype, name);
        if (bind != MPI_T_BIND_NO_OBJECT || !read_values)
            continue;
        MPI_T_cvar_handle handle;
        int elements = -1;
        code = MPI_T_cvar_handle_alloc(index, NULL, &handle, &elements);
        if (is_deleted(code))
            continue;
        EARLY_CHECK(code == MPI_SUCCESS && elements > 0, "MPI_T_cvar_handle_alloc(%s): code %d, count %d", name, code, elements);
        void *value = calloc((size_t)elements, 16);
        code = MPI_T_cvar_read(handle, value);
        EARLY_CHECK(code == MPI_SUCCESS || is_deleted(code), "MPI_T_cvar_read(%s): code %d", name, code);
        free(value);
        code = MPI_T_cvar_handle_free(&handle);
        EARLY_CHECK(code == MPI_SUCCESS && handle == MPI_T_CVAR_HANDLE_NULL, "MPI_T_cvar_handle_free(%s): code %d", name, code);
    }
    char name[16];
    int name_len = sizeof name, index;
    code = MPI_T_cvar_get_info(count, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    EARLY_CHECK(IS_INDEX_ERROR(code), "MPI_T_cvar_get_info(count): code %d", code);
    code = MPI_T_cvar_get_info(-1, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    EARLY_CHECK(IS_INDEX_ERROR(code), "MPI_T_cvar_get_info(-1): code %d", code);
    code = MPI_T_cvar_get_index("no_such_control_variable", &index);
    EARLY_CHECK(code == MPI_T_ERR_INVALID_NAME, "MPI_T_cvar_get_index of an unknown name: code %d", code);
    MPI_T_cvar_handle handle;
    int elements;
    code = MPI_T_cvar_handle_alloc(count, NULL, &handle, &elements);
    EARLY_CHECK(IS_INDEX_ERROR(code), "MPI_T_cvar_handle_alloc(count): code %d", code);
}

/* Every performance variable: its description, and its value when bound to no object. */
static void enumerate_pvars(void)
{
    int count = -1;
    int code = MPI_T_pvar_get_num(&count);
    CHECK(code == MPI_SUCCESS && count >= 0, "MPI_T_pvar_get_num: code %d, %d variables", code, count);
    MPI_T_pvar_session session;
    code = MPI_T_pvar_session_create(&session);
    CHECK(code == MPI_SUCCESS, "MPI_T_pvar_session_create: code %d", code);
    for (int index = 0; index < count; index++) {
        char name[256], desc[4096];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        code = MPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class, &type, &enumtype, desc, &desc_len, &bind, &readonly, &continuous,
                                   &atomic);
        if (is_deleted(code))
            continue;
        CHECK(code == MPI_SUCCESS, "MPI_T_pvar_get_info(%d): code %d", index, code);
        CHECK(name_len == (int)strlen(name) + 1 && name_len > 1, "pvar %d: name_len %d for \"%s\"", index, name_len, name);
        CHECK(is_allowed_type(type), "pvar %s has a datatype variables may not have", name);
        CHECK(var_class >= MPI_T_PVAR_CLASS_STATE && var_class <= MPI_T_PVAR_CLASS_GENERIC, "pvar %s: class %d", name, var_class);
        CHECK((readonly == 0 || readonly == 1) && (continuous == 0 || continuous == 1) && (atomic == 0 || atomic == 1),
              "pvar %s: flags %d %d %d", name, readonly, continuous, atomic);
        int index_of_name = -1;
        code = MPI_T_pvar_get_index(name, var_class, &index_of_name);
        CHECK(code == MPI_SUCCESS && index_of_name == index, "MPI_T_pvar_get_index(%s) gave code %d index %d, not %d", name, code, index_of_name, index);
        if (enumtype != MPI_T_ENUM_NULL)
            check_enumeration(enumtype, name);
        if (bind != MPI_T_BIND_NO_OBJECT)
            continue;
        MPI_T_pvar_handle handle;
        int elements = -1;
        code = MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &elements);
        if (is_deleted(code))
            continue;
        CHECK(code == MPI_SUCCESS && elements >= 0, "MPI_T_pvar_handle_alloc(%s): code %d, count %d", name, code, elements);
        if (!continuous) {
            code = MPI_T_pvar_start(session, handle);
            CHECK(code == MPI_SUCCESS, "MPI_T_pvar_start(%s): code %d", name, code);
        } else {
            code = MPI_T_pvar_start(session, handle);
            CHECK(code == MPI_T_ERR_PVAR_NO_STARTSTOP, "MPI_T_pvar_start(%s), a continuous variable: code %d", name, code);
        }
        void *value = calloc((size_t)elements + 1, 16);
        code = MPI_T_pvar_read(session, handle, value);
        CHECK(code == MPI_SUCCESS || is_deleted(code), "MPI_T_pvar_read(%s): code %d", name, code);
        free(value);
        if (!continuous) {
            code = MPI_T_pvar_stop(session, handle);
            CHECK(code == MPI_SUCCESS, "MPI_T_pvar_stop(%s): code %d", name, code);
        }
        code = MPI_T_pvar_handle_free(session, &handle);
        CHECK(code == MPI_SUCCESS && handle == MPI_T_PVAR_HANDLE_NULL, "MPI_T_pvar_handle_free(%s): code %d", name, code);
    }
    code = MPI_T_pvar_session_free(&session);
    CHECK(code == MPI_SUCCESS && session == MPI_T_PVAR_SESSION_NULL, "MPI_T_pvar_session_free: code %d", code);

    int index;
#ifdef TEST_BRAID_ONLY
    /* MPICH 4 does not check this index (it crashes). */
    char name[16];
    int name_len = sizeof name;
    code = MPI_T_pvar_get_info(count, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(code == MPI_T_ERR_INVALID_INDEX, "MPI_T_pvar_get_info(count): code %d", code);
    MPI_T_pvar_session session_for_errors;
    MPI_T_pvar_handle handle;
    MPI_T_pvar_session_create(&session_for_errors);
    code = MPI_T_pvar_handle_alloc(session_for_errors, count, NULL, &handle, &index);
    CHECK(code == MPI_T_ERR_INVALID_INDEX, "MPI_T_pvar_handle_alloc(count): code %d", code);
    MPI_T_pvar_session_free(&session_for_errors);
#endif
    code = MPI_T_pvar_get_index("no_such_performance_variable", MPI_T_PVAR_CLASS_COUNTER, &index);
    CHECK(code == MPI_T_ERR_INVALID_NAME, "MPI_T_pvar_get_index of an unknown name: code %d", code);
}

static void enumerate_categories(void)
{
    int count = -1, cvars = 0, pvars = 0;
    int code = MPI_T_category_get_num(&count);
    CHECK(code == MPI_SUCCESS && count >= 0, "MPI_T_category_get_num: code %d, %d categories", code, count);
    MPI_T_cvar_get_num(&cvars);
    MPI_T_pvar_get_num(&pvars);
    for (int index = 0; index < count; index++) {
        char name[256], desc[4096];
        int name_len = sizeof name, desc_len = sizeof desc, num_cvars = -1, num_pvars = -1, num_categories = -1;
        code = MPI_T_category_get_info(index, name, &name_len, desc, &desc_len, &num_cvars, &num_pvars, &num_categories);
        if (is_deleted(code))
            continue;
        CHECK(code == MPI_SUCCESS && num_cvars >= 0 && num_pvars >= 0 && num_categories >= 0, "MPI_T_category_get_info(%d): code %d", index, code);
        CHECK(name_len == (int)strlen(name) + 1, "category %d: name_len %d for \"%s\"", index, name_len, name);
        int *indices = malloc(sizeof(int) * (size_t)(num_cvars + num_pvars + num_categories + 1));
        code = MPI_T_category_get_cvars(index, num_cvars, indices);
        CHECK(code == MPI_SUCCESS, "MPI_T_category_get_cvars(%s): code %d", name, code);
        for (int i = 0; i < num_cvars; i++)
            CHECK(indices[i] >= 0 && indices[i] < cvars, "category %s lists cvar %d of %d", name, indices[i], cvars);
        code = MPI_T_category_get_pvars(index, num_pvars, indices);
        CHECK(code == MPI_SUCCESS, "MPI_T_category_get_pvars(%s): code %d", name, code);
        for (int i = 0; i < num_pvars; i++)
            CHECK(indices[i] >= 0 && indices[i] < pvars, "category %s lists pvar %d of %d", name, indices[i], pvars);
        code = MPI_T_category_get_categories(index, num_categories, indices);
        CHECK(code == MPI_SUCCESS, "MPI_T_category_get_categories(%s): code %d", name, code);
        for (int i = 0; i < num_categories; i++)
            CHECK(indices[i] >= 0 && indices[i] < count, "category %s lists category %d of %d", name, indices[i], count);
        free(indices);
    }
    int stamp = -1, again = -2;
    code = MPI_T_category_changed(&stamp);
    CHECK(code == MPI_SUCCESS, "MPI_T_category_changed: code %d", code);
    MPI_T_category_changed(&again);
    CHECK(stamp == again, "the category stamp changed from %d to %d with nothing added", stamp, again);
    char name[16];
    int name_len = sizeof name;
    code = MPI_T_category_get_info(count, name, &name_len, NULL, NULL, NULL, NULL, NULL);
    CHECK(code == MPI_T_ERR_INVALID_INDEX, "MPI_T_category_get_info(count): code %d", code);
}

#ifdef TEST_BRAID_ONLY
static unsigned long long expected_eager_max(void)
{
    const char *set = getenv("BRAID_EAGER_MAX");
    return set ? strtoull(set, NULL, 10) : 32768;
}

static int cvar_index(const char *name)
{
    int index = -1;
    int code = MPI_T_cvar_get_index(name, &index);
    EARLY_CHECK(code == MPI_SUCCESS, "MPI_T_cvar_get_index(%s): code %d", name, code);
    return index;
}

/* Braid's settings as control variables; `running`: between MPI_Init and MPI_Finalize. */
static void braid_settings(int running)
{
    MPI_T_cvar_handle handle;
    int count = 0, scope = 0, bind = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    char desc[1024];
    int desc_len = sizeof desc;

    int eager = cvar_index("BRAID_EAGER_MAX");
    MPI_T_cvar_get_info(eager, NULL, NULL, NULL, &type, &enumtype, desc, &desc_len, &bind, &scope);
    EARLY_CHECK(type == MPI_UNSIGNED_LONG_LONG && enumtype == MPI_T_ENUM_NULL && bind == MPI_T_BIND_NO_OBJECT && scope == MPI_T_SCOPE_READONLY,
                "BRAID_EAGER_MAX: type %d scope %d bind %d", (int)type, scope, bind);
    EARLY_CHECK(strstr(desc, "eager") != NULL, "BRAID_EAGER_MAX is described as \"%s\"", desc);
    EARLY_CHECK(MPI_T_cvar_handle_alloc(eager, NULL, &handle, &count) == MPI_SUCCESS && count == 1, "BRAID_EAGER_MAX: count %d", count);
    unsigned long long eager_max = 0;
    EARLY_CHECK(MPI_T_cvar_read(handle, &eager_max) == MPI_SUCCESS && eager_max == expected_eager_max(), "BRAID_EAGER_MAX reads %llu, expected %llu",
                eager_max, expected_eager_max());
    int code = MPI_T_cvar_write(handle, &eager_max);
    EARLY_CHECK(code == MPI_T_ERR_CVAR_SET_NEVER, "writing BRAID_EAGER_MAX: code %d", code);
    code = MPI_T_cvar_read(handle, NULL);
    EARLY_CHECK(code == MPI_T_ERR_INVALID, "MPI_T_cvar_read into NULL: code %d", code);
    MPI_T_cvar_handle stale = handle;
    MPI_T_cvar_handle_free(&handle);
    code = MPI_T_cvar_read(stale, &eager_max);
    EARLY_CHECK(code == MPI_T_ERR_INVALID_HANDLE, "reading a freed cvar handle: code %d", code);

    /* A choice is an MPI_INT with an enumeration naming its values. */
    int wait = cvar_index("BRAID_WAIT");
    MPI_T_cvar_get_info(wait, NULL, NULL, NULL, &type, &enumtype, NULL, NULL, NULL, NULL);
    EARLY_CHECK(type == MPI_INT && enumtype != MPI_T_ENUM_NULL, "BRAID_WAIT: type %d", (int)type);
    int items = 0, name_len = 64, mode = -1;
    char name[64];
    MPI_T_enum_get_info(enumtype, &items, name, &name_len);
    EARLY_CHECK(items == 3 && strcmp(name, "braid_wait_mode") == 0, "BRAID_WAIT's enumeration %s has %d items", name, items);
    MPI_T_cvar_handle_alloc(wait, NULL, &handle, &count);
    MPI_T_cvar_read(handle, &mode);
    MPI_T_cvar_handle_free(&handle);
    int value = -1;
    name_len = sizeof name;
    MPI_T_enum_get_item(enumtype, mode, &value, name, &name_len);
    const char *wanted = getenv("BRAID_WAIT") ? getenv("BRAID_WAIT") : "auto";
    EARLY_CHECK(value == mode && strcmp(name, wanted) == 0, "BRAID_WAIT reads %d (%s), expected %s", mode, name, wanted);
    code = MPI_T_enum_get_info(MPI_T_ENUM_NULL, &items, name, &name_len);
    EARLY_CHECK(code == MPI_T_ERR_INVALID_HANDLE, "MPI_T_enum_get_info(MPI_T_ENUM_NULL): code %d", code);

    /* A string's count is its length with the NUL. */
    int rails = cvar_index("BRAID_RAILS");
    MPI_T_cvar_get_info(rails, NULL, NULL, NULL, &type, NULL, NULL, NULL, NULL, NULL);
    MPI_T_cvar_handle_alloc(rails, NULL, &handle, &count);
    char text[256] = "";
    MPI_T_cvar_read(handle, text);
    MPI_T_cvar_handle_free(&handle);
    wanted = getenv("BRAID_RAILS") ? getenv("BRAID_RAILS") : "auto";
    EARLY_CHECK(type == MPI_CHAR && strcmp(text, wanted) == 0 && count == (int)strlen(wanted) + 1, "BRAID_RAILS reads \"%s\" (count %d)", text, count);

    /* The collective thresholds can be written while MPI runs (the same value on every rank). */
    int split = cvar_index("BRAID_COLL_ALLREDUCE_SPLIT_MIN");
    MPI_T_cvar_get_info(split, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &scope);
    EARLY_CHECK(scope == MPI_T_SCOPE_ALL_EQ, "BRAID_COLL_ALLREDUCE_SPLIT_MIN: scope %d", scope);
    MPI_T_cvar_handle_alloc(split, NULL, &handle, &count);
    unsigned long long original = 0, changed = 64, now = 0;
    MPI_T_cvar_read(handle, &original);
    code = MPI_T_cvar_write(handle, &changed);
    if (!running) {
        EARLY_CHECK(code == MPI_T_ERR_CVAR_SET_NOT_NOW, "writing BRAID_COLL_ALLREDUCE_SPLIT_MIN outside MPI: code %d", code);
    } else {
        CHECK(code == MPI_SUCCESS, "writing BRAID_COLL_ALLREDUCE_SPLIT_MIN: code %d", code);
        MPI_T_cvar_read(handle, &now);
        CHECK(now == 64, "BRAID_COLL_ALLREDUCE_SPLIT_MIN reads %llu after writing 64", now);
        /* Allreduces on both sides of the new threshold still give the right sums. */
        double in[64], out[64];
        for (int i = 0; i < 64; i++)
            in[i] = rank + i;
        MPI_Allreduce(in, out, 64, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 64; i++)
            CHECK(out[i] == (double)size * (size - 1) / 2 + (double)size * i, "allreduce element %d is %g", i, out[i]);
        MPI_T_cvar_write(handle, &original);
    }
    MPI_T_cvar_handle_free(&handle);
}

static int pvar(MPI_T_pvar_session session, const char *name, int var_class, MPI_T_pvar_handle *handle)
{
    int index = -1, count = -1;
    int code = MPI_T_pvar_get_index(name, var_class, &index);
    CHECK(code == MPI_SUCCESS, "MPI_T_pvar_get_index(%s): code %d", name, code);
    code = MPI_T_pvar_handle_alloc(session, index, NULL, handle, &count);
    CHECK(code == MPI_SUCCESS, "MPI_T_pvar_handle_alloc(%s): code %d", name, code);
    return count;
}

#define SMALL(r) (64 + 4 * (r))
#define LARGE (256 * 1024)
#define EXCHANGED_BYTES(r) (3ULL * SMALL(r) + LARGE)

/* Three eager messages and one rendezvous message to every rank (this one included): the
 * per-peer counters move by exactly that; the protocol counters say which went how. */
static void traffic_counters(void)
{
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_handle messages_sent, bytes_sent, messages_received, bytes_received, eager, rendezvous, names, frames, transport_bytes;
    CHECK(pvar(session, "braid_messages_sent", MPI_T_PVAR_CLASS_COUNTER, &messages_sent) == size, "braid_messages_sent is not one per rank");
    CHECK(pvar(session, "braid_bytes_sent", MPI_T_PVAR_CLASS_COUNTER, &bytes_sent) == size, "braid_bytes_sent is not one per rank");
    CHECK(pvar(session, "braid_messages_received", MPI_T_PVAR_CLASS_COUNTER, &messages_received) == size, "braid_messages_received is not one per rank");
    CHECK(pvar(session, "braid_bytes_received", MPI_T_PVAR_CLASS_COUNTER, &bytes_received) == size, "braid_bytes_received is not one per rank");
    pvar(session, "braid_eager_sends", MPI_T_PVAR_CLASS_COUNTER, &eager);
    pvar(session, "braid_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER, &rendezvous);
    int name_count = pvar(session, "braid_transport_names", MPI_T_PVAR_CLASS_GENERIC, &names);
    int transports = pvar(session, "braid_transport_frames_received", MPI_T_PVAR_CLASS_COUNTER, &frames);
    pvar(session, "braid_transport_bytes_received", MPI_T_PVAR_CLASS_COUNTER, &transport_bytes);

    char *transport_names = malloc((size_t)name_count);
    MPI_T_pvar_read(session, names, transport_names);
    CHECK((int)strlen(transport_names) + 1 == name_count && strncmp(transport_names, "self", 4) == 0, "transports \"%s\" (count %d)", transport_names,
          name_count);
    int commas = 0;
    for (const char *c = transport_names; *c; c++)
        commas += *c == ',';
    CHECK(commas + 1 == transports, "%d transport names (%s) for %d transports", commas + 1, transport_names, transports);
    if (size > 1)
        CHECK(strstr(transport_names, "shm") != NULL, "no shared-memory transport among \"%s\"", transport_names);
    free(transport_names);

    /* Counting starts in a ring: rank 0 starts, then each rank receives a token from its
     * predecessor before it starts (uncounted) and passes it on after (counted); once the token
     * is back, rank 0 tells every rank to go. Every counted message is thus known. */
    unsigned long long *values = calloc((size_t)size, sizeof *values);
    unsigned long long *extra_sent = calloc((size_t)size, sizeof *extra_sent), *extra_received = calloc((size_t)size, sizeof *extra_received);
    int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    if (rank != 0)
        MPI_Recv(NULL, 0, MPI_CHAR, previous, 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "starting every handle of the session failed");
    if (size > 1) {
        MPI_Send(NULL, 0, MPI_CHAR, next, 90, MPI_COMM_WORLD);
        extra_sent[next]++;
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_CHAR, previous, 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            extra_received[previous]++;
            for (int peer = 1; peer < size; peer++) {
                MPI_Send(NULL, 0, MPI_CHAR, peer, 91, MPI_COMM_WORLD);
                extra_sent[peer]++;
            }
        } else {
            MPI_Recv(NULL, 0, MPI_CHAR, 0, 91, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            extra_received[0]++;
        }
    }
    unsigned long long extra_sends = 0;
    for (int peer = 0; peer < size; peer++)
        extra_sends += extra_sent[peer];

    char *small = calloc(SMALL(size), 1), *large = calloc(LARGE, 1);
    char *in_small = calloc((size_t)size * 3, SMALL(size)), *in_large = calloc((size_t)size, LARGE);
    MPI_Request *requests = malloc(sizeof(MPI_Request) * 8 * (size_t)size);
    int posted = 0;
    for (int peer = 0; peer < size; peer++) {
        for (int k = 0; k < 3; k++)
            MPI_Irecv(in_small + (size_t)(3 * peer + k) * SMALL(size), SMALL(peer), MPI_CHAR, peer, k, MPI_COMM_WORLD, &requests[posted++]);
        MPI_Irecv(in_large + (size_t)peer * LARGE, LARGE, MPI_CHAR, peer, 3, MPI_COMM_WORLD, &requests[posted++]);
    }
    for (int peer = 0; peer < size; peer++) {
        for (int k = 0; k < 3; k++)
            MPI_Isend(small, SMALL(rank), MPI_CHAR, peer, k, MPI_COMM_WORLD, &requests[posted++]);
        MPI_Isend(large, LARGE, MPI_CHAR, peer, 3, MPI_COMM_WORLD, &requests[posted++]);
    }
    MPI_Waitall(posted, requests, MPI_STATUSES_IGNORE);

    /* Every exchanged message has arrived. The counters hold the exchange and the start's empty
     * messages, and perhaps the empty token of the end (below) that the predecessor may already
     * have passed on: no rank sends anything else before every rank has read. */
    MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES);
    MPI_T_pvar_read(session, messages_sent, values);
    for (int peer = 0; peer < size; peer++)
        CHECK(values[peer] == 4 + extra_sent[peer], "braid_messages_sent[%d] = %llu, expected %llu", peer, values[peer], 4 + extra_sent[peer]);
    MPI_T_pvar_read(session, bytes_sent, values);
    for (int peer = 0; peer < size; peer++)
        CHECK(values[peer] == EXCHANGED_BYTES(rank), "braid_bytes_sent[%d] = %llu, expected %llu", peer, values[peer], EXCHANGED_BYTES(rank));
    MPI_T_pvar_read(session, messages_received, values);
    for (int peer = 0; peer < size; peer++)
        CHECK(values[peer] == 4 + extra_received[peer] || (rank != 0 && peer == previous && values[peer] == 5 + extra_received[peer]),
              "braid_messages_received[%d] = %llu, expected %llu", peer, values[peer], 4 + extra_received[peer]);
    MPI_T_pvar_read(session, bytes_received, values);
    for (int peer = 0; peer < size; peer++)
        CHECK(values[peer] == EXCHANGED_BYTES(peer), "braid_bytes_received[%d] = %llu, expected %llu", peer, values[peer], EXCHANGED_BYTES(peer));
    unsigned long long count = 0;
    MPI_T_pvar_read(session, eager, &count);
    CHECK(count == 3ULL * size + extra_sends, "braid_eager_sends = %llu, expected %llu", count, 3ULL * size + extra_sends);
    MPI_T_pvar_read(session, rendezvous, &count);
    CHECK(count == (unsigned long long)size, "braid_rendezvous_sends = %llu, expected %d", count, size);
    unsigned long long *per_transport = calloc((size_t)transports, sizeof *per_transport), total = 0;
    MPI_T_pvar_read(session, frames, per_transport);
    for (int t = 0; t < transports; t++)
        total += per_transport[t];
    CHECK(total >= 4ULL * size, "the transports delivered %llu frames for %d messages", total, 4 * size);
    MPI_T_pvar_read(session, transport_bytes, per_transport);
    total = 0;
    for (int t = 0; t < transports; t++)
        total += per_transport[t];
    unsigned long long eager_bytes = 0;
    for (int peer = 0; peer < size; peer++)
        eager_bytes += 3ULL * SMALL(peer);
    CHECK(total >= eager_bytes, "the transports delivered %llu payload bytes, the eager messages alone %llu", total, eager_bytes);
    free(per_transport);

    /* The reads end in a ring too: a rank passes the token on once it has read and received it,
     * and rank 0, when the token is back, lets everyone go on. */
    if (size > 1) {
        if (rank != 0)
            MPI_Recv(NULL, 0, MPI_CHAR, previous, 92, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_CHAR, next, 92, MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_CHAR, previous, 92, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int peer = 1; peer < size; peer++)
                MPI_Send(NULL, 0, MPI_CHAR, peer, 93, MPI_COMM_WORLD);
        } else {
            MPI_Recv(NULL, 0, MPI_CHAR, 0, 93, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    free(extra_sent);
    free(extra_received);

    /* A stopped counter keeps its value; writing sets it; reset returns it to 0. */
    unsigned long long kept = 0;
    MPI_T_pvar_read(session, messages_sent, values);
    kept = values[0];
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_T_pvar_read(session, messages_sent, values);
    CHECK(values[0] == kept, "a stopped counter moved from %llu to %llu", kept, values[0]);
    for (int peer = 0; peer < size; peer++)
        values[peer] = 1000 + peer;
    CHECK(MPI_T_pvar_write(session, messages_sent, values) == MPI_SUCCESS, "writing braid_messages_sent failed");
    memset(values, 0, sizeof *values * (size_t)size);
    MPI_T_pvar_read(session, messages_sent, values);
    CHECK(values[size - 1] == 1000ULL + size - 1, "braid_messages_sent reads %llu after writing %d", values[size - 1], 1000 + size - 1);
    MPI_T_pvar_readreset(session, messages_sent, values);
    CHECK(values[0] == 1000, "MPI_T_pvar_readreset read %llu", values[0]);
    MPI_T_pvar_read(session, messages_sent, values);
    CHECK(values[0] == 0, "braid_messages_sent is %llu after a reset", values[0]);

    /* Handles are checked against their session; ALL_HANDLES only starts, stops and resets. */
    MPI_T_pvar_session other;
    MPI_T_pvar_session_create(&other);
    int code = MPI_T_pvar_read(other, messages_sent, values);
    CHECK(code == MPI_T_ERR_INVALID_HANDLE, "reading a handle through another session: code %d", code);
    code = MPI_T_pvar_read(session, MPI_T_PVAR_ALL_HANDLES, values);
    CHECK(code == MPI_T_ERR_INVALID_HANDLE, "reading MPI_T_PVAR_ALL_HANDLES: code %d", code);
    code = MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES);
    CHECK(code == MPI_SUCCESS, "resetting every handle (some read-only): code %d", code);
    code = MPI_T_pvar_read(session, messages_sent, NULL);
    CHECK(code == MPI_T_ERR_INVALID, "reading into NULL: code %d", code);
    int index;
    MPI_T_pvar_handle handle;
    MPI_T_pvar_get_index("braid_messages_sent", MPI_T_PVAR_CLASS_COUNTER, &index);
    code = MPI_T_pvar_get_index("braid_messages_sent", MPI_T_PVAR_CLASS_LEVEL, &index);
    CHECK(code == MPI_T_ERR_INVALID_NAME, "MPI_T_pvar_get_index with the wrong class: code %d", code);
    MPI_T_pvar_session_free(&other);
    int elements;
    code = MPI_T_pvar_handle_alloc(other, 0, NULL, &handle, &elements);
    CHECK(code == MPI_T_ERR_INVALID_SESSION, "allocating in a freed session: code %d", code);
    code = MPI_T_pvar_session_free(&other);
    CHECK(code == MPI_T_ERR_INVALID_SESSION, "freeing MPI_T_PVAR_SESSION_NULL: code %d", code);

    code = MPI_T_pvar_session_free(&session);
    CHECK(code == MPI_SUCCESS, "freeing a session with its handles: code %d", code);
    code = MPI_T_pvar_read(session, messages_sent, values);
    CHECK(code == MPI_T_ERR_INVALID_SESSION, "reading through a freed session: code %d", code);
    free(values);
    free(small);
    free(large);
    free(in_small);
    free(in_large);
    free(requests);
}

/* Rank 0 sends itself messages before receiving them while the others wait for it in a receive
 * (nothing else reaches it): the queue's level, its high watermark and the count of unexpected
 * messages move by exactly that. */
static void unexpected_queue(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) {
        MPI_Recv(NULL, 0, MPI_CHAR, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_handle level, high, arrived;
    pvar(session, "braid_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &level);
    pvar(session, "braid_unexpected_messages", MPI_T_PVAR_CLASS_COUNTER, &arrived);
    unsigned long long before = 0, now = 0, watermark = 0, count = 0, value = 1;
    MPI_T_pvar_read(session, level, &before);
    pvar(session, "braid_unexpected_queue_high_watermark", MPI_T_PVAR_CLASS_HIGHWATERMARK, &high);
    MPI_T_pvar_read(session, high, &watermark);
    CHECK(watermark == before, "a new high watermark starts at %llu, the level is %llu", watermark, before);

    int code = MPI_T_pvar_write(session, level, &value);
    CHECK(code == MPI_T_ERR_PVAR_NO_WRITE, "writing a level: code %d", code);
    code = MPI_T_pvar_reset(session, level);
    CHECK(code == MPI_T_ERR_PVAR_NO_WRITE, "resetting a level: code %d", code);
    code = MPI_T_pvar_readreset(session, arrived, &value);
    CHECK(code == MPI_T_ERR_PVAR_NO_WRITE, "read-resetting a read-only counter: code %d", code);
    code = MPI_T_pvar_stop(session, level);
    CHECK(code == MPI_T_ERR_PVAR_NO_STARTSTOP, "stopping a continuous variable: code %d", code);

    int payload[5] = {0, 1, 2, 3, 4}, flag = 0;
    for (int i = 0; i < 5; i++)
        MPI_Send(&payload[i], 1, MPI_INT, 0, 50 + i, MPI_COMM_WORLD);
    while (!flag)
        MPI_Iprobe(0, 54, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_T_pvar_read(session, level, &now);
    CHECK(now == before + 5, "the unexpected queue holds %llu messages, expected %llu", now, before + 5);
    for (int i = 0; i < 5; i++)
        MPI_Recv(&payload[i], 1, MPI_INT, 0, 50 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_T_pvar_read(session, level, &now);
    CHECK(now == before, "the unexpected queue holds %llu messages after the receives, expected %llu", now, before);
    MPI_T_pvar_read(session, high, &watermark);
    CHECK(watermark == before + 5, "the high watermark is %llu, expected %llu", watermark, before + 5);
    MPI_T_pvar_read(session, arrived, &count);
    CHECK(count == 5, "braid_unexpected_messages = %llu, expected 5", count);
    MPI_T_pvar_readreset(session, high, &watermark);
    MPI_T_pvar_read(session, high, &watermark);
    CHECK(watermark == before, "a reset high watermark is %llu, expected the level %llu", watermark, before);

    MPI_T_pvar_session_free(&session);
    for (int peer = 1; peer < size; peer++)
        MPI_Send(NULL, 0, MPI_CHAR, peer, 77, MPI_COMM_WORLD);
}

/* Rank 0 waits for a message that rank 1 sends 100 ms late: the wait is spent largely blocked
 * (unless BRAID_WAIT=poll). */
static void blocked_time(void)
{
    if (size < 2)
        return;
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_handle blocked, sleeps;
    int datatype_index;
    MPI_Datatype type;
    MPI_T_pvar_get_index("braid_wait_blocked_time", MPI_T_PVAR_CLASS_TIMER, &datatype_index);
    MPI_T_pvar_get_info(datatype_index, NULL, NULL, NULL, NULL, &type, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(type == MPI_DOUBLE, "braid_wait_blocked_time has datatype %d", (int)type);
    pvar(session, "braid_wait_blocked_time", MPI_T_PVAR_CLASS_TIMER, &blocked);
    pvar(session, "braid_wait_sleeps", MPI_T_PVAR_CLASS_COUNTER, &sleeps);
    MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES);
    MPI_Barrier(MPI_COMM_WORLD);
    int token = 0;
    if (rank == 1) {
        struct timespec late = {0, 100 * 1000 * 1000};
        nanosleep(&late, NULL);
        MPI_Send(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Recv(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES);
    double seconds = -1;
    unsigned long long count = 0;
    MPI_T_pvar_read(session, blocked, &seconds);
    MPI_T_pvar_read(session, sleeps, &count);
    /* BRAID_WAIT=poll never blocks. */
    MPI_T_cvar_handle wait_mode;
    int mode = -1, elements;
    MPI_T_cvar_handle_alloc(cvar_index("BRAID_WAIT"), NULL, &wait_mode, &elements);
    MPI_T_cvar_read(wait_mode, &mode);
    MPI_T_cvar_handle_free(&wait_mode);
    if (rank == 0 && mode == 1)
        CHECK(seconds == 0 && count == 0, "rank 0 polled, yet %g s were counted as blocked in %llu sleeps", seconds, count);
    else if (rank == 0)
        CHECK(seconds > 0.01 && seconds < 10 && count >= 1, "rank 0 waited 100 ms, %g s of them blocked in %llu sleeps", seconds, count);
    MPI_T_pvar_session_free(&session);
}

/* A handle started while MPI runs keeps, after MPI_Finalize, the value it had at the end. */
static MPI_T_pvar_session final_session;
static MPI_T_pvar_handle final_handle;
static unsigned long long *final_values;

static void before_finalize(void)
{
    int provided;
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread after the last MPI_T_finalize failed");
    MPI_T_pvar_session_create(&final_session);
    pvar(final_session, "braid_messages_sent", MPI_T_PVAR_CLASS_COUNTER, &final_handle);
    MPI_T_pvar_start(final_session, final_handle);
    int token = rank, received;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 8, &received, 1, MPI_INT, (rank + size - 1) % size, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* The values right before MPI_Finalize (after the last barrier). */
static void read_final_values(void)
{
    final_values = calloc((size_t)size, sizeof *final_values);
    MPI_T_pvar_read(final_session, final_handle, final_values);
    CHECK(final_values[(rank + 1) % size] >= 1, "braid_messages_sent[next] = %llu after a message", final_values[(rank + 1) % size]);
}

static void after_finalize(void)
{
    unsigned long long *values = calloc((size_t)size, sizeof *values);
    int code = MPI_T_pvar_read(final_session, final_handle, values);
    EARLY_CHECK(code == MPI_SUCCESS, "reading after MPI_Finalize: code %d", code);
    for (int peer = 0; peer < size; peer++)
        EARLY_CHECK(values[peer] == final_values[peer], "braid_messages_sent[%d] moved from %llu to %llu in MPI_Finalize", peer, final_values[peer],
                    values[peer]);
    MPI_T_pvar_handle fresh;
    int count = -1;
    code = MPI_T_pvar_handle_alloc(final_session, 0, NULL, &fresh, &count);
    EARLY_CHECK(code == MPI_SUCCESS && count == size, "a handle allocated after MPI_Finalize: code %d, count %d", code, count);
    MPI_T_pvar_start(final_session, fresh);
    MPI_T_pvar_read(final_session, fresh, values);
    EARLY_CHECK(values[0] == 0, "a counter started after MPI_Finalize reads %llu", values[0]);
    free(values);
    free(final_values);
    MPI_T_pvar_session_free(&final_session);
    braid_settings(0);
    EARLY_CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize after MPI_Finalize failed");
}
#endif

int main(int argc, char **argv)
{
    int provided = -1, count;
    /* Nothing works before MPI_T_init_thread. */
    int code = MPI_T_cvar_get_num(&count);
    EARLY_CHECK(code == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_cvar_get_num before MPI_T_init_thread: code %d", code);
    code = MPI_T_finalize();
    EARLY_CHECK(code == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_finalize before MPI_T_init_thread: code %d", code);

    /* Before MPI_Init, twice (reference counted). */
    code = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    EARLY_CHECK(code == MPI_SUCCESS && provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "MPI_T_init_thread: code %d, provided %d", code,
                provided);
    code = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    EARLY_CHECK(code == MPI_SUCCESS, "a second MPI_T_init_thread: code %d", code);
    enumerate_cvars(1);
#ifdef TEST_BRAID_ONLY
    braid_settings(0);
#endif
    EARLY_CHECK(MPI_T_finalize() == MPI_SUCCESS, "the first MPI_T_finalize failed");

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* MPI_T stays initialised across MPI_Init: one MPI_T_init_thread is still unmatched. */
    code = MPI_T_cvar_get_num(&count);
    CHECK(code == MPI_SUCCESS, "MPI_T_cvar_get_num after one of two MPI_T_finalize calls: code %d", code);
#ifdef TEST_BRAID_ONLY
    enumerate_cvars(1);
#else
    enumerate_cvars(0);
#endif
    enumerate_pvars();
    enumerate_categories();
#ifdef TEST_BRAID_ONLY
    braid_settings(1);
    traffic_counters();
    unexpected_queue();
    blocked_time();
#endif
    CHECK(MPI_T_finalize() == MPI_SUCCESS, "the last MPI_T_finalize failed");
    code = MPI_T_pvar_get_num(&count);
    CHECK(code == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_pvar_get_num after the last MPI_T_finalize: code %d", code);

#ifdef TEST_BRAID_ONLY
    before_finalize();
#endif
    report_ok("mpit");
#ifdef TEST_BRAID_ONLY
    read_final_values();
#endif
    MPI_Finalize();
#ifdef TEST_BRAID_ONLY
    after_finalize();
#endif
    return 0;
}
