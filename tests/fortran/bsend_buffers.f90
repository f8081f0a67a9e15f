! MPI 4.1's buffers for buffered sends through the `mpi_f08` module: a communicator's buffer
! attached as MPI_BUFFER_AUTOMATIC carries buffered sends to this rank's neighbour (and to
! itself), MPI_Comm_flush_buffer waits for them, MPI_Buffer_iflush completes, and the detached
! automatic buffer has size 0 (Fortran's buffer_addr is not written, as for MPI_Buffer_detach). Prints "bsend_buffers: N failures" and exits 1 on any.
program bsend_buffers
  use mpi_f08
  implicit none
  integer :: rank, nprocs, total, next, previous, i, size_out
  integer :: fails = 0
  integer :: sent(50), got(50)
  type(MPI_Comm) :: comm
  type(MPI_Request) :: request
  integer(kind=MPI_ADDRESS_KIND) :: detached

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call MPI_Comm_dup(MPI_COMM_WORLD, comm)
  call MPI_Comm_attach_buffer(comm, MPI_BUFFER_AUTOMATIC, 0)
  next = mod(rank + 1, nprocs)
  previous = mod(rank + nprocs - 1, nprocs)
  sent = [(rank * 100 + i, i = 1, 50)]
  do i = 1, 20
    call MPI_Bsend(sent, 50, MPI_INTEGER, next, i, comm)
  end do
  call MPI_Comm_flush_buffer(comm)
  do i = 1, 20
    call MPI_Recv(got, 50, MPI_INTEGER, previous, i, comm, MPI_STATUS_IGNORE)
    call check(got(50) == previous * 100 + 50, 'a buffered message')
  end do
  call MPI_Buffer_iflush(request)
  call MPI_Wait(request, MPI_STATUS_IGNORE)
  call MPI_Comm_detach_buffer(comm, detached, size_out)
  call check(size_out == 0, 'an automatic buffer has no size')
  call MPI_Comm_free(comm)

  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'bsend_buffers: ', total, ' failures'
  call MPI_Finalize()
  if (total /= 0) stop 1
contains

  include 'check.inc'
end program bsend_buffers
