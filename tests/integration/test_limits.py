"""Per-client limits on musicd itself: --limit-rate / --limit-rate-after (pacing, with nginx's
meaning, for every body source, still by sendfile) and --max-streams-per-client (429 beyond it,
across workers), and who is limited by which address. Through the shipped nginx and Varnish:
test_limits_frontends.py.

Timings: pacing can only be late on a loaded machine, never early, and its allowance counts
from the body's start (nginx's), so a late timer is caught up with; each paced time is asserted
within 10% of what the rate says, and only the time a test may take is stretched (scaled())
for the sanitized build.

Clients use their own loopback addresses (127.0.0.2 ...: every 127.0.0.0/8 address is local), so
that each test's clients are told apart by address as remote clients would be.
"""

import hashlib
import socket
import struct
import subprocess
import threading
import time

import pytest
import requests

import httpraw
from byteranges import parse_multipart
from support import scaled, wait_until
from test_gridfs import gridfs_file, spool_args, wait_for_copy  # noqa: F401 (a fixture)
from tracing import WRITE_CALLS, syscall_bytes, traced

TIMEOUT = scaled(10)
KIB = 1024
HOLD_RCVBUF = 4096       # a held stream's receive buffer: the server's writes stall at once


def slice_of(rate):
    """What a paced body sends at once besides --limit-rate-after (wire/pacing.h: a tenth of
    a second of the rate, at least 16 KiB), as nginx's limit_rate sends a second's worth."""
    return max(rate // 10, 16 * KIB)


# -- clients ----------------------------------------------------------------------------------

def connect_from(source_ip, port, rcvbuf=None, timeout=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout or TIMEOUT)
    sock.bind((source_ip, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def request(target, headers=None, method="GET"):
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_head(sock, data=b""):
    """The response head (status, {lower-case name: value}) and the body bytes read with it;
    data: bytes of it read already."""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"closed before a whole head: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, rest


class Held:
    """A GET whose head arrived and whose body the client does not read: a stream in flight."""

    def __init__(self, port, target, source_ip="127.0.0.1", headers=None):
        self.sock = connect_from(source_ip, port, rcvbuf=HOLD_RCVBUF)
        self.sock.sendall(request(target, headers))
        self.status, self.headers, self.rest = read_head(self.sock)

    def read_body(self):
        """The rest of the body (Content-Length), read now; the connection stays open."""
        body = bytearray(self.rest)
        length = int(self.headers["content-length"])
        while len(body) < length:
            chunk = self.sock.recv(1 << 16)
            assert chunk, f"closed after {len(body)} of {length} body bytes"
            body += chunk
        self.rest = bytes(body[length:])
        return bytes(body[:length])

    def next_answer(self):
        """The next answer's head on the connection, once the last body was read."""
        self.status, self.headers, self.rest = read_head(self.sock, self.rest)

    def reset(self):
        httpraw.abort(self.sock)

    def close(self):
        self.sock.close()


def read_paced(port, target, source_ip="127.0.0.1", headers=None, timeout=120.0):
    """GET target on a new connection, reading as fast as the server sends: (status, headers,
    body, seconds to the last body byte, at) where at(n) is the seconds until n body bytes had
    arrived."""
    sock = connect_from(source_ip, port, timeout=timeout)
    t0 = time.monotonic()
    sock.sendall(request(target, dict(headers or {}, Connection="close")))
    data = bytearray()
    arrivals = []   # (bytes so far, seconds)
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            arrivals.append((len(data), time.monotonic() - t0))
    finally:
        sock.close()
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    head_size = len(head) + 4

    def at(count):
        return next(t for n, t in arrivals if n - head_size >= count)

    return int(lines[0].split()[1]), fields, body, at(len(body)) if body else 0.0, at


def assert_paced(seconds, size, rate, free, what):
    """size bytes, the first free of them at once, then rate bytes/s: within 10% of that."""
    expected = (size - free) / rate
    assert 0.9 * expected <= seconds <= 1.1 * expected, \
        f"{what}: {seconds:.2f} s for {size} bytes at {rate} B/s after {free}: " \
        f"expected {expected:.2f} s +-10%"


def get_from(source_ip, server, target, headers=None, method="GET"):
    """A whole exchange from source_ip on a new connection: (status, headers, body)."""
    with connect_from(source_ip, server.port) as sock:
        sock.sendall(request(target, dict(headers or {}, Connection="close"), method))
        status, fields, rest = read_head(sock)
        body = bytearray(rest)
        if method != "HEAD":
            while True:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                body += chunk
    return status, fields, bytes(body)


def assert_429(answer, retry_after):
    """(status, headers, body) is a 429 as musicd and the shipped VCL answer it: short text,
    never cached, with when to come back."""
    status, fields, body = answer
    assert status == 429, answer
    assert fields["retry-after"] == retry_after
    assert fields["cache-control"] == "no-store"
    assert fields["content-type"] == "text/plain; charset=utf-8"
    assert body == b"429 Too Many Requests\n"


def metric(server, name):
    text = requests.get(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=TIMEOUT).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in the metrics")


def wait_streams(server, count):
    wait_until(lambda: metric(server, "musicd_client_streams") == count, scaled(10),
               message=f"musicd_client_streams to be {count}")


def wait_descriptors_back(server, baseline):
    """No client connection left, and no more descriptors than before (the database pool's
    connections come and go on their own)."""
    wait_until(lambda: not server.client_sockets() and server.fd_count() <= baseline,
               scaled(15), message="client connections closed, descriptors back")


# -- pacing -----------------------------------------------------------------------------------

def test_a_4mb_track_at_128_kib_s_after_512_kib_arrives_within_10_percent_of_the_rate(
        musicd, library):
    track = library.add(library.media.big, "big.mp3")
    rate, after = 128 * KIB, 512 * KIB
    server = musicd.start(extra_args=["--limit-rate", "128K", "--limit-rate-after", "512K"])
    status, fields, body, seconds, at = read_paced(server.port, track.url_path)
    assert status == 200
    assert hashlib.sha256(body).digest() == hashlib.sha256(track.data).digest()
    assert "x-accel-limit-rate" not in fields   # musicd faces this client: it paces itself
    assert_paced(seconds, track.size, rate, after, "4 MB track")
    # (The target counts only the 512 KiB as free, which the slice sent with them
    # shortens by 0.125 s of 26.5.) The first 512 KiB go at once (a player starts at once): far sooner than the rate allows.
    assert at(after) < after / rate / 2, f"the first {after} bytes took {at(after):.2f} s"
    assert metric(server, "musicd_paced_responses_total") == 1


def test_a_range_is_paced_from_its_first_byte(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    first, last = 1_000_000, 1_000_000 + 160 * KIB - 1
    server = musicd.start(extra_args=["--limit-rate", "32K"])
    status, fields, body, seconds, _ = read_paced(server.port, track.url_path,
                                                  headers={"Range": f"bytes={first}-{last}"})
    assert status == 206 and fields["content-range"] == f"bytes {first}-{last}/{track.size}"
    assert body == track.data[first:last + 1]
    assert_paced(seconds, len(body), 32 * KIB, slice_of(32 * KIB), "a 160 KiB range")


def test_a_multipart_answer_is_paced_with_its_part_headers(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--limit-rate", "32K", "--limit-rate-after", "16K"])
    ranges = [(0, 64 * KIB - 1), (2_000_000, 2_000_000 + 96 * KIB - 1)]
    status, fields, body, seconds, _ = read_paced(
        server.port, track.url_path,
        headers={"Range": "bytes=" + ",".join(f"{a}-{b}" for a, b in ranges)})
    assert status == 206
    parts = parse_multipart(fields["content-type"], body)
    assert [(p.first, p.last, p.data) for p in parts] == \
        [(a, b, track.data[a:b + 1]) for a, b in ranges]
    assert_paced(seconds, len(body), 32 * KIB, 16 * KIB + slice_of(32 * KIB),
                 "a multipart answer")


def test_a_gridfs_stream_is_paced(musicd, gridfs_file):
    track = gridfs_file(length=200_000, chunk_size=16 * KIB)
    server = musicd.start(extra_args=["--limit-rate", "32K", "--limit-rate-after", "32K",
                                      "--gridfs-window", "65536"])
    status, _, body, seconds, at = read_paced(server.port, track.url_path)
    assert status == 200 and body == track.data
    assert_paced(seconds, len(body), 32 * KIB, 32 * KIB + slice_of(32 * KIB), "a GridFS stream")


def test_the_gridfs_spools_copy_is_paced(musicd, gridfs_file, tmp_path):
    spool = tmp_path / "spool"
    track = gridfs_file(length=200_000, chunk_size=16 * KIB)
    server = musicd.start(extra_args=spool_args(spool) + ["--limit-rate", "32K",
                                                          "--limit-rate-after", "32K"])
    status, _, body, _, _ = read_paced(server.port, track.url_path)   # fills the spool
    assert status == 200 and body == track.data
    wait_for_copy(spool, track)
    status, _, body, seconds, _ = read_paced(server.port, track.url_path)
    assert status == 200 and body == track.data
    assert_paced(seconds, len(body), 32 * KIB, 32 * KIB + slice_of(32 * KIB), "the spool's copy")


def test_a_paced_file_goes_out_by_sendfile_a_slice_at_a_time(musicd, library, tmp_path):
    track = library.add(library.media.big, "big.mp3")
    rate = 2 * 1024 * KIB
    server = musicd.start(extra_args=["--limit-rate", "2M"])
    get_from("127.0.0.1", server, track.url_path, {"Range": "bytes=0-0"})   # the file cached
    with traced(server.pid, tmp_path) as trace:
        status, _, body, seconds, _ = read_paced(server.port, track.url_path)
    assert status == 200 and body == track.data
    assert_paced(seconds, track.size, rate, slice_of(rate), "2 MiB/s")
    calls = syscall_bytes(trace[0])
    sendfiles = calls.get("sendfile", [])
    assert sum(sendfiles) == track.size, f"sendfile moved {sum(sendfiles)} of {track.size}"
    # No write sends more than one slice: the pacing bounds what sendfile is handed.
    assert max(sendfiles) <= 2 * slice_of(rate), max(sendfiles)
    assert len(sendfiles) >= track.size // (2 * slice_of(rate)), len(sendfiles)
    written = sum(sum(calls.get(name, [])) for name in WRITE_CALLS)
    assert written < 64 * KIB, f"{written} bytes written through user space"


def test_a_body_within_limit_rate_after_and_a_head_go_at_once(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--limit-rate", "1K",
                                      "--limit-rate-after", str(track.size)])
    status, _, body, seconds, _ = read_paced(server.port, track.url_path)
    assert status == 200 and body == track.data
    assert seconds < 1.0, f"{track.size} bytes within --limit-rate-after took {seconds:.2f} s"
    t0 = time.monotonic()
    status, fields, body = get_from("127.0.0.1", server, track.url_path, method="HEAD")
    assert status == 200 and body == b"" and fields["content-length"] == str(track.size)
    assert time.monotonic() - t0 < 1.0


def test_without_limit_rate_a_body_goes_at_full_speed(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start()
    status, _, body, seconds, _ = read_paced(server.port, track.url_path)
    assert status == 200 and body == track.data
    assert seconds < scaled(3), f"4 MB unpaced took {seconds:.2f} s"
    assert metric(server, "musicd_paced_responses_total") == 0


def test_a_client_resetting_a_paced_stream_frees_it_at_once(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--limit-rate", "16K", "--max-streams-per-client", "1"])
    get_from("127.0.0.1", server, track.url_path, {"Range": "bytes=0-0"})   # the file cached
    baseline = server.fd_count()
    held = Held(server.port, track.url_path)
    assert held.status == 200
    held.sock.recv(20000)
    held.reset()   # while pacing waits for its next slice
    wait_streams(server, 0)
    wait_descriptors_back(server, baseline)
    status, _, body = get_from("127.0.0.1", server, track.url_path, {"Range": "bytes=0-99"})
    assert status == 206 and body == track.data[:100]


# -- the cap ----------------------------------------------------------------------------------

def test_beyond_the_cap_a_client_gets_429_with_retry_after_and_it_is_counted(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "2"])
    held = [Held(server.port, track.url_path, "127.0.0.2") for _ in range(2)]
    assert [h.status for h in held] == [200, 200]
    assert_429(get_from("127.0.0.2", server, track.url_path), retry_after="1")
    assert metric(server, "musicd_client_streams") == 2
    assert metric(server, "musicd_client_streams_refused_total") == 1
    # One stream ends: its place is free again.
    held[0].close()
    wait_streams(server, 1)
    status, _, body = get_from("127.0.0.2", server, track.url_path)
    assert status == 200 and body == track.data
    held[1].close()
    wait_streams(server, 0)


def test_the_cap_holds_across_workers(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "2", "--workers", "4"])
    server.wait_all_workers()
    held = [Held(server.port, track.url_path, "127.0.0.3") for _ in range(8)]
    # SO_REUSEPORT spreads 8 connections over 4 workers: a cap counted per worker would let
    # more than 2 through.
    assert sorted(h.status for h in held) == [200, 200] + [429] * 6
    for h in held:
        h.close()
    wait_streams(server, 0)


def test_each_client_address_has_a_cap_of_its_own(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "1"])
    first = Held(server.port, track.url_path, "127.0.0.4")
    assert first.status == 200
    assert get_from("127.0.0.4", server, track.url_path, {"Range": "bytes=0-9"})[0] == 429
    status, _, body = get_from("127.0.0.5", server, track.url_path, {"Range": "bytes=0-9"})
    assert status == 206 and body == track.data[:10]
    first.close()


def test_answers_without_a_body_are_not_counted_against_the_cap(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "1"])
    held = Held(server.port, track.url_path, "127.0.0.6")
    assert held.status == 200
    etag = held.headers["etag"]
    assert get_from("127.0.0.6", server, track.url_path, method="HEAD")[0] == 200
    assert get_from("127.0.0.6", server, track.url_path, {"If-None-Match": etag})[0] == 304
    assert get_from("127.0.0.6", server, track.url_path,
                    {"Range": f"bytes={track.size + 10}-"})[0] == 416
    assert get_from("127.0.0.6", server, "/musicdb/0123456789abcdef01234567/x.mp3")[0] == 404
    assert metric(server, "musicd_client_streams_refused_total") == 0
    held.close()


@pytest.mark.load
def test_a_download_manager_with_16_connections_gets_the_exact_file_within_a_cap_of_2(
        musicd, library, tmp_path):
    """aria2c -x16 -s16: 16 connections for one file; musicd lets 2 stream and answers 429 to
    the rest, which aria2 drops; the file still ends byte-exact. The streams are paced so that
    they last long enough to meet each other, and /metrics is watched all along."""
    source = tmp_path / "long.mp3"
    source.write_bytes(library.media.big.read_bytes() * 5)   # 20 MB of real mp3 frames
    track = library.add(source, "long.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "2", "--limit-rate", "2M",
                                      "--workers", "2"])
    peak, done = [0.0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], metric(server, "musicd_client_streams"))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out = tmp_path / "downloads"
    try:
        # -k1M: aria2 splits a file only into pieces of at least this (20 MiB by default).
        run = subprocess.run(["aria2c", "-x16", "-s16", "-k1M", "--max-tries=5",
                              "--retry-wait=1", "--allow-overwrite=true", "--summary-interval=0",
                              "--console-log-level=warn", "-d", str(out), "-o", "long.mp3",
                              server.url + track.url_path],
                             capture_output=True, text=True, timeout=scaled(120),
                             stdin=subprocess.DEVNULL)
    finally:
        done.set()
        watcher.join(10)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert (out / "long.mp3").read_bytes() == track.data
    statuses = [line.split('"')[2].split()[0] for line in server.access_log_lines()]
    assert statuses.count("429") >= 10, statuses   # aria2 did open its 16 connections
    assert peak[0] <= 2, f"{peak[0]} streams held at once"
    assert metric(server, "musicd_client_streams_refused_total") == statuses.count("429")


