/* Communicators, groups and Cartesian topologies: dup isolates traffic, split (with MPI_UNDEFINED
 * and keys), create, compare, free, names, attributes, MPI_COMM_SELF; group algebra and rank
 * translation; Dims_create, Cart_create/coords/rank/shift/get. Runs on any number of ranks. */
#include <string.h>
#include "check.h"

static int rank, size;

static void dup_isolates_traffic(void)
{
    MPI_Comm copy;
    int result;
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result);
    CHECK(result == MPI_IDENT, "compare(world, world) = %d", result);
    MPI_Comm_compare(MPI_COMM_WORLD, copy, &result);
    CHECK(result == MPI_CONGRUENT, "compare(world, dup) = %d", result);

    int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    int on_copy = 1000 + rank, on_world = 2000 + rank, received = -1;
    MPI_Request requests[2];
    MPI_Isend(&on_copy, 1, MPI_INT, next, 1, copy, &requests[0]);
    MPI_Isend(&on_world, 1, MPI_INT, next, 1, MPI_COMM_WORLD, &requests[1]);
    MPI_Recv(&received, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(received == 2000 + previous, "a world receive matched %d (the dup's message leaked across)", received);
    MPI_Recv(&received, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, copy, MPI_STATUS_IGNORE);
    CHECK(received == 1000 + previous, "the dup's receive got %d", received);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);

    char name[MPI_MAX_OBJECT_NAME];
    int length;
    MPI_Comm_set_name(copy, "braid-test-copy");
    MPI_Comm_get_name(copy, name, &length);
    CHECK(strcmp(name, "braid-test-copy") == 0 && length == 15, "MPI_Comm_get_name gave %s (%d)", name, length);
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &length);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0, "world is named %s", name);

    int *tag_ub, found = 0;
    MPI_Comm_get_attr(copy, MPI_TAG_UB, &tag_ub, &found);
    CHECK(found && *tag_ub >= 32767, "MPI_TAG_UB: found %d value %d", found, found ? *tag_ub : -1);

    MPI_Comm_free(&copy);
    CHECK(copy == MPI_COMM_NULL, "MPI_Comm_free did not reset the handle");
}

static void split(void)
{
    /* The last rank opts out; the others form "even" and "odd" communicators in reverse order. */
    int opt_out = size > 1 && rank == size - 1;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, opt_out ? MPI_UNDEFINED : rank % 2, -rank, &half);
    if (opt_out) {
        CHECK(half == MPI_COMM_NULL, "MPI_UNDEFINED colour did not give MPI_COMM_NULL");
    } else {
        int members = 0, position = 0;
        for (int r = 0; r < size - (size > 1); r++) {
            if (r % 2 == rank % 2) {
                members++;
                position += r > rank;
            }
        }
        int half_rank, half_size;
        MPI_Comm_rank(half, &half_rank);
        MPI_Comm_size(half, &half_size);
        CHECK(half_size == members && half_rank == position, "split: rank %d of %d, expected %d of %d", half_rank, half_size, position, members);
        int sum = 0, expected = 0;
        for (int r = 0; r < size - (size > 1); r++)
            expected += r % 2 == rank % 2 ? r : 0;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
        CHECK(sum == expected, "MPI_Allreduce on a split communicator gave %d, expected %d", sum, expected);
        int root_world_rank = rank;
        MPI_Bcast(&root_world_rank, 1, MPI_INT, 0, half);
        int highest = rank % 2;
        for (int r = rank % 2; r < size - (size > 1); r += 2)
            highest = r;
        CHECK(root_world_rank == highest, "split rank 0 is world rank %d, expected %d (keys not honoured)", root_world_rank, highest);
        MPI_Comm_free(&half);
    }

    MPI_Comm same, reversed;
    int result;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &same);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    MPI_Comm_compare(MPI_COMM_WORLD, same, &result);
    CHECK(result == MPI_CONGRUENT, "compare(world, split in order) = %d", result);
    MPI_Comm_compare(MPI_COMM_WORLD, reversed, &result);
    CHECK(result == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "compare(world, reversed split) = %d", result);
    MPI_Comm_free(&same);
    MPI_Comm_free(&reversed);
}

