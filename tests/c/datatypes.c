/* Derived datatypes (contiguous, vector, indexed, hindexed, struct, resized) through point-to-point
 * and collectives: sizes and extents, layouts on both ends, bytes between elements left untouched,
 * Get_count / Get_elements. Point-to-point checks exchange around a ring, so any rank count works. */
#include <stddef.h>
#include <string.h>
#include "check.h"

#define ROWS 8
#define COLS 6
#define UNTOUCHED (-555)

static int rank, size, next, previous;

static int element(int owner, int i) { return owner * 1000 + i; }

static void ring_exchange(const void *send, int send_count, MPI_Datatype send_type, void *receive, int receive_count,
                          MPI_Datatype receive_type, MPI_Status *status)
{
    MPI_Sendrecv(send, send_count, send_type, next, 5, receive, receive_count, receive_type, previous, 5, MPI_COMM_WORLD, status);
}

static void check_size_extent(MPI_Datatype type, const char *name, int size_expected, MPI_Aint extent_expected, MPI_Aint lb_expected)
{
    int type_size;
    MPI_Aint lb, extent;
    MPI_Type_size(type, &type_size);
    MPI_Type_get_extent(type, &lb, &extent);
    CHECK(type_size == size_expected, "%s: MPI_Type_size %d, expected %d", name, type_size, size_expected);
    CHECK(extent == extent_expected && lb == lb_expected, "%s: lb %ld extent %ld, expected lb %ld extent %ld", name, (long)lb, (long)extent,
          (long)lb_expected, (long)extent_expected);
}

static void contiguous(void)
{
    MPI_Datatype triple;
    MPI_Type_contiguous(3, MPI_INT, &triple);
    MPI_Type_commit(&triple);
    check_size_extent(triple, "contiguous(3, MPI_INT)", 12, 12, 0);
    int send[12], receive[12];
    for (int i = 0; i < 12; i++)
        send[i] = element(rank, i);
    MPI_Status status;
    int count, elements;
    ring_exchange(send, 4, triple, receive, 12, MPI_INT, &status);
    for (int i = 0; i < 12; i++)
        CHECK(receive[i] == element(previous, i), "contiguous -> MPI_INT element %d is %d", i, receive[i]);
    ring_exchange(send, 12, MPI_INT, receive, 4, triple, &status);
    MPI_Get_count(&status, triple, &count);
    MPI_Get_elements(&status, triple, &elements);
    CHECK(count == 4 && elements == 12, "contiguous: Get_count %d (expected 4), Get_elements %d (expected 12)", count, elements);
    ring_exchange(send, 10, MPI_INT, receive, 4, triple, &status);
    MPI_Get_count(&status, triple, &count);
    MPI_Get_elements(&status, triple, &elements);
    CHECK(count == MPI_UNDEFINED && elements == 10, "partial contiguous: Get_count %d (expected MPI_UNDEFINED), Get_elements %d (expected 10)", count,
          elements);

    MPI_Type_free(&triple);
    CHECK(triple == MPI_DATATYPE_NULL, "MPI_Type_free did not reset the handle");
}

/* A column of a ROWS x COLS matrix, both as sender and as receiver, and the resized column
 * that lets `count` columns interleave (the transpose idiom). */
