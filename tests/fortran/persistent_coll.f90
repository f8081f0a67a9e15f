! Persistent collectives (MPI 4.0) through the `mpi_f08` module: an allreduce and a broadcast
! made once with MPI_*_init, started five times with new data each time, then freed.
! Prints "persistent_coll: N failures" and exits 1 on any failure.
program persistent_coll
  use mpi_f08
  implicit none
  integer :: rank, nprocs, round, total
  integer :: fails = 0
  integer :: mine(4), summed(4), shared(3)
  type(MPI_Request) :: requests(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call MPI_Allreduce_init(mine, summed, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                          MPI_INFO_NULL, requests(1))
  call MPI_Bcast_init(shared, 3, MPI_INTEGER, nprocs - 1, MPI_COMM_WORLD, MPI_INFO_NULL, requests(2))
  do round = 1, 5
    mine = [rank, round, rank * round, 1]
    shared = -1
    if (rank == nprocs - 1) shared = [round, 2 * round, 3 * round]
    call MPI_Startall(2, requests)
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE)
    call check(all(summed == [nprocs * (nprocs - 1) / 2, nprocs * round, &
                              round * nprocs * (nprocs - 1) / 2, nprocs]), 'allreduce_init')
    call check(all(shared == [round, 2 * round, 3 * round]), 'bcast_init')
    call check(requests(1) /= MPI_REQUEST_NULL, 'an inactive persistent request stays')
  end do
  call MPI_Request_free(requests(1))
  call MPI_Request_free(requests(2))
  call check(requests(1) == MPI_REQUEST_NULL, 'request_free')

  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'persistent_coll: ', total, ' failures'
  call MPI_Finalize()
  if (total /= 0) stop 1
contains

  include 'check.inc'
end program persistent_coll
