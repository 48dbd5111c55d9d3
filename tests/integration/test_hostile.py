"""Hostile and careless clients straight to musicd (issue 8): every input bounded, every
deadline kept, a body musicd does not read never parsed as a request, a half-closed client
answered in full, nothing a client or a document sends able to forge a log line or cut a head.

Each test is bounded in time and in what it sends; the clients use plain sockets (httpraw).
The through-the-fronts half is test_hostile_frontends.py.
"""

import hashlib
import os
import re
import resource
import select
import socket
import subprocess
import time

import pytest
import requests

import httpraw
from assertions import assert_error, assert_file_response
from media import Track, sha256_file
from support import SANITIZED, SANITIZER_ENV, free_port, listens_on, port_accepts, scaled, \
    wait_until

TIMEOUT = scaled(10)
MiB = 1 << 20


# -- helpers ------------------------------------------------------------------------------------

def add_huge_track(library, size=64 * MiB, name="huge.mp3"):
    """A real file of `size` bytes in the media root, mostly a hole (costs no disk): a
    megabyte of mp3 at the start and a marked last block, so a wrong offset shows."""
    path = library.root / name
    with open(path, "wb") as f:
        f.write(library.media.big.read_bytes()[:MiB])
        f.truncate(size)
        f.seek(size - 4096)
        f.write(bytes(range(256)) * 16)
    oid = library.db.insert_track(str(path))
    return Track(oid, path, name)


def read_body_sha256(reader, length):
    """Consume length body bytes from reader (its buffer, then the socket): (count, sha256)."""
    h = hashlib.sha256()
    first = reader.buf[:length]
    reader.buf = reader.buf[len(first):]
    h.update(first)
    got = len(first)
    buf = bytearray(MiB)
    view = memoryview(buf)
    while got < length:
        n = reader.sock.recv_into(view, min(len(buf), length - got))
        if n == 0:
            break
        h.update(view[:n])
        got += n
    return got, h.hexdigest()


def assert_answered_then_closed(sock, status, head=False):
    """One error answer (status, short text/plain), then nothing more and the connection
    closed: in particular no answer to anything that followed the request on the wire."""
    reader = httpraw.Reader(sock)
    resp = reader.read_response(head=head)
    assert_error(resp, status, head=head)
    rest, how = httpraw.read_until_closed(sock, scaled(3))
    rest = reader.buf + rest
    assert rest == b"", f"bytes after the {status} answer: {rest[:300]!r}"
    assert how in ("eof", "reset"), f"connection left open after the {status} answer"
    return resp


def warm_fd_baseline(server, track):
    """musicd's descriptor count once its database connections are made and a file served."""
    for _ in range(3):
        assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    return server.settled_fd_count()


def assert_back_to(server, baseline, track):
    """Descriptors back to baseline, no client connection left, and a correct answer."""
    # Both together: the count can reach the baseline while a connection's close is still
    # under way, when closes of files waiting for their batch (media/disk_io.h) go first.
    try:
        wait_until(lambda: server.fd_count() <= baseline and server.client_sockets() == {},
                   scaled(10), interval=0.1,
                   message=f"musicd's descriptor count back to {baseline}, no client socket")
    except AssertionError as e:
        raise AssertionError(f"{e}\ndescriptors: {server.fds()}\nTCP: {server.sockets()}") \
            from None
    assert server.client_sockets() == {}
    assert server.running
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)


def send_bounded(sock, data, timeout):
    """Send as much of data as the peer takes within timeout; stop at a close or reset.
    Returns the count of bytes sent."""
    sock.setblocking(False)
    sent = 0
    deadline = time.monotonic() + timeout
    view = memoryview(data)
    try:
        while sent < len(data) and time.monotonic() < deadline:
            _, writable, _ = select.select([], [sock], [], 0.05)
            if not writable:
                continue
            try:
                sent += sock.send(view[sent:sent + 262144])
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
    finally:
        sock.setblocking(True)
    return sent


# -- 1. a body musicd does not read is never parsed as a request --------------------------------

def inner_range_request(track):
    return httpraw.request_bytes("GET", track.url_path, headers={"Range": "bytes=0-15"})


def with_body(method, target, framing, body):
    """A request for target whose body is `body`, framed as `framing` says."""
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if framing == "content-length":
        head += f"Content-Length: {len(body)}\r\n"
    elif framing == "content-length-after-zero":
        head += f"Content-Length: 0\r\nContent-Length: {len(body)}\r\n"
    elif framing == "chunked":
        head += "Transfer-Encoding: chunked\r\n"
        body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    elif framing == "gzip":
        head += "Transfer-Encoding: gzip\r\n"
    else:
        raise ValueError(framing)
    return (head + "\r\n").encode() + body