# -- a track the kernel's buffers take whole ------------------------------------------------
# A 2 MiB track goes into the socket buffers between musicd and a client reading slowly within a
# millisecond (on loopback the send buffer grows to 4 MiB): its answer is written long before the
# client has it. The place is held until the client's TCP acknowledged every byte.

TWO_MIB = 2 * 1024 * KIB
# Between two downloads a client opens: time for a server to write all it would of the ones open.
OPENING_PAUSE = 0.3


def two_mib_track(library, tmp_path):
    source = tmp_path / "two.mp3"
    source.write_bytes(library.media.big.read_bytes()[:TWO_MIB])
    return library.add(source, "two.mp3")


def open_downloads(port, target, source_ip, count, headers=None):
    """count downloads of target opened one after another by one client reading slowly (a small
    receive buffer, no body byte read): each once the head before it arrived and the server had
    OPENING_PAUSE to write what it would."""
    downloads = []
    for _ in range(count):
        downloads.append(Held(port, target, source_ip, headers))
        time.sleep(OPENING_PAUSE)
    return downloads


def test_a_client_reading_2_mib_tracks_slowly_gets_the_cap_and_429s(musicd, library, tmp_path):
    track = two_mib_track(library, tmp_path)
    server = musicd.start(extra_args=["--max-streams-per-client", "2"])
    downloads = open_downloads(server.port, track.url_path, "127.0.0.12", 6)
    assert [d.status for d in downloads] == [200, 200] + [429] * 4
    assert metric(server, "musicd_client_streams") == 2
    assert metric(server, "musicd_client_streams_refused_total") == 4
    # The two complete (the client reads them): their places come back.
    for d in downloads[:2]:
        assert d.read_body() == track.data
    wait_streams(server, 0)
    again = open_downloads(server.port, track.url_path, "127.0.0.12", 3)
    assert [d.status for d in again] == [200, 200, 429]
    for d in downloads + again:
        d.close()
    wait_streams(server, 0)


