/* Partitioned communication around a ring: each rank sends to its right neighbour and receives
 * from its left, over several rounds of one pair of requests. The sender cuts the message into
 * 8 partitions marked ready in reverse order (from 4 threads where MPI_THREAD_MULTIPLE is given);
 * the receiver cuts it into 4 and reads each as MPI_Parrived reports it, before the wait. Then
 * strided datatypes on both sides with MPI_Pready_range and MPI_Pready_list, two channels
 * initialized in opposite orders (matched by tag), MPI_PROC_NULL, and argument errors. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

enum { SENT_PARTS = 8, RECEIVED_PARTS = 4, PER_SENT = 1000, TOTAL = SENT_PARTS * PER_SENT, ROUNDS = 3, THREADS = 4 };

static int value(int rank, int i, int round) { return rank * 1000003 + i * 7 + round; }

struct marker {
    MPI_Request request;
    int first;
};

static void *mark_every_fourth(void *arg)
{
    struct marker *marker = arg;
    for (int p = SENT_PARTS - 1 - marker->first; p >= 0; p -= THREADS)
        MPI_Pready(p, marker->request);
    return NULL;
}

static void ring_rounds(int threaded)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static int out[TOTAL], in[TOTAL];
    MPI_Request send, recv;
    MPI_Precv_init(in, RECEIVED_PARTS, TOTAL / RECEIVED_PARTS, MPI_INT, left, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &recv);
    MPI_Psend_init(out, SENT_PARTS, PER_SENT, MPI_INT, right, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &send);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < TOTAL; i++) {
            out[i] = value(rank, i, round);
            in[i] = -1;
        }
        MPI_Start(&recv);
        MPI_Start(&send);
        if (round == 0) {
            /* Nothing is ready anywhere until every rank has passed the barrier. */
            MPI_Barrier(MPI_COMM_WORLD);
            int flag = 1;
            MPI_Parrived(recv, 0, &flag);
            CHECK(!flag, "a partition arrived before its sender marked it ready");
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (threaded) {
            pthread_t threads[THREADS];
            struct marker markers[THREADS];
            for (int t = 0; t < THREADS; t++) {
                markers[t] = (struct marker){send, t};
                pthread_create(&threads[t], NULL, mark_every_fourth, &markers[t]);
            }
            for (int t = 0; t < THREADS; t++)
                pthread_join(threads[t], NULL);
        } else {
            for (int p = SENT_PARTS - 1; p >= 0; p--)
                MPI_Pready(p, send);
        }
        int seen[RECEIVED_PARTS] = {0}, left_to_see = RECEIVED_PARTS;
        while (left_to_see > 0) {
            for (int p = 0; p < RECEIVED_PARTS; p++) {
                int flag = 0;
                if (seen[p])
                    continue;
                MPI_Parrived(recv, p, &flag);
                if (!flag)
                    continue;
                seen[p] = 1;
                left_to_see--;
                for (int i = p * (TOTAL / RECEIVED_PARTS); i < (p + 1) * (TOTAL / RECEIVED_PARTS); i++)
                    CHECK(in[i] == value(left, i, round), "round %d partition %d: in[%d] = %d", round, p, i, in[i]);
            }
        }
        MPI_Wait(&send, MPI_STATUS_IGNORE);
        MPI_Wait(&recv, MPI_STATUS_IGNORE);
        for (int i = 0; i < TOTAL; i++)
            CHECK(in[i] == value(left, i, round), "round %d after the wait: in[%d] = %d", round, i, in[i]);
    }
    MPI_Request_free(&send);
    MPI_Request_free(&recv);
}

/* Every other int on both sides, the sender in 6 partitions of 10, the receiver in 3 of 20. */
static void strided(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Datatype every_other;
    MPI_Type_vector(1, 1, 2, MPI_INT, &every_other);
    MPI_Type_create_resized(every_other, 0, 2 * sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    int out[120], in[120];
    for (int i = 0; i < 120; i++) {
        out[i] = i % 2 ? -5 : value(rank, i / 2, 9);
        in[i] = -1;
    }
    MPI_Request send, recv;
    MPI_Psend_init(out, 6, 10, every_other, right, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &send);
    MPI_Precv_init(in, 3, 20, every_other, left, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &recv);
    MPI_Type_free(&every_other);
    MPI_Start(&send);
    MPI_Start(&recv);
    MPI_Pready_range(3, 5, send);
    int list[] = {2, 0, 1};
    MPI_Pready_list(3, list, send);
    MPI_Request both[] = {send, recv};
    MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 120; i++)
        CHECK(in[i] == (i % 2 ? -1 : value(left, i / 2, 9)), "strided: in[%d] = %d", i, in[i]);
    MPI_Request_free(&both[0]);
    MPI_Request_free(&both[1]);
}

/* Two channels between the same pair with different tags: the receiver initializes them in the
 * opposite order and still gets each message under its own tag. */
static void matched_by_tag(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int a_out[4] = {rank, 1, 2, 3}, b_out[4] = {rank, 4, 5, 6}, a_in[4], b_in[4];
    MPI_Request sends[2], recvs[2];
    MPI_Psend_init(a_out, 2, 2, MPI_INT, right, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &sends[0]);
    MPI_Psend_init(b_out, 2, 2, MPI_INT, right, 22, MPI_COMM_WORLD, MPI_INFO_NULL, &sends[1]);
    MPI_Precv_init(b_in, 1, 4, MPI_INT, left, 22, MPI_COMM_WORLD, MPI_INFO_NULL, &recvs[1]);
    MPI_Precv_init(a_in, 1, 4, MPI_INT, left, 21, MPI_COMM_WORLD, MPI_INFO_NULL, &recvs[0]);
    MPI_Startall(2, recvs);
    MPI_Startall(2, sends);
    MPI_Pready_range(0, 1, sends[1]);
    MPI_Pready_range(0, 1, sends[0]);
    MPI_Waitall(2, recvs, MPI_STATUSES_IGNORE);
    MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
    CHECK(a_in[0] == left && a_in[3] == 3 && b_in[0] == left && b_in[3] == 6, "by tag: a %d %d b %d %d", a_in[0], a_in[3], b_in[0], b_in[3]);
    for (int i = 0; i < 2; i++) {
        MPI_Request_free(&sends[i]);
        MPI_Request_free(&recvs[i]);
    }
}

static void proc_null_and_errors(void)
{
    int data[8] = {0};
    MPI_Request send, recv;
    MPI_Psend_init(data, 2, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &send);
    MPI_Precv_init(data, 2, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &recv);
    MPI_Start(&send);
    MPI_Start(&recv);
    MPI_Pready_range(0, 1, send);
    MPI_Wait(&send, MPI_STATUS_IGNORE);
    MPI_Wait(&recv, MPI_STATUS_IGNORE);
    MPI_Request_free(&send);
    MPI_Request_free(&recv);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int class;
    MPI_Error_class(MPI_Psend_init(data, 2, 4, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &send), &class);
    CHECK(class == MPI_ERR_TAG, "MPI_ANY_TAG gives class %d", class);
    MPI_Error_class(MPI_Precv_init(data, 2, 4, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &recv), &class);
    CHECK(class == MPI_ERR_RANK, "MPI_ANY_SOURCE gives class %d", class);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    ring_rounds(0);
    ring_rounds(provided == MPI_THREAD_MULTIPLE);
    strided();
    matched_by_tag();
    proc_null_and_errors();
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("partitioned: passed (threads %s)\n", provided == MPI_THREAD_MULTIPLE ? "yes" : "no");
    MPI_Finalize();
    return 0;
}