@pytest.mark.shared_server
@pytest.mark.parametrize("framing", ["content-length", "content-length-after-zero", "chunked",
                                     "gzip"])
@pytest.mark.parametrize("method", ["HEAD", "TRACE"])
def test_a_body_on_a_method_libevent_reads_no_body_for_is_400_and_closes(server, library,
                                                                        method, framing):
    # libevent 2.1.12 reads no body for HEAD and TRACE (evhttp_method_may_have_body): without
    # this check the body is parsed as the next request on the connection.
    track = library.add(library.media.short, "short.mp3")
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(with_body(method, track.url_path, framing, inner_range_request(track)))
        assert_answered_then_closed(s, 400, head=(method == "HEAD"))
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)


@pytest.mark.shared_server
@pytest.mark.parametrize("coding", ["gzip", "identity", "gzip, chunked"])
def test_a_get_with_a_transfer_coding_libevent_does_not_decode_is_refused_and_closes(
        server, library, coding):
    # libevent decodes only "Transfer-Encoding: chunked"; with a coding it does not know and
    # no Content-Length it reads no body, and the body is parsed as the next request. A
    # coding musicd cannot decode is 501 (RFC 9110 15.6.2) or 400 (RFC 9112 6.3); libevent's
    # own refusal of "gzip, chunked" (413, text/html) is let pass here.
    track = library.add(library.media.short, "short.mp3")
    inner = inner_range_request(track)
    request = (f"GET {track.url_path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Transfer-Encoding: {coding}\r\n\r\n").encode() + inner
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(request)
        reader = httpraw.Reader(s)
        resp = reader.read_response()
        assert 400 <= resp.status < 500 or resp.status == 501, \
            f"answered {resp.status} to Transfer-Encoding {coding!r}"
        rest, how = httpraw.read_until_closed(s, scaled(3))
        assert reader.buf + rest == b"", f"the body was answered: {(reader.buf + rest)[:300]!r}"
        assert how in ("eof", "reset")


@pytest.mark.shared_server
def test_a_get_with_conflicting_content_lengths_is_400_and_closes(server, library):
    # RFC 9112 6.3: differing Content-Length values are an unrecoverable framing error.
    # libevent takes the first (0) and would leave the body for the next request.
    track = library.add(library.media.short, "short.mp3")
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(with_body("GET", track.url_path, "content-length-after-zero",
                            inner_range_request(track)))
        assert_answered_then_closed(s, 400)