static void vector_and_resized(void)
{
    int matrix[ROWS][COLS], column[ROWS], received[ROWS][COLS];
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            matrix[r][c] = element(rank, r * COLS + c);
    MPI_Datatype column_type, interleaved_column;
    MPI_Type_vector(ROWS, 1, COLS, MPI_INT, &column_type);
    MPI_Type_commit(&column_type);
    check_size_extent(column_type, "vector(8, 1, 6, MPI_INT)", ROWS * 4, ((ROWS - 1) * COLS + 1) * 4, 0);

    MPI_Status status;
    ring_exchange(&matrix[0][2], 1, column_type, column, ROWS, MPI_INT, &status);
    for (int r = 0; r < ROWS; r++)
        CHECK(column[r] == element(previous, r * COLS + 2), "vector send: row %d is %d", r, column[r]);

    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            received[r][c] = UNTOUCHED;
    int my_column[ROWS];
    for (int r = 0; r < ROWS; r++)
        my_column[r] = matrix[r][2];
    ring_exchange(my_column, ROWS, MPI_INT, &received[0][4], 1, column_type, &status);
    int elements;
    MPI_Get_elements(&status, column_type, &elements);
    CHECK(elements == ROWS, "vector receive: Get_elements %d", elements);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            CHECK(received[r][c] == (c == 4 ? element(previous, r * COLS + 2) : UNTOUCHED), "vector receive wrote [%d][%d] = %d", r, c, received[r][c]);

    MPI_Type_create_resized(column_type, 0, sizeof(int), &interleaved_column);
    MPI_Type_commit(&interleaved_column);
    check_size_extent(interleaved_column, "resized column", ROWS * 4, 4, 0);
    int transposed[COLS][ROWS];
    ring_exchange(matrix, COLS, interleaved_column, transposed, ROWS * COLS, MPI_INT, &status);
    for (int c = 0; c < COLS; c++)
        for (int r = 0; r < ROWS; r++)
            CHECK(transposed[c][r] == element(previous, r * COLS + c), "transpose via resized vector: [%d][%d] is %d", c, r, transposed[c][r]);

    /* Gather: every rank's row lands in one column of the root's matrix. */
    int row[ROWS], gathered[ROWS][4];
    MPI_Datatype gathered_column, gathered_column_resized;
    MPI_Type_vector(ROWS, 1, 4, MPI_INT, &gathered_column);
    MPI_Type_create_resized(gathered_column, 0, sizeof(int), &gathered_column_resized);
    MPI_Type_commit(&gathered_column_resized);
    for (int r = 0; r < ROWS; r++)
        row[r] = element(rank, r);
    MPI_Gather(row, ROWS, MPI_INT, gathered, 1, gathered_column_resized, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < ROWS; r++)
        for (int who = 0; who < size; who++)
            CHECK(gathered[r][who] == element(who, r), "MPI_Gather into columns: [%d][%d] is %d", r, who, gathered[r][who]);

    /* Bcast a strided column straight out of and into matrices. */
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            received[r][c] = rank == 0 ? matrix[r][c] : UNTOUCHED;
    MPI_Bcast(&received[0][1], 1, column_type, 0, MPI_COMM_WORLD);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            CHECK(received[r][c] == (c == 1 || rank == 0 ? element(0, r * COLS + c) : UNTOUCHED), "MPI_Bcast of a column: [%d][%d] is %d", r, c,
                  received[r][c]);

    MPI_Type_free(&gathered_column);
    MPI_Type_free(&gathered_column_resized);
    MPI_Type_free(&interleaved_column);
    MPI_Type_free(&column_type);
}

static void indexed_and_hindexed(void)
{
    int lengths[3] = {2, 1, 3}, displacements[3] = {0, 4, 9};
    MPI_Aint byte_displacements[3] = {0, 4 * sizeof(double), 9 * sizeof(double)};
    MPI_Datatype indexed, hindexed;
    MPI_Type_indexed(3, lengths, displacements, MPI_DOUBLE, &indexed);
    MPI_Type_create_hindexed(3, lengths, byte_displacements, MPI_DOUBLE, &hindexed);
    MPI_Type_commit(&indexed);
    MPI_Type_commit(&hindexed);
    check_size_extent(indexed, "indexed", 6 * 8, 12 * 8, 0);
    check_size_extent(hindexed, "hindexed", 6 * 8, 12 * 8, 0);

    const int picked[6] = {0, 1, 4, 9, 10, 11};
    double source[24], packed[12], scattered[24];
    for (int i = 0; i < 24; i++)
        source[i] = element(rank, i) + 0.25;
    MPI_Status status;
    ring_exchange(source, 2, indexed, packed, 12, MPI_DOUBLE, &status);
    for (int copy = 0; copy < 2; copy++)
        for (int i = 0; i < 6; i++)
            CHECK(packed[copy * 6 + i] == element(previous, copy * 12 + picked[i]) + 0.25, "indexed send copy %d element %d is %g", copy, i, packed[copy * 6 + i]);

    for (int i = 0; i < 24; i++)
        scattered[i] = UNTOUCHED;
    ring_exchange(source, 2, indexed, scattered, 2, hindexed, &status);
    for (int i = 0; i < 24; i++) {
        int is_picked = 0;
        for (int p = 0; p < 6; p++)
            is_picked |= (i % 12) == picked[p];
        CHECK(scattered[i] == (is_picked ? element(previous, i) + 0.25 : UNTOUCHED), "indexed -> hindexed slot %d is %g", i, scattered[i]);
    }
    MPI_Type_free(&indexed);
    MPI_Type_free(&hindexed);
}

struct particle {
    int id;
    double position[3];
    char kind;
};

