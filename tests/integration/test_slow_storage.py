"""musicd over slow and hung storage (issue "Never wait for the disk").

Every touch of a track's storage (open, the checks of a cached file, the read of its windows, the
close) runs on the disk pool, and a worker sends only bytes already in the page cache. So a
slow or hung mount holds the requests that read from it, and nothing else: not a cached track on
another disk, not /healthz or /metrics, not a reload, not a stop.

musicd runs with two media roots: a slow filesystem (slowfs.py: a wait on each read, or reads
and opens that hang until released; without keep_cache each open of a file there drops its
cached pages, so its tracks are cold) and a directory on the ordinary disk with a small track,
cached before the test looks. Most tests run one worker: anything that waited on its loop would
hold every request. The verdicts are orders and relations (the cached track answered while the
cold downloads were still hung), not wall-clock thresholds. Skipped where the machine cannot
mount (no /dev/fuse, not root).
"""

import contextlib
import hashlib
import os
import signal
import socket
import threading
import time
import types

import pytest
import requests

import slowfs
from byteranges import parse_multipart
from support import SANITIZER_ENV, SANITIZED, scaled, wait_until
from test_metrics import scrape

COLD_TRACKS = 4
TIMEOUT = scaled(20)
LANE_SLOW = "root0"  # the first --media-root: the slow mount
LANE_FAST = "root1"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def slow_library(library, tmp_path):
    """A slow mount over cold0.mp3 ... (the big mp3), its documents, and a cached short track
    on the ordinary disk; yields (fs, cold tracks, cached track, the big mp3's bytes)."""
    source = tmp_path / "slow-source"
    source.mkdir()
    for i in range(COLD_TRACKS):
        library.place(library.media.big, f"cold{i}.mp3", root=source)
    with slowfs.mounted(source, read_delay_us=2000) as fs:
        cold = [library.add_document(fs.mountpoint / f"cold{i}.mp3", name=f"cold{i}.mp3")
                for i in range(COLD_TRACKS)]
        cached = library.add(library.media.short, "cached.mp3")
        yield types.SimpleNamespace(fs=fs, cold=cold, cached=cached,
                                    big=library.media.big.read_bytes(), library=library)


def start(musicd, slow, *extra, workers=1, env=None):
    server = musicd.start(media_roots=[slow.fs.mountpoint, slow.library.root],
                          extra_args=["--workers", str(workers), *extra], env=env)
    assert get(server, slow.cached).content == slow.cached.data  # cached from here on
    return server


def get(server, track, timeout=TIMEOUT, **kw):
    return requests.get(f"http://127.0.0.1:{server.port}{track.url_path}", timeout=timeout, **kw)


class Download(threading.Thread):
    """A whole GET on a thread of its own: .response (or .error) and .finished_at once done."""

    def __init__(self, server, track, headers=None):
        super().__init__(daemon=True)
        self.server, self.track, self.headers = server, track, headers or {}
        self.response = self.error = self.finished_at = None

    def run(self):
        try:
            self.response = get(self.server, self.track, timeout=scaled(60),
                                headers=self.headers)
        except requests.RequestException as e:
            self.error = e
        self.finished_at = time.monotonic()


def release(slow, downloads):
    """Answers every hung request of the slow mount, then waits for each download (bounded)."""
    slow.fs.release()
    for d in downloads:
        d.join(scaled(60))


def assert_track(response, data):
    assert response is not None
    assert response.status_code == 200, response.status_code
    assert sha256(response.content) == sha256(data)


# -- bytes ----------------------------------------------------------------------------------

