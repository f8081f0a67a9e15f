// A C++ program (built with braidcxx): mpi.h must be usable from C++ without warnings, and the
// C ABI must link. Exchanges a std::vector around the ring and reduces a sum.
#include <mpi.h>

#include <cstdio>
#include <numeric>
#include <vector>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<double> mine(64), theirs(64, -1.0);
    std::iota(mine.begin(), mine.end(), 100.0 * rank);
    const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    MPI_Sendrecv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, next, 0, theirs.data(), static_cast<int>(theirs.size()), MPI_DOUBLE, previous, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    bool ok = theirs.front() == 100.0 * previous && theirs.back() == 100.0 * previous + 63;
    long total = 0, one = 1;
    MPI_Allreduce(&one, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    ok = ok && total == size;
    if (!ok) {
        std::fprintf(stderr, "cxx_program: rank %d got %g..%g from %d, total %ld\n", rank, theirs.front(), theirs.back(), previous, total);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        std::printf("cxx_program: ok on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
