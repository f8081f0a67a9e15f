! MPI 4's large counts through the `mpi_f08` module: an INTEGER(KIND=MPI_COUNT_KIND) count (or
! displacement array of MPI_ADDRESS_KIND with counts of MPI_COUNT_KIND) makes the generic
! routine call its `_c` form. Point-to-point, a status's count, collectives, the v-variants,
! datatypes, the file calls and the conversions between the two Fortran statuses.
! Prints "large_count: N failures" and exits 1 on any failure.
program large_count
  use mpi_f08
  implicit none
  integer :: rank, nprocs, total, i, peer
  integer :: fails = 0
  integer(kind=MPI_COUNT_KIND) :: n, got, size8
  integer(kind=MPI_COUNT_KIND), allocatable :: counts(:)
  integer(kind=MPI_ADDRESS_KIND), allocatable :: displs(:)
  integer, allocatable :: sendbuf(:), recvbuf(:)
  integer :: block(6), sums(6), fstatus(MPI_STATUS_SIZE)
  type(MPI_Status) :: status, back
  type(MPI_Datatype) :: pair
  type(MPI_Request) :: request
#ifdef TEST_BRAID_ONLY
  type(MPI_File) :: fh
  character(len=128) :: path
#endif
#ifdef TEST_BRAID_ONLY
  integer(kind=MPI_COUNT_KIND) :: lb, extent
  type(MPI_Op) :: op
#endif

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)

  ! A ring: send 6 integers with a large count, receive with a large count, read it back large.
  n = 6
  peer = mod(rank + 1, nprocs)
  block = [(rank * 10 + i, i = 1, 6)]
  call MPI_Sendrecv(block, n, MPI_INTEGER, peer, 7, sums, n, MPI_INTEGER, &
                    mod(rank + nprocs - 1, nprocs), 7, MPI_COMM_WORLD, status)
  call check(all(sums == [(mod(rank + nprocs - 1, nprocs) * 10 + i, i = 1, 6)]), 'sendrecv_c data')
  got = -1
  call MPI_Get_count(status, MPI_INTEGER, got)
  call check(got == 6, 'get_count_c')
  call MPI_Get_elements(status, MPI_INTEGER, got)
  call check(got == 6, 'get_elements_c')

  ! Non-blocking with a large count.
  call MPI_Isend(block, n, MPI_INTEGER, 0, 8, MPI_COMM_SELF, request)
  sums = 0
  call MPI_Recv(sums, n, MPI_INTEGER, 0, 8, MPI_COMM_SELF, status)
  call MPI_Wait(request, MPI_STATUS_IGNORE)
  call check(all(sums == block), 'isend_c to self')

  ! Collectives.
  block = rank + 1
  call MPI_Allreduce(block, sums, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(all(sums == nprocs * (nprocs + 1) / 2), 'allreduce_c')
  if (rank == 0) block = [(i, i = 1, 6)]
  call MPI_Bcast(block, n, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(all(block == [(i, i = 1, 6)]), 'bcast_c')

  ! Alltoallv with MPI_COUNT_KIND counts and MPI_ADDRESS_KIND displacements: rank r sends r + 1
  ! copies of its rank to everyone.
  allocate(counts(nprocs), displs(nprocs), sendbuf(nprocs * (rank + 1)), recvbuf(nprocs * (nprocs + 1) / 2))
  sendbuf = rank
  counts = rank + 1
  displs = [((i - 1) * (rank + 1), i = 1, nprocs)]
  block(1) = 0
  recvbuf = -1
  call MPI_Alltoallv(sendbuf, counts, displs, MPI_INTEGER, recvbuf, &
                     [(int(i, MPI_COUNT_KIND), i = 1, nprocs)], &
                     [(int((i - 1) * i / 2, MPI_ADDRESS_KIND), i = 1, nprocs)], MPI_INTEGER, MPI_COMM_WORLD)
  call check(all(recvbuf == [((i - 1, peer = 1, i), i = 1, nprocs)]), 'alltoallv_c')

  ! Datatypes: a large-count contiguous type and its size.
  call MPI_Type_contiguous(int(2, MPI_COUNT_KIND), MPI_INTEGER, pair)
  call MPI_Type_commit(pair)
  size8 = -1
  call MPI_Type_size(pair, size8)
  call check(size8 == 8, 'type_size_c')
  call MPI_Type_free(pair)

#ifdef TEST_BRAID_ONLY
  ! The forms a generic cannot pick (their arguments differ only in an 8-byte kind, or in a
  ! callback's interface) are called by name; MPICH leaves them out of mpi_f08.
  call MPI_Type_get_extent_c(MPI_INTEGER, lb, extent)
  call check(lb == 0 .and. extent == 4, 'type_get_extent_c')
  call MPI_Op_create_c(add_large, .true., op)
  block = rank + 1
  call MPI_Allreduce(block, sums, n, MPI_INTEGER, op, MPI_COMM_WORLD)
  call check(all(sums == nprocs * (nprocs + 1) / 2), 'op_create_c')
  call MPI_Op_free(op)
#endif

#ifdef TEST_BRAID_ONLY
  ! The file calls (MPICH 4.0.2's mpi_f08 has no large-count file routines): each rank writes its
  ! 6 integers with a large count, then reads them back.
  if (rank == 0) write (path, '(a,i0)') '/tmp/braid-f08-large-count-', getpid()
  call MPI_Bcast(path, len(path), MPI_CHARACTER, 0, MPI_COMM_WORLD)
  call MPI_File_open(MPI_COMM_WORLD, trim(path), ior(MPI_MODE_CREATE, MPI_MODE_RDWR), &
                     MPI_INFO_NULL, fh)
  block = [(rank * 10 + i, i = 1, 6)]
  call MPI_File_write_at(fh, int(24 * rank, MPI_OFFSET_KIND), block, n, MPI_INTEGER, status)
  call MPI_Get_count(status, MPI_INTEGER, got)
  call check(got == 6, 'file write_at_c count')
  sums = 0
  call MPI_File_read_at(fh, int(24 * rank, MPI_OFFSET_KIND), sums, n, MPI_INTEGER, status)
  call check(all(sums == block), 'file read_at_c')
  call MPI_File_close(fh)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) call MPI_File_delete(trim(path), MPI_INFO_NULL)
#endif

  ! The two Fortran statuses convert into each other field by field.
  status%MPI_SOURCE = 3
  status%MPI_TAG = 44
  status%MPI_ERROR = MPI_ERR_TAG
  call MPI_Status_f082f(status, fstatus)
  call check(fstatus(MPI_SOURCE) == 3 .and. fstatus(MPI_TAG) == 44 .and. fstatus(MPI_ERROR) == MPI_ERR_TAG, 'status_f082f')
  call MPI_Status_f2f08(fstatus, back)
  call check(back%MPI_SOURCE == 3 .and. back%MPI_TAG == 44 .and. back%MPI_ERROR == MPI_ERR_TAG, 'status_f2f08')

  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'large_count: ', total, ' failures'
  call MPI_Finalize()
  if (total /= 0) stop 1
contains

#ifdef TEST_BRAID_ONLY
  subroutine add_large(invec, inoutvec, len, datatype)
    integer :: invec(*), inoutvec(*)
    integer(kind=MPI_COUNT_KIND) :: len
    type(MPI_Datatype) :: datatype
    integer(kind=MPI_COUNT_KIND) :: k
    do k = 1, len
      inoutvec(k) = inoutvec(k) + invec(k)
    end do
  end subroutine add_large
#endif

  include 'check.inc'
end program large_count
