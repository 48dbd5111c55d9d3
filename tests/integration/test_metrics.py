"""Prometheus metrics (issue 9): GET /metrics on --metrics-listen, a listener of its own, in the
text format 0.0.4, read with python3-prometheus-client's parser. The counters move by exactly
what a known sequence of requests adds; scrapes are not counted; lookup errors are counted by
kind; `off` opens no socket; other paths get 404 and other methods 405; and a real Prometheus
server (Debian's prometheus) scrapes musicd: its HTTP API reports the target up and returns
musicd's request counter."""

import os
import re
import resource
import socket
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

import httpraw
from assertions import assert_error
from support import (SYS_PIDFD_GETFD, _libc, free_port, listening_sockets, port_accepts, scaled,
                     wait_until)
from test_reload import Reloadable, base_settings

TIMEOUT = scaled(10)
CONTENT_TYPE = "text/plain; version=0.0.4"
PROMETHEUS_SCRAPE_TIMEOUT = 60.0    # until the target is up and its series queryable (scaled)
UNKNOWN_ID = "0123456789abcdef01234567"  # valid, and no document has it

FAMILIES = {
    "musicd_http_requests": "counter",
    "musicd_http_response_bytes": "counter",
    "musicd_http_first_byte_seconds": "histogram",
    "musicd_lookup_duration_seconds": "histogram",
    "musicd_lookups_in_flight": "gauge",
    "musicd_lookup_errors": "counter",
    "musicd_lookup_cache_hits": "counter",
    "musicd_lookup_cache_misses": "counter",
    "musicd_lookup_cache_evictions": "counter",
    "musicd_lookup_cache_entries": "gauge",
    "musicd_file_cache_hits": "counter",
    "musicd_file_cache_misses": "counter",
    "musicd_file_cache_evictions": "counter",
    "musicd_file_cache_entries": "gauge",
    "musicd_connections_open": "gauge",
    "musicd_connections_accepted": "counter",
    "musicd_connections_refused": "counter",
    "musicd_database_up": "gauge",
    "musicd_url_signing_refusals": "counter",
    "musicd_log_lines_dropped": "counter",
    "musicd_connections_limit": "gauge",
    "musicd_lookup_threads": "gauge",
    "musicd_lookups_in_flight_limit": "gauge",
    "musicd_lookup_cache_entries_limit": "gauge",
    "musicd_file_cache_entries_limit": "gauge",
    "musicd_streams_per_client_limit": "gauge",
    "musicd_limit_rate_bytes_per_second": "gauge",
    "musicd_disk_threads": "gauge",
    "musicd_disk_threads_per_root": "gauge",
    "musicd_disk_queue_limit": "gauge",
    "musicd_disk_window_bytes": "gauge",
    "musicd_disk_queued": "gauge",
    "musicd_disk_waiting": "gauge",
    "musicd_disk_in_flight": "gauge",
    "musicd_disk_wait_seconds": "histogram",
    "musicd_disk_tasks": "counter",
    "musicd_disk_read_ahead_bytes": "counter",
    "musicd_disk_evicted_sends": "counter",
    "musicd_disk_copied_sends": "counter",
    "musicd_disk_refused": "counter",
    "musicd_disk_read_errors": "counter",
    "musicd_build_info": "gauge",
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "process_start_time_seconds": "gauge",
}


class Scrape:
    """One parsed GET /metrics: samples by (name, labels)."""

    def __init__(self, text):
        self.text = text
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.samples = {}
        for family in self.families.values():
            for s in family.samples:
                self.samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def value(self, name, **labels):
        """The sample's value; 0 for a labelled counter sample not yet written."""
        return self.samples.get((name, tuple(sorted(labels.items()))), 0)

    def requests(self):
        """{(code, method): count} of musicd_http_requests_total."""
        return {(dict(k[1])["code"], dict(k[1])["method"]): v for k, v in self.samples.items()
                if k[0] == "musicd_http_requests_total"}

    def total_requests(self):
        return sum(self.requests().values())


def get_metrics(port, method="GET", target="/metrics"):
    resp, rest = httpraw.exchange(port, method, target, timeout=TIMEOUT)
    assert rest == b"", f"{len(rest)} bytes after the response"
    return resp


def scrape(server):
    resp = get_metrics(server.metrics_port)
    assert resp.status == 200, resp
    return Scrape(resp.body.decode())


