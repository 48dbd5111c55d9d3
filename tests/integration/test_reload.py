"""SIGHUP re-reads the config file (docs/operating.md, "Reloading settings", issue 9): live settings
reach the requests that start after the reload, including files already in the open-file cache;
connections and downloads in flight are untouched; restart-only settings that differ are named
in one warning and left as they run; a file that fails changes nothing and is reported; many
reloads under load fail no request. Without --config, SIGHUP changes nothing and does not stop
musicd.

Each test writes its own config file holding every setting (listen, database, media root,
access log included: flags would override the file), starts musicd with only --config FILE, and
rewrites the file (atomically, by rename) before each SIGHUP."""

import hashlib
import os
import re
import signal
import threading
import time

import pytest
from bson import ObjectId

import httpraw
from pacing import timed_get
from support import free_port, port_accepts, scaled, wait_until
from test_limits import Held, slice_of

TIMEOUT = scaled(10)
RELOADED = "SIGHUP: settings reloaded"
UNCHANGED = "settings unchanged"
LOAD_RELOADS = 20          # SIGHUPs sent while clients run
LOAD_BURST = 10            # SIGHUPs sent back to back after those
LOAD_CLIENTS = 3           # keep-alive clients, each on its own connection
LOAD_LIMIT_SECONDS = 120   # the whole load test, however slow the machine


class Reloadable:
    """A musicd started with --config only, and the file it reads."""

    def __init__(self, musicd, tmp_path, settings):
        self.path = tmp_path / "musicd.conf"
        self.settings = dict(settings)
        self.write()
        self.port = int(self.settings["listen"].rsplit(":", 1)[1])
        self.server = musicd.start(base_args=False, port=self.port,
                                   extra_args=["--config", self.path])

    def write(self, **changes):
        """Rewrite the file with changes (name=value, "_" for "-"; None removes a setting)."""
        for name, value in changes.items():
            key = name.replace("_", "-")
            if value is None:
                self.settings.pop(key, None)
            else:
                self.settings[key] = value
        lines = []
        for key, value in self.settings.items():
            for item in value if isinstance(value, list) else [value]:
                lines.append(f"{key} = {item}")
        self.write_text("\n".join(lines) + "\n")

    def write_text(self, text):
        fresh = self.path.with_suffix(".new")
        fresh.write_text(text)
        os.replace(fresh, self.path)

    def count(self, text):
        return sum(1 for line in self.server.stderr_text().splitlines() if text in line)

    def hup(self, expect=RELOADED):
        """SIGHUP, then wait until stderr has one more line containing expect; return it."""
        before = self.count(expect)
        self.server.send_signal(signal.SIGHUP)
        wait_until(lambda: self.count(expect) > before, TIMEOUT,
                   message=f"one more {expect!r} line\n{self.server.stderr_text()}")
        return [line for line in self.server.stderr_text().splitlines() if expect in line][-1]

    def get(self, target, headers=None):
        got = timed_get(self.port, target if isinstance(target, str) else target.url_path,
                        headers=headers, timeout=TIMEOUT)
        assert got.response is not None, got
        return got.response


def base_settings(mongo, db, library, tmp_path, **extra):
    settings = {
        "listen": f"127.0.0.1:{free_port()}",
        "mongodb-uri": mongo.uri,
        "database": db.name,
        "media-root": str(library.root),
        "workers": "2",
        "access-log": str(tmp_path / "access.log"),
        "log-level": "info",
        "cache-control": "public, max-age=111",
        "error-cache-control": "no-store",
    }
    settings.update({k.replace("_", "-"): v for k, v in extra.items()})
    return settings


def start(musicd, mongo, db, library, tmp_path, **extra):
    return Reloadable(musicd, tmp_path, base_settings(mongo, db, library, tmp_path, **extra))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def access_clients(path):
    """The client field of every line of the access log at path."""
    if not os.path.exists(path):
        return []
    return [line.split()[0] for line in open(path).read().splitlines() if line.strip()]


# -- live settings --------------------------------------------------------------------------

