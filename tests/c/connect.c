/* Ports and connections: MPI_Open_port, MPI_Comm_accept and MPI_Comm_connect between two halves
 * of one job, and between two jobs started apart (`connect server FILE` and `connect client
 * FILE`: the server's root writes its port name to FILE, the client's root reads it), then
 * MPI_Comm_join over a TCP socket. Over each intercommunicator: point-to-point both ways (small
 * and 4 MiB messages), an intercommunicator allreduce, MPI_Intercomm_merge and a collective on
 * the merged communicator, then MPI_Comm_disconnect. Braid only: a name published by rank 0 is
 * found by every rank until withdrawn (MPI_ERR_SERVICE for a second publish or unpublish,
 * MPI_ERR_NAME for a withdrawn name), and connecting to a closed port fails with MPI_ERR_PORT. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define BIG (4 << 20)

/* Traffic over `inter`, whose local side is `accepting` (1) or connecting (0). */
static void exercise(MPI_Comm inter, int accepting)
{
    int is_inter = 0, local_rank, local_size, remote_size;
    MPI_Comm_test_inter(inter, &is_inter);
    CHECK(is_inter, "the new communicator is not an intercommunicator");
    MPI_Comm_rank(inter, &local_rank);
    MPI_Comm_size(inter, &local_size);
    MPI_Comm_remote_size(inter, &remote_size);

    /* Each local rank below the remote size swaps a tagged value with its counterpart. */
    if (local_rank < remote_size) {
        int mine = 1000 * accepting + local_rank, theirs = -1;
        MPI_Status status;
        MPI_Sendrecv(&mine, 1, MPI_INT, local_rank, 7, &theirs, 1, MPI_INT, local_rank, 7, inter, &status);
        CHECK(theirs == 1000 * !accepting + local_rank, "got %d from remote rank %d", theirs, local_rank);
        CHECK(status.MPI_SOURCE == local_rank, "status source %d", status.MPI_SOURCE);
    }
    /* A large message from the accepting root to the connecting root, and back. */
    if (local_rank == 0) {
        char *big = malloc(BIG);
        CHECK(big != NULL, "no memory");
        if (accepting) {
            for (int i = 0; i < BIG; i++)
                big[i] = (char)(i * 7 + 3);
            MPI_Send(big, BIG, MPI_CHAR, 0, 8, inter);
            memset(big, 0, BIG);
            MPI_Recv(big, BIG, MPI_CHAR, 0, 9, inter, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(big, BIG, MPI_CHAR, 0, 8, inter, MPI_STATUS_IGNORE);
            MPI_Send(big, BIG, MPI_CHAR, 0, 9, inter);
        }
        for (int i = 0; i < BIG; i++)
            CHECK(big[i] == (char)(i * 7 + 3), "byte %d is %d after the round trip", i, big[i]);
        free(big);
    }
    /* Intercommunicator allreduce: each side gets the sum over the other. */
    int one = accepting ? 10 : 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(sum == remote_size * (accepting ? 1 : 10), "intercommunicator sum %d (remote size %d)", sum, remote_size);

    /* The merged communicator: the accepting side first. */
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, !accepting, &merged);
    int merged_rank, merged_size, total = 0, value;
    MPI_Comm_rank(merged, &merged_rank);
    MPI_Comm_size(merged, &merged_size);
    CHECK(merged_size == local_size + remote_size, "merged size %d", merged_size);
    CHECK(accepting ? merged_rank == local_rank : merged_rank == remote_size + local_rank, "merged rank %d", merged_rank);
    value = merged_rank;
    MPI_Allreduce(&value, &total, 1, MPI_INT, MPI_SUM, merged);
    CHECK(total == merged_size * (merged_size - 1) / 2, "merged sum %d", total);
    int token = merged_rank == 0 ? 4242 : 0;
    MPI_Bcast(&token, 1, MPI_INT, 0, merged);
    CHECK(token == 4242, "merged broadcast gave %d", token);
    MPI_Comm_free(&merged);

    CHECK(MPI_Comm_disconnect(&inter) == MPI_SUCCESS, "disconnect failed");
    CHECK(inter == MPI_COMM_NULL, "disconnect left the handle");
}

/* Accept (with a new port) or connect on `comm`; the port name travels through `share`. */
static MPI_Comm meet(MPI_Comm comm, int accepting, void (*share)(char *port, int accepting))
{
    char port[MPI_MAX_PORT_NAME] = "";
    int rank;
    MPI_Comm inter;
    MPI_Comm_rank(comm, &rank);
    if (accepting && rank == 0)
        CHECK(MPI_Open_port(MPI_INFO_NULL, port) == MPI_SUCCESS, "MPI_Open_port failed");
    share(port, accepting);
    if (accepting) {
        CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, comm, &inter) == MPI_SUCCESS, "accept failed");
        if (rank == 0)
            CHECK(MPI_Close_port(port) == MPI_SUCCESS, "MPI_Close_port failed");
    } else {
        CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, comm, &inter) == MPI_SUCCESS, "connect failed");
    }
    return inter;
}

