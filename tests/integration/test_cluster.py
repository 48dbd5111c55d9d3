"""Many origins behind one front: three musicd origins sharing one database and one library,
behind real nginx (config/nginx-musicd-cluster.conf) or real Varnish
(config/varnish-musicd-cluster.vcl), the shipped files with only addresses, ports, nginx's
fail_timeout and the probe interval substituted (frontends.py).

Also here: --etag-field (validators that agree across origins) and the read preference of the
URI (a track not found reading a secondary is asked of the primary), seen through musicd's
debug lines of libmongoc's command monitoring.

Every load is bounded in requests and in time; every process started is stopped at teardown.
"""

import hashlib
import http.client
import os
import re
import shutil
import signal
import threading
import time
import urllib.parse

import pytest

from support import free_port, scaled, wait_until

pytestmark = pytest.mark.skipif(
    not (shutil.which("nginx") or shutil.which("/usr/sbin/nginx")) or
    not (shutil.which("varnishd") or shutil.which("/usr/sbin/varnishd")),
    reason="nginx and varnishd are needed (scripts/setup/install-deps)")

ORIGINS = 3
TRACKS = 30
TRACK_BYTES = 96 * 1024
# The track a player is streaming when its origin dies: more than every socket buffer between
# musicd and the player can hold, so the origin is still sending it at the kill.
STREAM_BYTES = 40 * 1024 * 1024
STREAM_CHUNK = 64 * 1024
STREAM_PAUSE = 0.025              # a player's pace: ~2.6 MB/s
STREAM_BEFORE_KILL = 1024 * 1024  # bytes the player has when the origin is killed
HASH_FIELD = "sha256"
ORIGIN_ARGS = ["--etag-field", HASH_FIELD, "--workers", "1", "--lookup-threads", "2"]
# Varnish would answer repeated requests from its cache and never reach a dead origin: for the
# failover through Varnish, the origins say no-store, so every request is a fetch (a pass).
NO_STORE = ["--cache-control", "no-store"]
REQUEST_TIMEOUT = scaled(10)
LOAD_THREADS = 4
LOAD_MAX_REQUESTS = 3000          # per thread: the load stops at this count or at its deadline
LOAD_MAX_SECONDS = scaled(60)
LOAD_PAUSE = 0.02                 # between one client's requests
WAIT = scaled(20)
TRACK_LINE = re.compile(r'"(?:GET|HEAD) (/musicdb/\S+) HTTP/[0-9.]+"')


# -- the library and the origins ------------------------------------------------------------

def add_track(library, name, size):
    """A file of distinct random bytes in the test's media root, with a document holding its
    path and its SHA-256 (as musicd-import --hash stores it)."""
    data = os.urandom(size)
    path = library.root / name
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    track = library.add_document(path, name=name, **{HASH_FIELD: digest})
    track.digest = digest
    return track


class Tracks:
    """count small tracks (items), and with stream=True one big track a player streams."""

    def __init__(self, library, count=TRACKS, stream=False):
        self.items = [add_track(library, f"cluster-{i:02d}.mp3", TRACK_BYTES)
                      for i in range(count)]
        self.stream = add_track(library, "stream.mp3", STREAM_BYTES) if stream else None
        self.by_url = {t.url_path: t for t in self.items + [self.stream] if t}


def start_origins(musicd, extra_args=()):
    return [musicd.start(extra_args=ORIGIN_ARGS + list(extra_args)) for _ in range(ORIGINS)]


def restart(musicd, origin, extra_args=()):
    """A new musicd on the port of origin (which was killed), with a fresh access log."""
    return musicd.start(port=origin.port, extra_args=ORIGIN_ARGS + list(extra_args))


def kill(origin):
    """SIGKILL: no draining, connections reset, as a crashed host."""
    origin.expect_status = -signal.SIGKILL
    origin.proc.kill()
    origin.proc.wait(scaled(10))