@pytest.mark.shared_server
def test_a_head_with_content_length_zero_is_answered_and_the_connection_kept(server, library):
    # (holds before the fix: guards against refusing every HEAD that names a length)
    track = library.add(library.media.short, "short.mp3")
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(b"HEAD " + track.url_path.encode() +
                  b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
        reader = httpraw.Reader(s)
        resp = reader.read_response(head=True)
        assert resp.status == 200 and resp.header("Content-Length") == str(track.size)
        s.sendall(httpraw.request_bytes("GET", track.url_path))
        assert_file_response(reader.read_response(), track.path)


@pytest.mark.shared_server
def test_an_unrecognized_method_with_a_body_is_answered_and_the_body_never(server, library):
    # (holds before the fix: libevent answers 501 itself and closes)
    track = library.add(library.media.short, "short.mp3")
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(with_body("BREW", track.url_path, "content-length", inner_range_request(track)))
        reader = httpraw.Reader(s)
        resp = reader.read_response()
        assert resp.status in (400, 405, 501), resp
        rest, how = httpraw.read_until_closed(s, scaled(3))
        assert reader.buf + rest == b"", f"the body was answered: {(reader.buf + rest)[:300]!r}"
        assert how in ("eof", "reset")


# -- 2. input while a response is written is bounded ---------------------------------------------

JUNK_LIMIT = 256 * MiB
RSS_GROWTH_LIMIT = 64 * MiB


@pytest.mark.load
def test_junk_sent_while_a_download_stalls_does_not_grow_musicd(musicd, library):
    huge = add_huge_track(library)
    short = library.add(library.media.short, "short.mp3")
    server = musicd.start()
    assert requests.get(server.url + short.url_path, timeout=TIMEOUT).status_code == 200
    baseline = server.rss_bytes()
    with httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=65536) as s:
        s.sendall(httpraw.request_bytes("GET", huge.url_path))
        # Do not read the 64 MiB answer; send junk instead (bounded in bytes and time), and
        # stop as soon as musicd has grown past the limit.
        junk = b"J" * MiB
        sent, peak, checked = 0, baseline, 0
        s.setblocking(False)
        deadline = time.monotonic() + 3.0
        while sent < JUNK_LIMIT and time.monotonic() < deadline:
            _, writable, _ = select.select([], [s], [], 0.05)
            if writable:
                try:
                    sent += s.send(junk)
                except BlockingIOError:
                    pass
            if sent - checked >= 4 * MiB or not writable:
                checked = sent
                peak = max(peak, server.rss_bytes())
                if peak - baseline > RSS_GROWTH_LIMIT:
                    break
        peak = max(peak, server.rss_bytes())
        s.setblocking(True)
        assert peak - baseline <= RSS_GROWTH_LIMIT, \
            f"musicd grew from {baseline / MiB:.0f} MiB to {peak / MiB:.0f} MiB resident " \
            f"while the client sent {sent / MiB:.0f} MiB of junk during a response"

        # The junk after the answer is refused or the connection closed. (Closing with junk
        # unread resets the connection, which may cut the answer short: this client asked
        # for it.)
        s.settimeout(TIMEOUT)
        reader = httpraw.Reader(s)
        resp = reader.read_response(head=True)
        assert resp.status == 200 and resp.header("Content-Length") == str(huge.size)
        try:
            got, digest = read_body_sha256(reader, huge.size)
        except ConnectionResetError:
            got, digest, reader.buf = None, None, b""
        if got == huge.size:
            assert digest == sha256_file(huge.path), "the answer's bytes are not the file's"
        rest, how = httpraw.read_until_closed(s, scaled(5))
        rest = reader.buf + rest
        if got == huge.size:
            assert rest == b"" or re.match(rb"HTTP/1\.1 4\d\d ", rest), rest[:200]
        assert how in ("eof", "reset"), "the junk after the response was neither refused " \
                                        "nor the connection closed"
    assert server.running
    assert_file_response(requests.get(server.url + short.url_path, timeout=TIMEOUT), short.path)


# -- 3. out of descriptors; --max-connections ---------------------------------------------------

@pytest.mark.timing
def test_out_of_descriptors_musicd_neither_spins_nor_floods_its_log(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(caches=False, extra_args=["--lookup-threads", "1"])
    baseline = warm_fd_baseline(server, track)
    soft, hard = resource.prlimit(server.pid, resource.RLIMIT_NOFILE)
    extras = []
    try:
        # Room for a few connections, then every accept fails with EMFILE.
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (baseline + 8, hard))
        cpu0, err0, t0 = server.cpu_seconds(), server.stderr_size(), time.monotonic()
        for _ in range(40):
            extras.append(httpraw.connect(server.port, timeout=TIMEOUT))
        # 2.5 s out of descriptors (cut short once the log is past the bound)
        while time.monotonic() - t0 < 2.5 and server.stderr_size() - err0 < 10_000:
            time.sleep(0.1)
        cpu = server.cpu_seconds() - cpu0
        logged = server.stderr_size() - err0
        elapsed = time.monotonic() - t0
        assert logged < 10_000, \
            f"{logged} bytes of stderr in {elapsed:.1f}s at EMFILE:\n" \
            f"{server.stderr_text()[err0:err0 + 1000]}"
        assert cpu < 0.5, f"musicd used {cpu:.2f}s of CPU in {elapsed:.1f}s at EMFILE"
        assert logged > 0, "the accept failures were not logged at all"

        for s in extras:
            s.close()
        extras = []

        def served():
            try:
                return requests.get(server.url + track.url_path, timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_until(served, scaled(10), interval=0.2,
                   message="a request served once descriptors are free again")
    finally:
        for s in extras:
            s.close()
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (soft, hard))
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)


def open_served_connections(server, track, count):
    """count keep-alive connections, each with one request answered: (socket, reader) pairs."""
    kept = []
    for _ in range(count):
        s = httpraw.connect(server.port, timeout=TIMEOUT)
        s.sendall(httpraw.request_bytes("GET", track.url_path))
        reader = httpraw.Reader(s)
        assert_file_response(reader.read_response(), track.path)
        kept.append((s, reader))
    return kept


