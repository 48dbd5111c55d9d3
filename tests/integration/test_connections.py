"""Connections: keep-alive, pipelining, many clients at once, clients that leave early, and
the body going out with sendfile(2)."""

import concurrent.futures
import hashlib
import http.client
import socket
import struct
import time

import pytest
import requests
from bson import ObjectId

import httpraw
from assertions import assert_error, assert_file_headers, assert_file_response
from media import sha256_file
from support import scaled, wait_until
from tracing import WRITE_CALLS, syscall_bytes, traced

TIMEOUT = scaled(20)


def test_ten_requests_share_one_keepalive_connection(server, library):
    tracks = [library.add(library.media.short, "a.mp3"),
              library.add(library.media.short, "b.mp3", name="b.mp3")]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    conn.connect()
    sock = conn.sock
    local = sock.getsockname()
    try:
        for i in range(10):
            track = tracks[i % 2]
            method = "HEAD" if i == 5 else "GET"
            conn.request(method, track.url_path)
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 200, i
            assert resp.getheader("Content-Length") == str(track.size)
            assert body == (b"" if method == "HEAD" else track.data), i
            assert not resp.will_close, f"server closes the connection after request {i}"
            assert conn.sock is sock and sock.getsockname() == local, f"reconnected at {i}"
    finally:
        conn.close()
    lines = server.wait_for_access_log(10)
    assert len(lines) == 10


def test_pipelined_requests_are_answered_in_order(server, library):
    short = library.add(library.media.short, "short.mp3")
    big = library.add(library.media.big, "big.mp3")
    missing = f"/musicdb/{ObjectId()}/missing.mp3"
    plan = [("GET", short.url_path), ("HEAD", big.url_path), ("GET", missing),
            ("GET", "/musicdb/nothex/x.mp3"), ("HEAD", short.url_path), ("GET", big.url_path),
            ("GET", short.url_path)]
    payload = b"".join(httpraw.request_bytes(m, t) for m, t in plan)
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(payload)  # all requests in one write
        reader = httpraw.Reader(s)
        responses = [reader.read_response(head=(m == "HEAD")) for m, _ in plan]
        s.settimeout(0.3)
        try:
            extra = s.recv(1)
        except socket.timeout:
            extra = b""
    assert extra == b"", "bytes after the last pipelined response"
    assert_file_response(responses[0], short.path)
    assert_file_headers(responses[1], big.path)
    assert responses[1].body == b""
    assert_error(responses[2], 404)
    assert_error(responses[3], 400)
    assert_file_headers(responses[4], short.path)
    assert_file_headers(responses[5], big.path)
    assert hashlib.sha256(responses[5].body).hexdigest() == sha256_file(big.path)
    assert_file_response(responses[6], short.path)


@pytest.mark.load
def test_fifty_concurrent_downloads_get_the_exact_bytes(server, library):
    big = library.add(library.media.big, "big.mp3")
    expected = sha256_file(big.path)

    def download(i):
        with requests.get(server.url + big.url_path, stream=True, timeout=TIMEOUT) as resp:
            h = hashlib.sha256()
            n = 0
            for chunk in resp.iter_content(65536):
                h.update(chunk)
                n += len(chunk)
            return resp.status_code, n, h.hexdigest()

    with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(download, range(50), timeout=scaled(60)))
    assert results == [(200, big.size, expected)] * 50


def _fd_baseline(server, track):
    """musicd's descriptor count once warmed up (database connections made, a file served)."""
    for _ in range(3):
        assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    return server.settled_fd_count()


def _wait_fds(server, baseline, timeout=10):
    """Descriptors back to baseline and no client socket left, together: the count can reach
    the baseline while a connection's close is under way, when closes of files waiting for
    their batch (media/disk_io.h) go first."""
    try:
        wait_until(lambda: server.fd_count() <= baseline and server.client_sockets() == {},
                   scaled(timeout), interval=0.1,
                   message=f"musicd's descriptor count back to {baseline}, no client socket")
    except AssertionError as e:
        raise AssertionError(f"{e}\ndescriptors now: {server.fds()}\nTCP sockets: "
                             f"{server.sockets()}") from None


