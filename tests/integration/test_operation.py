"""Running musicd: the access log, and stopping with SIGTERM/SIGINT."""

import datetime
import hashlib
import os
import re
import signal
import socket
import time

import pytest
import requests
from bson import ObjectId

import httpraw
from media import sha256_file
from support import REPO, scaled, wait_until

TIMEOUT = scaled(10)

COMBINED = re.compile(
    r'^(?P<host>\S+) - - \[(?P<time>\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})\] '
    r'"(?P<request>[^"]*)" (?P<status>\d{3}) (?P<bytes>\d+|-) '
    r'"(?P<referer>[^"]*)" "(?P<agent>[^"]*)" (?P<seconds>\d+(\.\d+)?)$')


def parse_access_line(line):
    m = COMBINED.match(line)
    assert m, f"not combined log format + response time: {line!r}"
    return m.groupdict()


def test_access_log_has_one_combined_line_per_request(server, library):
    track = library.add(library.media.short, "short.mp3")
    missing = f"/musicdb/{ObjectId()}/gone.mp3"
    before = time.time()
    requests.get(server.url + track.url_path, timeout=TIMEOUT,
                 headers={"User-Agent": "TestPlayer/1.0", "Referer": "http://example.test/p"})
    requests.head(server.url + track.url_path, timeout=TIMEOUT)
    requests.get(server.url + missing, timeout=TIMEOUT)
    requests.get(server.url + "/musicdb/123/x.mp3", timeout=TIMEOUT)
    lines = server.wait_for_access_log(4)
    time.sleep(0.2)
    lines = server.access_log_lines()
    assert len(lines) == 4, lines
    entries = [parse_access_line(line) for line in lines]
    get, head, notfound, bad = entries
    assert get["host"] == "127.0.0.1"
    assert get["request"] == f"GET {track.url_path} HTTP/1.1"
    assert get["status"] == "200" and get["bytes"] == str(track.size)
    assert get["referer"] == "http://example.test/p" and get["agent"] == "TestPlayer/1.0"
    assert head["request"] == f"HEAD {track.url_path} HTTP/1.1"
    assert head["status"] == "200" and head["bytes"] in ("0", "-")
    assert head["referer"] == "-"
    assert head["agent"].startswith("python-requests/")
    assert notfound["request"] == f"GET {missing} HTTP/1.1" and notfound["status"] == "404"
    assert bad["status"] == "400"
    for e in entries:
        logged = datetime.datetime.strptime(e["time"], "%d/%b/%Y:%H:%M:%S %z").timestamp()
        assert before - 2 <= logged <= time.time() + 2, e["time"]
        assert float(e["seconds"]) < scaled(5)


def test_access_log_dash_writes_to_stdout(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(access_log="-")
    requests.get(server.url + track.url_path, timeout=TIMEOUT)

    def logged():
        return [line for line in server.stdout_text().splitlines() if track.url_path in line]
    lines = wait_until(logged, scaled(5), message="the access log line on stdout")
    assert parse_access_line(lines[0])["status"] == "200"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_musicd_with_status_0(server, library, sig):
    track = library.add(library.media.short, "short.mp3")
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    assert server.stop(sig) == 0
    assert not server.running


def _tgkill(pid, tid, sig):
    """Sends sig to one thread of another process (no Python API does)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    SYS_tgkill = 234  # x86_64
    if libc.syscall(SYS_tgkill, pid, tid, int(sig)) != 0:
        raise OSError(ctypes.get_errno(), "tgkill")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_aimed_at_any_thread_but_main_never_kills_musicd(server, library, sig):
    # Every thread blocks the stop signals (main takes them with sigwait): one delivered to a
    # worker, lookup or lease thread must neither end the process by its default action nor
    # stop it; a stop signal to the process still stops it with status 0.
    track = library.add(library.media.short, "short.mp3")
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    threads = [int(t) for t in os.listdir(f"/proc/{server.pid}/task") if int(t) != server.pid]
    assert len(threads) >= 3, threads
    for tid in threads:
        _tgkill(server.pid, tid, sig)
    time.sleep(scaled(0.5))
    assert server.running, "a stop signal to one thread ended musicd"
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    assert server.stop(sig) == 0


def _probe(port):
    """What a new client gets: 'refused', 'no answer' or 'served'."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
    except OSError:
        return "refused"
    with s:
        try:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(0.5)
            return "served" if s.recv(1) else "no answer"
        except OSError:
            return "no answer"


def test_sigterm_lets_the_download_in_flight_finish(server, library):
    big = library.add(library.media.big, "big.mp3")
    s = httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=8192)
    s.sendall(httpraw.request_bytes("GET", big.url_path, headers={"Connection": "close"}))
    reader = httpraw.Reader(s)
    head = reader.read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    first = reader.read_exactly(65536)
    server.send_signal(signal.SIGTERM)
    wait_until(lambda: _probe(server.port) != "served", scaled(3),
               message="musicd to stop taking new requests")
    body = first + reader.read_exactly(big.size - len(first))
    s.close()
    assert hashlib.sha256(body).hexdigest() == sha256_file(big.path)
    assert server.wait() == 0


def test_access_log_off_writes_no_lines(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(access_log="off")
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    assert server.stop() == 0
    assert track.url_path not in server.stdout_text()
    assert track.url_path not in server.stderr_text()


def test_each_worker_listens_on_its_own_socket(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--workers", "3"])
    server.wait_all_workers()
    listening = server.listening_fds()
    assert len(listening) == 3, server.sockets()
    for _ in range(6):  # new connections, spread by the kernel over the three
        resp = requests.get(server.url + track.url_path, timeout=TIMEOUT,
                            headers={"Connection": "close"})
        assert resp.status_code == 200 and resp.content == track.data


def test_each_worker_holds_the_descriptors_the_budget_counts_for_it(musicd, library):
    # descriptor_budget.h's DESCRIPTORS_PER_WORKER is what start-up plans with; a worker that
    # came to hold more would make musicd fail half-started at a tight limit.
    header = (REPO / "server" / "ops" / "descriptor_budget.h").read_text()
    per_worker = int(re.search(r"#define DESCRIPTORS_PER_WORKER (\d+)", header).group(1))
    counts = {}
    for workers in (1, 9):
        server = musicd.start(extra_args=["--workers", str(workers)])
        server.wait_all_workers()
        listening = set(server.listening_fds())
        # the kinds a worker holds (epoll, eventfd, pipes, its listener), not the files and
        # database sockets the pool's monitor opens and closes at moments of its own choosing
        # (getaddrinfo reads /etc/hosts, a reconnect makes a socket)
        counts[workers] = len([fd for fd, target in server.fds().items()
                               if target.startswith(("anon_inode:", "pipe:"))
                               or fd in listening])
        assert server.stop() == 0
    assert counts[9] - counts[1] == 8 * per_worker, counts


def test_log_level_error_keeps_stderr_quiet_when_all_is_well(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--log-level", "error"])
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    assert server.stop() == 0
    assert server.stderr_text().strip() == ""


def test_log_level_debug_says_more_than_the_default(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    texts = []
    for extra in ([], ["--log-level", "debug"]):
        server = musicd.start(extra_args=extra)
        assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
        assert server.stop() == 0
        texts.append(server.stderr_text())
    default, debug = (len(t.splitlines()) for t in texts)
    assert debug > default, texts[1]