def test_cold_tracks_are_byte_exact_whole_in_ranges_and_multipart(musicd, slow_library):
    slow = slow_library
    server = start(musicd, slow, "--disk-window", "262144")
    before_fs = slow.fs.stats()["read_bytes"]
    before = scrape(server)
    for track in slow.cold:
        r = get(server, track)
        assert r.headers["Content-Length"] == str(len(slow.big))
        assert_track(r, slow.big)
    # Every byte came through the slow filesystem, brought in by the disk pool's read-ahead.
    assert slow.fs.stats()["read_bytes"] - before_fs >= COLD_TRACKS * len(slow.big)
    after = scrape(server)
    read_ahead = after.value("musicd_disk_read_ahead_bytes_total") - \
        before.value("musicd_disk_read_ahead_bytes_total")
    assert read_ahead >= COLD_TRACKS * len(slow.big)

    track = slow.cold[0]
    data = slow.big
    for spec, first, last in (("bytes=3000000-3000999", 3000000, 3000999),
                              ("bytes=-1000", len(data) - 1000, len(data) - 1),
                              ("bytes=1-1", 1, 1),
                              ("bytes=500000-", 500000, len(data) - 1)):
        slow.fs.drop_cache(track.path.name)  # cold again: read from the slow mount
        r = get(server, track, headers={"Range": spec})
        assert r.status_code == 206, spec
        assert r.headers["Content-Range"] == f"bytes {first}-{last}/{len(data)}"
        assert r.content == data[first:last + 1], spec
    slow.fs.drop_cache(track.path.name)
    r = get(server, track, headers={"Range": "bytes=0-99,2000000-2531071,3999000-3999099"})
    assert r.status_code == 206
    parts = parse_multipart(r.headers["Content-Type"], r.content)
    assert [(p.first, p.last, p.data) for p in parts] == \
        [(0, 99, data[:100]), (2000000, 2531071, data[2000000:2531072]),
         (3999000, 3999099, data[3999000:3999100])]


def test_a_paced_cold_track_is_byte_exact(musicd, slow_library):
    slow = slow_library
    server = start(musicd, slow, "--limit-rate", "4M", "--limit-rate-after", "1M",
                   "--disk-window", "262144")
    assert_track(get(server, slow.cold[1]), slow.big)


def test_evicted_windows_are_counted_read_again_and_the_body_stays_exact(musicd, slow_library):
    slow = slow_library
    # Paced: the body goes out a slice at a time, each window read ahead well before its slices
    # are due; evicting the track's pages meanwhile makes the next slice find its window gone.
    server = start(musicd, slow, "--disk-window", "65536", "--limit-rate", "1M",
                   "--limit-rate-after", "0")
    track = slow.cold[2]
    before = scrape(server).value("musicd_disk_evicted_sends_total")
    download = Download(server, track)
    download.start()
    evicted = 0
    for _ in range(100):  # at most ~5 s: the body takes ~4 s at 1 MiB/s
        if download.finished_at is not None:
            break
        slow.fs.drop_cache(track.path.name)
        time.sleep(0.05)
        evicted = scrape(server).value("musicd_disk_evicted_sends_total") - before
    download.join(scaled(60))
    assert download.error is None, download.error
    assert_track(download.response, slow.big)
    evicted = scrape(server).value("musicd_disk_evicted_sends_total") - before
    assert evicted > 0, "no window was found evicted before its send"


