"""Timed clients for the cache and database-stall tests: single requests with their latency,
a listener reading a track at a player's pace that records how long it ever waited for data,
and the server side's send queue of a connection (what a stalled server could hide).

Everything here is bounded in time and count.
"""

import ctypes
import errno
import fcntl
import hashlib
import os
import select
import socket
import struct
import termios
import threading
import time

import httpraw
from support import SYS_PIDFD_GETFD, _libc

READ_STEP = 0.01            # a paced reader wakes up at least this often, seconds


class Timed:
    """One response (httpraw.Response, or None if the request failed) and how long it took."""

    def __init__(self, started, elapsed, response=None, error=None):
        self.started = started      # time.monotonic() when the request was sent
        self.elapsed = elapsed      # seconds until the whole response was read
        self.response = response
        self.error = error

    @property
    def status(self):
        return self.response.status if self.response is not None else None

    @property
    def sha256(self):
        return hashlib.sha256(self.response.body).hexdigest() if self.response else None

    def __repr__(self):
        what = self.status if self.response is not None else repr(self.error)
        return f"Timed({what} after {self.elapsed * 1000:.0f} ms)"


def timed_get(port, target, headers=None, timeout=10.0):
    """GET target on a fresh connection (Connection: close); a Timed, never an exception."""
    t0 = time.monotonic()
    try:
        resp, rest = httpraw.exchange(port, "GET", target, headers=headers, timeout=timeout)
        if rest:
            raise ValueError(f"{len(rest)} bytes after the response")
        return Timed(t0, time.monotonic() - t0, resp)
    except (OSError, ValueError, ConnectionError) as e:
        return Timed(t0, time.monotonic() - t0, error=e)