def wait_for_scrape(server, predicate, message):
    """Scrape until predicate(scrape) holds (bounded); the scrape that satisfied it."""
    return wait_until(lambda: (lambda s: s if predicate(s) else None)(scrape(server)), TIMEOUT,
                      message=message)


def quiet(server):
    """A scrape once musicd is idle: the harness's readiness probe (a bare TCP connect) and
    every earlier connection have been set up and closed. With one worker, connections are
    taken in order, so a request answered means every earlier connection was seen."""
    r, _ = httpraw.exchange(server.port, "GET", "/not-a-route", timeout=TIMEOUT)
    assert r.status == 404
    return wait_for_scrape(server, lambda s: s.value("musicd_connections_open") == 0 and
                           s.total_requests() >= 1, "no connection open")


def delta(before, after, name, **labels):
    return after.value(name, **labels) - before.value(name, **labels)


def start(musicd, *extra, **kw):
    return musicd.start(extra_args=["--workers", "1", *extra], **kw)


# -- the endpoint --------------------------------------------------------------------------

def test_metrics_are_the_text_format_with_its_content_type_and_every_family(musicd):
    started = time.time()
    server = start(musicd)
    resp = get_metrics(server.metrics_port)
    assert resp.status == 200
    assert resp.header("Content-Type") == CONTENT_TYPE
    assert int(resp.header("Content-Length")) == len(resp.body)
    s = Scrape(resp.body.decode())
    for name, kind in FAMILIES.items():
        assert name in s.families, f"{name} missing from:\n{s.text}"
        assert s.families[name].type == kind, (name, s.families[name].type)
    for line in s.text.splitlines():  # every family's HELP and TYPE precede its samples
        if line.startswith("# TYPE "):
            assert f"# HELP {line.split()[2]} " in s.text
    version = musicd.run(["--version"]).stdout.split()[1]
    assert s.value("musicd_build_info", version=version) == 1
    assert s.value("process_max_fds") > 0
    assert s.value("process_open_fds") == pytest.approx(server.fd_count(), abs=3)
    assert started - 1 <= s.value("process_start_time_seconds") <= time.time()
    assert 0 < s.value("process_resident_memory_bytes") <= 2 * server.rss_bytes()
    assert 0 <= s.value("process_cpu_seconds_total") <= server.cpu_seconds() + 0.1


def test_other_paths_are_404_and_other_methods_405(musicd):
    server = start(musicd)
    for target in ["/", "/metrics/", "/metricsx", "/musicdb/" + UNKNOWN_ID + "/x"]:
        resp = get_metrics(server.metrics_port, target=target)
        assert resp.status == 404, (target, resp)
        assert resp.header("Content-Type").startswith("text/plain")
        assert resp.body == b"404 Not Found\n"
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"]:
        resp = get_metrics(server.metrics_port, method=method)
        assert resp.status == 405, (method, resp)
        assert resp.header("Allow") == "GET"
        assert resp.body == b"405 Method Not Allowed\n"
    head = get_metrics(server.metrics_port, method="HEAD")
    assert head.status == 405 and head.header("Allow") == "GET" and head.body == b""
    # A query string (Prometheus may add one) still names /metrics.
    assert get_metrics(server.metrics_port, target="/metrics?x=1").status == 200


def test_scrapes_are_not_counted_as_requests_or_connections(musicd):
    server = start(musicd)
    before = quiet(server)
    for _ in range(5):
        scrape(server)
    after = scrape(server)
    assert after.requests() == before.requests()
    assert delta(before, after, "musicd_connections_accepted_total") == 0
    assert delta(before, after, "musicd_http_response_bytes_total") == 0
    assert delta(before, after, "musicd_http_first_byte_seconds_count") == 0


# -- counters move by exactly what requests add --------------------------------------------

