//! Network facts and socket calls the TCP rails need beyond `std::net`: interface enumeration
//! (getifaddrs, MTU), sockets bound to a chosen local address before connecting, a deep listen
//! backlog, vectored sends that never raise SIGPIPE, the kernel send queue length (SIOCOUTQ) and
//! an epoll set for polling many connections (input, and output where asked) with one system call.

use std::ffi::{CStr, CString};
use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// One IPv4 address of a local interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub address: Ipv4Addr,
    /// Length of the network prefix (24 for a /24).
    pub prefix_len: u8,
    pub up: bool,
    pub loopback: bool,
}

/// Every IPv4 address of every local interface, in the kernel's order.
pub fn interfaces() -> io::Result<Vec<Interface>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs stores a list it allocated in `head`; it is freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = Vec::new();
    let mut cursor = head;
    while !cursor.is_null() {
        // SAFETY: `cursor` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let entry = unsafe { &*cursor };
        cursor = entry.ifa_next;
        if entry.ifa_addr.is_null() || entry.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr whose family field is valid.
        if i32::from(unsafe { (*entry.ifa_addr).sa_family }) != libc::AF_INET {
            continue;
        }
        // SAFETY: an AF_INET address is a sockaddr_in; ifa_name is a NUL-terminated string.
        let (address, name) = unsafe { (ipv4_of(entry.ifa_addr.cast()), CStr::from_ptr(entry.ifa_name)) };
        let prefix_len = if entry.ifa_netmask.is_null() {
            32
        } else {
            // SAFETY: the netmask of an AF_INET entry is a sockaddr_in too.
            u32::from(unsafe { ipv4_of(entry.ifa_netmask.cast()) }).count_ones() as u8
        };
        let flags = entry.ifa_flags as libc::c_int;
        found.push(Interface { name: name.to_string_lossy().into_owned(), address, prefix_len, up: flags & libc::IFF_UP != 0, loopback: flags & libc::IFF_LOOPBACK != 0 });
    }
    // SAFETY: `head` came from getifaddrs and no reference into the list outlives this call.
    unsafe { libc::freeifaddrs(head) };
    Ok(found)
}

/// # Safety
/// `address` must point to a valid `sockaddr_in`.
unsafe fn ipv4_of(address: *const libc::sockaddr_in) -> Ipv4Addr {
    // SAFETY: guaranteed by the caller.
    Ipv4Addr::from(u32::from_be(unsafe { (*address).sin_addr.s_addr }))
}

