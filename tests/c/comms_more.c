/* More communicator and group calls: MPI_Comm_create_group (collective over the group only, two
 * groups at once with the same tag), MPI_Comm_dup_with_info, MPI_Comm_set_info and
 * MPI_Comm_get_info, MPI_Comm_split_type (MPI_COMM_TYPE_SHARED, MPI_UNDEFINED, keys),
 * MPI_Group_range_incl and MPI_Group_range_excl (strides, negative strides), and their errors
 * under MPI_ERRORS_RETURN. Runs on any number of ranks. */
#include <string.h>
#include "check.h"

static int rank, size;
static MPI_Group world_group;

/* The world ranks of `group`'s members. */
static void world_ranks_of(MPI_Group group, int *out, int *count)
{
    MPI_Group_size(group, count);
    int ranks[8];
    for (int i = 0; i < *count; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(group, *count, ranks, world_group, out);
}

static void create_group(void)
{
    /* The even ranks and the odd ranks each make a communicator, at the same time, with the same
     * tag; neither group involves the other. */
    int mine[8], count = 0;
    for (int r = rank % 2; r < size; r += 2)
        mine[count++] = r;
    MPI_Group group;
    MPI_Group_incl(world_group, count, mine, &group);
    MPI_Comm comm;
    int err = MPI_Comm_create_group(MPI_COMM_WORLD, group, 42, &comm);
    CHECK(err == MPI_SUCCESS && comm != MPI_COMM_NULL, "MPI_Comm_create_group returned %d", err);
    int comm_rank, comm_size;
    MPI_Comm_rank(comm, &comm_rank);
    MPI_Comm_size(comm, &comm_size);
    CHECK(comm_rank == rank / 2 && comm_size == count, "created group: rank %d of %d, expected %d of %d", comm_rank, comm_size, rank / 2, count);
    int sum = 0, expected = 0;
    for (int i = 0; i < count; i++)
        expected += mine[i];
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(sum == expected, "MPI_Allreduce on the created communicator gave %d, expected %d", sum, expected);

    /* Only the first rank of each half: a group of one, collective over itself alone. */
    if (rank < 2) {
        MPI_Group alone;
        MPI_Group_incl(world_group, 1, &rank, &alone);
        MPI_Comm single;
        MPI_Comm_create_group(MPI_COMM_WORLD, alone, 7, &single);
        MPI_Comm_size(single, &comm_size);
        CHECK(comm_size == 1, "a group of one made a communicator of %d", comm_size);
        MPI_Comm_free(&single);
        MPI_Group_free(&alone);
    }

    /* A subset of a derived communicator, in reverse order. */
    int reversed[8];
    for (int i = 0; i < count; i++)
        reversed[i] = count - 1 - i;
    MPI_Group comm_group, backwards;
    MPI_Comm_group(comm, &comm_group);
    MPI_Group_incl(comm_group, count, reversed, &backwards);
    MPI_Comm flipped;
    MPI_Comm_create_group(comm, backwards, 0, &flipped);
    MPI_Comm_rank(flipped, &comm_rank);
    CHECK(comm_rank == count - 1 - rank / 2, "reversed group: rank %d", comm_rank);
    int root_world_rank = rank;
    MPI_Bcast(&root_world_rank, 1, MPI_INT, 0, flipped);
    CHECK(root_world_rank == mine[count - 1], "the reversed communicator's root is world rank %d", root_world_rank);
    MPI_Comm_free(&flipped);

    /* A process outside the group gets MPI_COMM_NULL. */
    MPI_Group first;
    int zero = 0;
    MPI_Group_incl(comm_group, 1, &zero, &first);
    MPI_Comm head = MPI_COMM_WORLD;
    MPI_Comm_create_group(comm, first, 0, &head);
    if (rank / 2 == 0) {
        MPI_Comm_size(head, &comm_size);
        CHECK(comm_size == 1, "the head's communicator has %d ranks", comm_size);
        MPI_Comm_free(&head);
    } else {
        CHECK(head == MPI_COMM_NULL, "a non-member got a communicator");
    }
    MPI_Group_free(&first);

    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm result;
    err = MPI_Comm_create_group(comm, comm_group, -1, &result);
    CHECK(class_of(err) == MPI_ERR_TAG, "tag -1 returned class %d", class_of(err));
    err = MPI_Comm_create_group(MPI_COMM_NULL, comm_group, 0, &result);
    CHECK(class_of(err) == MPI_ERR_COMM, "MPI_COMM_NULL returned class %d", class_of(err));
#ifdef TEST_BRAID_ONLY
    CHECK(MPI_Comm_create_group(comm, MPI_GROUP_NULL, 0, &result) == MPI_ERR_GROUP, "MPI_GROUP_NULL");
    if (size > 1)
        CHECK(MPI_Comm_create_group(comm, world_group, 0, &result) == MPI_ERR_GROUP, "a group larger than the communicator");
    CHECK(MPI_Comm_create_group(comm, comm_group, 0, NULL) == MPI_ERR_ARG, "a NULL newcomm");
#endif
    MPI_Group_free(&backwards);
    MPI_Group_free(&comm_group);
    MPI_Group_free(&group);
    MPI_Comm_free(&comm);
}

static void info_hints(void)
{
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "braid_test_hint", "yes");
    MPI_Comm comm;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    int result, nkeys = -1;
    MPI_Comm_compare(MPI_COMM_WORLD, comm, &result);
    CHECK(result == MPI_CONGRUENT, "compare(world, dup_with_info) = %d", result);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(sum == size * (size - 1) / 2, "MPI_Allreduce on a dup_with_info communicator gave %d", sum);

    /* What MPI_Comm_get_info returns is the implementation's choice; it is a new info object. */
    MPI_Comm_get_info(comm, &used);
    CHECK(used != MPI_INFO_NULL && used != info, "MPI_Comm_get_info did not make a new info object");
    MPI_Info_get_nkeys(used, &nkeys);
    CHECK(nkeys >= 0, "the hints have %d keys", nkeys);
    MPI_Info_free(&used);
#ifdef TEST_BRAID_ONLY
    /* Braid returns the hints the program set. */
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Comm_get_info(comm, &used);
    MPI_Info_get_nkeys(used, &nkeys);
    MPI_Info_get(used, "braid_test_hint", MPI_MAX_INFO_VAL, value, &flag);
    CHECK(nkeys == 1 && flag && strcmp(value, "yes") == 0, "dup_with_info hints: %d keys, flag %d", nkeys, flag);
    MPI_Info_free(&used);

    MPI_Info_set(info, "braid_test_hint", "no");
    MPI_Info_set(info, "another", "1");
    MPI_Comm_set_info(comm, info);
    MPI_Comm_get_info(comm, &used);
    MPI_Info_get_nkeys(used, &nkeys);
    MPI_Info_get(used, "braid_test_hint", MPI_MAX_INFO_VAL, value, &flag);
    CHECK(nkeys == 2 && flag && strcmp(value, "no") == 0, "set_info hints: %d keys, value %s", nkeys, flag ? value : "(none)");
    MPI_Info_free(&used);

    MPI_Comm copy;
    MPI_Comm_dup(comm, &copy);
    MPI_Comm_get_info(copy, &used);
    MPI_Info_get_nkeys(used, &nkeys);
    CHECK(nkeys == 2, "MPI_Comm_dup kept %d hints", nkeys);
    MPI_Info_free(&used);
    MPI_Comm_free(&copy);

    MPI_Comm_dup_with_info(comm, MPI_INFO_NULL, &copy);
    MPI_Comm_get_info(copy, &used);
    MPI_Info_get_nkeys(used, &nkeys);
    CHECK(nkeys == 0, "dup_with_info(MPI_INFO_NULL) kept %d hints", nkeys);
    MPI_Info_free(&used);
    MPI_Comm_free(&copy);

    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    CHECK(MPI_Comm_set_info(comm, (MPI_Info)12345) == MPI_ERR_INFO, "set_info with an invalid info");
    CHECK(MPI_Comm_dup_with_info(comm, (MPI_Info)12345, &copy) == MPI_ERR_INFO && copy == MPI_COMM_NULL, "dup_with_info with an invalid info");
    CHECK(MPI_Comm_get_info(comm, NULL) == MPI_ERR_ARG, "get_info with a NULL pointer");
#endif
    MPI_Info_free(&info);
    MPI_Comm_free(&comm);
}

