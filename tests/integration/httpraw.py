"""HTTP/1.1 over a raw socket, for what requests and http.client hide: pipelining, exact
framing (a HEAD must carry no body bytes), disconnecting at a chosen moment."""

import socket
import struct
import time

from support import scaled

MAX_HEADER_BYTES = 64 * 1024


class Response:
    def __init__(self, status, reason, headers, body, raw_head):
        self.status = status
        self.reason = reason
        self.headers = headers      # list of (name, value), in order
        self.body = body
        self.raw_head = raw_head

    def header(self, name, default=None):
        """The value of header name (case-insensitive; the last one when repeated)."""
        found = [v for k, v in self.headers if k.lower() == name.lower()]
        return found[-1] if found else default

    def header_all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def __repr__(self):
        return f"Response({self.status} {self.reason}, {self.headers}, {len(self.body)} bytes)"


def request_bytes(method, target, host="127.0.0.1", headers=None, body=b""):
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


DEFAULT_TIMEOUT = 10.0  # seconds, before scaling for sanitized builds


def connect(port, timeout=None, rcvbuf=None):
    """A connected socket to 127.0.0.1:port, with timeout (seconds, used as given; default
    DEFAULT_TIMEOUT scaled); rcvbuf sets SO_RCVBUF before connecting."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout if timeout is not None else scaled(DEFAULT_TIMEOUT))
    s.connect(("127.0.0.1", port))
    return s


class Reader:
    """Buffered reading of responses from a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError(f"connection closed; {len(self.buf)} bytes unread: "
                                  f"{self.buf[:200]!r}")
        self.buf += data

    def read_until(self, sep, limit=MAX_HEADER_BYTES):
        while sep not in self.buf:
            if len(self.buf) > limit:
                raise ValueError(f"no {sep!r} in the first {limit} bytes")
            self._fill()
        i = self.buf.index(sep) + len(sep)
        data, self.buf = self.buf[:i], self.buf[i:]
        return data

    def read_exactly(self, n):
        # The pieces are joined once: adding each to the bytes read so far copies them all
        # again, which for a 4 MB body arriving in small pieces on a loaded machine took
        # seconds of the client's CPU (and made the server look slow).
        parts, have = [self.buf], len(self.buf)
        try:
            while have < n:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError(f"connection closed; {have} bytes unread")
                parts.append(data)
                have += len(data)
        finally:
            self.buf = b"".join(parts)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_to_eof(self, limit=1 << 30):
        parts, have = [self.buf], len(self.buf)
        try:
            while have <= limit:
                data = self.sock.recv(65536)
                if not data:
                    break
                parts.append(data)
                have += len(data)
        except BaseException:
            self.buf = b"".join(parts)  # what was read stays readable, as before
            raise
        self.buf = b""
        return b"".join(parts)

    def read_response(self, head=False):
        """One response; head=True: the request was HEAD, so no body whatever the headers say.
        The body is framed by Content-Length (or chunked, or EOF)."""
        raw = self.read_until(b"\r\n\r\n")
        lines = raw.decode("iso-8859-1").split("\r\n")
        version, status, reason = (lines[0].split(" ", 2) + [""])[:3]
        if not version.startswith("HTTP/1."):
            raise ValueError(f"bad status line {lines[0]!r}")
        headers = []
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers.append((k.strip(), v.strip()))
        resp = Response(int(status), reason, headers, b"", raw)
        status = resp.status
        if head or status in (204, 304) or 100 <= status < 200:
            return resp
        te = (resp.header("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            body = b""
            while True:
                size = int(self.read_until(b"\r\n").split(b";")[0].strip(), 16)
                if size == 0:
                    self.read_until(b"\r\n")  # no trailers expected
                    break
                body += self.read_exactly(size)
                self.read_exactly(2)
            resp.body = body
        elif resp.header("Content-Length") is not None:
            resp.body = self.read_exactly(int(resp.header("Content-Length")))
        else:
            resp.body = self.read_to_eof()
        return resp


def exchange(port, method, target, headers=None, body=b"", timeout=None):
    """Send one request with Connection: close; return (response, bytes after the response
    up to EOF). The trailing bytes must be empty for a correctly framed answer."""
    headers = dict(headers or {})
    headers.setdefault("Connection", "close")
    with connect(port, timeout) as s:
        s.sendall(request_bytes(method, target, headers=headers, body=body))
        r = Reader(s)
        resp = r.read_response(head=(method == "HEAD"))
        rest = r.read_to_eof(limit=1 << 20)
    return resp, rest


def abort(sock):
    """Close sock with a reset (SO_LINGER 0) instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def read_until_closed(sock, timeout, limit=1 << 20):
    """Read what the peer sends for at most timeout seconds (at most limit bytes kept):
    (bytes, how), how being "eof" (orderly close), "reset" (the peer reset the connection)
    or "open" (still open when the time was up)."""
    deadline = time.monotonic() + timeout
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return bytes(data), "open"
        sock.settimeout(left)
        try:
            chunk = sock.recv(262144)
        except socket.timeout:
            return bytes(data), "open"
        except (ConnectionResetError, BrokenPipeError):
            return bytes(data), "reset"
        if not chunk:
            return bytes(data), "eof"
        if len(data) < limit:
            data += chunk[:limit - len(data)]


class _Received:
    """The bytes already received, as a socket that has nothing more to give."""

    def recv(self, size):
        return b""


def parse_response(data, head=False):
    """(response, bytes after it) from bytes already received; ConnectionError if they hold no
    complete response."""
    reader = Reader(_Received())
    reader.buf = bytes(data)
    resp = reader.read_response(head=head)
    return resp, reader.buf