/// The MTU of interface `name`.
pub fn mtu(name: &str) -> io::Result<u32> {
    let c_name = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name contains NUL"))?;
    if c_name.as_bytes_with_nul().len() > libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name {name} is too long")));
    }
    let probe = new_socket(libc::SOCK_DGRAM)?;
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, &byte) in request.ifr_name.iter_mut().zip(c_name.as_bytes_with_nul()) {
        *slot = byte as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the name from and writes the MTU into `request`, which is live.
    if unsafe { libc::ioctl(probe.as_raw_fd(), libc::SIOCGIFMTU, &mut request) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: after SIOCGIFMTU succeeded the union holds the MTU.
    Ok(unsafe { request.ifr_ifru.ifru_mtu }.max(0) as u32)
}

fn new_socket(kind: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket takes plain integers; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(libc::AF_INET, kind | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr_of(address: SocketAddrV4) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain data; all-zero is a valid value.
    let mut raw: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    raw.sin_family = libc::AF_INET as libc::sa_family_t;
    raw.sin_port = address.port().to_be();
    raw.sin_addr.s_addr = u32::from(*address.ip()).to_be();
    raw
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn set_int_option(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the option value is a live c_int of the size passed.
    check(unsafe { libc::setsockopt(fd, level, name, (&value as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) })
}

/// Sets the kernel send and receive buffer sizes of a socket (the kernel doubles and clamps them).
pub fn set_buffer_sizes(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let value = bytes.min(i32::MAX as usize) as libc::c_int;
    set_int_option(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, value)?;
    set_int_option(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, value)
}

/// Sets the socket's TCP congestion control to `name` (as the kernel names them: cubic, bbr, ...).
pub fn set_congestion_control(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: the option value is `name`'s bytes, live for the call, of the length passed.
    check(unsafe { libc::setsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_ptr().cast(), name.len() as libc::socklen_t) })
}

/// The socket's TCP congestion control.
pub fn congestion_control(fd: BorrowedFd<'_>) -> io::Result<String> {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `name` and stores the length written.
    check(unsafe { libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_mut_ptr().cast(), &mut len) })?;
    let written = &name[..(len as usize).min(name.len())];
    let end = written.iter().position(|&byte| byte == 0).unwrap_or(written.len());
    Ok(String::from_utf8_lossy(&written[..end]).into_owned())
}

/// Makes the kernel abort the connection (ETIMEDOUT) when sent bytes stay unacknowledged for
/// `timeout`: a link that went down silently (no reset) is then noticed in bounded time.
pub fn set_user_timeout(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<()> {
    let millis = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    set_int_option(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, millis)
}

/// Makes the kernel probe an idle connection after `idle` without traffic, and again every
/// `idle`: a link lost while nothing moves then fails the connection too (ETIMEDOUT, once the
/// probes stay unanswered for the user timeout). `idle` is rounded up to whole seconds.
pub fn set_keepalive(fd: BorrowedFd<'_>, idle: Duration) -> io::Result<()> {
    let seconds = idle.as_secs().saturating_add(u64::from(idle.subsec_nanos() > 0)).clamp(1, i32::MAX as u64) as libc::c_int;
    set_int_option(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    set_int_option(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, seconds)?;
    set_int_option(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, seconds)
}

fn bind(fd: RawFd, address: SocketAddrV4) -> io::Result<()> {
    let raw = sockaddr_of(address);
    // SAFETY: `raw` is a live sockaddr_in of the length passed.
    check(unsafe { libc::bind(fd, (&raw as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) })
}

/// A TCP listener on `address` with the deepest backlog the kernel allows (every lower rank of a
/// job may connect before this rank accepts). `buffer_bytes` sets the socket buffers, which
/// accepted connections inherit.
pub fn listen(address: SocketAddrV4, buffer_bytes: Option<usize>) -> io::Result<TcpListener> {
    let socket = new_socket(libc::SOCK_STREAM)?;
    if let Some(bytes) = buffer_bytes {
        set_buffer_sizes(socket.as_fd(), bytes)?;
    }
    bind(socket.as_raw_fd(), address)?;
    // SAFETY: listen takes plain integers on a socket we own.
    check(unsafe { libc::listen(socket.as_raw_fd(), libc::SOMAXCONN) })?;
    Ok(TcpListener::from(socket))
}

/// Connects to `remote` from a socket bound to `local` (so the traffic leaves on the interface
/// that owns `local`), giving up after `timeout`. The stream returned is in blocking mode.
pub fn connect_from(local: Ipv4Addr, remote: SocketAddrV4, buffer_bytes: Option<usize>, timeout: Duration) -> io::Result<TcpStream> {
    let socket = new_socket(libc::SOCK_STREAM | libc::SOCK_NONBLOCK)?;
    if let Some(bytes) = buffer_bytes {
        set_buffer_sizes(socket.as_fd(), bytes)?;
    }
    bind(socket.as_raw_fd(), SocketAddrV4::new(local, 0))?;
    let raw = sockaddr_of(remote);
    // SAFETY: `raw` is a live sockaddr_in of the length passed.
    let rc = unsafe { libc::connect(socket.as_raw_fd(), (&raw as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) };
    if rc < 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(error);
        }
        wait_writable(socket.as_fd(), timeout)?;
        let mut pending_error: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: SO_ERROR writes one c_int into the live `pending_error`, whose size is in `len`.
        check(unsafe { libc::getsockopt(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, (&mut pending_error as *mut libc::c_int).cast(), &mut len) })?;
        if pending_error != 0 {
            return Err(io::Error::from_raw_os_error(pending_error));
        }
    }
    let stream = TcpStream::from(socket);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

fn wait_writable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("connection not established within {timeout:?}")));
        }
        if poll_writable(fd, left)? {
            return Ok(());
        }
    }
}

