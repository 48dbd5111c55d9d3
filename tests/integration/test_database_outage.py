"""The database going away, stalling and coming back, with musicd running throughout."""

import email.utils
import hashlib
import re
import threading
import time

import pytest
import requests
from bson import ObjectId

import httpraw
from assertions import assert_error, assert_file_response
from media import Library, sha256_file
from support import free_port, scaled, wait_until

# Each test bounds how long its answers may take: timed (conftest.py).
pytestmark = pytest.mark.timing

LOOKUP_TIMEOUT_MS = 1000


def assert_retry_after(resp):
    """Retry-After is delay-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    value = resp.headers.get("Retry-After", "")
    if value.isdigit():
        return
    try:
        email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        raise AssertionError(f"Retry-After {value!r} is neither seconds nor an HTTP-date")
TIMEOUT = scaled(10)


def test_database_down_is_503_then_200_again_when_it_is_back(musicd, restartable_db, media,
                                                               tmp_path):
    library = Library(tmp_path / "media", restartable_db.db, media)
    warm = library.add(media.short, "warm.mp3")
    # requested only while the database is down (a lookup cache cannot answer for it)
    track = library.add(media.short, "short.mp3")
    server = musicd.start(mongodb_uri=restartable_db.uri, database=restartable_db.db.name,
                          extra_args=["--lookup-timeout", str(LOOKUP_TIMEOUT_MS)])
    url = server.url + track.url_path
    assert_file_response(requests.get(server.url + warm.url_path, timeout=TIMEOUT), warm.path)

    restartable_db.stop()
    for _ in range(3):
        t0 = time.monotonic()
        resp = requests.get(url, timeout=TIMEOUT)
        elapsed = time.monotonic() - t0
        assert_error(resp, 503)
        assert_retry_after(resp)
        assert elapsed < scaled(LOOKUP_TIMEOUT_MS / 1000 + 1.5), f"503 took {elapsed:.2f}s"

    restartable_db.start()
    pid = server.pid

    def served():
        resp = requests.get(url, timeout=TIMEOUT)
        assert resp.status_code in (200, 503), resp.status_code
        return resp.status_code == 200 and resp

    resp = wait_until(served, scaled(20), interval=0.25, message="200 after the database is back")
    assert_file_response(resp, track.path)
    assert server.running and server.pid == pid


def test_requests_not_needing_the_database_are_answered_while_it_is_down(musicd, restartable_db,
                                                                          media, tmp_path):
    library = Library(tmp_path / "media", restartable_db.db, media)
    track = library.add(media.short, "short.mp3")
    server = musicd.start(mongodb_uri=restartable_db.uri, database=restartable_db.db.name,
                          extra_args=["--lookup-timeout", str(LOOKUP_TIMEOUT_MS)])
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    restartable_db.stop()
    t0 = time.monotonic()
    assert_error(requests.get(server.url + "/musicdb/nothex/x.mp3", timeout=TIMEOUT), 400)
    assert_error(requests.get(server.url + "/elsewhere", timeout=TIMEOUT), 404)
    assert_error(requests.post(server.url + track.url_path, timeout=TIMEOUT), 405)
    assert time.monotonic() - t0 < scaled(1.0)


def test_stalled_database_does_not_stall_downloads_in_flight(musicd, library, db_proxy):
    big = library.add(library.media.big, "big.mp3")
    others = [library.add(library.media.short, f"other{i}.mp3") for i in range(3)]
    server = musicd.start(mongodb_uri=db_proxy.uri,
                          extra_args=["--workers", "1", "--lookup-threads", "4",
                                      "--lookup-timeout", "3000"])
    # a download that has started (its lookup is done) ...
    s = httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=8192)
    s.sendall(httpraw.request_bytes("GET", big.url_path, headers={"Connection": "close"}))
    reader = httpraw.Reader(s)
    head = reader.read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    first = reader.read_exactly(65536)
    # ... then the database stalls: answers take 30 s, and lookups pile up
    db_proxy.proxy.delay_to_client = 30
    stalled = []

    def lookup(track):
        t0 = time.monotonic()
        resp = requests.get(server.url + track.url_path, timeout=scaled(15))
        stalled.append((resp.status_code, time.monotonic() - t0, resp))

    threads = [threading.Thread(target=lookup, args=(t,)) for t in others]
    for t in threads:
        t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    body = first + reader.read_exactly(big.size - len(first))
    elapsed = time.monotonic() - t0
    s.close()
    assert hashlib.sha256(body).hexdigest() == sha256_file(big.path)
    assert elapsed < scaled(2.0), f"the download took {elapsed:.1f}s while lookups were stalled"
    for t in threads:
        t.join(scaled(20))
    assert [code for code, _, _ in stalled] == [503] * len(others)
    for _, took, resp in stalled:
        assert took < scaled(3.0 + 2.0), f"503 after {took:.1f}s"
        assert_retry_after(resp)
    db_proxy.proxy.delay_to_client = 0
    # the proxy still holds the stalled answers for a while: cut those connections
    db_proxy.proxy.restart()
    resp = wait_until(lambda: (r := requests.get(server.url + others[0].url_path,
                                                 timeout=TIMEOUT)).status_code == 200 and r,
                      scaled(20), interval=0.25, message="200 once the database answers again")
    assert_file_response(resp, others[0].path)
    assert_error(requests.get(f"{server.url}/musicdb/{ObjectId()}/x.mp3", timeout=TIMEOUT), 404)


# -- a database unreachable from the start: one warning, as soon as musicd knows ----------------
# (fail before: musicd started without a word, and only each 503's own line said why.)
UNREACHABLE_WARNING = "database: no server could be selected within"


def test_an_unreachable_database_at_start_is_one_warning_and_the_start_does_not_wait(musicd,
                                                                                      library):
    dead = f"mongodb://127.0.0.1:{free_port()}/"  # nothing listens there
    server = musicd.start(mongodb_uri=dead, extra_args=["--lookup-timeout", "3000"])
    # Serving before the database is heard from: the loops do not wait for it.
    assert_error(requests.get(server.url + "/musicdb/nothex/x.mp3", timeout=TIMEOUT), 400)
    assert UNREACHABLE_WARNING not in server.stderr_text()
    lines = server.wait_for_stderr(UNREACHABLE_WARNING, timeout=15)
    assert "warn: " in lines[0] and "within 3000 ms" in lines[0], lines
    assert "track requests get 503 until one can" in lines[0], lines
    text = server.stderr_text()
    assert text.index("listening on") < text.index(UNREACHABLE_WARNING), text
    # Lookups failing afterwards say so each, but the warning is not repeated.
    track = library.add(library.media.short, "short.mp3")
    assert_error(requests.get(server.url + track.url_path, timeout=TIMEOUT), 503)
    assert server.stderr_text().count(UNREACHABLE_WARNING) == 1, server.stderr_text()


def test_a_reachable_database_at_start_is_named_and_not_warned_about(musicd, library):
    server = musicd.start()
    line = server.wait_for_stderr("database: reached ")[0]
    assert re.search(r" info: database: reached \S+:\d+ \(\w+\)$", line), line
    assert UNREACHABLE_WARNING not in server.stderr_text()
