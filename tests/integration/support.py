"""Small helpers shared by the integration harness: paths, timeouts, ports, bounded waits."""

import contextlib
import ctypes
import errno
import fcntl
import os
import pathlib
import secrets
import socket
import struct
import time

REPO = pathlib.Path(__file__).resolve().parents[2]

# MUSICD_SANITIZED=1: the binary under test is an ASan/UBSan build, several times slower.
SANITIZED = os.environ.get("MUSICD_SANITIZED", "") not in ("", "0")
TIMEOUT_SCALE = 4.0 if SANITIZED else 1.0

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


def scaled(seconds):
    """A timeout, stretched when running against a sanitized build."""
    return seconds * TIMEOUT_SCALE


# -- ports ------------------------------------------------------------------------------------
# Every port the suite gives a listener of its own (musicd and its metrics listener, nginx,
# Varnish and its admin port, FerretDB/mongod, Prometheus, chromedriver, the TCP proxies) comes
# from free_port(), which reserves it machine-wide until the test (or the fixture of a wider
# scope) that took it is over:
#   - the ports come from a range below the kernel's ephemeral range
#     (/proc/sys/net/ipv4/ip_local_port_range), so no bind(0), no outgoing connection and no
#     port a server picks for itself (Chromium's remote debugging port, a page server) is ever
#     handed one of them;
#   - a reservation is a POSIX record lock on byte <port> of one lock file under /tmp, shared by
#     every process and every checkout on the machine: xdist workers, and the suites other
#     engineers run at the same time. A lock is held by the process that took it, so the kernel
#     reclaims it the moment that process is gone, however it ends;
#   - the port must also be free when it is reserved (bind(2) succeeds): something that does not
#     take part (a demo on musicd's default port) is never chosen.
# Reservations matter because musicd binds with SO_REUSEPORT: two musicd processes of one user
# on one port both succeed and share its connections, silently. A process asks for a port well
# before its server binds it, and some servers stop and start again on their port (a restarted
# database, a TCP proxy, a musicd replaced by another): the reservation covers all of that.
# conftest.py scopes them: what a test (its function fixtures included) took is given back after
# its teardown; what a module- or session-scoped fixture took, after that fixture's teardown.
# MUSICD_TEST_PORTS=LOW-HIGH chooses another range, MUSICD_TEST_PORT_LOCK another lock file.

PORT_LOCK_FILE = os.environ.get("MUSICD_TEST_PORT_LOCK", "/tmp/musicd-test-ports.lock")
DEFAULT_PORT_LOW = 20000
# Ports with an owner of their own inside the default range: musicd's default --listen and
# --metrics-listen (a demo may be running), and mongod's default.
WELL_KNOWN_PORTS = frozenset({23001, 23002, 27017, 27018, 27019})


def ephemeral_port_range():
    """(low, high) of the ports the kernel picks for bind(0) and outgoing connections."""
    try:
        low, high = open("/proc/sys/net/ipv4/ip_local_port_range").read().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def reserved_port_range():
    """(low, high), inclusive, of the ports free_port() hands out."""
    spec = os.environ.get("MUSICD_TEST_PORTS")
    if spec:
        low, _, high = spec.partition("-")
        low, high = int(low), int(high)
    else:
        low, high = DEFAULT_PORT_LOW, ephemeral_port_range()[0] - 1
    if not 1024 <= low <= high <= 65535 or high - low < 1000:
        raise ValueError(f"test port range {low}-{high}: want at least 1000 unprivileged ports "
                         "(MUSICD_TEST_PORTS=LOW-HIGH)")
    return low, high



class PortReservations:
    """This process's reservations (see above). Record locks belong to a process, and a second
    lock on a byte the same process holds succeeds, so the ports held here are also kept in a
    set: one process never hands out a port twice while it holds it."""

    def __init__(self, lock_path=PORT_LOCK_FILE, port_range=None):
        self.lock_path = lock_path
        self.low, self.high = port_range or reserved_port_range()
        self.fd = None
        self.held = set()
        # Each process walks the range from its own random point and goes on from where it
        # stopped: a port is given out again (by anyone) as late as possible, so what a test
        # left behind on it (a TIME_WAIT, a server still exiting) is long gone.
        self.next = self.low + secrets.randbelow(self.high - self.low + 1)
        self.pid = None

    def _lock_fd(self):
        if self.fd is None or self.pid != os.getpid():
            # A forked child has no locks of its parent's: it starts afresh.
            self.fd, self.pid, self.held = open_shared_lock_file(self.lock_path), os.getpid(), set()
        return self.fd

    def _try_lock(self, port):
        try:
            fcntl.lockf(self._lock_fd(), fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port, os.SEEK_SET)
            return True
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EAGAIN):
                return False
            raise

    def _unlock(self, port):
        fcntl.lockf(self._lock_fd(), fcntl.LOCK_UN, 1, port, os.SEEK_SET)

    def reserve(self):
        """A port that nothing listens on or is bound to, reserved for this process."""
        size = self.high - self.low + 1
        self._lock_fd()
        for _ in range(size):
            port = self.next
            self.next = self.low + (port + 1 - self.low) % size
            if port in self.held or port in WELL_KNOWN_PORTS or not self._try_lock(port):
                continue
            if port_is_free(port):
                self.held.add(port)
                return port
            self._unlock(port)
        raise RuntimeError(f"no free port left in {self.low}-{self.high}: every one is in use "
                           f"or reserved (lock file {self.lock_path})")

    def release(self, ports):
        """Give reservations back (the servers on them are stopped)."""
        if self.pid != os.getpid():
            return
        for port in ports:
            if port in self.held:
                self.held.discard(port)
                self._unlock(port)

    def holder(self, port):
        """The pid of the process holding port's reservation, or None (for messages)."""
        probe = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, port, 1, 0)
        kind, _, _, _, pid = struct.unpack(FLOCK, fcntl.fcntl(self._lock_fd(), fcntl.F_GETLK,
                                                              probe))
        return None if kind == fcntl.F_UNLCK else pid