def test_places_held_for_unread_bytes_come_back_when_the_client_resets(musicd, library, tmp_path):
    track = two_mib_track(library, tmp_path)
    server = musicd.start(extra_args=["--max-streams-per-client", "2"])
    downloads = open_downloads(server.port, track.url_path, "127.0.0.13", 2)
    assert [d.status for d in downloads] == [200, 200]
    wait_streams(server, 2)
    for d in downloads:
        d.reset()
    wait_streams(server, 0)
    assert get_from("127.0.0.13", server, track.url_path)[2] == track.data


def test_a_kept_alive_connection_holds_no_place_once_the_client_has_the_bytes(musicd, library,
                                                                              tmp_path):
    track = two_mib_track(library, tmp_path)
    server = musicd.start(extra_args=["--max-streams-per-client", "1"])
    held = Held(server.port, track.url_path, "127.0.0.14")
    assert held.status == 200
    assert held.read_body() == track.data
    wait_streams(server, 0)   # the connection is open, idle, and everything arrived
    status, _, body = get_from("127.0.0.14", server, track.url_path)
    assert status == 200 and body == track.data
    held.close()


def test_the_next_request_on_a_connection_takes_over_its_place(musicd, library, tmp_path):
    """One connection's answers go out in order, one at a time: a request sent on it while the
    last answer is still on its way to the client is no second stream."""
    track = two_mib_track(library, tmp_path)
    server = musicd.start(extra_args=["--max-streams-per-client", "1"])
    held = Held(server.port, track.url_path, "127.0.0.15")
    assert held.status == 200
    time.sleep(OPENING_PAUSE)   # the answer is written; the client read nothing of it
    assert get_from("127.0.0.15", server, track.url_path)[0] == 429   # another connection
    held.sock.sendall(request(track.url_path, {"Range": "bytes=0-99"}))
    assert held.read_body() == track.data
    held.next_answer()
    assert held.status == 206, held.headers
    assert held.read_body() == track.data[:100]
    assert metric(server, "musicd_client_streams_refused_total") == 1
    wait_streams(server, 0)
    held.close()