@pytest.mark.timing
def test_connections_beyond_max_connections_are_closed_at_once(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--max-connections", "5"])
    kept = open_served_connections(server, track, 5)
    extras = [httpraw.connect(server.port, timeout=TIMEOUT) for _ in range(5)]
    try:
        for i, s in enumerate(extras):
            data, how = httpraw.read_until_closed(s, scaled(1.0))
            assert how in ("eof", "reset"), f"connection {6 + i} of 5 allowed is still open"
            assert data == b"" or data.startswith(b"HTTP/1.1 503 "), data[:200]
        for s, reader in kept:  # the established ones are unaffected
            s.sendall(httpraw.request_bytes("GET", track.url_path))
            assert_file_response(reader.read_response(), track.path)
    finally:
        for s in extras + [s for s, _ in kept]:
            s.close()


def test_a_connection_slot_freed_by_a_leaving_client_serves_the_next(musicd, library):
    # (holds before the fix, where there is no limit at all)
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--max-connections", "3"])
    kept = open_served_connections(server, track, 3)
    try:
        kept.pop()[0].close()
        wait_until(lambda: len(server.client_sockets()) <= 2, scaled(5),
                   message="musicd to close the connection the client left")
        kept += open_served_connections(server, track, 1)
    finally:
        for s, _ in kept:
            s.close()


# -- 4. deadlines: the head, the idle keep-alive connection, the stalled send -------------------

DRIP_INTERVAL = 0.5
DRIP_LIMIT = max(6.0, scaled(4) + 1)   # the drip stops here whatever happens


def drip(sock, first_line):
    """Send first_line, then a header line every DRIP_INTERVAL seconds, never ending the head;
    stop when musicd answers or closes, or after DRIP_LIMIT. Returns (seconds from the first
    byte to musicd's answer or close, what it sent, how the connection ended)."""
    t0 = time.monotonic()
    line = first_line
    ended = False
    for i in range(int(DRIP_LIMIT / DRIP_INTERVAL) + 1):
        try:
            sock.sendall(line)
        except (BrokenPipeError, ConnectionResetError):
            ended = True
            break
        readable, _, _ = select.select([sock], [], [], DRIP_INTERVAL)
        if readable:
            ended = True
            break
        if time.monotonic() - t0 >= DRIP_LIMIT:
            break
        line = f"X-Drip-{i}: still coming\r\n".encode()
    answered = time.monotonic() - t0
    data, how = httpraw.read_until_closed(sock, scaled(2) if ended else 0.1)
    return answered, data, how


def assert_408_then_closed(answered, data, how, timeout):
    assert data.startswith(b"HTTP/1.1 408 "), \
        f"no 408 within {answered:.1f}s of the head's first byte (got {data[:120]!r}, {how})"
    resp, rest = httpraw.parse_response(data)
    assert_error(resp, 408)
    assert rest == b""
    assert how in ("eof", "reset"), "connection left open after the 408"
    assert timeout - 0.5 <= answered <= scaled(timeout + 2), \
        f"408 after {answered:.1f}s, the head timeout being {timeout}s"


@pytest.mark.timing
def test_a_head_sent_one_line_at_a_time_gets_408_at_the_header_timeout(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--header-timeout", "2"])
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        result = drip(s, f"GET {track.url_path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
    assert_408_then_closed(*result, timeout=2)


@pytest.mark.timing
def test_a_second_request_head_is_timed_from_its_first_byte(musicd, library):
    # After an answer the connection is idle (keep-alive timeout); the next head's deadline
    # starts with its first byte, not at the end of the previous answer.
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--header-timeout", "2", "--keepalive-timeout", "10"])
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(httpraw.request_bytes("GET", track.url_path))
        assert_file_response(httpraw.Reader(s).read_response(), track.path)
        time.sleep(1.5)
        result = drip(s, f"GET {track.url_path} HTTP/1.1\r\n".encode())
    assert_408_then_closed(*result, timeout=2)


@pytest.mark.timing
def test_a_connection_that_sends_nothing_is_closed_at_the_header_timeout(musicd):
    server = musicd.start(extra_args=["--header-timeout", "2"])
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        t0 = time.monotonic()
        data, how = httpraw.read_until_closed(s, scaled(4) + 1)
        elapsed = time.monotonic() - t0
    assert how in ("eof", "reset"), f"a silent connection still open after {elapsed:.1f}s"
    assert data == b"" or data.startswith(b"HTTP/1.1 408 "), data[:200]
    assert elapsed >= 1.5, f"closed after {elapsed:.1f}s, before the 2 s header timeout"


@pytest.mark.timing
def test_an_idle_keepalive_connection_lasts_the_keepalive_timeout_not_the_header_timeout(
        musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--header-timeout", "1", "--keepalive-timeout", "3"])
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(httpraw.request_bytes("GET", track.url_path))
        assert_file_response(httpraw.Reader(s).read_response(), track.path)
        t0 = time.monotonic()
        data, how = httpraw.read_until_closed(s, 2.0)
        assert (data, how) == (b"", "open"), \
            f"idle connection ended after {time.monotonic() - t0:.1f}s (header timeout 1 s, " \
            f"keep-alive timeout 3 s): {data[:200]!r} {how}"
        data, how = httpraw.read_until_closed(s, scaled(3))
        elapsed = time.monotonic() - t0
    assert how in ("eof", "reset"), f"idle connection still open after {elapsed:.1f}s " \
                                    f"(keep-alive timeout 3 s)"
    assert data == b"" or data.startswith(b"HTTP/1.1 408 "), data[:200]


@pytest.mark.timing
def test_a_client_that_stops_reading_is_dropped_after_the_send_timeout(musicd, library):
    huge = add_huge_track(library)
    server = musicd.start(extra_args=["--send-timeout", "2", "--keepalive-timeout", "30",
                                      "--header-timeout", "30"])
    with httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=65536) as s:
        s.sendall(httpraw.request_bytes("GET", huge.url_path))
        assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
        # no more reading: musicd's writes stop making progress once the buffers are full
        wait_until(lambda: len(server.client_sockets()) == 1, scaled(5),
                   message="musicd holding the connection")
        t0 = time.monotonic()
        time.sleep(1.0)
        assert len(server.client_sockets()) == 1, "dropped before the 2 s send timeout"
        try:
            wait_until(lambda: not server.client_sockets(), scaled(2 + 3), interval=0.1,
                       message="musicd to drop the stalled download")
        except AssertionError:
            raise AssertionError(f"a download that made no progress for "
                                 f"{time.monotonic() - t0:.1f}s is still open "
                                 f"(send timeout 2 s)") from None
    assert server.running


# -- 5. half-closed clients get the whole answer --------------------------------------------------

@pytest.mark.parametrize("cached", [False, True], ids=["lookup-pending", "cached"])
@pytest.mark.parametrize("size", ["short", "huge"])
def test_a_half_closed_client_gets_the_whole_answer_then_the_close(musicd, library, db_proxy,
                                                                    size, cached):
    # huge: 64 MiB, more than the socket buffers hold, so musicd is still writing when it
    # reads the FIN
    if size == "huge":
        track = add_huge_track(library)
    else:
        track = library.add(library.media.short, "short.mp3")
    other = library.add(library.media.short, "other.mp3")
    server = musicd.start(mongodb_uri=db_proxy.uri, extra_args=["--lookup-timeout", "5000"])
    # database connections made; then the track itself asked for once (cached) or not yet
    assert requests.get(server.url + other.url_path, timeout=TIMEOUT).status_code == 200
    if cached:  # the lookup and the open file cached by a one-byte range
        warm = requests.get(server.url + track.url_path, headers={"Range": "bytes=0-0"},
                            timeout=TIMEOUT)
        assert warm.status_code == 206 and warm.content == track.path.read_bytes()[:1]
    else:
        db_proxy.proxy.delay_to_client = 0.3  # the FIN arrives while the lookup is pending
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(httpraw.request_bytes("GET", track.url_path))
        s.shutdown(socket.SHUT_WR)  # as nc -N, or printf ... | socat
        data, how = httpraw.read_until_closed(s, scaled(10), limit=track.size + 65536)
    assert data, f"no answer at all to a half-closed client ({how})"
    resp, rest = httpraw.parse_response(data)
    assert_file_response(resp, track.path)
    assert rest == b""
    assert how == "eof", f"after the answer the connection ended with {how}"


# -- 6. a reset during a pending lookup ---------------------------------------------------------

@pytest.mark.timing
def test_a_reset_during_a_pending_lookup_does_not_spin_the_worker(musicd, library, db_proxy):
    track = library.add(library.media.short, "short.mp3")
    other = library.add(library.media.short, "other.mp3")
    server = musicd.start(mongodb_uri=db_proxy.uri, extra_args=["--lookup-timeout", "5000"])
    assert requests.get(server.url + other.url_path, timeout=TIMEOUT).status_code == 200
    db_proxy.proxy.delay_to_client = 1.5
    s = httpraw.connect(server.port, timeout=TIMEOUT)
    s.sendall(httpraw.request_bytes("GET", track.url_path))
    time.sleep(0.2)
    httpraw.abort(s)  # RST while the lookup is pending
    time.sleep(0.1)
    cpu0 = server.cpu_seconds()
    time.sleep(1.0)
    cpu = server.cpu_seconds() - cpu0
    assert cpu < 0.3, f"musicd used {cpu:.2f}s of CPU in 1 s after a reset during a lookup"
    db_proxy.proxy.delay_to_client = 0
    assert server.running
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)
    wait_until(lambda: not server.client_sockets(), scaled(5),
               message="the reset connection's descriptor released")


# -- 7. the worker count is bounded, given or by default ------------------------------------------

def test_more_than_256_workers_is_refused_at_start(musicd, mongo, db, library):
    # (holds before the fix: config.c already bounds --workers)
    port = free_port()
    result = musicd.run(["--listen", f"127.0.0.1:{port}", "--mongodb-uri", mongo.uri,
                         "--database", db.name, "--media-root", library.root,
                         "--workers", "257"])
    assert result.returncode == 2, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "workers" in lines[0] and "256" in lines[0], lines[0]
    assert not port_accepts(port)


CPU_COUNT_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

/* This host, as one with 300 CPUs online would show itself to sysconf(3). */
long sysconf(int name)
{
	static long (*real)(int);
	if (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF)
		return 300;
	if (real == NULL)
		real = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
	return real(name);
}
"""


def cpu_count_env(tmp_path):
    """The environment that shows musicd a host with 300 CPUs (a preloaded sysconf)."""
    if not (os.path.exists("/usr/bin/cc")):
        pytest.skip("no C compiler for the sysconf shim")
    source = tmp_path / "cpus.c"
    shim = tmp_path / "cpus.so"
    source.write_text(CPU_COUNT_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"],
                   check=True, capture_output=True, timeout=60)
    env = {"LD_PRELOAD": str(shim)}
    if SANITIZED:  # the ASan runtime must otherwise come first in the library list
        env["ASAN_OPTIONS"] = SANITIZER_ENV["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
    return env


def test_on_a_host_with_300_cpus_the_default_is_256_workers(musicd, library, tmp_path):
    # (holds before the fix: 5832c02 caps the default.) The CPU count is what sysconf(3)
    # says; a host with more than 256 CPUs is shown to musicd by a preloaded sysconf. The
    # descriptor limit is set, roomy, so the machine's own does not decide the count.
    env = cpu_count_env(tmp_path)
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(env=env, descriptor_limit=8192)
    server.wait_all_workers()
    listeners = server.listening_fds()
    assert len(listeners) == 256, f"{len(listeners)} listening sockets (one per worker)"
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)


def test_a_descriptor_limit_too_low_for_the_default_workers_lowers_their_count(musicd, library,
                                                                              tmp_path):
    # (fails before the fix: 256 workers need 1280 descriptors, and at a limit of 1500 libevent's
    # set-up of a worker's loop ran out of them and exited the process with status 1.)
    # 1500 - 1128 (64 reserved, 8 lookup threads, 1000 cached files, 48 closes waiting for
    # their batch: 16 in each of 3 disk lanes) - 37 (the metrics listener's worker, 5, and its
    # 32 connections) leaves 335: the workers take at most half, 33 of 5 descriptors each, and
    # the connections the 170 left.
    env = cpu_count_env(tmp_path)
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(env=env, descriptor_limit=1500)
    server.wait_all_workers()
    assert len(server.listening_fds()) == 33
    server.wait_for_stderr("descriptor limit 1500: 33 workers instead of one per CPU (256)")
    server.wait_for_stderr("at most 170 connections at once")  # logged after the line above
    sessions = [requests.Session() for _ in range(60)]  # more connections than workers
    try:
        for session in sessions:
            assert_file_response(session.get(server.url + track.url_path, timeout=TIMEOUT),
                                 track.path)
    finally:
        for session in sessions:
            session.close()


def test_a_worker_count_the_descriptor_limit_cannot_hold_is_refused_at_start(musicd, mongo, db,
                                                                              library):
    # (fails before the fix: it exited with status 1 and libevent's "socketpair: Too many open
    # files" after it had begun listening.)
    port = free_port()
    result = musicd.run(["--listen", f"127.0.0.1:{port}", "--mongodb-uri", mongo.uri,
                         "--database", db.name, "--media-root", library.root,
                         "--workers", "256"], descriptor_limit=1500)
    assert result.returncode == 2, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("musicd: descriptor limit 1500 is too low: 256 workers"), lines[0]
    assert "--workers" in lines[0] and "ulimit -n" in lines[0]
    assert not port_accepts(port)
    check = musicd.run(["-t", "--media-root", library.root, "--workers", "256"],
                       descriptor_limit=1500)
    assert check.returncode == 2 and "descriptor limit 1500 is too low" in check.stderr, check


# -- 8. nothing from a request or a document forges a log line ----------------------------------

FORGED = "2026-01-01T00:00:00.000Z error: FORGED"


def stderr_bytes(server):
    return server.stderr_path.read_bytes()


def forged_lines(server):
    """stderr's lines (split at LF only) that begin with the forged text."""
    return [line for line in stderr_bytes(server).split(b"\n")
            if line.startswith(FORGED.encode())]


def test_a_newline_in_a_document_path_does_not_forge_a_log_line(server, library):
    doc = library.add_document(f"{library.root}/missing\n{FORGED} by a track document")
    resp = requests.get(server.url + doc.url_path, timeout=TIMEOUT)
    assert_error(resp, 404)
    server.wait_for_stderr("by a track document")  # the missing file is logged...
    assert forged_lines(server) == [], stderr_bytes(server)  # ...on a line of its own


@pytest.mark.parametrize("byte", ["\x1b", "\r", "\x07", "\x7f"], ids=["ESC", "CR", "BEL", "DEL"])
def test_a_control_byte_in_a_document_path_is_escaped_in_the_log(server, library, byte):
    doc = library.add_document(f"{library.root}/missing{byte}[31mred{byte}.mp3")
    assert_error(requests.get(server.url + doc.url_path, timeout=TIMEOUT), 404)
    lines = server.wait_for_stderr("[31mred")  # the missing file is logged
    assert byte.encode() not in stderr_bytes(server), f"raw {byte!r} in the log: {lines!r}"


def test_a_newline_in_a_file_name_refused_as_x_sendfile_does_not_forge_a_log_line(musicd,
                                                                                 library):
    track = library.add(library.media.short, f"odd\n{FORGED} by a file name.mp3", name="odd.mp3")
    server = musicd.start(extra_args=["--x-sendfile"])
    assert_error(requests.get(server.url + track.url_path, timeout=TIMEOUT), 500)
    server.wait_for_stderr("by a file name")  # the refusal is logged...
    assert forged_lines(server) == [], stderr_bytes(server)  # ...on a line of its own


# -- 9. error heads are whole, whatever --error-cache-control holds -------------------------------

HEADER_LINE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[ \t]*[^\r\n]*")


def strict_head(raw):
    """(status, {lower-case name: [values]}, body) of a response that must be well formed:
    a blank line ending the head, every line a header field, Content-Length framing the body."""
    assert b"\r\n\r\n" in raw, f"the head never ends: {raw[:2000]!r}"
    head, body = raw.split(b"\r\n\r\n", 1)
    lines = head.decode("iso-8859-1").split("\r\n")
    m = re.fullmatch(r"HTTP/1\.1 (\d{3}) [^\r\n]+", lines[0])
    assert m, f"status line {lines[0]!r}"
    fields = {}
    for line in lines[1:]:
        assert HEADER_LINE.fullmatch(line), f"not a header field: {line[:200]!r}"
        name, _, value = line.partition(":")
        fields.setdefault(name.lower(), []).append(value.strip())
    assert fields.get("content-length") == [str(len(body))], (fields.get("content-length"),
                                                              len(body))
    return int(m.group(1)), fields, body


def cache_control_of_length(n):
    value = "no-store, private"
    i = 0
    while len(value) < n:
        value += f", x-ext-{i}=1"
        i += 1
    return value[:n].rstrip(", ")


def start_or_refused(musicd, extra_args, **kw):
    """musicd started, or None if it refused the options at start (exit 2, one message)."""
    m = musicd.start(extra_args=extra_args, wait=False, **kw)
    wait_until(lambda: not m.running or (listens_on(m.pid, m.port) and port_accepts(m.port)),
               scaled(10), interval=0.05, message="musicd to listen or exit")
    if m.running:
        return m
    m.expect_status = m.proc.returncode
    assert m.proc.returncode == 2, m.stderr_text()
    assert "error-cache-control" in m.stderr_text(), m.stderr_text()
    return None


@pytest.mark.parametrize("length", [600, 10240])
@pytest.mark.parametrize("status", [405, 503])
def test_an_error_head_with_a_long_error_cache_control_is_whole(musicd, library, length, status):
    track = library.add(library.media.short, "short.mp3")
    value = cache_control_of_length(length)
    args = ["--error-cache-control", value]
    kw = {}
    if status == 503:  # nothing listens there: the lookup runs out of time
        kw["mongodb_uri"] = f"mongodb://127.0.0.1:{free_port()}/?serverSelectionTimeoutMS=300"
        args += ["--lookup-timeout", "300"]
    server = start_or_refused(musicd, args, **kw)
    if server is None:
        return  # refusing the value at start is fine: never a cut head
    method = "POST" if status == 405 else "GET"
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(httpraw.request_bytes(method, track.url_path, headers={"Connection": "close"}))
        raw, how = httpraw.read_until_closed(s, TIMEOUT)
    got, fields, body = strict_head(raw)
    assert got == status, raw[:300]
    assert fields.get("cache-control") == [value]
    if status == 405:
        assert fields.get("allow") == ["GET, HEAD"], fields
    else:
        assert len(fields.get("retry-after", [])) == 1 and fields["retry-after"][0].isdigit()
    assert fields.get("content-type", [""])[0].startswith("text/plain")
    assert len(body) <= 256


# -- 11. X-Forwarded-For over several lines is one list -----------------------------------------

def logged_client(server, path, xff_lines):
    before = len(server.access_log_lines())
    extra = "".join(f"X-Forwarded-For: {v}\r\n" for v in xff_lines)
    request = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n"
               f"\r\n").encode()
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(request)
        resp, _ = httpraw.parse_response(httpraw.read_until_closed(s, TIMEOUT)[0])
        assert resp.status == 200
    line = server.wait_for_access_log(before + 1)[before]
    return line.split()[0]


def test_x_forwarded_for_over_several_lines_is_read_as_one_list(musicd, library):
    # docs/deployment.md "Client addresses": from the right, the first address that is not a trusted
    # proxy. RFC 9110 5.3: several field lines are one comma-separated list.
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32"])
    combined = logged_client(server, track.url_path, ["203.0.113.9, 198.51.100.7"])
    assert combined == "198.51.100.7"
    split = logged_client(server, track.url_path, ["203.0.113.9", "198.51.100.7"])
    assert split == combined, "the second X-Forwarded-For line was not read"


# -- absurd input and floods leave musicd as it was ---------------------------------------------

def absurd_head(kind, track):
    target = track.url_path
    start = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if kind == "1mb-header-line":
        return (start + "X-Big: " + "a" * MiB + "\r\n\r\n").encode()
    if kind == "10000-headers":
        return (start + "".join(f"X-H{i}: v\r\n" for i in range(10000)) + "\r\n").encode()
    if kind == "1mb-target":
        return (f"GET /musicdb/{'a' * MiB} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").encode()
    if kind == "content-length-overflow":
        return (start + "Content-Length: 99999999999999999999999999\r\n\r\n").encode()
    if kind == "negative-content-length":
        return (start + "Content-Length: -1\r\n\r\n").encode()
    if kind == "no-request-line-end":
        return b"GET " + b"/" * MiB
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["1mb-header-line", "10000-headers", "1mb-target",
                                  "content-length-overflow", "negative-content-length",
                                  "no-request-line-end"])