static void split_type(void)
{
    /* The tests run on one node: every rank shares memory with every other. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &node);
    int node_rank, node_size;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    CHECK(node_size == size && node_rank == size - 1 - rank, "shared split: rank %d of %d (keys reverse the order)", node_rank, node_size);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, node);
    CHECK(sum == size * (size - 1) / 2, "MPI_Allreduce on the node communicator gave %d", sum);

    /* A split of a split, with some ranks opting out. */
    MPI_Comm again;
    MPI_Comm_split_type(node, rank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &again);
    if (rank == 0) {
        CHECK(again == MPI_COMM_NULL, "MPI_UNDEFINED gave a communicator");
    } else {
        MPI_Comm_size(again, &node_size);
        CHECK(node_size == size - 1, "the second shared split has %d ranks", node_size);
        MPI_Comm_free(&again);
    }

    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    MPI_Comm result;
    int err = MPI_Comm_split_type(node, 12345, 0, MPI_INFO_NULL, &result);
    CHECK(class_of(err) == MPI_ERR_ARG, "split type 12345 returned class %d", class_of(err));
    MPI_Comm_free(&node);
}

static void check_group(MPI_Group group, const int *expected, int n, const char *what)
{
    int ranks[8], count;
    world_ranks_of(group, ranks, &count);
    CHECK(count == n, "%s has %d members, expected %d", what, count, n);
    for (int i = 0; i < n; i++)
        CHECK(ranks[i] == expected[i], "%s: member %d is world rank %d, expected %d", what, i, ranks[i], expected[i]);
}