/// Waits at most `timeout` (rounded up to a millisecond) for room to write in `fd`; true when
/// the descriptor is writable or has an error or hang-up the next write will report.
pub fn poll_writable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut entry = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
    let millis = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `entry` is one live pollfd.
    let rc = unsafe { libc::poll(&mut entry, 1, millis) };
    if rc < 0 {
        let error = io::Error::last_os_error();
        return if error.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(error) };
    }
    Ok(rc > 0)
}

/// Sends the concatenation of `parts` without blocking and without SIGPIPE (a closed peer is
/// an `EPIPE` error). Returns the bytes the kernel took; `WouldBlock` when it took none.
pub fn send_vectored(fd: BorrowedFd<'_>, parts: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: msghdr is plain data; all-zero is a valid value (no name, no control data).
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is ABI-compatible with iovec on Unix; sendmsg only reads the array.
    message.msg_iov = parts.as_ptr() as *mut libc::iovec;
    message.msg_iovlen = parts.len().min(libc::UIO_MAXIOV as usize) as _;
    // SAFETY: `message` points to `parts`, live and unmodified for the duration of the call.
    let sent = unsafe { libc::sendmsg(fd.as_raw_fd(), &message, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}

/// Bytes in the kernel send queue of a TCP socket: not yet sent or not yet acknowledged.
pub fn send_queue_len(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one c_int into the live `queued`.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut queued) })?;
    Ok(queued.max(0) as u64)
}

/// What the kernel's TCP stack measures of a connection's path (`TCP_INFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathTiming {
    /// Smoothed round-trip time.
    pub round_trip: Duration,
    /// The smallest round trip seen lately (the kernel's windowed minimum): the path without
    /// queues.
    pub least_round_trip: Duration,
    /// Time since the connection last sent data: how old the round-trip samples may be.
    pub since_data_sent: Duration,
}

/// Bytes of `struct tcp_info` up to and including `tcpi_min_rtt` (Linux 4.6 and later).
const TCP_INFO_THROUGH_MIN_RTT: usize = std::mem::offset_of!(libc::tcp_info, tcpi_min_rtt) + std::mem::size_of::<u32>();

/// The round-trip times the kernel keeps for a TCP socket; `None` from a kernel too old to
/// report the windowed minimum.
pub fn path_timing(fd: BorrowedFd<'_>) -> io::Result<Option<PathTiming>> {
    // SAFETY: all-zero bytes are a valid value of this plain-integer struct.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut length = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `length` bytes into the live `info` and stores how many.
    check(unsafe { libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, (&mut info as *mut libc::tcp_info).cast(), &mut length) })?;
    if (length as usize) < TCP_INFO_THROUGH_MIN_RTT {
        return Ok(None);
    }
    Ok(Some(PathTiming {
        round_trip: Duration::from_micros(info.tcpi_rtt.into()),
        least_round_trip: Duration::from_micros(info.tcpi_min_rtt.into()),
        since_data_sent: Duration::from_millis(info.tcpi_last_data_sent.into()),
    }))
}

/// An epoll set: which of many descriptors are readable (or writable, where asked), in one
/// system call.
pub struct Poller {
    epoll: OwnedFd,
    events: Vec<libc::epoll_event>,
    ready: Vec<Ready>,
}

/// One descriptor the last wait found ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    pub token: u64,
    /// The epoll event bits reported.
    pub events: u32,
}

impl Ready {
    /// Input, end of file or an error: the next read has something to report.
    pub fn readable(&self) -> bool {
        self.events & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0
    }

    /// Room in the send buffer (or an error the next write will report).
    pub fn writable(&self) -> bool {
        self.events & (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0
    }
}

const INPUT_EVENTS: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;

impl Poller {
    /// A set that reports up to `batch` ready descriptors per wait.
    pub fn new(batch: usize) -> io::Result<Poller> {
        // SAFETY: epoll_create1 takes a flag; a non-negative result is a new descriptor we own.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        let batch = batch.max(1);
        Ok(Poller { epoll, events: vec![libc::epoll_event { events: 0, u64: 0 }; batch], ready: Vec::with_capacity(batch) })
    }