def test_cache_control_of_a_file_already_in_the_open_file_cache_changes(musicd, mongo, db,
                                                                        library, tmp_path):
    track = library.add(library.media.short, "cached.mp3")
    r = start(musicd, mongo, db, library, tmp_path)
    for _ in range(2):  # the second is an open-file cache hit: its head lines precomputed
        first = r.get(track)
        assert first.status == 200 and first.body == track.data
        assert first.header("Cache-Control") == "public, max-age=111"
    etag = first.header("ETag")

    r.write(cache_control="private, max-age=7")
    line = r.hup()
    assert "changed cache-control" in line, line

    after = r.get(track)
    assert after.status == 200 and after.body == track.data
    assert after.header("Cache-Control") == "private, max-age=7"
    assert after.header_all("Cache-Control") == ["private, max-age=7"]
    assert after.header("ETag") == etag  # the file is the same; only the settings changed
    not_modified = r.get(track, {"If-None-Match": etag})
    assert not_modified.status == 304
    assert not_modified.header("Cache-Control") == "private, max-age=7"
    ranged = r.get(track, {"Range": "bytes=0-99"})
    assert ranged.status == 206 and ranged.body == track.data[:100]
    assert ranged.header("Cache-Control") == "private, max-age=7"

    r.write(cache_control="off")
    r.hup()
    assert r.get(track).header("Cache-Control") is None


def open_file_cache_counts(server):
    """(hits, misses) of the open-file cache from the shutdown log (after server.stop())."""
    match = re.search(r"open-file cache: (\d+) hits, (\d+) misses", server.stderr_text())
    assert match, server.stderr_text()
    return int(match[1]), int(match[2])


def test_a_reload_of_other_settings_leaves_cached_files_cached(musicd, mongo, db, library,
                                                                tmp_path):
    track = library.add(library.media.short, "hot.mp3")
    r = start(musicd, mongo, db, library, tmp_path, lookup_cache_ttl="3600")
    assert r.get(track).status == 200          # a miss: opened and cached
    r.write(log_level="debug", max_ranges="4")
    r.hup()
    for _ in range(2):                         # hits: Cache-Control is unchanged
        got = r.get(track)
        assert got.status == 200 and got.header("Cache-Control") == "public, max-age=111"
    r.write(cache_control="no-cache")
    r.hup()
    assert r.get(track).header("Cache-Control") == "no-cache"  # a miss: its lines were stale
    assert r.server.stop() == 0
    assert open_file_cache_counts(r.server) == (2, 2)


def test_cors_origins_change(musicd, mongo, db, library, tmp_path):
    track = library.add(library.media.short, "cors.mp3")
    r = start(musicd, mongo, db, library, tmp_path, cors_origin=["http://a.test"])
    first = r.get(track, {"Origin": "http://a.test"})
    assert first.header("Access-Control-Allow-Origin") == "http://a.test"
    assert r.get(track, {"Origin": "http://b.test"}).header("Access-Control-Allow-Origin") is None

    r.write(cors_origin=["http://b.test", "http://c.test"])
    assert "changed cors-origin" in r.hup()
    after = r.get(track, {"Origin": "http://b.test"})
    assert after.status == 200 and after.body == track.data
    assert after.header("Access-Control-Allow-Origin") == "http://b.test"
    assert r.get(track, {"Origin": "http://a.test"}).header("Access-Control-Allow-Origin") is None

    r.write(cors_origin=None)  # back to the default, off: no CORS headers, OPTIONS refused
    r.hup()
    assert r.get(track, {"Origin": "http://b.test"}).header("Access-Control-Allow-Origin") is None


def test_error_cache_control_changes(musicd, mongo, db, library, tmp_path):
    r = start(musicd, mongo, db, library, tmp_path)
    missing = f"/musicdb/{ObjectId()}/gone.mp3"
    before = r.get(missing)
    assert before.status == 404 and before.header("Cache-Control") == "no-store"
    r.write(error_cache_control="max-age=3")
    assert "changed error-cache-control" in r.hup()
    after = r.get(missing)
    assert after.status == 404 and after.header("Cache-Control") == "max-age=3"
    assert r.get("/musicdb/not-an-id/x.mp3").header("Cache-Control") == "max-age=3"