def test_counters_move_by_exactly_what_a_known_sequence_of_requests_adds(musicd, library):
    track = library.add(library.media.short, "known.mp3")
    server = start(musicd)
    before = quiet(server)

    full, _ = httpraw.exchange(server.port, "GET", track.url_path, timeout=TIMEOUT)
    ranged, _ = httpraw.exchange(server.port, "GET", track.url_path,
                                 headers={"Range": "bytes=0-99"}, timeout=TIMEOUT)
    cached, _ = httpraw.exchange(server.port, "GET", track.url_path,
                                 headers={"If-None-Match": full.header("ETag")}, timeout=TIMEOUT)
    missing, _ = httpraw.exchange(server.port, "GET", f"/musicdb/{UNKNOWN_ID}/x",
                                  timeout=TIMEOUT)
    head, _ = httpraw.exchange(server.port, "HEAD", track.url_path, timeout=TIMEOUT)
    assert [r.status for r in (full, ranged, cached, missing, head)] == [200, 206, 304, 404, 200]
    assert len(full.body) == track.size and len(ranged.body) == 100

    # Counted when each response's last byte left; the client may read it a moment before.
    after = wait_for_scrape(server, lambda s: s.total_requests() == before.total_requests() + 5
                            and s.value("musicd_connections_open") == 0, "five more requests")
    added = {k: v - before.requests().get(k, 0) for k, v in after.requests().items()
             if v != before.requests().get(k, 0)}
    assert added == {("200", "GET"): 1, ("206", "GET"): 1, ("304", "GET"): 1,
                     ("404", "GET"): 1, ("200", "HEAD"): 1}
    assert delta(before, after, "musicd_http_response_bytes_total") == \
        track.size + 100 + len(missing.body)
    assert delta(before, after, "musicd_http_first_byte_seconds_count") == 5
    assert delta(before, after, "musicd_http_first_byte_seconds_bucket", le="+Inf") == 5
    assert delta(before, after, "musicd_connections_accepted_total") == 5
    assert delta(before, after, "musicd_connections_refused_total") == 0
    # The first GET and the unknown id asked the database; the rest found the id cached.
    assert delta(before, after, "musicd_lookup_cache_misses_total") == 2
    assert delta(before, after, "musicd_lookup_cache_hits_total") == 3
    assert after.value("musicd_lookup_cache_entries") == 2  # one path, one "no such document"
    assert delta(before, after, "musicd_lookup_duration_seconds_count") == 2
    # The file was opened once and found open for the 206, the 304 and the HEAD.
    assert delta(before, after, "musicd_file_cache_misses_total") == 1
    assert delta(before, after, "musicd_file_cache_hits_total") == 3
    assert after.value("musicd_file_cache_entries") == 1
    assert after.value("musicd_lookups_in_flight") == 0
    assert after.value("musicd_database_up") == 1
    for kind in ["unavailable", "timeout", "error", "rejected"]:
        assert after.value("musicd_lookup_errors_total", kind=kind) == 0, kind


def test_each_method_musicd_refuses_is_counted_under_its_own_name(musicd):
    server = start(musicd)
    before = quiet(server)
    methods = ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"]
    for method in methods:
        r, _ = httpraw.exchange(server.port, method, f"/musicdb/{UNKNOWN_ID}/x",
                                timeout=TIMEOUT)
        assert r.status == 405, (method, r)
    after = wait_for_scrape(server, lambda s: s.total_requests() == before.total_requests() + 5,
                            "five more requests")
    added = {k: v - before.requests().get(k, 0) for k, v in after.requests().items()
             if v != before.requests().get(k, 0)}
    # (A method evhttp does not know, "BREW", never reaches musicd: evhttp answers it itself.
    # Any other text would be counted as method="other", so the label stays bounded.)
    assert added == {("405", m): 1 for m in methods}


def test_open_connections_and_the_connection_cap_are_counted(musicd):
    server = start(musicd, "--max-connections", "2")
    before = quiet(server)
    held = [httpraw.connect(server.port) for _ in range(2)]
    try:
        # The open gauge (a shared atomic) and the worker's accepted counter are two stores, and
        # a scrape on the metrics thread can fall between them (an ASan run did): wait for both.
        s = wait_for_scrape(server, lambda s: s.value("musicd_connections_open") == 2 and
                            delta(before, s, "musicd_connections_accepted_total") >= 2,
                            "two connections open and accepted")
        assert delta(before, s, "musicd_connections_accepted_total") == 2
        extra = httpraw.connect(server.port)
        data, how = httpraw.read_until_closed(extra, TIMEOUT)
        assert (data, how) in ((b"", "eof"), (b"", "reset"))  # closed at once, unanswered
        extra.close()
        s = wait_for_scrape(server, lambda s: delta(before, s,
                            "musicd_connections_refused_total") == 1 and
                            delta(before, s, "musicd_connections_accepted_total") >= 3,
                            "one refused connection")
        assert delta(before, s, "musicd_connections_accepted_total") == 3
        assert s.value("musicd_connections_open") == 2
    finally:
        for sock in held:
            sock.close()
    wait_for_scrape(server, lambda s: s.value("musicd_connections_open") == 0,
                    "the connections closed")