    /// Watches `fd` for input, end of file and errors (level-triggered), reported as `token`.
    pub fn add(&mut self, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_ADD, fd, token, INPUT_EVENTS)
    }

    /// Also reports `fd` (added as `token`) when its send buffer has room (`true`), or no longer
    /// does (`false`). The kernel reports a TCP socket writable once about a third of its send
    /// buffer is free, so a writer woken by it writes in large pieces.
    pub fn watch_output(&mut self, fd: BorrowedFd<'_>, token: u64, watch: bool) -> io::Result<()> {
        let events = if watch { INPUT_EVENTS | libc::EPOLLOUT as u32 } else { INPUT_EVENTS };
        self.control(libc::EPOLL_CTL_MOD, fd, token, events)
    }

    fn control(&mut self, operation: libc::c_int, fd: BorrowedFd<'_>, token: u64, events: u32) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: `event` is live; the kernel copies it. Closing `fd` later removes it from the set.
        check(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), operation, fd.as_raw_fd(), &mut event) })
    }

    /// The descriptors ready after waiting at most `timeout` (zero: just look).
    pub fn wait(&mut self, timeout: Duration) -> io::Result<&[Ready]> {
        let millis = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `events` is a live array of `events.len()` entries the kernel may fill.
        let count = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), self.events.as_mut_ptr(), self.events.len() as libc::c_int, millis) };
        self.ready.clear();
        if count < 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::Interrupted { Ok(&self.ready) } else { Err(error) };
        }
        self.ready.extend(self.events[..count as usize].iter().map(|event| Ready { token: event.u64, events: event.events }));
        Ok(&self.ready)
    }

    /// What the last [`Poller::wait`] found.
    pub fn last(&self) -> &[Ready] {
        &self.ready
    }

    /// Sleeps until some descriptor of the set is ready or `timeout` passes (to the
    /// nanosecond, where `wait` counts whole milliseconds); returns whether one is. Nothing is
    /// taken from the set: the next `wait` reports what woke it (the set is level-triggered).
    pub fn sleep(&self, timeout: Duration) -> io::Result<bool> {
        let mut entry = libc::pollfd { fd: self.epoll.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let limit = libc::timespec { tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
        // SAFETY: `entry` and `limit` are live for the call; a null signal mask keeps the
        // caller's; the epoll descriptor is owned by `self`.
        let count = unsafe { libc::ppoll(&mut entry, 1, &limit, std::ptr::null()) };
        if count < 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(error) };
        }
        Ok(count > 0)
    }
}

/// An epoll set is itself a descriptor, readable while some member is ready: several sets nest
/// into one (a rank sleeping on all its rails at once).
impl AsFd for Poller {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn loopback_is_listed_with_its_mtu() {
        let all = interfaces().unwrap();
        let lo = all.iter().find(|i| i.loopback).expect("a loopback interface");
        assert_eq!(lo.address, Ipv4Addr::LOCALHOST);
        assert_eq!(lo.prefix_len, 8);
        assert!(mtu(&lo.name).unwrap() >= 1500);
        assert!(mtu("no-such-if0").is_err());
    }