def test_log_level_changes(musicd, mongo, db, library, tmp_path):
    r = start(musicd, mongo, db, library, tmp_path, log_level="info")
    first, second = ObjectId(), ObjectId()
    assert r.get(f"/musicdb/{first}/x.mp3").status == 404
    r.write(log_level="debug")
    assert "changed log-level" in r.hup()
    assert r.get(f"/musicdb/{second}/x.mp3").status == 404
    r.server.wait_for_stderr(f"mid={second}: no such document")
    # Logged at debug only: the request before the reload wrote no such line.
    assert f"mid={first}" not in r.server.stderr_text()

    r.write(log_level="error")
    r.server.send_signal(signal.SIGHUP)
    third = ObjectId()

    def quiet_now():
        # The reload's own info line is below the new level; a debug line no longer appears.
        marker = ObjectId()
        assert r.get(f"/musicdb/{marker}/x.mp3").status == 404
        time.sleep(0.05)
        return f"mid={marker}" not in r.server.stderr_text()
    wait_until(quiet_now, TIMEOUT, message="debug lines to stop after log-level = error")
    assert r.get(f"/musicdb/{third}/x.mp3").status == 404
    time.sleep(0.2)
    assert f"mid={third}" not in r.server.stderr_text()


def test_trusted_proxy_changes(musicd, mongo, db, library, tmp_path):
    track = library.add(library.media.short, "proxied.mp3")
    r = start(musicd, mongo, db, library, tmp_path)
    log = tmp_path / "access.log"
    forwarded = {"X-Forwarded-For": "198.51.100.7"}
    assert r.get(track, forwarded).status == 200
    wait_until(lambda: len(access_clients(log)) == 1, TIMEOUT, message="one access log line")
    assert access_clients(log) == ["127.0.0.1"]  # not trusted: the peer is the client

    r.write(trusted_proxy="127.0.0.1/32")
    assert "changed trusted-proxy" in r.hup()
    assert r.get(track, forwarded).status == 200
    wait_until(lambda: len(access_clients(log)) == 2, TIMEOUT, message="two access log lines")
    assert access_clients(log) == ["127.0.0.1", "198.51.100.7"]

    r.write(trusted_proxy=None)
    r.hup()
    assert r.get(track, forwarded).status == 200
    wait_until(lambda: len(access_clients(log)) == 3, TIMEOUT, message="three access log lines")
    assert access_clients(log)[2] == "127.0.0.1"


def test_per_client_limits_change(musicd, mongo, db, library, tmp_path):
    track = library.add(library.media.big, "limited.mp3")
    r = start(musicd, mongo, db, library, tmp_path)
    first = timed_get(r.port, track.url_path, timeout=TIMEOUT)
    assert first.status == 200 and first.elapsed < scaled(3), first

    rate = 1024 * 1024
    r.write(limit_rate="1M", max_streams_per_client="1")
    line = r.hup()
    assert "limit-rate" in line and "max-streams-per-client" in line, line
    paced = timed_get(r.port, track.url_path, timeout=scaled(30))
    assert paced.status == 200 and paced.sha256 == sha256(track.data)
    expected = (track.size - slice_of(rate)) / rate
    assert 0.9 * expected <= paced.elapsed <= 1.1 * expected, (paced, expected)
    # The paced answer's place goes back when musicd reads the client's FIN, which can come
    # after the next connection's request has been read: a refusal then is retried, bounded.
    held = first_admitted(lambda: Held(r.port, track.url_path), scaled(2))
    assert held.status == 200
    assert r.get(track).status == 429
    held.close()

    r.write(limit_rate=None, max_streams_per_client=None)
    r.hup()
    again = [timed_get(r.port, track.url_path, timeout=TIMEOUT) for _ in range(2)]
    assert [g.status for g in again] == [200, 200] and again[0].elapsed < scaled(3), again


def first_admitted(open_held, seconds):
    """open_held() until one is not refused (429), for at most seconds; the last one."""
    deadline = time.monotonic() + seconds
    while True:
        held = open_held()
        if held.status != 429 or time.monotonic() >= deadline:
            return held
        held.close()
        time.sleep(0.02)


def test_client_ipv6_prefix_changes(musicd, mongo, db, library, tmp_path):
    track = library.add(library.media.big, "limited.mp3")
    r = start(musicd, mongo, db, library, tmp_path, trusted_proxy="127.0.0.1/32",
              max_streams_per_client="1")
    held = Held(r.port, track.url_path, headers={"X-Forwarded-For": "2001:db8:1:2::1"})
    assert held.status == 200
    neighbour = {"X-Forwarded-For": "2001:db8:1:2::2"}
    assert r.get(track, neighbour).status == 429   # the same /64
    r.write(client_ipv6_prefix="128")
    assert "client-ipv6-prefix" in r.hup()
    assert r.get(track, neighbour).status == 200   # an address of its own now
    held.close()


