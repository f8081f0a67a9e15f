! MPI-IO from Fortran through the `mpi_f08` module: a file opened collectively, a view in which
! each rank owns every size-th block of 4 integers, a collective write through it, a read of the
! whole file on every rank without a view, the individual file pointer, and the file's size.
! Prints "io_module: N failures" and exits 1 on any failure.
program io_module
  use mpi_f08
  implicit none
  integer :: rank, nprocs, total, i, j
  integer :: fails = 0
  integer :: mine(8), ierror
  integer, allocatable :: whole(:)
  character(len=256) :: path
  type(MPI_File) :: fh
  type(MPI_Datatype) :: block, tiled
  type(MPI_Status) :: status
  integer(kind=MPI_OFFSET_KIND) :: size, position
  integer(kind=MPI_ADDRESS_KIND) :: lb, extent
  integer :: count

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  if (rank == 0) then
    call get_environment_variable('TMPDIR', path)
    if (len_trim(path) == 0) path = '/tmp'
    write (path, '(a,a,i0)') trim(path), '/braid-fortran-io-', getpid()
  end if
  call MPI_Bcast(path, len(path), MPI_CHARACTER, 0, MPI_COMM_WORLD)

  call MPI_File_open(MPI_COMM_WORLD, trim(path), ior(MPI_MODE_CREATE, MPI_MODE_RDWR), &
                     MPI_INFO_NULL, fh, ierror)
  call check(ierror == MPI_SUCCESS, 'open')
  ! Each rank's blocks of 4 integers: block r of every group of nprocs blocks.
  call MPI_Type_contiguous(4, MPI_INTEGER, block)
  lb = 0
  extent = 16 * nprocs
  call MPI_Type_create_resized(block, lb, extent, tiled)
  call MPI_Type_commit(tiled)
  call MPI_File_set_view(fh, int(16 * rank, MPI_OFFSET_KIND), MPI_INTEGER, tiled, 'native', &
                         MPI_INFO_NULL, ierror)
  call check(ierror == MPI_SUCCESS, 'set_view')
  mine = [(100 * rank + i, i = 1, 8)]
  call MPI_File_write_all(fh, mine, 8, MPI_INTEGER, status, ierror)
  call check(ierror == MPI_SUCCESS, 'write_all')
  call MPI_Get_count(status, MPI_INTEGER, count)
  call check(count == 8, 'write_all count')
  call MPI_File_get_position(fh, position)
  call check(position == 8, 'individual pointer past the data')
  call MPI_File_sync(fh)
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_File_sync(fh)

  call MPI_File_get_size(fh, size)
  call check(size == 32 * nprocs, 'file size')
  call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL)
  allocate(whole(8 * nprocs))
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, whole, 8 * nprocs, MPI_INTEGER, status)
  ! Group g, block r holds rank r's integers 4g+1 .. 4g+4.
  do i = 0, 1
    do j = 0, nprocs - 1
      call check(all(whole(1 + 4 * (i * nprocs + j):4 * (i * nprocs + j) + 4) == &
                     [(100 * j + 4 * i + count, count = 1, 4)]), 'file contents')
    end do
  end do
  call MPI_File_close(fh)
  call check(fh == MPI_FILE_NULL, 'close gives MPI_FILE_NULL')
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) call MPI_File_delete(trim(path), MPI_INFO_NULL)
  call MPI_Type_free(tiled)
  call MPI_Type_free(block)

  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'io_module: ', total, ' failures'
  call MPI_Finalize()
  if (total /= 0) stop 1
contains

  include 'check.inc'
end program io_module