def test_a_closing_answer_holds_its_place_until_the_client_has_the_bytes(musicd, library,
                                                                         tmp_path):
    """Connection: close: the socket is shut down after the answer, and kept (past the lingering
    close's 2 s) until the client has what it has not read yet; so is a client that half-closed
    after its request."""
    track = two_mib_track(library, tmp_path)
    server = musicd.start(extra_args=["--max-streams-per-client", "2"])
    closing = Held(server.port, track.url_path, "127.0.0.16", {"Connection": "close"})
    half_closed = connect_from("127.0.0.16", server.port, rcvbuf=HOLD_RCVBUF)
    half_closed.sendall(request(track.url_path))
    half_closed.shutdown(socket.SHUT_WR)
    assert closing.status == 200 and read_head(half_closed)[0] == 200
    time.sleep(3)   # LINGER_MS, and more
    assert metric(server, "musicd_client_streams") == 2
    assert get_from("127.0.0.16", server, track.url_path)[0] == 429
    assert closing.read_body() == track.data
    wait_streams(server, 1)
    half_closed.close()
    wait_streams(server, 0)
    closing.close()


# -- attacks ----------------------------------------------------------------------------------

@pytest.mark.load
def test_many_connections_from_one_address_get_the_cap_and_429s(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "2"])
    get_from("127.0.0.1", server, track.url_path, {"Range": "bytes=0-0"})   # the file cached
    baseline = server.fd_count()
    socks = []
    for _ in range(300):
        sock = connect_from("127.0.0.7", server.port, rcvbuf=HOLD_RCVBUF)
        sock.sendall(request(track.url_path))
        socks.append(sock)
    statuses = [read_head(sock)[0] for sock in socks]
    assert sorted(statuses) == [200, 200] + [429] * 298
    # Meanwhile another client is served as usual.
    status, _, body = get_from("127.0.0.8", server, track.url_path, {"Range": "bytes=0-99"})
    assert status == 206 and body == track.data[:100]
    for sock in socks:
        sock.close()
    wait_streams(server, 0)
    wait_descriptors_back(server, baseline)