def test_lookup_cache_ttl_changes_for_ids_already_cached(musicd, mongo, db, library, tmp_path):
    track = library.add(library.media.short, "before.mp3")
    other = library.place(library.media.big, "after.mp3")
    r = start(musicd, mongo, db, library, tmp_path, lookup_cache_ttl="3600")
    assert r.get(track).body == track.data
    db.collection.update_one({"_id": ObjectId(track.id)}, {"$set": {"path": str(other)}})
    # Cached for an hour: the document's new path is not asked for.
    assert r.get(track).body == track.data

    r.write(lookup_cache_ttl="0")
    assert "changed lookup-cache-ttl" in r.hup()
    moved = r.get(track)
    assert moved.status == 200 and sha256(moved.body) == sha256(other.read_bytes())


def test_access_log_target_changes(musicd, mongo, db, library, tmp_path):
    track = library.add(library.media.short, "logged.mp3")
    r = start(musicd, mongo, db, library, tmp_path)
    old_log, new_log = tmp_path / "access.log", tmp_path / "access-new.log"
    assert r.get(track).status == 200
    wait_until(lambda: len(access_clients(old_log)) == 1, TIMEOUT, message="one line")
    r.write(access_log=str(new_log))
    assert "changed access-log" in r.hup()
    assert r.get(track).status == 200
    wait_until(lambda: len(access_clients(new_log)) == 1, TIMEOUT, message="a line in the new log")
    assert len(access_clients(old_log)) == 1
    r.write(access_log="off")
    r.hup()
    assert r.get(track).status == 200
    time.sleep(0.2)
    assert len(access_clients(new_log)) == 1 and len(access_clients(old_log)) == 1


# -- what is in flight ----------------------------------------------------------------------

def test_a_keepalive_connection_and_a_download_in_flight_survive_a_reload(musicd, mongo, db,
                                                                          library, tmp_path):
    short = library.add(library.media.short, "short.mp3")
    big = library.add(library.media.big, "big.mp3")
    r = start(musicd, mongo, db, library, tmp_path)

    keepalive = httpraw.connect(r.port, timeout=TIMEOUT)
    download = httpraw.connect(r.port, timeout=TIMEOUT, rcvbuf=32768)
    try:
        reader = httpraw.Reader(keepalive)
        keepalive.sendall(httpraw.request_bytes("GET", short.url_path))
        first = reader.read_response()
        assert first.status == 200 and first.body == short.data
        assert first.header("Cache-Control") == "public, max-age=111"

        # A download under way: its head read and a little of its body, the rest still queued.
        download.sendall(httpraw.request_bytes("GET", big.url_path,
                                               headers={"Connection": "close"}))
        pending = httpraw.Reader(download)
        head = pending.read_until(b"\r\n\r\n")
        assert b"Cache-Control: public, max-age=111\r\n" in head
        start_of_body = pending.read_exactly(65536)

        r.write(cache_control="private, max-age=7")
        r.hup()

        rest = pending.read_to_eof()
        assert sha256(start_of_body + rest) == big.sha256
        assert len(start_of_body + rest) == big.size

        # The same connection, after the reload: the new settings.
        keepalive.sendall(httpraw.request_bytes("GET", short.url_path))
        second = reader.read_response()
        assert second.status == 200 and second.body == short.data
        assert second.header("Cache-Control") == "private, max-age=7"
    finally:
        keepalive.close()
        download.close()


@pytest.mark.timing
def test_a_request_waiting_on_its_lookup_keeps_the_settings_it_started_with(musicd, mongo, db,
                                                                           library, tmp_path,
                                                                           db_proxy):
    track = library.add(library.media.short, "slow.mp3")
    r = start(musicd, mongo, db, library, tmp_path, mongodb_uri=db_proxy.uri,
              lookup_timeout="8000")
    assert r.get("/healthz").status == 200  # the pool connected before the database slows
    db_proxy.proxy.delay_to_client = 1.5
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(r.get(track)), daemon=True)
    waiting.start()
    wait_until(lambda: len(r.server.client_sockets()) == 1, TIMEOUT,
               message="the request to arrive")
    time.sleep(0.2)  # its head read: the lookup is on its way
    r.write(cache_control="private, max-age=7")
    r.hup()
    assert not answers, "the lookup answered before the reload: the proxy's delay is too short"
    waiting.join(TIMEOUT)
    assert answers and answers[0].status == 200 and answers[0].body == track.data
    assert answers[0].header("Cache-Control") == "public, max-age=111"
    db_proxy.proxy.delay_to_client = 0
    after = r.get(track)
    assert after.status == 200 and after.header("Cache-Control") == "private, max-age=7"


