! One-sided communication and memory from the `mpi` module: a window over
! an array with fence epochs (put, get, accumulate); MPI_Win_allocate and
! MPI_Alloc_mem in both forms (an INTEGER(KIND=MPI_ADDRESS_KIND) address
! and a TYPE(C_PTR)); a shared-memory window read through
! MPI_Win_shared_query and C_F_POINTER; MPI_Sizeof on several types; an
! error class returned to ierror. Memory that MPI changes behind the
! compiler's back is VOLATILE (MPICH 4.0's MPI_F_SYNC_REG crashes); Braid's
! MPI_F_SYNC_REG is called too (TEST_BRAID_ONLY).
! Prints "rma_module: N failures" and exits 1 on any failure.
program rma_module
  use mpi
  use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer, c_associated
  implicit none
  integer :: rank, nprocs, ierr, total, left, right
  integer :: fails = 0

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = modulo(rank + 1, nprocs)
  left = modulo(rank - 1, nprocs)
  call sizes()
  call fence_epochs()
  call allocated_window()
  call allocated_memory()
  call shared_window()
  call errors()
  call mpi_allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a)', 'rma_module: ', total, ' failures'
  call mpi_finalize(ierr)
  if (total /= 0) stop 1

contains

  include 'check.inc'

  subroutine sizes()
    integer :: size, i, row(3)
    integer(kind=8) :: big
    integer(kind=2) :: small(4)
    real :: r
    double precision :: d(5)
    complex :: z
    logical :: flag
    i = 0
    call mpi_sizeof(i, size, ierr)
    call check(size == 4 .and. ierr == MPI_SUCCESS, 'sizeof integer')
    call mpi_sizeof(row, size, ierr)
    call check(size == 4, 'sizeof integer array (one element)')
    call mpi_sizeof(big, size, ierr)
    call check(size == 8, 'sizeof integer(8)')
    call mpi_sizeof(small, size, ierr)
    call check(size == 2, 'sizeof integer(2) array')
    call mpi_sizeof(r, size, ierr)
    call check(size == 4, 'sizeof real')
    call mpi_sizeof(d, size, ierr)
    call check(size == 8, 'sizeof double precision array')
    call mpi_sizeof(z, size, ierr)
    call check(size == 8, 'sizeof complex')
    call mpi_sizeof(flag, size, ierr)
    call check(size == 4, 'sizeof logical')
  end subroutine sizes

  ! A window over buf(4): each rank puts its rank into its right
  ! neighbour's buf(2), gets its left neighbour's buf(2) and adds rank+1
  ! into rank 0's buf(3).
  subroutine fence_epochs()
    integer, volatile :: buf(4), got
    integer :: mine, one_int, win
    integer(kind=MPI_ADDRESS_KIND) :: bytes, disp
    call mpi_sizeof(buf, one_int, ierr)
    buf = -1
    buf(3) = 0
    bytes = 4 * one_int
    call mpi_win_create(buf, bytes, one_int, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call check(ierr == MPI_SUCCESS, 'win_create')
    call mpi_win_fence(0, win, ierr)
    disp = 1
    call mpi_put(rank, 1, MPI_INTEGER, right, disp, 1, MPI_INTEGER, win, ierr)
    call mpi_win_fence(0, win, ierr)
#ifdef TEST_BRAID_ONLY
    call mpi_f_sync_reg(buf)
#endif
    call check(buf(2) == left, 'put into the right neighbour')
    got = -5
    call mpi_get(got, 1, MPI_INTEGER, left, disp, 1, MPI_INTEGER, win, ierr)
    mine = rank + 1
    disp = 2
    call mpi_accumulate(mine, 1, MPI_INTEGER, 0, disp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
    call mpi_win_fence(0, win, ierr)
#ifdef TEST_BRAID_ONLY
    call mpi_f_sync_reg(buf)
#endif
#ifdef TEST_BRAID_ONLY
    call mpi_f_sync_reg(got)
#endif
    call check(got == modulo(left - 1, nprocs), 'get from the left neighbour')
    if (rank == 0) call check(buf(3) == nprocs * (nprocs + 1) / 2, 'accumulate into rank 0')
    call check(buf(1) == -1 .and. buf(4) == -1, 'untouched elements')
    call mpi_win_free(win, ierr)
    call check(win == MPI_WIN_NULL, 'win_free sets MPI_WIN_NULL')
  end subroutine fence_epochs

  ! MPI_Win_allocate, TYPE(C_PTR) form: each rank writes its memory,
  ! then reads its right neighbour's with MPI_Get. (4 elements: MPICH 4.0
  ! misplaces rank 1's memory when rank 0's is not a multiple of 16 bytes.)
  subroutine allocated_window()
    type(c_ptr) :: base
    double precision, pointer :: mem(:)
    double precision, volatile :: remote(3)
    integer :: win
    integer(kind=MPI_ADDRESS_KIND) :: bytes, disp
    bytes = 4 * 8
    call mpi_win_allocate(bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base, win, ierr)
    call check(ierr == MPI_SUCCESS .and. c_associated(base), 'win_allocate (C_PTR)')
    call c_f_pointer(base, mem, [4])
    call mpi_win_fence(0, win, ierr)
    mem = [dble(rank), 0.5d0, -dble(rank), 2d0]
#ifdef TEST_BRAID_ONLY
    call mpi_f_sync_reg(mem)
#endif
    call mpi_win_fence(0, win, ierr)
    disp = 0
    call mpi_get(remote, 3, MPI_DOUBLE_PRECISION, right, disp, 3, MPI_DOUBLE_PRECISION, win, ierr)
    call mpi_win_fence(0, win, ierr)
#ifdef TEST_BRAID_ONLY
    call mpi_f_sync_reg(remote)
#endif
    call check(all(remote == [dble(right), 0.5d0, -dble(right)]), 'get from an allocated window')
    call mpi_win_free(win, ierr)
  end subroutine allocated_window

  ! MPI_Alloc_mem in both forms; the INTEGER address is the same memory.
  subroutine allocated_memory()
    type(c_ptr) :: base
    integer(kind=MPI_ADDRESS_KIND) :: bytes, address
    integer, pointer :: numbers(:)
    bytes = 10 * 4
    call mpi_alloc_mem(bytes, MPI_INFO_NULL, base, ierr)
    call check(ierr == MPI_SUCCESS .and. c_associated(base), 'alloc_mem (C_PTR)')
    call c_f_pointer(base, numbers, [10])
    numbers = rank
    call check(sum(numbers) == 10 * rank, 'memory from alloc_mem')
    call mpi_free_mem(numbers, ierr)
    call check(ierr == MPI_SUCCESS, 'free_mem')
    address = 0
    call mpi_alloc_mem(bytes, MPI_INFO_NULL, address, ierr)
    call check(ierr == MPI_SUCCESS .and. address /= 0, 'alloc_mem (INTEGER address)')
    base = transfer(address, base)
    call c_f_pointer(base, numbers, [10])
    numbers = 7
    call check(sum(numbers) == 70, 'memory at the INTEGER address')
    call mpi_free_mem(numbers, ierr)
  end subroutine allocated_memory

  ! A shared-memory window among the ranks of this node: each writes its
  ! element, then reads every other one directly.
  subroutine shared_window()
    integer :: node, node_rank, node_size, win, unit, i
    integer(kind=MPI_ADDRESS_KIND) :: bytes, peer_bytes
    type(c_ptr) :: base, peer_base
    integer, pointer :: mine(:), theirs(:)
    call mpi_comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node, ierr)
    call mpi_comm_rank(node, node_rank, ierr)
    call mpi_comm_size(node, node_size, ierr)
    bytes = 2 * 4
    call mpi_win_allocate_shared(bytes, 4, MPI_INFO_NULL, node, base, win, ierr)
    call check(ierr == MPI_SUCCESS, 'win_allocate_shared (C_PTR)')
    call c_f_pointer(base, mine, [2])
    call mpi_win_fence(0, win, ierr)
    mine = [100 + node_rank, -node_rank]