/* Within one job: the name goes from world rank 0 (the accepting root) to everyone. */
static void share_in_world(char *port, int accepting)
{
    (void)accepting;
    MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static const char *port_file;

/* Between jobs: through a file the server's root writes and the client's root waits for. */
static void share_in_file(char *port, int accepting)
{
    if (check_world_rank() != 0)
        return;
    if (accepting) {
        char temporary[4096];
        snprintf(temporary, sizeof temporary, "%s.partial", port_file);
        FILE *out = fopen(temporary, "w");
        CHECK(out != NULL, "cannot write %s", temporary);
        fprintf(out, "%s\n", port);
        fclose(out);
        CHECK(rename(temporary, port_file) == 0, "cannot rename %s", temporary);
        return;
    }
    for (int tries = 0; tries < 3000; tries++) {
        FILE *in = fopen(port_file, "r");
        if (in != NULL) {
            CHECK(fgets(port, MPI_MAX_PORT_NAME, in) != NULL, "empty port file");
            fclose(in);
            port[strcspn(port, "\n")] = 0;
            return;
        }
        usleep(10000);
    }
    CHECK(0, "no port name in %s after 30 s", port_file);
}

/* MPI_Comm_join between world ranks 0 and 1 over a loopback TCP connection. */
static void join_pair(int rank)
{
    int listener = -1, fd = -1, port = 0;
    if (rank == 0) {
        struct sockaddr_in address;
        socklen_t length = sizeof address;
        memset(&address, 0, sizeof address);
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        listener = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(listener >= 0 && bind(listener, (struct sockaddr *)&address, sizeof address) == 0 && listen(listener, 1) == 0, "cannot listen");
        getsockname(listener, (struct sockaddr *)&address, &length);
        port = ntohs(address.sin_port);
        MPI_Send(&port, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
        fd = accept(listener, NULL, NULL);
    } else {
        struct sockaddr_in address;
        MPI_Recv(&port, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        memset(&address, 0, sizeof address);
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = htons((unsigned short)port);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0, "cannot connect to rank 0");
    }
    CHECK(fd >= 0, "no socket");
    MPI_Comm inter;
    CHECK(MPI_Comm_join(fd, &inter) == MPI_SUCCESS, "MPI_Comm_join failed");
    int remote_size = 0, mine = rank, theirs = -1;
    MPI_Comm_remote_size(inter, &remote_size);
    CHECK(remote_size == 1, "joined remote size %d", remote_size);
    MPI_Sendrecv(&mine, 1, MPI_INT, 0, 5, &theirs, 1, MPI_INT, 0, 5, inter, MPI_STATUS_IGNORE);
    CHECK(theirs == 1 - rank, "joined peer sent %d", theirs);
    MPI_Comm_disconnect(&inter);
    close(fd);
    if (listener >= 0)
        close(listener);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 3) {
        /* Two jobs: each whole job is one side. */
        int accepting = strcmp(argv[1], "server") == 0;
        port_file = argv[2];
        exercise(meet(MPI_COMM_WORLD, accepting, share_in_file), accepting);
    } else if (size >= 2) {
        /* One job: the lower half accepts, the upper half connects. */
        int accepting = rank < (size + 1) / 2;
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, accepting, rank, &half);
        exercise(meet(half, accepting, share_in_world), accepting);
        MPI_Comm_free(&half);
        if (rank < 2)
            join_pair(rank);
    }
#ifdef TEST_BRAID_ONLY
    /* Names: published by rank 0, found by all, then withdrawn. */
    {
        char port[MPI_MAX_PORT_NAME] = "", found[MPI_MAX_PORT_NAME] = "";
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        if (rank == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            CHECK(MPI_Publish_name("braid-test-ocean", MPI_INFO_NULL, port) == MPI_SUCCESS, "publish failed");
            CHECK(class_of(MPI_Publish_name("braid-test-ocean", MPI_INFO_NULL, port)) == MPI_ERR_SERVICE, "published twice");
        }
        MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
        CHECK(MPI_Lookup_name("braid-test-ocean", MPI_INFO_NULL, found) == MPI_SUCCESS, "lookup failed");
        CHECK(strcmp(found, port) == 0, "looked up %s, published %s", found, port);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            CHECK(MPI_Unpublish_name("braid-test-ocean", MPI_INFO_NULL, port) == MPI_SUCCESS, "unpublish failed");
            CHECK(class_of(MPI_Unpublish_name("braid-test-ocean", MPI_INFO_NULL, port)) == MPI_ERR_SERVICE, "unpublished twice");
            MPI_Close_port(port);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(class_of(MPI_Lookup_name("braid-test-ocean", MPI_INFO_NULL, found)) == MPI_ERR_NAME, "found a withdrawn name");
    }
    if (rank == 0) {
        char port[MPI_MAX_PORT_NAME];
        MPI_Comm inter = MPI_COMM_NULL;
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Open_port(MPI_INFO_NULL, port);
        MPI_Close_port(port);
        CHECK(class_of(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter)) == MPI_ERR_PORT, "connecting to a closed port");
        CHECK(class_of(MPI_Comm_connect("nonsense", MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter)) == MPI_ERR_PORT, "connecting to a bad name");
        CHECK(inter == MPI_COMM_NULL, "a failed connect set the handle");
    }
#endif
    MPI_Finalize();
    return 0;
}