# -- restart-only settings, failures, no file -----------------------------------------------

def test_restart_only_changes_are_named_in_one_warning_and_kept(musicd, mongo, db, library,
                                                                tmp_path):
    track = library.add(library.media.short, "kept.mp3")
    r = start(musicd, mongo, db, library, tmp_path)
    r.server.wait_all_workers()
    listeners = r.server.listening_fds()
    assert len(listeners) == 2
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    new_port = free_port()
    r.write(listen=f"127.0.0.1:{new_port}", workers="3", database="another_database",
            media_root=str(elsewhere), cache_control="private, max-age=7")
    r.hup()

    warnings = [line for line in r.server.stderr_text().splitlines() if "need" in line and
                "restart" in line]
    assert len(warnings) == 1, warnings
    assert re.search(r"warn: SIGHUP: listen, database, media-root, workers changed in \S+ "
                     r"but need a restart; kept as they are$", warnings[0]), warnings[0]
    # None of them changed: the same address and listeners, database and media root.
    assert not port_accepts(new_port)
    assert sorted(r.server.listening_fds()) == sorted(listeners)
    served = r.get(track)
    assert served.status == 200 and served.body == track.data
    # What is live did change.
    assert served.header("Cache-Control") == "private, max-age=7"


def test_a_file_that_fails_changes_nothing_and_is_reported(musicd, mongo, db, library,
                                                           tmp_path):
    track = library.add(library.media.short, "stays.mp3")
    r = start(musicd, mongo, db, library, tmp_path)
    assert r.get(track).header("Cache-Control") == "public, max-age=111"
    good = r.path.read_text()
    # Every way a reload can fail: syntax, a bad value, a cross-check, an unopenable access log.
    failures = [
        (good + "cache-control = no-cache\nthis line has no equals sign\n", ":11: expected"),
        (good + "max-ranges = 0\n", "max-ranges: '0' is not a number"),
        (good + "cache-control = no-cache\ntrusted-proxy = not-an-address\n",
         "trusted-proxy: 'not-an-address' is not an address or CIDR"),
        (good + "cache-control = no-cache\ncache-control = bad\x01value\n",
         "cache-control: control character 0x01"),
        (good.replace(str(tmp_path / "access.log"), str(tmp_path / "no" / "such" / "a.log")) +
         "cache-control = no-cache\n", "access log"),
    ]
    reloaded = r.count(RELOADED)
    for text, message in failures:
        r.write_text(text)
        line = r.hup(expect=UNCHANGED)
        assert "error: SIGHUP: " in line and message in line, (message, line)
        answer = r.get(track)
        assert answer.status == 200 and answer.header("Cache-Control") == "public, max-age=111"
    assert r.count(RELOADED) == reloaded
    r.path.unlink()
    assert "No such file or directory" in r.hup(expect=UNCHANGED)
    # Fixed, the next SIGHUP applies it.
    r.write(cache_control="no-cache")
    r.hup()
    assert r.get(track).header("Cache-Control") == "no-cache"


def test_without_a_config_file_sighup_changes_nothing_and_musicd_keeps_serving(musicd, library):
    track = library.add(library.media.short, "plain.mp3")
    server = musicd.start(extra_args=["--cache-control", "public, max-age=5"])
    for expected in (1, 2):
        server.send_signal(signal.SIGHUP)
        wait_until(lambda: server.stderr_text().count("no config file to re-read") == expected,
                   TIMEOUT, message=f"notice {expected}")
    lines = server.wait_for_stderr("no config file to re-read")
    assert all("warn: SIGHUP: " in line and "settings unchanged" in line for line in lines)
    assert server.running  # SIGHUP's default action would have ended it
    got = timed_get(server.port, track.url_path, timeout=TIMEOUT).response
    assert got.status == 200 and got.body == track.data
    assert got.header("Cache-Control") == "public, max-age=5"


# -- many reloads under load ----------------------------------------------------------------