static MPI_Datatype particle_type(void)
{
    int lengths[3] = {1, 3, 1};
    MPI_Aint displacements[3] = {offsetof(struct particle, id), offsetof(struct particle, position), offsetof(struct particle, kind)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, raw, resized;
    MPI_Type_create_struct(3, lengths, displacements, types, &raw);
    MPI_Type_create_resized(raw, 0, sizeof(struct particle), &resized);
    MPI_Type_free(&raw);
    MPI_Type_commit(&resized);
    return resized;
}

static struct particle make_particle(int owner, int i)
{
    struct particle p;
    memset(&p, 0, sizeof p);
    p.id = element(owner, i);
    for (int d = 0; d < 3; d++)
        p.position[d] = owner + i * 0.5 + d * 0.125;
    p.kind = (char)('a' + (owner + i) % 26);
    return p;
}

static int same_particle(const struct particle *a, const struct particle *b)
{
    return a->id == b->id && a->kind == b->kind && memcmp(a->position, b->position, sizeof a->position) == 0;
}

static void structs(void)
{
    enum { COUNT = 5 };
    MPI_Datatype type = particle_type(), copy;
    check_size_extent(type, "particle struct", 4 + 24 + 1, sizeof(struct particle), 0);
    MPI_Type_dup(type, &copy);
    check_size_extent(copy, "dup of particle struct", 4 + 24 + 1, sizeof(struct particle), 0);

    struct particle send[COUNT], receive[COUNT];
    for (int i = 0; i < COUNT; i++)
        send[i] = make_particle(rank, i);
    memset(receive, 0x7b, sizeof receive);
    MPI_Status status;
    ring_exchange(send, COUNT, type, receive, COUNT, copy, &status);
    int count, elements;
    MPI_Get_count(&status, copy, &count);
    MPI_Get_elements(&status, copy, &elements);
    CHECK(count == COUNT && elements == COUNT * 5, "struct: Get_count %d, Get_elements %d (expected %d, %d)", count, elements, COUNT, COUNT * 5);
    for (int i = 0; i < COUNT; i++) {
        struct particle expected = make_particle(previous, i);
        CHECK(same_particle(&receive[i], &expected), "struct particle %d arrived as id %d kind %c", i, receive[i].id, receive[i].kind);
    }

    for (int root = 0; root < size; root++) {
        for (int i = 0; i < COUNT; i++)
            receive[i] = rank == root ? make_particle(root, i) : make_particle(-1, 0);
        MPI_Bcast(receive, COUNT, type, root, MPI_COMM_WORLD);
        for (int i = 0; i < COUNT; i++) {
            struct particle expected = make_particle(root, i);
            CHECK(same_particle(&receive[i], &expected), "MPI_Bcast of particles from %d: particle %d wrong", root, i);
        }
    }

    struct particle *everyone = calloc((size_t)size * 2, sizeof(struct particle));
    MPI_Allgather(send, 2, type, everyone, 2, type, MPI_COMM_WORLD);
    for (int who = 0; who < size; who++)
        for (int i = 0; i < 2; i++) {
            struct particle expected = make_particle(who, i);
            CHECK(same_particle(&everyone[who * 2 + i], &expected), "MPI_Allgather of particles: rank %d particle %d wrong", who, i);
        }
    free(everyone);
    MPI_Type_free(&copy);
    MPI_Type_free(&type);
}

/* A derived type through Alltoall: each destination gets a strided slice. */
static void strided_alltoall(void)
{
    MPI_Datatype every_other, every_other_resized;
    MPI_Type_vector(2, 1, 2, MPI_INT, &every_other);
    MPI_Type_create_resized(every_other, 0, 4 * sizeof(int), &every_other_resized);
    MPI_Type_commit(&every_other_resized);
    int *send = malloc(sizeof(int) * 4 * (size_t)size), *receive = malloc(sizeof(int) * 2 * (size_t)size);
    for (int i = 0; i < 4 * size; i++)
        send[i] = element(rank, i);
    MPI_Alltoall(send, 1, every_other_resized, receive, 2, MPI_INT, MPI_COMM_WORLD);
    for (int from = 0; from < size; from++)
        for (int k = 0; k < 2; k++)
            CHECK(receive[from * 2 + k] == element(from, rank * 4 + k * 2), "strided MPI_Alltoall from %d element %d is %d", from, k, receive[from * 2 + k]);
    free(send);
    free(receive);
    MPI_Type_free(&every_other);
    MPI_Type_free(&every_other_resized);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 4, "datatypes gathers into 4 columns, got %d ranks", size);
    next = (rank + 1) % size;
    previous = (rank + size - 1) % size;
    contiguous();
    vector_and_resized();
    indexed_and_hindexed();
    structs();
    strided_alltoall();
    report_ok("datatypes");
    MPI_Finalize();
    return 0;
}
