/* MPI_Comm_split_type by hardware. MPI_COMM_TYPE_HW_GUIDED with "mpi_shared_memory" groups what
 * MPI_COMM_TYPE_SHARED groups; the levels from the node down to a hardware thread give
 * communicators that never grow, each naming its level in mpi_hw_resource_type when the library
 * reports it; an unknown level gives MPI_COMM_NULL; MPI_COMM_TYPE_HW_UNGUIDED gives a strict
 * subset of the parent or MPI_COMM_NULL, and names the level it chose on the info argument.
 * MPI 4.1's MPI_COMM_TYPE_RESOURCE_GUIDED splits by a level or by a process set, and gives
 * MPI_COMM_NULL without a known one. Which levels a process gets depends on its binding. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "check.h"

static MPI_Comm guided(const char *level, int rank)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", level);
    MPI_Comm made;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &made);
    MPI_Info_free(&info);
    return made;
}

static int size_of(MPI_Comm comm)
{
    int size = 0;
    if (comm != MPI_COMM_NULL)
        MPI_Comm_size(comm, &size);
    return size;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm shared, node = guided("mpi_shared_memory", rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    CHECK(size_of(node) == size_of(shared) && size_of(node) > 0, "mpi_shared_memory %d, shared %d", size_of(node), size_of(shared));
    int same = 0;
    MPI_Comm_compare(node, shared, &same);
    CHECK(same == MPI_CONGRUENT, "mpi_shared_memory and MPI_COMM_TYPE_SHARED differ (%d)", same);
    int node_size = size_of(node);
    MPI_Comm_free(&shared);
    MPI_Comm_free(&node);

    const char *levels[] = {"mpi_shared_memory", "Package", "NUMANode", "L3Cache", "L2Cache", "Core", "PU"};
    int previous = size;
    for (int i = 0; i < (int)(sizeof levels / sizeof *levels); i++) {
        MPI_Comm made = guided(levels[i], rank);
        int got = size_of(made);
        CHECK(got <= previous || previous == 0, "%s: %d ranks, more than the level above (%d)", levels[i], got, previous);
        if (made != MPI_COMM_NULL) {
            MPI_Info used;
            MPI_Comm_get_info(made, &used);
            char value[MPI_MAX_INFO_VAL + 1];
            int flag = 0;
            MPI_Info_get(used, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, value, &flag);
            CHECK(!flag || strcasecmp(value, levels[i]) == 0, "%s: the communicator says %s", levels[i], value);
            MPI_Info_free(&used);
            MPI_Comm_free(&made);
            previous = got;
        }
    }
    MPI_Comm unknown = guided("no_such_level", rank);
    CHECK(unknown == MPI_COMM_NULL, "an unknown level gives a communicator of %d", size_of(unknown));

    MPI_Comm unguided;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, rank, MPI_INFO_NULL, &unguided);
    CHECK(unguided == MPI_COMM_NULL || size_of(unguided) < size, "unguided: %d of %d", size_of(unguided), size);
    if (unguided != MPI_COMM_NULL) {
        int one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, unguided);
        CHECK(sum == size_of(unguided), "unguided: sum %d", sum);
        MPI_Comm_free(&unguided);
    }

    /* Down the hierarchy: each unguided split is smaller than its parent and says which level
     * it is on the info it was given, until none is left. */
    MPI_Comm parent = MPI_COMM_WORLD;
    for (int depth = 0; depth < 16; depth++) {
        MPI_Info chosen;
        MPI_Info_create(&chosen);
        MPI_Comm child;
        MPI_Comm_split_type(parent, MPI_COMM_TYPE_HW_UNGUIDED, rank, chosen, &child);
        if (child != MPI_COMM_NULL) {
            char value[MPI_MAX_INFO_VAL + 1] = "";
            int flag = 0;
            MPI_Info_get(chosen, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, value, &flag);
            CHECK(flag && value[0] != '\0', "depth %d: the info does not name the level", depth);
            CHECK(size_of(child) < size_of(parent), "depth %d: %d ranks of %d", depth, size_of(child), size_of(parent));
        }
        MPI_Info_free(&chosen);
        if (parent != MPI_COMM_WORLD)
            MPI_Comm_free(&parent);
        if (child == MPI_COMM_NULL)
            break;
        parent = child;
    }

#ifdef MPI_COMM_TYPE_RESOURCE_GUIDED
    {
        MPI_Comm none;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, rank, MPI_INFO_NULL, &none);
        CHECK(none == MPI_COMM_NULL, "resource guided without a hint gives %d ranks", size_of(none));
        const char *keys[] = {"mpi_hw_resource_type", "mpi_hw_resource_type", "mpi_pset_name", "mpi_pset_name", "mpi_pset_name"};
        const char *values[] = {"mpi_shared_memory", "no_such_level", "mpi://WORLD", "mpi://SELF", "no://such-set"};
        const int expected[] = {node_size, 0, size, 1, 0};
        for (int i = 0; i < 5; i++) {
            MPI_Info hint;
            MPI_Info_create(&hint);
            MPI_Info_set(hint, keys[i], values[i]);
            MPI_Comm part;
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, rank, hint, &part);
            CHECK(size_of(part) == expected[i], "%s=%s: %d ranks, expected %d", keys[i], values[i], size_of(part), expected[i]);
            if (part != MPI_COMM_NULL)
                MPI_Comm_free(&part);
            MPI_Info_free(&hint);
        }
    }
#endif
#ifdef TEST_BRAID_ONLY
    /* MPI 4.1's MPI_Get_hw_resource_info (newer than Debian's MPICH 4.0.2): every level it lists
     * is one MPI_COMM_TYPE_HW_GUIDED accepts, the node first. */
    {
        MPI_Info hw;
        char levels[MPI_MAX_INFO_VAL + 1] = "";
        int found = 0, length = MPI_MAX_INFO_VAL;
        CHECK(MPI_Get_hw_resource_info(&hw) == MPI_SUCCESS && hw != MPI_INFO_NULL, "MPI_Get_hw_resource_info");
        MPI_Info_get_string(hw, "mpi_hw_resource_type", &length, levels, &found);
        CHECK(found && strncmp(levels, "mpi_shared_memory", 17) == 0, "levels: %s", levels);
        for (char *level = strtok(levels, ","); level != NULL; level = strtok(NULL, ",")) {
            MPI_Info guide;
            MPI_Comm part;
            MPI_Info_create(&guide);
            MPI_Info_set(guide, "mpi_hw_resource_type", level);
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, guide, &part);
            CHECK(strcmp(level, "mpi_shared_memory") != 0 || (part != MPI_COMM_NULL && size_of(part) == size), "level %s", level);
            if (part != MPI_COMM_NULL)
                MPI_Comm_free(&part);
            MPI_Info_free(&guide);
        }
        length = MPI_MAX_INFO_VAL;
        MPI_Info_get_string(hw, "braid_cpus", &length, levels, &found);
        CHECK(found && length > 1, "no braid_cpus");
        MPI_Info_free(&hw);
    }
#endif
    if (rank == 0)
        printf("split_hardware: passed\n");
    MPI_Finalize();
    return 0;
}