# -- lookups -------------------------------------------------------------------------------

def test_an_unreachable_database_is_counted_unavailable_and_database_down(musicd):
    # Server selection gives up long before the deadline, so the lookup ends unavailable.
    dead = f"mongodb://127.0.0.1:{free_port()}/?serverSelectionTimeoutMS=300"
    server = start(musicd, "--lookup-timeout", "5000", mongodb_uri=dead)
    before = quiet(server)
    resp, _ = httpraw.exchange(server.port, "GET", f"/musicdb/{UNKNOWN_ID}/x", timeout=TIMEOUT)
    assert_error(resp, 503)
    after = wait_for_scrape(server, lambda s: s.value("musicd_lookups_in_flight") == 0 and
                            s.total_requests() > before.total_requests(), "the lookup ended")
    assert delta(before, after, "musicd_lookup_errors_total", kind="unavailable") == 1
    assert delta(before, after, "musicd_lookup_errors_total", kind="timeout") == 0
    assert after.value("musicd_database_up") == 0
    # No server was selected, so no command went out: no round trip was timed.
    assert delta(before, after, "musicd_lookup_duration_seconds_count") == 0


@pytest.mark.timing
def test_a_stalled_lookup_is_a_timeout_in_flight_and_a_full_queue_is_rejected(musicd, library,
                                                                              db_proxy):
    lookup_timeout_ms = 1000
    tracks = [library.add(library.media.short, f"t{i}.mp3") for i in range(3)]
    # The driver's own socket timeout far beyond the deadline: the deadline answers first.
    assert "?" in db_proxy.uri
    uri = db_proxy.uri + "&socketTimeoutMS=8000"
    server = start(musicd, "--max-pending-lookups", "1",
                   "--lookup-timeout", str(lookup_timeout_ms), mongodb_uri=uri)
    # The pool gets its connection. The first lookup also selects the server and connects
    # (through the proxy), which on a busy machine can outlast the short deadline: a few tries,
    # each once the one before has left the pool (with one pending lookup at most, a try made
    # while the timed-out one still runs is rejected at once: a make test here saw five so).
    for _ in range(5):
        warm, _ = httpraw.exchange(server.port, "GET", tracks[0].url_path, timeout=TIMEOUT)
        if warm.status == 200:
            break
        wait_for_scrape(server, lambda s: s.value("musicd_lookups_in_flight") == 0,
                        "the timed-out warm-up lookup ended")
    assert warm.status == 200
    before = quiet(server)

    db_proxy.proxy.delay_to_client = 30  # the database stalls
    stalled = []
    sent = db_proxy.proxy.bytes_to_server
    thread = threading.Thread(daemon=True, target=lambda: stalled.append(
        httpraw.exchange(server.port, "GET", tracks[1].url_path, timeout=TIMEOUT)[0]))
    thread.start()
    try:
        wait_until(lambda: db_proxy.proxy.bytes_to_server > sent, scaled(2),
                   message="the lookup sent to the database")
        s = wait_for_scrape(server, lambda s: s.value("musicd_lookups_in_flight") == 1,
                            "one lookup in flight")
        rejected, _ = httpraw.exchange(server.port, "GET", tracks[2].url_path, timeout=TIMEOUT)
        assert_error(rejected, 503)
        thread.join(TIMEOUT)
        assert len(stalled) == 1
        assert_error(stalled[0], 503)
        # Answered by the deadline, the lookup itself still waits on the database.
        s = scrape(server)
        assert delta(before, s, "musicd_lookup_errors_total", kind="rejected") == 1
        assert delta(before, s, "musicd_lookup_errors_total", kind="timeout") == 1
        assert s.value("musicd_lookups_in_flight") == 1
    finally:
        db_proxy.proxy.delay_to_client = 0
        db_proxy.proxy.restart()  # cut the stalled connection
    after = wait_for_scrape(server, lambda s: s.value("musicd_lookups_in_flight") == 0,
                            "the stalled lookup ended")
    # Its end is not counted again: one lookup, one error.
    assert delta(before, after, "musicd_lookup_errors_total", kind="timeout") == 1
    assert delta(before, after, "musicd_lookup_errors_total", kind="unavailable") == 0
    assert delta(before, after, "musicd_lookup_errors_total", kind="error") == 0
    assert delta(before, after, "musicd_lookup_errors_total", kind="rejected") == 1
    added = {k: v - before.requests().get(k, 0) for k, v in after.requests().items()
             if v != before.requests().get(k, 0)}
    assert added == {("503", "GET"): 2}