def concurrent_gets(port, targets, timeout=10.0):
    """GET every target at once, one thread each; the list of Timed, in targets' order."""
    results = [None] * len(targets)

    def one(i, target):
        results[i] = timed_get(port, target, timeout=timeout)

    threads = [threading.Thread(target=one, args=(i, t), daemon=True)
               for i, t in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    return results


_CONNECTION_FDS = {}  # (pid, server port, client port): the server's descriptor found for it


def server_send_queue(pid, server_port, client_port):
    """Bytes queued in the kernel on the server's side of the connection between
    127.0.0.1:server_port (process pid's) and client_port: written by the server and not yet
    acknowledged by the client. None if the connection is not found.

    The socket itself is asked (ioctl SIOCOUTQ: write_seq - snd_una, the figure
    /proc/net/tcp shows as tx_queue) through a copy of the server's descriptor (pidfd_getfd,
    closed at once so that it never keeps the connection open): a PacedListener samples this
    every 100 ms, and making /proc/net/tcp costs the kernel ~10 ms of CPU per thousand sockets
    on the host. Where the copy is not permitted, /proc/net/tcp is read."""
    key = (pid, server_port, client_port)
    try:
        fd = _CONNECTION_FDS.get(key)
        queued = None if fd is None else _socket_queue(pid, fd, server_port, client_port)
        if queued is None:
            for fd in _socket_fds(pid):
                queued = _socket_queue(pid, fd, server_port, client_port)
                if queued is not None:
                    _CONNECTION_FDS[key] = fd
                    break
        return queued
    except PermissionError:
        return _proc_send_queue(pid, server_port, client_port)


def _socket_fds(pid):
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    fds = []
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:["):
                fds.append(int(name))
        except OSError:
            pass
    return fds


def _socket_queue(pid, fd, server_port, client_port):
    """SIOCOUTQ of process pid's descriptor fd if it is that connection's socket, else None."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        copy = _libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if copy < 0:
            err = ctypes.get_errno()
            if err == errno.EPERM:
                raise PermissionError(err, f"pidfd_getfd({pid}, {fd})")
            return None
    finally:
        os.close(pidfd)
    sock = socket.socket(fileno=copy)
    try:
        if sock.type != socket.SOCK_STREAM or sock.family != socket.AF_INET:
            return None
        if sock.getsockname()[1] != server_port or sock.getpeername()[1] != client_port:
            return None
        out = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, struct.pack("i", 0))
        return struct.unpack("i", out)[0]
    except OSError:
        return None  # not connected, or gone
    finally:
        sock.close()


def _proc_send_queue(pid, server_port, client_port):
    try:
        lines = open(f"/proc/{pid}/net/tcp").read().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        f = line.split()
        local_port = int(f[1].rsplit(":", 1)[1], 16)
        remote_port = int(f[2].rsplit(":", 1)[1], 16)
        if local_port == server_port and remote_port == client_port:
            return int(f[4].split(":")[0], 16)
    return None


class PacedListener:
    """A player: GETs a track, then reads the body at `rate` bytes/s (a token bucket refilled
    every `period` seconds: e.g. 16 KiB every 100 ms), through a small SO_RCVBUF and a small
    MSS so that the server is paced by the reading rather than filling megabytes of socket
    buffers ahead of it.

    The figure it keeps is how long it ever had to wait for data it was ready to take
    (`starved`): from the first read that found the socket empty while tokens were available
    until data came. Time the reader itself spent descheduled (a noisy machine) does not count:
    data that arrived meanwhile is simply there on the next read.

    Every byte received is compared with `expected` (the file's bytes) at its offset.
    While it runs it samples the server's send queue for the connection (server_pid given).
    """

    def __init__(self, port, target, expected, rate=16384 * 10, period=0.1, rcvbuf=4096,
                 mss=1460, server_pid=None):
        self.port = port
        self.target = target
        self.expected = expected
        self.rate = rate
        self.period = period
        self.rcvbuf = rcvbuf
        self.mss = mss
        self.server_pid = server_pid
        self.sock = None
        self.head = b""
        self.received = 0           # body bytes received so far
        self.mismatch = None        # offset of the first byte that differs from expected
        self.starved = []           # (when, seconds) of every wait for data
        self.send_queue = []        # samples of the server's send queue, bytes
        self.error = None
        self.eof = False
        self._stop = threading.Event()
        self._thread = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, timeout=10.0):
        """Connect, send the request, read the response head (200 required); then read the
        body at the pace in a thread until stop() or the end of the body."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, self.mss)
        s.settimeout(timeout)
        s.connect(("127.0.0.1", self.port))
        self.sock = s
        s.sendall(httpraw.request_bytes("GET", self.target, headers={"Connection": "close"}))
        reader = httpraw.Reader(s)
        self.head = reader.read_until(b"\r\n\r\n")
        if not self.head.startswith(b"HTTP/1.1 200 "):
            raise AssertionError(f"paced listener: {self.head[:200]!r}")
        self._consume(reader.buf)
        s.setblocking(False)
        self._thread = threading.Thread(target=self._run, name="paced-listener", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout=5.0):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.sock is not None:
            self.sock.close()

    @property
    def client_port(self):
        return self.sock.getsockname()[1]

    # -- results --------------------------------------------------------------------------
    def max_starved(self, since=None):
        """The longest wait for data (after `since`, a time.monotonic() value), seconds."""
        waits = [w for t, w in self.starved if since is None or t >= since]
        return max(waits, default=0.0)

    # -- internals ------------------------------------------------------------------------
    def _consume(self, data):
        if not data:
            return
        start = self.received
        if self.mismatch is None and data != self.expected[start:start + len(data)]:
            for i, b in enumerate(data):
                if start + i >= len(self.expected) or self.expected[start + i] != b:
                    self.mismatch = start + i
                    break
        self.received += len(data)

    def _sample_queue(self):
        if self.server_pid is not None:
            q = server_send_queue(self.server_pid, self.port, self.client_port)
            if q is not None:
                self.send_queue.append(q)

    def _run(self):
        tokens = 0.0
        refilled = time.monotonic()
        next_sample = refilled
        starving_since = None
        try:
            while not self._stop.is_set() and self.received < len(self.expected):
                now = time.monotonic()
                # Refilled continuously (smooth reading: bursts make the sender's congestion
                # control grow its buffers); at most one period's worth banked.
                tokens = min(tokens + self.rate * (now - refilled), self.rate * self.period)
                refilled = now
                if now >= next_sample:
                    self._sample_queue()
                    next_sample = now + self.period
                if tokens < self.rate * READ_STEP:
                    starving_since = None  # not ready for data: not waiting for it
                    time.sleep(READ_STEP)
                    continue
                try:
                    data = self.sock.recv(int(tokens))
                except BlockingIOError:
                    data = None
                if data is None:
                    if starving_since is None:
                        starving_since = now
                    select.select([self.sock], [], [], READ_STEP)
                    continue
                if not data:
                    self.eof = True
                    break
                t = time.monotonic()
                if starving_since is not None:
                    self.starved.append((t, t - starving_since))
                    starving_since = None
                tokens -= len(data)
                self._consume(data)
        except OSError as e:
            self.error = e