def _abort(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_clients_leaving_mid_stream_release_their_descriptors(musicd, library):
    short = library.add(library.media.short, "short.mp3")
    big = library.add(library.media.big, "big.mp3")
    # One lookup thread: one pooled database connection, so the count of database sockets
    # does not depend on how many lookups ran at once. No open-file cache (a later issue) to
    # hold files open.
    server = musicd.start(caches=False, extra_args=["--lookup-threads", "1"])
    baseline = _fd_baseline(server, short)
    for i in range(6):
        s = httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=4096)
        s.sendall(httpraw.request_bytes("GET", big.url_path))
        got = s.recv(4096)
        assert got.startswith(b"HTTP/1.1 200"), got[:100]
        if i % 2:
            _abort(s)          # reset
        else:
            s.close()          # orderly close with unread data (the kernel sends a reset too)
    # a slow reader that has taken a few hundred KB, then leaves
    s = httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=4096)
    s.sendall(httpraw.request_bytes("GET", big.url_path))
    taken = 0
    while taken < 300_000:
        data = s.recv(65536)
        assert data
        taken += len(data)
    s.close()
    _wait_fds(server, baseline)
    assert server.client_sockets() == {}
    assert_file_response(requests.get(server.url + short.url_path, timeout=TIMEOUT), short.path)


@pytest.mark.timing
def test_clients_leaving_during_the_lookup_release_their_descriptors(musicd, library, db_proxy):
    short = library.add(library.media.short, "short.mp3")
    others = [library.add(library.media.short, f"other{i}.mp3") for i in range(4)]
    # One lookup thread: one pooled database connection, so the count of database sockets
    # does not depend on how many lookups ran at once.
    server = musicd.start(mongodb_uri=db_proxy.uri, caches=False,
                          extra_args=["--lookup-threads", "1", "--lookup-timeout", "5000"])
    baseline = _fd_baseline(server, short)
    db_proxy.proxy.delay_to_client = 0.6  # every database answer now takes 0.6 s
    clients = []
    for track in others:
        s = httpraw.connect(server.port, timeout=TIMEOUT)
        s.sendall(httpraw.request_bytes("GET", track.url_path))
        clients.append(s)
    time.sleep(0.2)
    for i, s in enumerate(clients):
        if i % 2:
            _abort(s)
        else:
            s.close()
    # the lookups finish after the clients left (4 x 0.6 s with one lookup thread)
    time.sleep(len(others) * 0.6 + 0.5)
    db_proxy.proxy.delay_to_client = 0
    _wait_fds(server, baseline)
    assert server.client_sockets() == {}
    assert_file_response(requests.get(server.url + short.url_path, timeout=TIMEOUT), short.path)
    assert_file_response(requests.get(server.url + others[0].url_path, timeout=TIMEOUT),
                         others[0].path)


def test_body_goes_out_with_sendfile(server, library, tmp_path):
    big = library.add(library.media.big, "big.mp3")
    short = library.add(library.media.short, "short.mp3")
    requests.get(server.url + short.url_path, timeout=TIMEOUT)  # warm-up
    with traced(server.pid, tmp_path) as trace:
        resp = requests.get(server.url + big.url_path, timeout=TIMEOUT)
        assert_file_headers(resp, big.path)
        assert hashlib.sha256(resp.content).hexdigest() == sha256_file(big.path)
    text = trace[0]
    calls = syscall_bytes(text)
    assert calls.get("sendfile"), f"no sendfile calls seen:\n{text[:3000]}"
    sent = sum(calls["sendfile"])
    assert sent >= 0.9 * big.size, f"sendfile moved {sent} of {big.size} bytes"
    # the file's bytes do not also go through user space: what musicd writes otherwise is
    # headers and log lines
    written = sum(sum(calls.get(name, [])) for name in WRITE_CALLS)
    assert written < 64 * 1024, f"{written} bytes written with write-family calls:\n{text[:3000]}"
    assert server.running
    assert_file_response(requests.get(server.url + short.url_path, timeout=TIMEOUT), short.path)
