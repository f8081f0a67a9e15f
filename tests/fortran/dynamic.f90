! Dynamic processes through the `mpi_f08` module: the job spawns 2 processes of this program
! (MPI_Comm_spawn with arguments), which find their parent, swap values with it over the
! intercommunicator and reduce over the merged communicator; then the lower and upper halves
! of the job connect through a port (MPI_Open_port, MPI_Comm_accept, MPI_Comm_connect).
! Prints "dynamic: N failures" (the parents' rank 0) and exits 1 on any failure.
program dynamic
  use mpi_f08
  implicit none
  integer :: rank, nprocs, total, remote, merged_rank, merged_size, summed, value
  integer :: fails = 0
  integer :: errcodes(2)
  character(len=16) :: argument
  character(len=4096) :: self
  character(len=MPI_MAX_PORT_NAME) :: port
  type(MPI_Comm) :: parent, children, merged, half, inter

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call MPI_Comm_get_parent(parent)

  if (parent /= MPI_COMM_NULL) then
    ! A child: its arguments arrived, its parents are the remote group.
    call get_command_argument(1, argument)
    call check(argument == 'child', 'the spawned process got argument '//trim(argument))
    call check(nprocs == 2, 'the children form a world of 2')
    call MPI_Comm_remote_size(parent, remote)
    value = 100 + rank
    call MPI_Send(value, 1, MPI_INTEGER, 0, 5, parent)
    call MPI_Intercomm_merge(parent, .true., merged)
    call MPI_Comm_size(merged, merged_size)
    call MPI_Comm_rank(merged, merged_rank)
    call MPI_Allreduce(merged_rank, summed, 1, MPI_INTEGER, MPI_SUM, merged)
    call check(summed == merged_size * (merged_size - 1) / 2, 'merged sum in a child')
    call MPI_Comm_free(merged)
    call MPI_Comm_disconnect(parent)
    call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Finalize()
    if (total /= 0) stop 1
    stop
  end if

  call get_command_argument(0, self)
  call MPI_Comm_spawn(trim(self), ['child'], 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, children, errcodes)
  call check(all(errcodes == MPI_SUCCESS), 'spawn errcodes')
  call MPI_Comm_remote_size(children, remote)
  call check(remote == 2, 'two children')
  if (rank == 0) then
    call MPI_Recv(value, 1, MPI_INTEGER, 1, 5, children, MPI_STATUS_IGNORE)
    call check(value == 101, 'value from child 1')
    call MPI_Recv(value, 1, MPI_INTEGER, 0, 5, children, MPI_STATUS_IGNORE)
    call check(value == 100, 'value from child 0')
  end if
  call MPI_Intercomm_merge(children, .false., merged)
  call MPI_Comm_size(merged, merged_size)
  call MPI_Comm_rank(merged, merged_rank)
  call check(merged_size == nprocs + 2 .and. merged_rank == rank, 'merged ranks')
  call MPI_Allreduce(merged_rank, summed, 1, MPI_INTEGER, MPI_SUM, merged)
  call check(summed == merged_size * (merged_size - 1) / 2, 'merged sum in a parent')
  call MPI_Comm_free(merged)
  call MPI_Comm_disconnect(children)

  if (nprocs >= 2) then
    call MPI_Comm_split(MPI_COMM_WORLD, merge(0, 1, rank < nprocs / 2), rank, half)
    port = ' '
    if (rank == 0) call MPI_Open_port(MPI_INFO_NULL, port)
    call MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHARACTER, 0, MPI_COMM_WORLD)
    if (rank < nprocs / 2) then
      call MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, inter)
    else
      call MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, inter)
    end if
    call MPI_Comm_remote_size(inter, remote)
    call check(remote == merge(nprocs - nprocs / 2, nprocs / 2, rank < nprocs / 2), 'remote size of the connection')
    call MPI_Allreduce(1, summed, 1, MPI_INTEGER, MPI_SUM, inter)
    call check(summed == remote, 'intercommunicator sum')
    call MPI_Comm_disconnect(inter)
    if (rank == 0) call MPI_Close_port(port)
    call MPI_Comm_free(half)
  end if

  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'dynamic: ', total, ' failures'
  call MPI_Finalize()
  if (total /= 0) stop 1
contains

  include 'check.inc'
end program dynamic