def test_streams_reset_mid_body_leave_no_count_behind(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "2"])
    for _ in range(5):
        held = [Held(server.port, track.url_path, "127.0.0.9") for _ in range(2)]
        assert [h.status for h in held] == [200, 200]
        for h in held:
            h.sock.recv(1000)
            h.reset()
        wait_streams(server, 0)
    again = [Held(server.port, track.url_path, "127.0.0.9") for _ in range(3)]
    assert [h.status for h in again] == [200, 200, 429]
    for h in again:
        h.close()


def test_x_forwarded_for_from_an_untrusted_peer_changes_nothing(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--max-streams-per-client", "1", "--limit-rate", "64K",
                                      "--trusted-proxy", "10.0.0.0/8"])
    first = Held(server.port, track.url_path, "127.0.0.10", {"X-Forwarded-For": "198.51.100.1"})
    assert first.status == 200 and "x-accel-limit-rate" not in first.headers
    for forged in ("198.51.100.2", "10.0.0.1", "203.0.113.5, 10.0.0.1", "unknown"):
        status, fields, _ = get_from("127.0.0.10", server, track.url_path,
                                     {"X-Forwarded-For": forged})
        assert status == 429, forged
        assert "x-accel-limit-rate" not in fields
    first.close()


def test_a_trusted_proxys_own_requests_are_neither_capped_nor_paced(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32",
                                      "--max-streams-per-client", "1", "--limit-rate", "16K"])
    held = [Held(server.port, track.url_path, "127.0.0.1") for _ in range(3)]
    assert [h.status for h in held] == [200, 200, 200]
    assert all("x-accel-limit-rate" not in h.headers for h in held)
    # X-Forwarded-For naming only trusted hops is the proxy's own request too.
    status, fields, body, seconds, _ = read_paced(server.port, track.url_path,
                                                  headers={"X-Forwarded-For": "127.0.0.1"})
    assert status == 200 and body == track.data and "x-accel-limit-rate" not in fields
    assert seconds < scaled(3), f"a trusted proxy's fetch took {seconds:.2f} s"
    assert metric(server, "musicd_client_streams") == 0
    for h in held:
        h.close()