    #[test]
    fn bound_connection_sends_vectored_and_reports_its_queue() {
        let listener = listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), None).unwrap();
        let std::net::SocketAddr::V4(target) = listener.local_addr().unwrap() else { panic!("IPv4 listener") };
        let local = Ipv4Addr::new(127, 0, 0, 2);
        let stream = connect_from(local, target, Some(8192), Duration::from_secs(5)).unwrap();
        let (mut accepted, from) = listener.accept().unwrap();
        assert_eq!(from.ip(), local, "the connection leaves from the bound address");
        let sent = send_vectored(stream.as_fd(), &[IoSlice::new(b"ab"), IoSlice::new(b""), IoSlice::new(b"cde")]).unwrap();
        assert_eq!(sent, 5);
        let mut got = [0u8; 5];
        accepted.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"abcde");
        assert!(send_queue_len(stream.as_fd()).unwrap() < 1 << 20);

        let mut poller = Poller::new(4).unwrap();
        poller.add(accepted.as_fd(), 7).unwrap();
        assert_eq!(poller.wait(Duration::ZERO).unwrap(), &[] as &[Ready]);
        (&stream).write_all(b"x").unwrap();
        let ready = poller.wait(Duration::from_secs(5)).unwrap();
        assert_eq!(ready.iter().map(|ready| ready.token).collect::<Vec<_>>(), [7]);
        assert!(ready[0].readable() && !ready[0].writable(), "output is not watched yet");
        poller.watch_output(accepted.as_fd(), 7, true).unwrap();
        let ready = poller.wait(Duration::ZERO).unwrap();
        assert!(ready.len() == 1 && ready[0].readable() && ready[0].writable(), "an empty send buffer has room");
        poller.watch_output(accepted.as_fd(), 7, false).unwrap();
        assert!(!poller.wait(Duration::ZERO).unwrap()[0].writable());
        // A sleep takes nothing: the byte still waiting is reported by the next wait, and a set
        // nested in another makes that one ready too.
        assert!(poller.sleep(Duration::from_secs(5)).unwrap());
        let mut outer = Poller::new(1).unwrap();
        outer.add(poller.as_fd(), 1).unwrap();
        assert!(outer.sleep(Duration::from_secs(5)).unwrap(), "the nested set is ready");
        assert_eq!(poller.wait(Duration::ZERO).unwrap().len(), 1);
        let mut byte = [0u8; 1];
        accepted.read_exact(&mut byte).unwrap();
        let started = std::time::Instant::now();
        assert!(!poller.sleep(Duration::from_micros(300)).unwrap(), "nothing is ready");
        assert!(!outer.sleep(Duration::from_micros(300)).unwrap());
        let slept = started.elapsed();
        assert!(slept >= Duration::from_micros(600) && slept < Duration::from_millis(500), "sub-millisecond sleeps: {slept:?}");
        drop(accepted);
        let mut refused = None;
        for _ in 0..100 {
            match send_vectored(stream.as_fd(), &[IoSlice::new(&[0u8; 1024])]) {
                Ok(_) => std::thread::sleep(Duration::from_millis(5)),
                Err(error) => {
                    refused = Some(error);
                    break;
                }
            }
        }
        let error = refused.expect("sending to a closed peer fails");
        assert!(matches!(error.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)), "{error}");
    }

    #[test]
    fn a_connection_that_carried_data_reports_its_round_trips() {
        let listener = listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), None).unwrap();
        let std::net::SocketAddr::V4(target) = listener.local_addr().unwrap() else { panic!("IPv4 listener") };
        let stream = connect_from(Ipv4Addr::LOCALHOST, target, None, Duration::from_secs(5)).unwrap();
        let (mut accepted, _) = listener.accept().unwrap();
        for _ in 0..20 {
            (&stream).write_all(&[1u8; 4096]).unwrap();
            let mut got = [0u8; 4096];
            accepted.read_exact(&mut got).unwrap();
            accepted.write_all(b"k").unwrap();
            let mut ack = [0u8; 1];
            (&stream).read_exact(&mut ack).unwrap();
        }
        let timing = path_timing(stream.as_fd()).unwrap().expect("a kernel with tcpi_min_rtt");
        // The kernel's "no sample yet" would read u32::MAX microseconds.
        assert!(timing.least_round_trip > Duration::ZERO && timing.least_round_trip <= timing.round_trip, "{timing:?}");
        assert!(timing.round_trip < Duration::from_secs(1), "{timing:?}");
        assert!(timing.since_data_sent < Duration::from_secs(5), "{timing:?}");
    }

    #[test]
    fn connecting_to_a_closed_port_fails_quickly() {
        // The port stays bound without listening: a free port could be picked as the
        // connection's own source port, and a TCP connection to itself succeeds.
        let socket = new_socket(libc::SOCK_STREAM).unwrap();
        bind(socket.as_raw_fd(), SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        // Not listening; the type only reads the address back.
        let bound = TcpListener::from(socket);
        let std::net::SocketAddr::V4(target) = bound.local_addr().unwrap() else { panic!("IPv4 socket") };
        let error = connect_from(Ipv4Addr::LOCALHOST, target, None, Duration::from_secs(5)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);
    }
}