# -- the limits ----------------------------------------------------------------------------

# Each limit gauge and the setting it shows: what the shipped alerting rules compare with.
LIMITS = {
    "musicd_connections_limit": "max-connections",
    "musicd_lookup_threads": "lookup-threads",
    "musicd_lookups_in_flight_limit": "max-pending-lookups",
    "musicd_lookup_cache_entries_limit": "lookup-cache-entries",
    "musicd_file_cache_entries_limit": "open-file-cache-entries",
    "musicd_streams_per_client_limit": "max-streams-per-client",
    "musicd_limit_rate_bytes_per_second": "limit-rate",
}


def limits(s):
    return {LIMITS[name]: s.value(name) for name in LIMITS}


def test_the_limits_are_gauges_of_the_settings_and_a_reload_shows_the_new_live_ones(
        musicd, mongo, db, library, tmp_path):
    r = Reloadable(musicd, tmp_path, base_settings(
        mongo, db, library, tmp_path, max_connections="50", lookup_threads="3",
        max_pending_lookups="77", lookup_cache_entries="123", open_file_cache_entries="45",
        max_streams_per_client="2", limit_rate="64K"))
    assert limits(scrape(r.server)) == {
        "max-connections": 50, "lookup-threads": 3, "max-pending-lookups": 77,
        "lookup-cache-entries": 123, "open-file-cache-entries": 45,
        "max-streams-per-client": 2, "limit-rate": 65536}

    # Live settings change with the reload; restart-only ones are kept as they run, and so
    # are their gauges.
    r.write(max_streams_per_client="5", limit_rate="128K", max_connections="60",
            lookup_threads="4", max_pending_lookups="99")
    r.hup()
    assert limits(scrape(r.server)) == {
        "max-connections": 50, "lookup-threads": 3, "max-pending-lookups": 77,
        "lookup-cache-entries": 123, "open-file-cache-entries": 45,
        "max-streams-per-client": 5, "limit-rate": 131072}
    r.write(max_streams_per_client="0", limit_rate="0")
    r.hup()
    after = limits(scrape(r.server))
    assert (after["max-streams-per-client"], after["limit-rate"]) == (0, 0)


def test_the_connection_limit_gauge_is_the_one_settled_from_the_descriptor_limit(musicd):
    # No --max-connections: musicd settles it from the descriptor limit and says so at start.
    server = musicd.start(extra_args=["--workers", "2"], descriptor_limit=1500)
    # the line comes after the workers have started, which is all that start() waits for
    line = server.wait_for_stderr("descriptor limit 1500: at most ")[0]
    logged = re.search(r"descriptor limit 1500: at most (\d+) connections at once", line)
    assert logged, line
    s = scrape(server)
    assert s.value("musicd_connections_limit") == int(logged.group(1)) > 0
    assert s.value("process_max_fds") == 1500


# -- the listener --------------------------------------------------------------------------

def socket_option(pid, fd, level, option):
    """getsockopt on process pid's descriptor fd (duplicated with pidfd_getfd)."""
    pidfd = os.pidfd_open(pid)
    try:
        copy = _libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        assert copy >= 0, f"pidfd_getfd({pid}, {fd})"
        with socket.socket(fileno=copy) as sock:
            return sock.getsockopt(level, option)
    finally:
        os.close(pidfd)


def all_listening(server):
    """{port: count} of the TCP sockets the process listens on."""
    ports = {}
    for local, _, state in server.sockets().values():
        if state == "LISTEN":
            ports[local[1]] = ports.get(local[1], 0) + 1
    return ports