def served_urls(origin, settled=True):
    """The /musicdb/ URLs in origin's access log, in order (health probes left out); settled:
    once no more is coming (else as the log is now, for a wait that knows its count)."""
    lines = origin.access_log_lines() if settled else origin.access_log_lines_now()
    return [m[1] for m in map(TRACK_LINE.search, lines) if m]


def wait_served(origins, count):
    """Wait until the origins' access logs hold count /musicdb/ lines in all; return them."""
    return wait_until(lambda: (sum(len(served_urls(o, False)) for o in origins) >= count and
                               [served_urls(o, False) for o in origins]),
                      WAIT, message=f"{count} track lines in the origins' access logs")


def shares(origins, tracks):
    """{origin index: set of URLs} from the access logs, after every track was fetched once
    through the front; each URL must have gone to exactly one origin."""
    logs = wait_served(origins, len(tracks.by_url))
    owner = {}
    for index, urls in enumerate(logs):
        for url in urls:
            assert owner.setdefault(url, index) == index, \
                f"{url} went to origins {owner[url]} and {index}: not hashed by URI"
    assert set(owner) == set(tracks.by_url), "a track was never served by any origin"
    return {i: {u for u, o in owner.items() if o == i} for i in range(len(origins))}


# -- HTTP ----------------------------------------------------------------------------------

class Answer:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body