static void groups_and_create(void)
{
    MPI_Group world_group, evens, odds, everyone, common, difference;
    int group_size, group_rank, result;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_size(world_group, &group_size);
    MPI_Group_rank(world_group, &group_rank);
    CHECK(group_size == size && group_rank == rank, "world group: rank %d of %d", group_rank, group_size);

    int even_ranks[4], even_count = 0;
    for (int r = 0; r < size; r += 2)
        even_ranks[even_count++] = r;
    MPI_Group_incl(world_group, even_count, even_ranks, &evens);
    MPI_Group_excl(world_group, even_count, even_ranks, &odds);
    MPI_Group_rank(evens, &group_rank);
    CHECK(group_rank == (rank % 2 == 0 ? rank / 2 : MPI_UNDEFINED), "rank in the even group: %d", group_rank);
    MPI_Group_size(odds, &group_size);
    CHECK(group_size == size - even_count, "odd group has %d members", group_size);

    MPI_Group_union(odds, evens, &everyone);
    MPI_Group_compare(everyone, world_group, &result);
    CHECK(result == (size > 1 ? MPI_SIMILAR : MPI_IDENT), "compare(odds+evens, world) = %d", result);
    MPI_Group_union(evens, odds, &common);
    MPI_Group_size(common, &group_size);
    CHECK(group_size == size, "union has %d members", group_size);
    MPI_Group_free(&common);
    MPI_Group_intersection(evens, world_group, &common);
    MPI_Group_compare(common, evens, &result);
    CHECK(result == MPI_IDENT, "evens intersect world = %d, expected MPI_IDENT", result);
    MPI_Group_difference(world_group, evens, &difference);
    MPI_Group_compare(difference, odds, &result);
    CHECK(result == MPI_IDENT, "world minus evens vs odds: %d", result);
    MPI_Group_compare(evens, odds, &result);
    CHECK(result == MPI_UNEQUAL, "evens vs odds: %d", result);
    MPI_Group empty;
    MPI_Group_intersection(evens, odds, &empty);
    MPI_Group_size(empty, &group_size);
    CHECK(group_size == 0, "evens intersect odds has %d members", group_size);
    MPI_Group_compare(empty, MPI_GROUP_EMPTY, &result);
    CHECK(result == MPI_IDENT, "empty intersection vs MPI_GROUP_EMPTY: %d", result);

    int in_evens[4], in_world[4];
    for (int i = 0; i < even_count; i++)
        in_evens[i] = i;
    MPI_Group_translate_ranks(evens, even_count, in_evens, world_group, in_world);
    for (int i = 0; i < even_count; i++)
        CHECK(in_world[i] == 2 * i, "even group rank %d is world rank %d", i, in_world[i]);
    if (size > 1) {
        int odd_in_world = 1, odd_in_evens;
        MPI_Group_translate_ranks(world_group, 1, &odd_in_world, evens, &odd_in_evens);
        CHECK(odd_in_evens == MPI_UNDEFINED, "world rank 1 translated into the even group as %d", odd_in_evens);
    }

    MPI_Comm even_comm;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &even_comm);
    if (rank % 2 == 0) {
        CHECK(even_comm != MPI_COMM_NULL, "MPI_Comm_create gave a member MPI_COMM_NULL");
        int comm_rank, total = 0;
        MPI_Comm_rank(even_comm, &comm_rank);
        CHECK(comm_rank == rank / 2, "rank %d in the created communicator", comm_rank);
        MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, even_comm);
        int expected = 0;
        for (int i = 0; i < even_count; i++)
            expected += even_ranks[i];
        CHECK(total == expected, "MPI_Allreduce on the created communicator: %d, expected %d", total, expected);
        MPI_Group created_group;
        MPI_Comm_group(even_comm, &created_group);
        MPI_Group_compare(created_group, evens, &result);
        CHECK(result == MPI_IDENT, "the created communicator's group differs: %d", result);
        MPI_Group_free(&created_group);
        MPI_Comm_free(&even_comm);
    } else {
        CHECK(even_comm == MPI_COMM_NULL, "MPI_Comm_create gave a non-member a communicator");
    }

    MPI_Group *all[] = {&world_group, &evens, &odds, &everyone, &common, &difference, &empty};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        MPI_Group_free(all[i]);
        CHECK(*all[i] == MPI_GROUP_NULL, "MPI_Group_free did not reset handle %zu", i);
    }
}