def test_an_absurd_request_head_gets_4xx_or_a_close_and_musicd_goes_on(musicd, library, kind):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(caches=False, extra_args=["--lookup-threads", "1"])
    baseline = warm_fd_baseline(server, track)
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        send_bounded(s, absurd_head(kind, track), scaled(5))
        data, how = httpraw.read_until_closed(s, scaled(5))
    if data:
        assert re.match(rb"HTTP/1\.[01] 4\d\d ", data), f"answered {data[:200]!r}"
    else:
        assert how in ("eof", "reset"), "no answer and the connection left open"
    assert_back_to(server, baseline, track)


@pytest.mark.load
def test_a_flood_of_500_connections_dropped_every_way_leaves_musicd_as_it_was(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(caches=False, extra_args=["--lookup-threads", "1"])
    baseline = warm_fd_baseline(server, track)
    request = httpraw.request_bytes("GET", track.url_path)
    for batch in range(10):
        socks = []
        for i in range(50):
            try:
                socks.append(httpraw.connect(server.port, timeout=2))
            except OSError:
                pass  # a full backlog is fine; musicd must still be whole afterwards
        for i, s in enumerate(socks):
            way = (batch * 50 + i) % 4
            try:
                if way == 1:
                    s.sendall(request[:10])        # half a request line, then reset
                elif way == 2:
                    s.sendall(request)             # a whole request, never read
                elif way == 3:
                    s.sendall(request)
                    httpraw.abort(s)               # a request, then reset
                    continue
            except OSError:
                pass
            if way == 1:
                httpraw.abort(s)
            else:
                s.close()                          # FIN (way 0: without a byte)
    assert_back_to(server, baseline, track)