def fetch(port, path, headers=None):
    """One GET on a new connection (closed after), the whole body read."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        conn.request("GET", path, headers={"Connection": "close", **(headers or {})})
        resp = conn.getresponse()
        return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def fetch_all(port, tracks, reverse=False):
    order = list(tracks.by_url.values())
    for track in reversed(order) if reverse else order:
        answer = fetch(port, track.url_path)
        assert answer.status == 200, f"{track.url_path}: {answer.status}"
        assert hashlib.sha256(answer.body).hexdigest() == track.digest


class Load:
    """LOAD_THREADS clients each fetching random tracks through the front, one new connection
    per request, until stop(), LOAD_MAX_REQUESTS each, or LOAD_MAX_SECONDS. Every request is
    recorded: (track URL, monotonic start, monotonic end, None or what went wrong)."""

    def __init__(self, port, tracks):
        self.port = port
        self.tracks = tracks.items
        self.results = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(LOAD_THREADS)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(REQUEST_TIMEOUT * 2)
        assert not any(t.is_alive() for t in self.threads), "a load thread did not finish"

    def _run(self, index):
        deadline = time.monotonic() + LOAD_MAX_SECONDS
        for n in range(LOAD_MAX_REQUESTS):
            if self.stopping.is_set() or time.monotonic() > deadline:
                return
            track = self.tracks[(index * 7919 + n * 31) % len(self.tracks)]
            started = time.monotonic()
            try:
                answer = fetch(self.port, track.url_path)
                problem = None
                if answer.status != 200:
                    problem = f"status {answer.status}"
                elif hashlib.sha256(answer.body).hexdigest() != track.digest:
                    problem = f"wrong bytes ({len(answer.body)} of {track.size})"
            except (OSError, http.client.HTTPException) as e:
                problem = f"{type(e).__name__}: {e}"
            with self.lock:
                self.results.append((track.url_path, started, time.monotonic(), problem))
            time.sleep(LOAD_PAUSE)

    def snapshot(self):
        with self.lock:
            return list(self.results)

    def wait_for(self, predicate, message):
        """Wait (bounded) until predicate(results so far) holds."""
        return wait_until(lambda: predicate(self.snapshot()), WAIT, interval=0.05,
                          message=message)


class Player(threading.Thread):
    """Streams one track through the front at a player's pace (bounded in time), keeping what
    it received; `cut` says why it ended early (None when it got the whole track). After
    hurry() it reads as fast as it can: the pace kept the origin sending until then."""

    def __init__(self, port, track):
        super().__init__(daemon=True)
        self.port = port
        self.track = track
        self.received = bytearray()
        self.etag = None
        self.cut = None
        self.hurrying = threading.Event()

    def hurry(self):
        self.hurrying.set()

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT)
        deadline = time.monotonic() + scaled(60)
        try:
            conn.request("GET", self.track.url_path)
            resp = conn.getresponse()
            assert resp.status == 200, resp.status
            self.etag = resp.getheader("ETag")
            while len(self.received) < self.track.size and time.monotonic() < deadline:
                chunk = resp.read(STREAM_CHUNK)
                if not chunk:
                    self.cut = "connection closed early"
                    return
                self.received += chunk
                if not self.hurrying.is_set():
                    time.sleep(STREAM_PAUSE)
        except (OSError, http.client.HTTPException) as e:
            self.cut = f"{type(e).__name__}: {e}"
        finally:
            conn.close()

    def assert_cut_and_resumed(self, port, may_be_whole=False):
        """The stream was cut by its origin's death; resuming it (Range from where it stopped,
        If-Range with its ETag, as players do) through the front gets the rest from another
        origin: a 206, not the whole track again, because the ETag is the same there.
        may_be_whole: the front may have had the whole track from the origin before the kill
        (Varnish fetches a pass at the origin's speed, not the player's); then it is whole."""
        self.hurry()
        self.join(scaled(60))
        assert not self.is_alive(), "the player did not finish"
        data = self.track.data
        if may_be_whole and not self.cut:
            assert self.received == data
            return
        assert self.cut, f"the stream was not cut ({len(self.received)} of {self.track.size})"
        assert self.received == data[:len(self.received)], "the bytes before the cut differ"
        rest = fetch(port, self.track.url_path,
                     {"Range": f"bytes={len(self.received)}-", "If-Range": self.etag})
        assert rest.status == 206, rest.status
        assert bytes(self.received) + rest.body == data


def assert_failover(results, killed_at, victim_urls):
    """After the kill, nothing failed but the streams the killed origin was sending: every
    failure was a request for one of its tracks, started before the kill and ended after."""
    failures = [r for r in results if r[3] is not None]
    for url, started, ended, problem in failures:
        assert started < killed_at <= ended and url in victim_urls, (
            f"{url} failed ({problem}), started {started - killed_at:+.3f}s and ended "
            f"{ended - killed_at:+.3f}s from the kill; its origin "
            f"{'was' if url in victim_urls else 'was not'} the killed one")
    rerouted = [r for r in results if r[1] > killed_at and r[0] in victim_urls]
    assert rerouted and all(r[3] is None for r in rerouted), \
        "the killed origin's tracks were not served by the others"
    return failures


# -- validators that agree across origins --------------------------------------------------

def test_every_origin_answers_every_track_with_the_same_bytes_and_validators(musicd, library):
    tracks = Tracks(library, count=6)
    origins = start_origins(musicd)
    for track in tracks.items:
        answers = [fetch(o.port, track.url_path) for o in origins]
        for answer in answers:
            assert answer.status == 200
            assert answer.body == track.data
            assert answer.headers["etag"] == f'"{track.digest}"'
        assert len({a.headers["last-modified"] for a in answers}) == 1
        etag = answers[0].headers["etag"]
        for origin in origins:
            # A revalidation and a resume that land on another origin than the first.
            assert fetch(origin.port, track.url_path, {"If-None-Match": etag}).status == 304
            resumed = fetch(origin.port, track.url_path, {"Range": "bytes=1000-", "If-Range": etag})
            assert resumed.status == 206
            assert resumed.body == track.data[1000:]


def test_the_field_etag_stays_when_the_file_copy_has_another_mtime(musicd, library):
    # A copy of the library on another machine has other mtimes: the field's ETag does not
    # move, the file's own does (and Last-Modified follows the copy either way).
    tracks = Tracks(library, count=1)
    track = tracks.items[0]
    tagged = musicd.start(extra_args=["--etag-field", HASH_FIELD], caches=False)
    plain = musicd.start(caches=False)
    before = [fetch(m.port, track.url_path).headers for m in (tagged, plain)]
    stat = track.path.stat()
    os.utime(track.path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 3600 * 10**9))
    after = [fetch(m.port, track.url_path).headers for m in (tagged, plain)]
    assert before[0]["etag"] == after[0]["etag"] == f'"{track.digest}"'
    assert before[1]["etag"] != after[1]["etag"]
    assert before[0]["last-modified"] != after[0]["last-modified"]
    revalidated = fetch(tagged.port, track.url_path, {"If-None-Match": before[0]["etag"]})
    assert revalidated.status == 304
    assert revalidated.headers["etag"] == before[0]["etag"]


def file_etag(path):
    """musicd's own ETag of a file: mtime seconds and nanoseconds (8 hex digits), size."""
    st = os.stat(path)
    return f'"{st.st_mtime_ns // 10**9:x}{st.st_mtime_ns % 10**9:08x}-{st.st_size:x}"'