static void group_ranges(void)
{
    MPI_Group group;
    int expected[8], n;

    /* Every other rank, from the last one down. */
    int down[1][3] = {{size - 1, 0, -2}};
    MPI_Group_range_incl(world_group, 1, down, &group);
    n = 0;
    for (int r = size - 1; r >= 0; r -= 2)
        expected[n++] = r;
    check_group(group, expected, n, "range_incl(size-1, 0, -2)");
    MPI_Group_free(&group);

    /* Two ranges; a stride that overshoots the last rank stops before it. */
    int two[2][3] = {{0, 0, 1}, {size - 1, size - 1, 5}};
    if (size > 1) {
        MPI_Group_range_incl(world_group, 2, two, &group);
        expected[0] = 0, expected[1] = size - 1;
        check_group(group, expected, 2, "range_incl of two single ranks");
        MPI_Group_free(&group);
    }
    int overshoot[1][3] = {{0, size - 1, 3}};
    MPI_Group_range_incl(world_group, 1, overshoot, &group);
    n = 0;
    for (int r = 0; r < size; r += 3)
        expected[n++] = r;
    check_group(group, expected, n, "range_incl(0, size-1, 3)");
    MPI_Group_free(&group);

    /* Excluding the even ranks leaves the odd ones, in order. */
    int evens[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_excl(world_group, 1, evens, &group);
    n = 0;
    for (int r = 1; r < size; r += 2)
        expected[n++] = r;
    check_group(group, expected, n, "range_excl(0, size-1, 2)");
    MPI_Group_free(&group);

    /* Excluding everything gives the empty group; including nothing too. */
    int all[1][3] = {{size - 1, 0, -1}};
    MPI_Group_range_excl(world_group, 1, all, &group);
    int result;
    MPI_Group_compare(group, MPI_GROUP_EMPTY, &result);
    CHECK(result == MPI_IDENT, "excluding every rank: compare with MPI_GROUP_EMPTY = %d", result);
    MPI_Group_free(&group);
    MPI_Group_range_incl(world_group, 0, all, &group);
    MPI_Group_compare(group, MPI_GROUP_EMPTY, &result);
    CHECK(result == MPI_IDENT, "including no range: compare with MPI_GROUP_EMPTY = %d", result);
    MPI_Group_free(&group);

    /* The same ranks as MPI_Group_incl. */
    int listed[8], reference_count = 0;
    for (int r = size - 1; r >= 0; r -= 2)
        listed[reference_count++] = r;
    MPI_Group reference;
    MPI_Group_incl(world_group, reference_count, listed, &reference);
    MPI_Group_range_incl(world_group, 1, down, &group);
    MPI_Group_compare(group, reference, &result);
    CHECK(result == MPI_IDENT, "range_incl and incl disagree: %d", result);
    MPI_Group_free(&group);
    MPI_Group_free(&reference);

    /* Errors: the peers disagree on the classes, Braid's are checked below. */
    int zero_stride[1][3] = {{0, size - 1, 0}};
    int past_end[1][3] = {{0, size, 1}};
    int wrong_way[1][3] = {{size - 1, 0, 1}};
    int twice[2][3] = {{0, 0, 1}, {0, 0, 1}};
    MPI_Group out = MPI_GROUP_NULL;
    CHECK(MPI_Group_range_incl(world_group, 1, zero_stride, &out) != MPI_SUCCESS, "stride 0 was accepted");
    CHECK(MPI_Group_range_incl(world_group, 1, past_end, &out) != MPI_SUCCESS, "a range past the end was accepted");
    CHECK(MPI_Group_range_excl(world_group, 2, twice, &out) != MPI_SUCCESS, "a rank excluded twice was accepted");
    if (size > 1)
        CHECK(MPI_Group_range_incl(world_group, 1, wrong_way, &out) != MPI_SUCCESS, "a stride away from the last rank was accepted");
#ifdef TEST_BRAID_ONLY
    CHECK(MPI_Group_range_incl(world_group, 1, zero_stride, &out) == MPI_ERR_ARG, "stride 0");
    CHECK(MPI_Group_range_incl(world_group, 1, past_end, &out) == MPI_ERR_RANK, "a range past the end");
    CHECK(MPI_Group_range_excl(world_group, 2, twice, &out) == MPI_ERR_RANK, "a rank excluded twice");
    if (size > 1)
        CHECK(MPI_Group_range_incl(world_group, 1, wrong_way, &out) == MPI_ERR_ARG, "a stride away from the last rank");
    CHECK(MPI_Group_range_incl(world_group, -1, down, &out) == MPI_ERR_ARG, "a negative range count");
    CHECK(MPI_Group_range_incl(MPI_GROUP_NULL, 1, down, &out) == MPI_ERR_GROUP, "MPI_GROUP_NULL");
    CHECK(out == MPI_GROUP_NULL, "a failed call wrote a group");
#endif
}

/* MPI_Comm_disconnect of an ordinary communicator: collective, the handle then MPI_COMM_NULL;
 * MPI_COMM_NULL itself is MPI_ERR_COMM. */
static void disconnect(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int value = rank, sum = 0;
    MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, dup);
    CHECK(MPI_Comm_disconnect(&dup) == MPI_SUCCESS && dup == MPI_COMM_NULL, "disconnect left %d", (int)dup);
    MPI_Comm none = MPI_COMM_NULL;
    int class = MPI_SUCCESS;
    MPI_Error_class(MPI_Comm_disconnect(&none), &class);
    CHECK(class == MPI_ERR_COMM, "disconnecting MPI_COMM_NULL gives class %d", class);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 8, "comms_more sizes its rank lists for at most 8 ranks, got %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    create_group();
    info_hints();
    split_type();
    group_ranges();
    disconnect();
    MPI_Group_free(&world_group);
    report_ok("comms_more");
    MPI_Finalize();
    return 0;
}