#ifdef TEST_BRAID_ONLY
    call mpi_f_sync_reg(mine)
#endif
    call mpi_win_fence(0, win, ierr)
    do i = 0, node_size - 1
      call mpi_win_shared_query(win, i, peer_bytes, unit, peer_base, ierr)
      call check(ierr == MPI_SUCCESS .and. peer_bytes == bytes .and. unit == 4, 'win_shared_query size and unit')
      call c_f_pointer(peer_base, theirs, [2])
#ifdef TEST_BRAID_ONLY
      call mpi_f_sync_reg(theirs)
#endif
      call check(theirs(1) == 100 + i .and. theirs(2) == -i, 'a peer''s element through shared_query')
    end do
    call mpi_win_fence(0, win, ierr)
    call mpi_win_free(win, ierr)
    call mpi_comm_free(node, ierr)
  end subroutine shared_window

  subroutine errors()
    integer :: class, buf(1), win
    integer(kind=MPI_ADDRESS_KIND) :: bytes
    ! An invalid window raises its error where no window's handler
    ! applies: MPI_COMM_WORLD (MPI-3.1) or MPI_COMM_SELF (MPI-4).
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call mpi_comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN, ierr)
    call mpi_win_fence(0, MPI_WIN_NULL, ierr)
    call mpi_error_class(ierr, class, ierr)
    call check(class == MPI_ERR_WIN, 'fence on MPI_WIN_NULL gives MPI_ERR_WIN')
    bytes = -4
    call mpi_win_create(buf, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call mpi_error_class(ierr, class, ierr)
    call check(class == MPI_ERR_SIZE, 'a negative window size gives MPI_ERR_SIZE')
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
    call mpi_comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL, ierr)
  end subroutine errors

end program rma_module