@pytest.mark.parametrize("value", [
    pytest.param(None, id="missing"),
    pytest.param("", id="empty"),
    pytest.param("not a hash", id="space"),
    pytest.param('ab"cd', id="quote"),
    pytest.param("a" * 129, id="too-long"),
    pytest.param(12345, id="not-a-string"),
])
def test_a_document_without_a_usable_field_keeps_the_file_etag(musicd, library, value):
    path = library.root / "plain.mp3"
    path.write_bytes(os.urandom(4096))
    fields = {} if value is None else {HASH_FIELD: value}
    track = library.add_document(path, name="plain.mp3", **fields)
    server = musicd.start(extra_args=["--etag-field", HASH_FIELD])
    for _ in range(2):  # from the database, then from the lookup cache
        answer = fetch(server.port, track.url_path)
        assert answer.status == 200
        assert answer.headers["etag"] == file_etag(path)
    if isinstance(value, str) and value:
        server.wait_for_stderr(f"field '{HASH_FIELD}' is not an ETag")


def test_the_etag_field_is_refused_when_it_is_the_path_field(musicd, library):
    result = musicd.run(["--media-root", library.root, "--etag-field", "path"])
    assert result.returncode == 2
    assert "etag-field" in result.stderr


# -- an origin dies under load, through either front ------------------------------------------

class Failover:
    """How one front is seen to take a dead origin out and a restarted one back: a subclass per
    front, made with the FrontendFactory method that starts that front before the origins."""
    origin_args = ()
    may_be_whole = False   # Player.assert_cut_and_resumed

    def __init__(self, start_front):
        self.start_front = start_front
        self.front = None

    def start(self, origins):
        self.front = self.start_front([o.port for o in origins])
        return self.front


def wait_sent_requests(origin):
    wait_until(lambda: served_urls(origin, False), WAIT, message="the restarted origin to be sent "
               "requests again")


class NginxFailover(Failover):
    """nginx takes an origin out on a request that fails and tries it again after fail_timeout,
    so a restarted origin is back once nginx sends it requests again."""

    def wait_backends(self, states):
        pass   # nginx has no probe: it learns of a dead origin from the requests that fail

    def wait_back(self, index, back):
        """When the restarted origin is back."""
        wait_sent_requests(back)
        return time.monotonic()


class VarnishFailover(Failover):
    """Varnish's probe sees an origin sick and healthy again (waited for here). The origins say
    no-store (NO_STORE), and Varnish may have had the player's whole track before the kill."""
    origin_args = NO_STORE
    may_be_whole = True

    def wait_backends(self, states):
        """states: {origin index: "healthy" or "sick"}, by Varnish's probe."""
        self.front.wait_backends({f"origin{i + 1}": state for i, state in states.items()}, WAIT)

    def wait_back(self, index, back):
        """When the restarted origin is back: its probe says healthy (then it is sent requests)."""
        self.wait_backends({index: "healthy"})
        back_at = time.monotonic()
        wait_sent_requests(back)
        return back_at


