! The `mpi` module from a free-form program: explicit interfaces accept
! buffers of every type, kind and rank; LOGICAL arguments (Cartesian
! periods, test flags); MAXLOC on MPI_2DOUBLE_PRECISION; 8-byte integers
! and complex numbers; 16-byte integers (MPI_INTEGER16, optional in MPI: a
! library without it defines it as MPI_DATATYPE_NULL); MPI_WTIME as a function.
! Prints "f90_module: N failures" and exits 1 on any failure.
program f90_module
  use mpi
  implicit none
  integer :: rank, nprocs, ierr, total
  integer :: fails = 0

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call kinds_and_ranks()
  call cartesian()
  call requests()
  call split_and_compare()
  call clocks()
  call mpi_allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a)', 'f90_module: ', total, ' failures'
  call mpi_finalize(ierr)
  if (total /= 0) stop 1

contains

  include 'check.inc'

  subroutine kinds_and_ranks()
    integer(kind=8) :: big(2), bigsum(2)
    integer(kind=16) :: huge16(2), huge16max(2)
    integer :: typesize, matched, length
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: library
    complex(kind=8) :: z, zsum
    double precision :: pair(2), best(2)
    real :: grid(3, 2), scalar
    integer :: i
    big = [int(rank, 8) * 10000000000_8, 1_8]
    call mpi_allreduce(big, bigsum, 2, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(bigsum(1) == 10000000000_8 * (nprocs * (nprocs - 1) / 2) .and. bigsum(2) == nprocs, 'integer8 sum')
    ! Optional: MPICH 4.0 defines MPI_INTEGER16 as MPI_DATATYPE_NULL, Open MPI 4.1 (Debian)
    ! as a datatype that every call rejects. Used where MPI_Type_size takes it.
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    typesize = 0
    if (MPI_INTEGER16 /= MPI_DATATYPE_NULL) call mpi_type_size(MPI_INTEGER16, typesize, ierr)
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
    call mpi_get_library_version(library, length, ierr)
    if (library(1:5) == 'Braid') call check(typesize == 16, 'Braid offers MPI_INTEGER16')
    if (MPI_INTEGER16 /= MPI_DATATYPE_NULL .and. typesize /= 0) then
      ! Beyond 64 bits: 2**70 + rank, broadcast, then (where the library reduces on the type:
      ! Open MPI 4.1 defines MPI_INTEGER16 but has no reduction on it) maximised and summed.
      huge16 = [2_16**70 + int(rank, 16), -2_16**100 * int(rank + 1, 16)]
      huge16max = huge16
      call mpi_bcast(huge16max, 2, MPI_INTEGER16, nprocs - 1, MPI_COMM_WORLD, ierr)
      call check(huge16max(1) == 2_16**70 + int(nprocs - 1, 16) .and. &
                 huge16max(2) == -2_16**100 * int(nprocs, 16), 'integer16 bcast')
      if (library(1:5) == 'Braid') then
        call mpi_allreduce(huge16, huge16max, 2, MPI_INTEGER16, MPI_MAX, MPI_COMM_WORLD, ierr)
        call check(huge16max(1) == 2_16**70 + int(nprocs - 1, 16) .and. huge16max(2) == -2_16**100, 'integer16 max')
        call mpi_allreduce(huge16, huge16max, 2, MPI_INTEGER16, MPI_SUM, MPI_COMM_WORLD, ierr)
        call check(huge16max(1) == int(nprocs, 16) * 2_16**70 + int(nprocs * (nprocs - 1) / 2, 16), 'integer16 sum')
      end if
      call check(typesize == 16, 'integer16 size')
      call mpi_type_match_size(MPI_TYPECLASS_INTEGER, 16, matched, ierr)
      call check(matched == MPI_INTEGER16, 'integer16 from MPI_Type_match_size')
    end if
    z = cmplx(rank, 1, kind=8)
    call mpi_allreduce(z, zsum, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check(real(zsum) == nprocs * (nprocs - 1) / 2 .and. aimag(zsum) == nprocs, 'complex sum')
    pair = [dble(mod(rank * 7, 5)), dble(rank)]
    call mpi_allreduce(pair, best, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
    call check(best(1) == maxval([(dble(mod(i * 7, 5)), i = 0, nprocs - 1)]), '2double_precision maxloc value')
    call check(mod(nint(best(2)) * 7, 5) == nint(best(1)), '2double_precision maxloc index')
    grid = 0.0
    if (rank == 0) grid = reshape([(real(i), i = 1, 6)], [3, 2])
    call mpi_bcast(grid, 6, MPI_REAL, 0, MPI_COMM_WORLD, ierr)
    call check(grid(3, 2) == 6.0, 'rank-2 buffer')
    scalar = 0.0
    if (rank == 0) scalar = 2.5
    call mpi_bcast(scalar, 1, MPI_REAL, 0, MPI_COMM_WORLD, ierr)
    call check(scalar == 2.5, 'scalar buffer')
  end subroutine kinds_and_ranks

  subroutine cartesian()
    integer :: cart, dims(2), coords(2), ndims
    logical :: periods(2), got_periods(2)
    dims = 0
    call mpi_dims_create(nprocs, 2, dims, ierr)
    periods = [.true., .false.]
    call mpi_cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
    call check(ierr == MPI_SUCCESS, 'cart_create')
    call mpi_cartdim_get(cart, ndims, ierr)
    call check(ndims == 2, 'cartdim_get')
    call mpi_cart_get(cart, 2, dims, got_periods, coords, ierr)
    call check(got_periods(1) .and. .not. got_periods(2), 'cart_get periods')
    call mpi_comm_free(cart, ierr)
  end subroutine cartesian

  subroutine requests()
    integer :: req, index, status(MPI_STATUS_SIZE), value, got, reqs(1)
    logical :: done
    value = rank
    call mpi_irecv(got, 1, MPI_INTEGER, 0, 5, MPI_COMM_SELF, req, ierr)
    call mpi_test(req, done, MPI_STATUS_IGNORE, ierr)
    call check(.not. done, 'test before the send')
    call mpi_send(value, 1, MPI_INTEGER, 0, 5, MPI_COMM_SELF, ierr)
    reqs(1) = req
    call mpi_waitany(1, reqs, index, status, ierr)
    call check(index == 1 .and. got == rank .and. status(MPI_TAG) == 5, 'waitany')
    call mpi_test(reqs(1), done, status, ierr)
    call check(done, 'test of a null request')
  end subroutine requests

  subroutine clocks()
    double precision :: before, after
    before = mpi_wtime()
    after = mpi_wtime()
    call check(after >= before .and. mpi_wtick() > 0.0d0, 'wtime and wtick')
  end subroutine clocks

  subroutine split_and_compare()
    integer :: half, result, half_size
    call mpi_comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
    call mpi_comm_size(half, half_size, ierr)
    call check(half_size == (nprocs + 1 - mod(rank, 2)) / 2, 'split size')
    call mpi_comm_compare(half, MPI_COMM_WORLD, result, ierr)
    call check(result == merge(MPI_CONGRUENT, MPI_UNEQUAL, nprocs == 1), 'compare')
    call mpi_comm_free(half, ierr)
  end subroutine split_and_compare
end program f90_module
