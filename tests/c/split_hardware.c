/* MPI_Comm_split_type by hardware. MPI_COMM_TYPE_HW_GUIDED with "mpi_shared_memory" groups what
 * MPI_COMM_TYPE_SHARED groups; the levels from the node down to a hardware thread give
 * communicators that never grow, each naming its level in mpi_hw_resource_type when the library
 * reports it; an unknown level gives MPI_COMM_NULL; MPI_COMM_TYPE_HW_UNGUIDED gives a strict
 * subset of the parent or MPI_COMM_NULL. Which levels a process gets depends on its binding. */
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