@contextlib.contextmanager
def memory_limited(pid, limit):
    """pid in a memory cgroup of its own, limited to limit bytes, as a container's limit does
    (its page cache counted in), until the end of the block; skips where the machine gives
    no such cgroup (cgroup v1's memory controller, or v2's memory.max, writable here)."""
    parent = None
    for line in open("/proc/self/cgroup").read().splitlines():
        number, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(",") and os.path.isdir("/sys/fs/cgroup/memory"):
            parent, limit_file = "/sys/fs/cgroup/memory" + path, "memory.limit_in_bytes"
        elif number == "0" and parent is None:
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                if os.path.exists(os.path.join(root, "cgroup.controllers")):
                    parent, limit_file = root + path, "memory.max"
                    break
    child = os.path.join(parent or "/nonexistent", f"musicd-test-{os.getpid()}-{pid}")
    try:
        os.mkdir(child)
    except OSError as e:
        pytest.skip(f"no memory cgroup can be made here: {e}")
    try:
        if not os.path.exists(os.path.join(child, limit_file)):
            pytest.skip(f"{parent} gives its children no memory controller")
        with open(os.path.join(child, limit_file), "w") as f:
            f.write(str(limit))
        with open(os.path.join(child, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        yield
    finally:
        # Back where it was (the server ends later), so that the cgroup can go.
        for left in open(os.path.join(child, "cgroup.procs")).read().split():
            with contextlib.suppress(OSError), open(os.path.join(parent, "cgroup.procs"), "w") as f:
                f.write(left)
        os.rmdir(child)


def test_windows_evicted_again_and_again_are_copied_into_memory_and_sent_exact(
        musicd, slow_library):
    slow = slow_library
    # A memory limit below what eight streams' windows need (a container's, too small): the
    # kernel takes a window's pages back before their send, and again after each read; after
    # two reads the gate copies the range into memory on a disk thread, and the worker sends
    # that copy, where the gate of before sent the range from the file: the worker's sendfile
    # then read the mount itself. How soon a window goes a third time depends on the machine's
    # pace, so rounds go on (bounded) until one was copied. musicd's own memory counts too
    # from the move on: 64 KiB windows keep its copies small, and 4 disk threads the stacks
    # its threads touch first (at 2 MiB with 512 KiB windows, and at 3 MiB with the default
    # threads under a loaded machine, the kernel killed musicd for its memory). At 3 MiB with
    # these it was killed once in a fresh make test: its own memory is about 330 KiB, but pages
    # of reads in flight cannot be taken back either; 4 MiB copies within 1-5 rounds, 20 of 20
    # runs four at once beside two busy CPUs.
    if SANITIZED:
        pytest.skip("a sanitizer's own memory (shadow, quarantine) does not fit a 4 MiB limit")
    server = start(musicd, slow, "--disk-window", "65536", "--disk-threads", "4")
    before = {name: scrape(server).value(name) for name in
              ("musicd_disk_evicted_sends_total", "musicd_disk_copied_sends_total")}
    copied = rounds = 0
    deadline = time.monotonic() + scaled(150)
    limit = 4 * 2**20
    with memory_limited(server.pid, limit):
        while rounds < 200 and time.monotonic() < deadline:  # a round: a second or less alone
            rounds += 1
            for track in slow.cold:
                slow.fs.drop_cache(track.path.name)
            downloads = [Download(server, track) for track in slow.cold * 2]
            for d in downloads:
                d.start()
            for d in downloads:
                d.join(scaled(60))
            # A server the kernel killed at the group's limit cuts bodies short (never wrong
            # bytes), and this machine's urllib3 does not hold a body to its Content-Length:
            # said as what it is, before the bodies are compared.
            assert server.proc.poll() is None, \
                f"musicd ended with status {server.proc.returncode} in round {rounds} in its " \
                f"{limit >> 20} MiB group (-9: the kernel killed it at the limit)"
            for d in downloads:
                assert d.error is None, d.error
                assert_track(d.response, slow.big)
            copied = scrape(server).value("musicd_disk_copied_sends_total") - \
                before["musicd_disk_copied_sends_total"]
            if copied > 0:
                break
    evicted = scrape(server).value("musicd_disk_evicted_sends_total") - \
        before["musicd_disk_evicted_sends_total"]
    assert evicted > 0, "no window was evicted before its send under the memory limit"
    assert copied > 0, f"{evicted} evictions in {rounds} rounds, and no window was copied"
    assert_track(get(server, slow.cached), slow.library.media.short.read_bytes())


# -- a slow mount holds only its own requests -------------------------------------------------

def test_a_cached_track_answers_while_the_slow_mounts_reads_hang(musicd, slow_library):
    slow = slow_library
    server = start(musicd, slow)
    slow.fs.hang("cold*")
    downloads = [Download(server, track) for track in slow.cold]
    try:
        for d in downloads:
            d.start()
        slow.fs.wait_hung(COLD_TRACKS)  # each download's first window waits in the daemon
        for _ in range(5):
            r = get(server, slow.cached)
            assert r.status_code == 200 and r.content == slow.cached.data
        assert requests.get(f"http://127.0.0.1:{server.port}/healthz",
                            timeout=TIMEOUT).status_code == 200
        s = scrape(server)
        assert s.value("musicd_disk_in_flight", lane=LANE_SLOW) >= 1
        assert s.value("musicd_disk_in_flight", lane=LANE_FAST) == 0
        assert not any(d.finished_at for d in downloads)  # still hung
    finally:
        release(slow, downloads)
    for d in downloads:
        assert d.error is None, d.error
        assert_track(d.response, slow.big)


def test_a_hung_open_holds_only_its_mounts_requests(musicd, slow_library):
    slow = slow_library
    server = start(musicd, slow)
    hung, other = slow.cold[0], slow.cold[1]
    # Its lookup and open wait, as on a hung NFS server. The kernel then holds the lookups of
    # that directory behind it (a FUSE mount without parallel directory operations): the
    # other track of the mount waits too; the other root does not.
    slow.fs.hang(hung.path.name, meta=True)
    downloads = [Download(server, hung), Download(server, other)]
    try:
        downloads[0].start()
        slow.fs.wait_hung(1)
        downloads[1].start()
        for _ in range(5):
            assert get(server, slow.cached).content == slow.cached.data
        assert requests.get(f"http://127.0.0.1:{server.port}/healthz",
                            timeout=TIMEOUT).status_code == 200
        assert scrape(server).value("musicd_disk_in_flight", lane=LANE_SLOW) >= 1
        assert downloads[0].finished_at is None
    finally:
        release(slow, downloads)
    for d in downloads:
        assert d.error is None, d.error
        assert_track(d.response, slow.big)


def test_a_hung_read_lets_musicd_reload_and_stop_within_its_grace(musicd, slow_library):
    slow = slow_library
    # LeakSanitizer stops every thread with ptrace at exit, and a thread inside a FUSE read that
    # never returns cannot be stopped: without this, an ASan build would wait for it forever.
    env = {"ASAN_OPTIONS": SANITIZER_ENV["ASAN_OPTIONS"] + ":detect_leaks=0"} if SANITIZED \
        else None
    server = start(musicd, slow, workers=2, env=env)
    slow.fs.hang("cold*")
    downloads = [Download(server, track) for track in slow.cold]
    for d in downloads:
        d.start()
    try:
        slow.fs.wait_hung(COLD_TRACKS)
        os.kill(server.pid, signal.SIGHUP)
        server.wait_for_stderr("SIGHUP", TIMEOUT)
        assert get(server, slow.cached).content == slow.cached.data
        # SIGTERM: the hung requests cannot finish; the stop ends after its grace, not never.
        stopped = time.monotonic()
        assert server.stop(timeout=30) == 0
        took = time.monotonic() - stopped
        log = server.stderr_text()
        assert "left to the exit" in log, log[-2000:]
    finally:
        release(slow, downloads)
    assert took < scaled(25), f"the stop took {took:.1f} s"
    for d in downloads:
        assert d.response is None or d.response.status_code != 200 or \
            len(d.response.content) < len(slow.big)


# -- limits ---------------------------------------------------------------------------------

def test_a_full_queue_answers_new_starts_503_and_keeps_the_other_roots_going(musicd,
                                                                            slow_library):
    slow = slow_library
    server = start(musicd, slow, "--disk-threads", "2", "--disk-threads-per-root", "1",
                   "--disk-queue", "1", "--disk-queue-timeout", "300")
    slow.fs.hang("cold*")
    first, queued = Download(server, slow.cold[0]), Download(server, slow.cold[1])
    try:
        first.start()
        slow.fs.wait_hung(1)  # the lane's one thread is taken
        queued.start()
        wait_until(lambda: scrape(server).value("musicd_disk_queued", lane=LANE_SLOW) == 1,
                   TIMEOUT, message="a start queued")
        refused = [get(server, track) for track in slow.cold[2:]]
        for r in refused:
            assert r.status_code == 503
            assert r.headers.get("Retry-After")
            assert r.headers["Content-Type"].startswith("text/plain")
        s = scrape(server)
        assert s.value("musicd_disk_refused_total") == len(refused)
        # each refusal logged once, naming its track (respond/disk_start.c)
        log = server.stderr_text()
        for track in slow.cold[2:]:
            assert log.count(f"mid={track.id}: no disk thread within 300 ms: 503") == 1, log
        assert s.value("musicd_disk_in_flight", lane=LANE_SLOW) == 1
        assert s.value("musicd_disk_queue_limit") == 1
        assert s.value("musicd_disk_threads_per_root") == 1
        # the other root has its own thread
        assert get(server, slow.cached).content == slow.cached.data
        assert first.finished_at is None and queued.finished_at is None
    finally:
        release(slow, [first, queued])
    assert_track(first.response, slow.big)
    assert_track(queued.response, slow.big)


def test_a_playing_stream_waits_and_is_never_cut_while_new_starts_are_refused(musicd,
                                                                             slow_library):
    slow = slow_library
    server = start(musicd, slow, "--disk-threads", "2", "--disk-threads-per-root", "1",
                   "--disk-queue", "1", "--disk-queue-timeout", "300",
                   "--disk-window", "65536")
    playing = slow.cold[3]
    # The receive buffer is made small before the connection, so that the window it offers is
    # small from the first byte (shrinking it later makes TCP probe a closed window instead).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(TIMEOUT)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        s.connect(("127.0.0.1", server.port))
        s.sendall(f"GET {playing.url_path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        received = s.recv(65536)  # playing: its first window is in
        slow.fs.hang("cold[012]*")
        hung = Download(server, slow.cold[0])
        starts = [Download(server, track) for track in slow.cold[1:3]]
        try:
            hung.start()
            slow.fs.wait_hung(1)
            wait_until(lambda: scrape(server).value("musicd_disk_in_flight", lane=LANE_SLOW) >= 1,
                       TIMEOUT, message="the lane's one thread held")
            # Two more starts; the lane's queue holds one start (whichever came first), so at
            # least one of them is refused once it has waited --disk-queue-timeout.
            for start_ in starts:
                start_.start()
            wait_until(lambda: any(d.finished_at is not None for d in starts), TIMEOUT,
                       message="a start refused")
            refused = [d.response for d in starts if d.finished_at is not None]
            for response in refused:
                assert response.status_code == 503 and response.headers.get("Retry-After")
            # The stream waits for its next window (behind the hung read, on the same
            # mount), and is not cut: once the mount answers, it goes on to its end.
            assert hung.finished_at is None
        finally:
            release(slow, [hung, *starts])
        received = bytearray(received)  # grown in place: 8 KiB pieces of a 4 MB body
        while True:
            end = received.find(b"\r\n\r\n")
            if end >= 0 and len(received) - end - 4 >= len(slow.big):
                break
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            received += chunk
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert sha256(body) == sha256(slow.big)
    assert_track(hung.response, slow.big)
    for start_ in starts:  # the one queued, if one was, plays once the mount answers
        if start_.response.status_code != 503:
            assert_track(start_.response, slow.big)


# -- through the shipped fronts ---------------------------------------------------------------

def test_cold_tracks_through_the_shipped_nginx_and_varnish_are_byte_exact(musicd, slow_library,
                                                                          frontends):
    slow = slow_library
    server = start(musicd, slow, workers=2)
    nginx = frontends.nginx(server.port)
    varnish = frontends.varnish(nginx.port)
    data = slow.big
    for front, track in ((nginx, slow.cold[0]), (varnish, slow.cold[1])):
        r = requests.get(front.url + track.url_path, timeout=scaled(60))
        assert_track(r, data)
        slow.fs.drop_cache(track.path.name)
        r = requests.get(front.url + track.url_path, timeout=scaled(60),
                         headers={"Range": "bytes=1000000-1999999"})
        assert r.status_code == 206
        assert r.content == data[1000000:2000000]