def owner(share, url):
    return next(i for i, urls in share.items() if url in urls)


def fail_over_under_load(musicd, library, failover):
    """While a player streams a track and a load fetches every track through the front, the
    player's origin is killed: the player resumes elsewhere, the dead origin's tracks are answered
    by the others, and, restarted, it gets its share (and only its share) back."""
    tracks = Tracks(library, stream=True)
    origins = start_origins(musicd, failover.origin_args)
    front = failover.start(origins)
    failover.wait_backends({i: "healthy" for i in range(ORIGINS)})
    fetch_all(front.port, tracks)
    share = shares(origins, tracks)
    victim = owner(share, tracks.stream.url_path)  # the origin a player is streaming from
    player = Player(front.port, tracks.stream)
    with Load(front.port, tracks) as load:
        player.start()
        wait_until(lambda: len(player.received) >= STREAM_BEFORE_KILL or player.cut, WAIT,
                   message="the player to be streaming")
        load.wait_for(lambda rs: sum(r[3] is None for r in rs) >= 20, "20 answers before the kill")
        killed_at = time.monotonic()
        kill(origins[victim])
        player.assert_cut_and_resumed(front.port, may_be_whole=failover.may_be_whole)
        failover.wait_backends({victim: "sick"})
        load.wait_for(lambda rs: sum(r[1] > killed_at and r[0] in share[victim] for r in rs) >= 20,
                      "20 requests for the dead origin's tracks")
        back = restart(musicd, origins[victim], failover.origin_args)
        # still under load, the front takes the restarted origin back
        back_at = failover.wait_back(victim, back)
        load.wait_for(lambda rs: sum(r[1] > back_at for r in rs) >= 40, "40 answers after")
    results = load.snapshot()
    assert_failover(results, killed_at, share[victim])
    assert set(served_urls(back)) <= share[victim], "the restarted origin got others' tracks"
    late = [r for r in results if r[1] > back_at]
    assert all(r[3] is None for r in late), [r for r in late if r[3]]


# -- nginx in front ----------------------------------------------------------------------

def test_nginx_spreads_the_tracks_over_every_origin_by_uri(musicd, library, frontends):
    tracks = Tracks(library)
    origins = start_origins(musicd)
    nginx = frontends.nginx_cluster([o.port for o in origins])
    fetch_all(nginx.port, tracks)
    # Again, in the other order (a rotation would not bring each track back to its origin):
    # each track to the same origin as the first time.
    fetch_all(nginx.port, tracks, reverse=True)
    owner = {}
    logs = wait_served(origins, 2 * len(tracks.items))
    for index, urls in enumerate(logs):
        assert urls, f"origin {index} was sent nothing: {[len(u) for u in logs]}"
        for url in urls:
            assert owner.setdefault(url, index) == index, f"{url} went to two origins"
    assert sorted(u for urls in logs for u in urls) == sorted(list(tracks.by_url) * 2)


@pytest.mark.load
def test_nginx_fails_over_when_an_origin_dies_and_gives_it_its_share_back(
        musicd, library, frontends):
    fail_over_under_load(musicd, library, NginxFailover(frontends.nginx_cluster))


def test_nginx_sends_a_track_on_when_its_origin_answers_503(musicd, library, frontends):
    # One origin cannot reach the database (nothing listens at its URI's port): it answers 503
    # to every lookup, and nginx asks the next origin (proxy_next_upstream http_503).
    tracks = Tracks(library)
    dead_database = f"mongodb://127.0.0.1:{free_port()}/"
    origins = start_origins(musicd)[:ORIGINS - 1]
    origins.append(musicd.start(mongodb_uri=dead_database,
                                extra_args=ORIGIN_ARGS + ["--lookup-timeout", "300"]))
    nginx = frontends.nginx_cluster([o.port for o in origins])
    fetch_all(nginx.port, tracks)
    refused = [line for line in origins[-1].access_log_lines() if '" 503 ' in line]
    assert refused, "no track was hashed to the origin without a database"