def test_the_metrics_listener_is_one_reuseport_socket_apart_from_the_main_one(musicd):
    server = start(musicd)
    assert all_listening(server) == {server.port: 1, server.metrics_port: 1}
    [fd] = listening_sockets(server.pid, server.metrics_port)
    assert socket_option(server.pid, fd, socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
    # The main listener does not answer /metrics: it is a musicd route like any other.
    resp, _ = httpraw.exchange(server.port, "GET", "/metrics", timeout=TIMEOUT)
    assert_error(resp, 404)


@pytest.mark.timing
def test_out_of_descriptors_the_metrics_listener_pauses_instead_of_spinning(musicd):
    server = start(musicd)
    scrape(server)
    baseline = server.fd_count()
    soft, hard = resource.prlimit(server.pid, resource.RLIMIT_NOFILE)
    held = []
    try:
        # Room for a few connections, then every accept on the metrics port fails (EMFILE).
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (baseline + 8, hard))
        err0, t0 = server.stderr_size(), time.monotonic()
        for _ in range(40):
            held.append(httpraw.connect(server.metrics_port))
        # 2 s out of descriptors (cut short once the log is past the bound): a listener left
        # enabled fires on every loop pass and libevent logs each failed accept.
        while time.monotonic() - t0 < 2 and server.stderr_size() - err0 < 10_000:
            time.sleep(0.1)
        logged = server.stderr_text()[err0:]
        assert len(logged) < 10_000, f"{len(logged)} bytes of stderr at EMFILE:\n{logged[:1000]}"
        assert "metrics: cannot accept connections: Too many open files" in logged, logged
        for sock in held:
            sock.close()
        held = []
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (soft, hard))
        # Accepting resumed: the connections queued meanwhile are served, then new ones.
        wait_until(lambda: get_metrics(server.metrics_port).status == 200, TIMEOUT,
                   message="a scrape once descriptors are free again")
    finally:
        for sock in held:
            sock.close()
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (soft, hard))


def test_off_opens_no_metrics_socket(musicd):
    server = musicd.start(extra_args=["--workers", "2", "--metrics-listen", "off"])
    server.wait_all_workers()  # both listeners, and the start-up lines all written
    assert server.metrics_port is None
    assert all_listening(server) == {server.port: 2}
    assert "metrics on" not in server.stderr_text()


def test_a_metrics_address_in_use_is_refused_at_start(musicd, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = musicd.run(["--listen", f"127.0.0.1:{free_port()}", "--media-root", tmp_path,
                             "--metrics-listen", f"127.0.0.1:{port}"])
    assert result.returncode == 2, result
    assert f"metrics-listen: cannot bind 127.0.0.1 port {port}: address already in use" in \
        result.stderr


@pytest.mark.parametrize("metrics_host", ["127.0.0.1", "0.0.0.0"])
def test_metrics_on_the_port_tracks_are_served_on_is_refused_at_start(musicd, tmp_path,
                                                                      metrics_host):
    # (fails before the check: both listeners took the port with SO_REUSEPORT, and the kernel
    # handed some of the tracks' clients to the metrics listener, which answered them 404.)
    port = free_port()
    for check in ([], ["-t"]):
        result = musicd.run([*check, "--listen", f"127.0.0.1:{port}", "--media-root", tmp_path,
                             "--metrics-listen", f"{metrics_host}:{port}"])
        assert result.returncode == 2, result
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert lines == [f"musicd: metrics-listen: port {port} on that address is where musicd "
                         "serves tracks (listen); give the metrics a port of their own"], lines
        assert not port_accepts(port)


def test_a_bad_metrics_address_is_refused_with_one_message(musicd, tmp_path):
    result = musicd.run(["--media-root", tmp_path, "--metrics-listen", "nowhere"])
    assert result.returncode == 2, result
    assert "--metrics-listen: 'nowhere' is not ADDR:PORT" in result.stderr
    assert "or off" in result.stderr


# -- a real Prometheus ---------------------------------------------------------------------

def test_a_real_prometheus_scrapes_musicd(musicd, library, prometheus):
    track = library.add(library.media.short, "scraped.mp3")
    server = start(musicd)
    for _ in range(3):
        r, _ = httpraw.exchange(server.port, "GET", track.url_path, timeout=TIMEOUT)
        assert r.status == 200
    p = prometheus.start(server.metrics_port)

    target = wait_until(p.target_up, scaled(PROMETHEUS_SCRAPE_TIMEOUT), interval=0.5,
                        message="prometheus's target up")
    assert target["scrapeUrl"] == f"http://127.0.0.1:{server.metrics_port}/metrics"
    assert target["lastError"] == ""

    result = wait_until(lambda: p.query("musicd_http_requests_total"),
                        scaled(PROMETHEUS_SCRAPE_TIMEOUT), interval=0.5,
                        message="musicd_http_requests_total in prometheus")
    series = {(r["metric"]["code"], r["metric"]["method"]): float(r["value"][1]) for r in result}
    assert series == {("200", "GET"): 3}, result
    for r in result:
        assert r["metric"]["job"] == "musicd"
        assert r["metric"]["instance"] == f"127.0.0.1:{server.metrics_port}"
    up = p.query("up")
    assert [float(r["value"][1]) for r in up] == [1.0]
