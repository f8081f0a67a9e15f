! The `mpi_f08` module: handle types compared with == and /=, the MPI_Status
! type and its fields, ierror left out or given, MPI_IN_PLACE, LOGICAL
! reductions, MPI_Alloc_mem's TYPE(C_PTR), MPI_Sizeof, and an error code in
! ierror under MPI_ERRORS_RETURN.
! Prints "f08_module: N failures" and exits 1 on any failure.
program f08_module
  use mpi_f08
  use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer, c_associated
  implicit none
  integer :: rank, nprocs, ierr, total, count, class
  integer :: fails = 0
  type(MPI_Comm) :: dup
  type(MPI_Status) :: status
  type(MPI_Request) :: requests(2)
  type(MPI_Datatype) :: pair
  double precision :: sent(3), received(3)
  logical :: mine, all
  type(c_ptr) :: memory
  integer, pointer :: numbers(:)
  integer(kind=MPI_ADDRESS_KIND) :: bytes
  integer :: size
  real(kind=8) :: real8

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call check(ierr == MPI_SUCCESS, 'ierror given')

  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call check(dup /= MPI_COMM_NULL .and. .not. (dup == MPI_COMM_WORLD), 'handle comparisons')
  sent = [dble(rank), 1.0d0, 2.0d0]
  call MPI_Irecv(received, 3, MPI_DOUBLE_PRECISION, mod(rank + nprocs - 1, nprocs), 4, dup, requests(1))
  call MPI_Isend(sent, 3, MPI_DOUBLE_PRECISION, mod(rank + 1, nprocs), 4, dup, requests(2))
  call MPI_Wait(requests(1), status)
  call MPI_Wait(requests(2), MPI_STATUS_IGNORE)
  call check(status%MPI_SOURCE == mod(rank + nprocs - 1, nprocs) .and. status%MPI_TAG == 4, 'status fields')
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, count)
  call check(count == 3 .and. received(1) == mod(rank + nprocs - 1, nprocs), 'get_count and data')
  call check(requests(1) == MPI_REQUEST_NULL, 'request freed')
  call MPI_Comm_free(dup)
  call check(dup == MPI_COMM_NULL, 'comm_free')

  call MPI_Type_contiguous(2, MPI_DOUBLE_PRECISION, pair)
  call MPI_Type_commit(pair)
  call MPI_Bcast(sent, 1, pair, 0, MPI_COMM_WORLD)
  call check(sent(1) == 0.0d0 .and. sent(2) == 1.0d0, 'derived type')
  call MPI_Type_free(pair)

  bytes = 16
  call MPI_Alloc_mem(bytes, MPI_INFO_NULL, memory)
  call check(c_associated(memory), 'alloc_mem (C_PTR)')
  call c_f_pointer(memory, numbers, [4])
  numbers = [1, 2, 3, rank]
  call check(sum(numbers) == 6 + rank, 'memory from alloc_mem')
  call MPI_Free_mem(numbers, ierr)
  call check(ierr == MPI_SUCCESS, 'free_mem')
  call MPI_Sizeof(real8, size)
  call check(size == 8, 'sizeof real(8)')
  call MPI_Sizeof(received, size, ierr)
  call check(size == 8 .and. ierr == MPI_SUCCESS, 'sizeof double precision array')

  count = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, count, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(count == nprocs * (nprocs + 1) / 2, 'allreduce in_place')
  mine = rank == 0
  call MPI_Allreduce(mine, all, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD)
  call check(all, 'logical or')

  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Send(sent, 1, MPI_DOUBLE_PRECISION, nprocs, 0, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, class)
  call check(class == MPI_ERR_RANK, 'bad rank gives MPI_ERR_RANK')

  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'f08_module: ', total, ' failures'
  call MPI_Finalize()
  if (total /= 0) stop 1

contains

  include 'check.inc'
end program f08_module
