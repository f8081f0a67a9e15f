/* Spawning: the parent job spawns 3 workers of this program with MPI_Comm_spawn (a task pool:
 * the parents' root hands out tasks over the intercommunicator and collects the results, the
 * workers also reduce among themselves), then 2 + 1 more with MPI_Comm_spawn_multiple (two
 * commands: MPI_APPNUM tells them apart, and their arguments arrive), with MPI_Intercomm_merge
 * and a collective on the merged communicator. MPI_UNIVERSE_SIZE is set (under Braid, to at
 * least the job's size); MPI_Comm_get_parent is MPI_COMM_NULL in the parents and, once
 * disconnected, in the children. Braid only: parents waiting a second for a spawned child use
 * almost no CPU; 12 generations of workers, each disconnected before the next, leave the
 * parents' shared-memory mappings as they were; spawning a program that does not exist fails
 * with MPI_ERR_SPAWN. */
#define _DEFAULT_SOURCE
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"

#define WORKERS 3
#define TASKS 20

/* Mappings of Braid's shared-memory segments in this process (0 elsewhere). */
static int shared_mappings(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int count = 0;
    if (maps == NULL)
        return 0;
    while (fgets(line, sizeof line, maps) != NULL)
        count += strstr(line, "/dev/shm/braid-") != NULL;
    fclose(maps);
    return count;
}

/* A child that sleeps a second before it answers the parents' root. */
static void sleeper(MPI_Comm parent)
{
    int rank, token = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sleep(1);
    if (rank == 0)
        MPI_Send(&token, 1, MPI_INT, 0, 8, parent);
    MPI_Comm_disconnect(&parent);
}

/* CPU seconds this process has used. */
static double cpu_seconds(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

/* A worker of a generation: one token from the parents' root, then gone. */
static void generation(MPI_Comm parent)
{
    int token = -1, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Recv(&token, 1, MPI_INT, 0, 9, parent, MPI_STATUS_IGNORE);
    MPI_Comm_disconnect(&parent);
}

static void worker(MPI_Comm parent)
{
    int rank, size, remote_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_remote_size(parent, &remote_size);
    CHECK(size == WORKERS, "the workers' world has %d processes", size);
    /* Tasks until a negative one. */
    int done = 0;
    for (;;) {
        int task;
        MPI_Recv(&task, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE);
        if (task < 0)
            break;
        int result = task * task;
        MPI_Send(&result, 1, MPI_INT, 0, 2, parent);
        done++;
    }
    int total = 0;
    MPI_Allreduce(&done, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == TASKS, "the workers did %d tasks", total);
    if (rank == 0)
        MPI_Send(&total, 1, MPI_INT, 0, 3, parent);
    MPI_Comm_disconnect(&parent);
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "the parent communicator outlived its disconnect");
}

static void multiple_child(MPI_Comm parent, int argc, char **argv)
{
    int *appnum = NULL, flag = 0, size, merged_rank, merged_size, sum = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 3, "spawn_multiple made a world of %d", size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    CHECK(flag, "no MPI_APPNUM");
    CHECK(argc == 3, "argc %d", argc);
    CHECK(strcmp(argv[2], *appnum == 0 ? "first" : "second") == 0, "appnum %d got argument %s", *appnum, argv[2]);
    MPI_Comm merged;
    MPI_Intercomm_merge(parent, 1, &merged);
    MPI_Comm_rank(merged, &merged_rank);
    MPI_Comm_size(merged, &merged_size);
    MPI_Allreduce(&merged_rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == merged_size * (merged_size - 1) / 2, "merged sum %d", sum);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&parent);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        if (argc >= 2 && strcmp(argv[1], "multiple") == 0)
            multiple_child(parent, argc, argv);
        else if (argc >= 2 && strcmp(argv[1], "generation") == 0)
            generation(parent);
        else if (argc >= 2 && strcmp(argv[1], "sleeper") == 0)
            sleeper(parent);
        else
            worker(parent);
        MPI_Finalize();
        return 0;
    }
    int rank, size, *universe = NULL, flag = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &universe, &flag);
    CHECK(flag && *universe >= 1, "MPI_UNIVERSE_SIZE %d", flag ? *universe : -1);
#ifdef TEST_BRAID_ONLY
    /* Open MPI counts the machine's slots even when the job oversubscribes them. */
    CHECK(*universe >= size, "MPI_UNIVERSE_SIZE %d for a job of %d", *universe, size);