def test_behind_a_trusted_proxy_the_named_client_is_capped_and_the_rate_handed_on(musicd,
                                                                                   library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32",
                                      "--max-streams-per-client", "1", "--limit-rate", "16K",
                                      "--limit-rate-after", "64K"])
    held = Held(server.port, track.url_path, "127.0.0.1", {"X-Forwarded-For": "198.51.100.7"})
    assert held.status == 200
    assert held.headers["x-accel-limit-rate"] == str(16 * KIB)
    assert held.headers["x-accel-limit-rate-after"] == str(64 * KIB)
    assert held.headers["x-accel-buffering"] == "yes"
    assert get_from("127.0.0.1", server, track.url_path,
                    {"X-Forwarded-For": "198.51.100.7"})[0] == 429
    # Another client behind the same proxy; musicd sends at full speed, the proxy paces.
    status, fields, body, seconds, _ = read_paced(server.port, track.url_path,
                                                  headers={"X-Forwarded-For": "198.51.100.8"})
    assert status == 200 and body == track.data
    assert fields["x-accel-limit-rate"] == str(16 * KIB)
    assert seconds < scaled(3), f"musicd paced a proxied client itself: {seconds:.2f} s"
    assert metric(server, "musicd_paced_responses_total") == 0
    held.close()


# -- IPv6 clients: one home network or phone is one /64 --------------------------------------
# Loopback has one IPv6 address, so the clients are named by a trusted proxy's X-Forwarded-For.