FLOCK = "hhqqi4x"  # struct flock on Linux x86-64 and arm64: type, whence, start, len, pid


def open_shared_lock_file(path):
    """The lock file opened for writing (record locks need it), made readable and writable by
    every user on first use. An existing file is opened without O_CREAT: in a sticky /tmp,
    fs.protected_regular refuses O_CREAT on another user's file."""
    while True:
        try:
            return os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            pass
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue  # made by someone else meanwhile
        os.fchmod(fd, 0o666)  # whatever the umask
        return fd


def port_is_free(port):
    """Whether a server could bind 127.0.0.1:port now, as servers do (SO_REUSEADDR: a TIME_WAIT
    left on the port does not count, a socket bound or listening there does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


PORTS = PortReservations()
_port_takers = [[]]  # a stack: free_port() records each port in the innermost list


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on, reserved (see above) until the test or
    fixture taking it is over, and for a process outside pytest until it exits."""
    port = PORTS.reserve()
    _port_takers[-1].append(port)
    return port


@contextlib.contextmanager
def ports_taken():
    """Collects the ports free_port() hands out inside the block into the list it yields (not
    into any enclosing one): conftest.py releases them when what took them is over."""
    taken = []
    _port_takers.append(taken)
    try:
        yield taken
    finally:
        # by identity: list.remove() would take the first equal list, and empty lists are equal
        del _port_takers[next(i for i, t in enumerate(_port_takers) if t is taken)]


def release_ports(ports):
    PORTS.release(ports)
    del ports[:]


def wait_until(predicate, timeout, interval=0.05, message="condition"):
    """Poll predicate() until it returns a truthy value (returned) or timeout seconds pass
    (AssertionError naming `message`, with the last value seen)."""
    deadline = time.monotonic() + timeout
    value = None
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f}s waiting for {message} "
                                 f"(last value: {value!r})")
        time.sleep(interval)


def port_accepts(port, host="127.0.0.1"):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def sanitizer_errors(text):
    """The sanitizer error markers found in a process's stderr."""
    return [m for m in SANITIZER_MARKERS if m in text]


def read_text(path):
    try:
        return pathlib.Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""


TCP_STATES = {"01": "ESTABLISHED", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "0A": "LISTEN", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "09": "LAST_ACK",
              "0B": "CLOSING", "02": "SYN_SENT", "03": "SYN_RECV"}


def tcp_table(pid, inodes=None):
    """{socket inode: (local (ip, port), remote (ip, port), state)} of the TCP sockets in
    process pid's network namespace, or only of those whose inode is in `inodes`."""

    def addr(text):
        ip, port = text.split(":")
        if len(ip) == 8:
            ip = ".".join(str(int(ip[i:i + 2], 16)) for i in (6, 4, 2, 0))
        return ip, int(port, 16)

    table = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = open(f"/proc/{pid}/net/{name}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if inodes is None or f[9] in inodes:
                table[f[9]] = (addr(f[1]), addr(f[2]), TCP_STATES.get(f[3], f[3]))
    return table


def socket_inodes(pid):
    """The inodes of the sockets process pid has open."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


SYS_PIDFD_GETFD = 438  # the same number on every Linux architecture (5.6 and later)
_libc = ctypes.CDLL(None, use_errno=True)


def listening_sockets(pid, port):
    """The fds of process pid that are TCP sockets listening on port, asked of each socket itself.

    /proc/net/tcp is read a page at a time and can skip entries when sockets elsewhere on the
    host come and go between reads, so it cannot count hundreds of listeners reliably. Here each
    socket fd is duplicated into this process (pidfd_getfd(2); root may) and asked with
    getsockopt(SO_ACCEPTCONN) and getsockname(2)."""
    found = []
    pidfd = os.pidfd_open(pid)
    try:
        for fd in sorted(int(name) for name in os.listdir(f"/proc/{pid}/fd")):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:["):
                    continue
            except OSError:
                continue
            copy = _libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
            if copy < 0:
                if ctypes.get_errno() == errno.EBADF:
                    continue  # closed since the listing: not a listener of this moment
                raise OSError(ctypes.get_errno(), f"pidfd_getfd({pid}, {fd})")
            sock = socket.socket(fileno=copy)
            try:
                if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET,
                                                                          socket.AF_INET6):
                    continue
                if (sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                        and sock.getsockname()[1] == port):
                    found.append(fd)
            finally:
                sock.close()
    finally:
        os.close(pidfd)
    return found


def listens_on(pid, port):
    """True when process pid itself holds a socket listening on TCP port. Each of its sockets
    is asked (listening_sockets), which costs little; where that is not permitted, the
    network namespace's table is read, whose making costs the kernel ~10 ms of CPU per
    thousand sockets on the host (start-up waits poll this)."""
    try:
        return bool(listening_sockets(pid, port))
    except PermissionError:
        pass
    except (ProcessLookupError, FileNotFoundError):
        return False
    inodes = socket_inodes(pid)
    return bool(inodes) and any(local[1] == port and state == "LISTEN"
                                for local, _, state in tcp_table(pid, inodes).values())