# -- Varnish in front ----------------------------------------------------------------------

def test_varnish_shards_the_tracks_over_every_origin_and_caches_them(musicd, library, frontends):
    tracks = Tracks(library)
    origins = start_origins(musicd)
    varnish = frontends.varnish_cluster([o.port for o in origins])
    varnish.wait_backends({f"origin{i + 1}": "healthy" for i in range(ORIGINS)}, WAIT)
    fetch_all(varnish.port, tracks)
    logs = wait_served(origins, len(tracks.items))
    for index, urls in enumerate(logs):
        assert urls, f"origin {index} was sent nothing: {[len(u) for u in logs]}"
    assert sorted(u for urls in logs for u in urls) == sorted(tracks.by_url)
    for track in tracks.items:
        answer = fetch(varnish.port, track.url_path)
        assert answer.headers["x-cache"] == "hit"
        assert answer.headers["etag"] == f'"{track.digest}"'
    assert sum(len(served_urls(o)) for o in origins) == len(tracks.items)


@pytest.mark.load
def test_varnish_fails_over_when_an_origin_dies_and_gives_it_its_share_back(
        musicd, library, frontends):
    fail_over_under_load(musicd, library, VarnishFailover(frontends.varnish_cluster))


# -- the URI's read preference -------------------------------------------------------------

def with_read_preference(uri, mode):
    parts = urllib.parse.urlsplit(uri)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k.lower() != "readpreference"]
    query.append(("readPreference", mode))
    return urllib.parse.urlunsplit(parts._replace(path=parts.path or "/",
                                                  query=urllib.parse.urlencode(query)))


FIND_LINE = re.compile(r"mongodb: find started: _id ([0-9a-f]{24}), server \S+, "
                       r"read preference (\w+),")
UNKNOWN_MID = "65f0c0ffee0000000000abcd"
PROBE_MID = "0" * 24


def finds(server, mid):
    """The read preferences of the find commands musicd sent for mid, in order (its debug lines
    of libmongoc's command monitoring)."""
    return [m[2] for m in map(FIND_LINE.search, server.stderr_text().splitlines())
            if m and m[1] == mid]


def debug_server(musicd, mongo, mode):
    return musicd.start(mongodb_uri=with_read_preference(mongo.uri, mode),
                        extra_args=["--log-level", "debug"])


def test_not_found_reading_a_secondary_is_asked_of_the_primary_once(musicd, mongo):
    server = debug_server(musicd, mongo, "secondaryPreferred")
    assert fetch(server.port, f"/musicdb/{UNKNOWN_MID}/x.mp3").status == 404
    assert finds(server, UNKNOWN_MID) == ["secondaryPreferred", "primary"]
    # The primary's answer is the one remembered: the next request asks nobody.
    assert fetch(server.port, f"/musicdb/{UNKNOWN_MID}/x.mp3").status == 404
    assert finds(server, UNKNOWN_MID) == ["secondaryPreferred", "primary"]


def test_a_track_found_reading_a_secondary_is_asked_once(musicd, mongo, library):
    track = library.add()
    server = debug_server(musicd, mongo, "secondaryPreferred")
    assert fetch(server.port, track.url_path).status == 200
    assert finds(server, track.id) == ["secondaryPreferred"]


def test_with_the_primary_read_preference_not_found_is_asked_once(musicd, mongo):
    server = debug_server(musicd, mongo, "primary")
    assert fetch(server.port, f"/musicdb/{UNKNOWN_MID}/x.mp3").status == 404
    assert finds(server, UNKNOWN_MID) == ["primary"]


def test_healthz_reads_with_the_uri_read_preference_and_asks_no_primary(musicd, mongo):
    server = debug_server(musicd, mongo, "secondaryPreferred")
    answer = fetch(server.port, "/healthz")
    assert answer.status == 200
    assert finds(server, PROBE_MID) == ["secondaryPreferred"]