def streams_of(server, track, clients, cap_headers=None):
    """A held stream for each X-Forwarded-For client in turn, through a trusted proxy at
    127.0.0.1: their statuses (the streams are closed after)."""
    held = [Held(server.port, track.url_path, "127.0.0.1", {"X-Forwarded-For": client})
            for client in clients]
    statuses = [h.status for h in held]
    for h in held:
        h.close()
    wait_streams(server, 0)
    return statuses


def test_ipv6_clients_of_one_64_share_the_cap(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32",
                                      "--max-streams-per-client", "2"])
    one_64 = ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff:ffff:ffff:ffff",
              "2001:0DB8:1:2:0:0:0:3", "2001:db8:1:2:8000::", "2001:db8:1:2:1:2:3:4"]
    assert streams_of(server, track, one_64) == [200, 200, 429, 429, 429, 429]
    assert metric(server, "musicd_client_streams_refused_total") == 4


def test_ipv6_clients_of_other_64s_have_caps_of_their_own(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32",
                                      "--max-streams-per-client", "1"])
    other_64s = ["2001:db8:1:2::1", "2001:db8:1:3::1", "2001:db8:2:2::1", "2001:db9:1:2::1",
                 "2001:db8:1:2:ffff::1"]   # the last one shares the first one's /64
    assert streams_of(server, track, other_64s) == [200, 200, 200, 200, 429]


def test_client_ipv6_prefix_sets_how_many_bits_make_a_client(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32",
                                      "--max-streams-per-client", "1",
                                      "--client-ipv6-prefix", "56"])
    # A /56: 2001:db8:1:200::/56 holds 2001:db8:1:2ff::; 2001:db8:1:300:: is another one.
    clients = ["2001:db8:1:200::1", "2001:db8:1:2ff::1", "2001:db8:1:300::1"]
    assert streams_of(server, track, clients) == [200, 429, 200]
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32",
                                      "--max-streams-per-client", "1",
                                      "--client-ipv6-prefix", "128"])
    one_64 = ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::1"]
    assert streams_of(server, track, one_64) == [200, 200, 429]


def test_an_ipv4_mapped_client_is_its_ipv4_address(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32",
                                      "--max-streams-per-client", "1"])
    # Not a /64 of IPv6 (::ffff:0:0/64 would hold every IPv4 client): one address, one client.
    clients = ["198.51.100.9", "::ffff:198.51.100.9", "::ffff:198.51.100.10", "198.51.100.10"]
    assert streams_of(server, track, clients) == [200, 429, 200, 429]


def test_offloaded_answers_hand_the_rate_to_nginx_and_hold_no_stream(musicd, library):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start(extra_args=["--x-accel-redirect", "/protected/music/",
                                      "--limit-rate", "16K", "--limit-rate-after", "64K",
                                      "--max-streams-per-client", "1"])
    for _ in range(3):
        status, fields, body = get_from("127.0.0.11", server, track.url_path)
        assert status == 200 and body == b""
        assert fields["x-accel-redirect"] == "/protected/music/big.mp3"
        assert fields["x-accel-limit-rate"] == str(16 * KIB)
        assert fields["x-accel-limit-rate-after"] == str(64 * KIB)
        assert "x-accel-buffering" not in fields
    assert metric(server, "musicd_client_streams_refused_total") == 0