@pytest.mark.load
def test_many_sighups_under_load_fail_no_request(musicd, mongo, db, library, tmp_path):
    tracks = [library.add(library.media.short, f"load-{i}.mp3") for i in range(3)]
    values = ["public, max-age=1", "public, max-age=2"]
    r = start(musicd, mongo, db, library, tmp_path, cache_control=values[0])
    stop = threading.Event()
    problems, counts = [], [0] * LOAD_CLIENTS
    deadline = time.monotonic() + LOAD_LIMIT_SECONDS

    def client(index):
        sock = None
        try:
            sock = httpraw.connect(r.port, timeout=TIMEOUT)
            reader = httpraw.Reader(sock)
            n = 0
            while not stop.is_set() and time.monotonic() < deadline:
                track = tracks[n % len(tracks)]
                if n % 5 == 4:  # now and then a fresh connection as well
                    fresh = timed_get(r.port, track.url_path, timeout=TIMEOUT)
                    resp = fresh.response
                    if resp is None:
                        problems.append(f"client {index}: {fresh}")
                        return
                else:
                    sock.sendall(httpraw.request_bytes("GET", track.url_path))
                    resp = reader.read_response()
                if resp.status != 200 or resp.body != track.data:
                    problems.append(f"client {index}: {resp.status}, {len(resp.body)} bytes")
                    return
                if resp.header("Cache-Control") not in values:
                    problems.append(f"client {index}: Cache-Control "
                                    f"{resp.header('Cache-Control')!r}")
                    return
                n += 1
                counts[index] = n
        except (OSError, ValueError, ConnectionError) as e:
            problems.append(f"client {index}: {e!r}")
        finally:
            if sock is not None:
                sock.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(LOAD_CLIENTS)]
    for t in threads:
        t.start()
    try:
        for i in range(1, LOAD_RELOADS + 1):
            r.write(cache_control=values[i % 2])
            r.hup()
            assert not problems, problems
        # A burst, the file unchanged: signals that coalesce, offers replaced before adopted.
        for _ in range(LOAD_BURST):
            r.server.send_signal(signal.SIGHUP)
            time.sleep(0.002)
        r.hup()
    finally:
        stop.set()
        for t in threads:
            t.join(TIMEOUT)
    assert not problems, problems
    assert all(n > 0 for n in counts), counts
    # The last reload's value is what a new request gets.
    assert r.get(tracks[0]).header("Cache-Control") == values[LOAD_RELOADS % 2]
    assert r.server.running


# -- the documentation says what the option table says -----------------------------------------

# The option table's live marks (tests/unit/test_reload_plan.c pins the table to this list).
LIVE = {"lookup-cache-ttl", "lookup-cache-negative-ttl", "open-file-cache-valid",
        "open-file-cache-inactive", "cache-control", "error-cache-control", "max-ranges",
        "trusted-proxy", "access-log", "log-level", "cors-origin", "url-signing-key-file",
        "url-signing-leeway", "url-signing-parameter", "limit-rate", "limit-rate-after",
        "max-streams-per-client", "client-ipv6-prefix", "disk-queue-timeout", "disk-window"}
CONF_SETTING = re.compile(r"^#?([a-z][a-z0-9-]*)\s*=")


def conf_restart_marks(text):
    """{setting: marked [restart]} from config/musicd.conf: a setting's mark is in the comment
    lines right above it; a setting right after another shares that one's comment."""
    marks, comment, previous = {}, [], None
    for line in text.splitlines():
        match = CONF_SETTING.match(line)
        if match:
            marked = any("[restart]" in c for c in comment) if comment else marks.get(previous,
                                                                                     False)
            marks[match[1]] = marked
            previous, comment = match[1], []
        elif line.startswith("#"):
            comment.append(line)
        else:
            comment, previous = [], None
    return marks


@pytest.mark.no_c_binary
def test_musicd_conf_marks_exactly_the_restart_only_settings():
    from support import REPO
    marks = conf_restart_marks((REPO / "config" / "musicd.conf").read_text())
    assert len(marks) > 20
    wrong = {name: marked for name, marked in marks.items() if marked == (name in LIVE)}
    assert not wrong, f"marked [restart] wrongly (True) or not marked (False): {wrong}"


@pytest.mark.no_c_binary
def test_the_operating_guide_lists_the_live_settings():
    from support import REPO
    text = (REPO / "docs" / "operating.md").read_text()
    section = text.split("\n## Reloading settings\n", 1)[1].split("\n## ", 1)[0]
    live_item = section.split("- **Live**:", 1)[1].split("\n- ", 1)[0]
    named = set(re.findall(r"`([a-z][a-z0-9-]*)`", live_item))
    assert named == LIVE
