"""Small helpers shared by the integration harness: paths, timeouts, ports, bounded waits."""

import collections
import ctypes
import errno
import os
import pathlib
import socket
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


_handed_out = collections.deque(maxlen=256)  # the ports free_port gave most recently


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now, and not one of the last 256 it
    gave: the kernel can hand the same free port to two binds in a row, and a test that starts
    musicd (its port and its metrics port), nginx and Varnish asks for several before any of
    them listens. (Two SO_REUSEPORT listeners of one user on one port share its connections.)"""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            break
    _handed_out.append(port)
    return port


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


def tcp_table(pid):
    """{socket inode: (local (ip, port), remote (ip, port), state)} of the process's TCP sockets."""
    states = {"01": "ESTABLISHED", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "0A": "LISTEN", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "09": "LAST_ACK",
              "0B": "CLOSING", "02": "SYN_SENT", "03": "SYN_RECV"}

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
            table[f[9]] = (addr(f[1]), addr(f[2]), states.get(f[3], f[3]))
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
    """True when process pid itself holds a socket listening on TCP port."""
    table = tcp_table(pid)
    return any(table[i][0][1] == port and table[i][2] == "LISTEN"
               for i in socket_inodes(pid) if i in table)