static void comm_self(void)
{
    int self_rank, self_size, value = 42 + rank, received = 0;
    MPI_Comm_rank(MPI_COMM_SELF, &self_rank);
    MPI_Comm_size(MPI_COMM_SELF, &self_size);
    CHECK(self_rank == 0 && self_size == 1, "MPI_COMM_SELF: rank %d size %d", self_rank, self_size);
    MPI_Sendrecv(&value, 1, MPI_INT, 0, 3, &received, 1, MPI_INT, 0, 3, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(received == value, "MPI_COMM_SELF message %d", received);
    MPI_Allreduce(&value, &received, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    CHECK(received == value, "MPI_Allreduce on MPI_COMM_SELF gave %d", received);
}

static void cartesian(void)
{
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(12, 2, dims);
    CHECK(dims[0] == 4 && dims[1] == 3, "Dims_create(12, 2) = %d x %d", dims[0], dims[1]);
    int fixed[3] = {0, 3, 0};
    MPI_Dims_create(6, 3, fixed);
    CHECK(fixed[0] == 2 && fixed[1] == 3 && fixed[2] == 1, "Dims_create(6, 3, {0,3,0}) = %d %d %d", fixed[0], fixed[1], fixed[2]);
    int primes[2] = {0, 0};
    MPI_Dims_create(7, 2, primes);
    CHECK(primes[0] == 7 && primes[1] == 1, "Dims_create(7, 2) = %d x %d", primes[0], primes[1]);

    int grid[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, grid);
    CHECK(grid[0] * grid[1] == size && grid[0] >= grid[1], "Dims_create(%d, 2) = %d x %d", size, grid[0], grid[1]);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, grid, periods, 0, &cart);
    int kind, ndims, cart_rank, coords[2], back;
    MPI_Topo_test(cart, &kind);
    CHECK(kind == MPI_CART, "MPI_Topo_test gave %d", kind);
    MPI_Topo_test(MPI_COMM_WORLD, &kind);
    CHECK(kind == MPI_UNDEFINED, "MPI_Topo_test(world) gave %d", kind);
    MPI_Cartdim_get(cart, &ndims);
    CHECK(ndims == 2, "MPI_Cartdim_get gave %d", ndims);
    MPI_Comm_rank(cart, &cart_rank);
    MPI_Cart_coords(cart, cart_rank, 2, coords);
    CHECK(coords[0] == cart_rank / grid[1] && coords[1] == cart_rank % grid[1], "rank %d has coordinates (%d, %d)", cart_rank, coords[0], coords[1]);
    MPI_Cart_rank(cart, coords, &back);
    CHECK(back == cart_rank, "MPI_Cart_rank(coords of %d) = %d", cart_rank, back);
    int wrapped[2] = {coords[0] + grid[0], coords[1]};
    MPI_Cart_rank(cart, wrapped, &back);
    CHECK(back == cart_rank, "periodic dimension did not wrap: %d", back);

    int got_dims[2], got_periods[2], got_coords[2];
    MPI_Cart_get(cart, 2, got_dims, got_periods, got_coords);
    CHECK(got_dims[0] == grid[0] && got_dims[1] == grid[1] && got_periods[0] == 1 && got_periods[1] == 0 && got_coords[0] == coords[0] &&
              got_coords[1] == coords[1],
          "MPI_Cart_get disagrees");

    int source, destination;
    MPI_Cart_shift(cart, 0, 1, &source, &destination);
    int expected_up[2] = {(coords[0] + 1) % grid[0], coords[1]}, expected_down[2] = {(coords[0] - 1 + grid[0]) % grid[0], coords[1]};
    int up, down;
    MPI_Cart_rank(cart, expected_up, &up);
    MPI_Cart_rank(cart, expected_down, &down);
    CHECK(source == down && destination == up, "periodic shift: source %d destination %d, expected %d %d", source, destination, down, up);
    int from_below = -1;
    MPI_Sendrecv(&cart_rank, 1, MPI_INT, destination, 0, &from_below, 1, MPI_INT, source, 0, cart, MPI_STATUS_IGNORE);
    CHECK(from_below == down, "halo exchange along the periodic dimension gave %d", from_below);

    MPI_Cart_shift(cart, 1, 1, &source, &destination);
    CHECK(source == (coords[1] == 0 ? MPI_PROC_NULL : cart_rank - 1), "open shift source %d", source);
    CHECK(destination == (coords[1] == grid[1] - 1 ? MPI_PROC_NULL : cart_rank + 1), "open shift destination %d", destination);
    from_below = -1;
    MPI_Sendrecv(&cart_rank, 1, MPI_INT, destination, 0, &from_below, 1, MPI_INT, source, 0, cart, MPI_STATUS_IGNORE);
    CHECK(from_below == (source == MPI_PROC_NULL ? -1 : source), "halo exchange along the open dimension gave %d", from_below);
    MPI_Comm_free(&cart);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 8, "comms sizes its rank lists for at most 8 ranks, got %d", size);
    dup_isolates_traffic();
    split();
    groups_and_create();
    comm_self();
    cartesian();
    report_ok("comms");
    MPI_Finalize();
    return 0;
}