#endif

    /* The task pool. */
    MPI_Comm workers;
    int errcodes[WORKERS];
    CHECK(MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, WORKERS, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &workers, errcodes) == MPI_SUCCESS, "spawn failed");
    int remote_size = 0;
    MPI_Comm_remote_size(workers, &remote_size);
    CHECK(remote_size == WORKERS, "spawned %d workers", remote_size);
    for (int i = 0; i < WORKERS; i++)
        CHECK(errcodes[i] == MPI_SUCCESS, "errcode %d of worker %d", errcodes[i], i);
    if (rank == 0) {
        int sent = 0, received = 0, sum = 0;
        for (int w = 0; w < WORKERS && sent < TASKS; w++, sent++)
            MPI_Send(&sent, 1, MPI_INT, w, 1, workers);
        while (received < TASKS) {
            int result;
            MPI_Status status;
            MPI_Recv(&result, 1, MPI_INT, MPI_ANY_SOURCE, 2, workers, &status);
            sum += result;
            received++;
            int next = sent < TASKS ? sent++ : -1;
            if (next >= 0)
                MPI_Send(&next, 1, MPI_INT, status.MPI_SOURCE, 1, workers);
        }
        int stop = -1;
        for (int w = 0; w < WORKERS; w++)
            MPI_Send(&stop, 1, MPI_INT, w, 1, workers);
        CHECK(sum == (TASKS - 1) * TASKS * (2 * TASKS - 1) / 6, "sum of squares %d", sum);
        int total = 0;
        MPI_Recv(&total, 1, MPI_INT, 0, 3, workers, MPI_STATUS_IGNORE);
        CHECK(total == TASKS, "the workers report %d tasks", total);
    }
    MPI_Comm_disconnect(&workers);

    /* Two commands in one new job. */
    char *commands[2] = {argv[0], argv[0]};
    char *first_args[] = {"multiple", "first", NULL}, *second_args[] = {"multiple", "second", NULL};
    char **argvs[2] = {first_args, second_args};
    int maxprocs[2] = {2, 1};
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    MPI_Comm children, merged;
    CHECK(MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, infos, size - 1, MPI_COMM_WORLD, &children, MPI_ERRCODES_IGNORE) == MPI_SUCCESS,
          "spawn_multiple failed");
    MPI_Intercomm_merge(children, 0, &merged);
    int merged_rank, merged_size, sum = 0;
    MPI_Comm_rank(merged, &merged_rank);
    MPI_Comm_size(merged, &merged_size);
    CHECK(merged_size == size + 3 && merged_rank == rank, "merged rank %d of %d", merged_rank, merged_size);
    MPI_Allreduce(&merged_rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == merged_size * (merged_size - 1) / 2, "merged sum %d", sum);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&children);

#ifdef TEST_BRAID_ONLY
    /* Generations of workers, each disconnected before the next: the shared memory that reached
     * a generation is given back, so the parents' mappings do not grow with every spawn. */
    {
        int before = shared_mappings(), after = before;
        for (int generation = 0; generation < 12; generation++) {
            MPI_Comm worker_group;
            char *generation_args[] = {"generation", NULL};
            MPI_Comm_spawn(argv[0], generation_args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &worker_group, MPI_ERRCODES_IGNORE);
            int token = generation;
            if (rank == 0)
                MPI_Send(&token, 1, MPI_INT, 0, 9, worker_group);
            MPI_Comm_disconnect(&worker_group);
            after = shared_mappings();
        }
        CHECK(after <= before, "%d shared-memory mappings before the generations, %d after 12", before, after);
    }
    /* Waiting a second for a spawned child, every parent sleeps (its root in a receive, the
     * others in the disconnect). */
    {
        MPI_Comm slow;
        char *sleeper_args[] = {"sleeper", NULL};
        int token = 0;
        MPI_Comm_spawn(argv[0], sleeper_args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &slow, MPI_ERRCODES_IGNORE);
        double start = cpu_seconds();
        if (rank == 0)
            MPI_Recv(&token, 1, MPI_INT, 0, 8, slow, MPI_STATUS_IGNORE);
        MPI_Comm_disconnect(&slow);
        double used = cpu_seconds() - start;
        CHECK(used < 0.3, "waiting a second for a spawned child took %.3f s of CPU", used);
    }
    /* A program that is nowhere to be found is refused before any launcher is asked (Hydra
     * would accept the spawn and then fail to start it). */
    {
        MPI_Comm none = MPI_COMM_NULL;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int codes[2] = {-1, -1};
        int code = MPI_Comm_spawn("/nonexistent/braid-program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &none, codes);
        CHECK(class_of(code) == MPI_ERR_SPAWN, "spawning a missing program gave class %d", class_of(code));
        CHECK(rank != 0 || (codes[0] == MPI_ERR_SPAWN && codes[1] == MPI_ERR_SPAWN), "the root's errcodes: %d %d", codes[0], codes[1]);
    }
#endif
    MPI_Finalize();
    return 0;
}
