"""The shipped offload site (config/nginx-musicd-offload.conf) over slow and hung storage.

There nginx reads the disk itself, after musicd's X-Accel-Redirect answer, and the site sends
with `aio threads` (each sendfile(2) in nginx's thread pool): a track on a slow or hung mount
holds only its own download. musicd runs with two media roots: a slow filesystem
(slowfs.py: a wait on every read, or reads that hang until released) and a directory on the
ordinary disk holding a small track, cached; nginx serves each through its own internal
location, a copy of the shipped one (the site's "Several media roots"). nginx runs with one
worker, so anything that waited on the worker would hold every request.
Skipped where the machine cannot mount (no /dev/fuse, not root).
"""

import hashlib
import shutil
import threading
import time
import types

import pytest
import requests

import slowfs
from byteranges import parse_multipart
from frontends import SHIPPED_ACCEL_PREFIX, parse_content_range
from support import scaled

pytestmark = pytest.mark.skipif(
    not (shutil.which("nginx") or shutil.which("/usr/sbin/nginx")),
    reason="nginx is needed (scripts/setup/install-deps)")

FAST_PREFIX = "/protected/fast/"   # the second media root's --x-accel-redirect
COLD_TRACKS = 4
READ_DELAY_MS = 10
TIMEOUT = scaled(20)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def stack(musicd, library, frontends, tmp_path):
    """The slow mount (cold0.mp3 ... over the big mp3), the fast root (cached.mp3, a short
    one), musicd in offload mode over both, nginx from the shipped site in front."""
    source = tmp_path / "slow-source"
    source.mkdir()
    for i in range(COLD_TRACKS):
        library.place(library.media.big, f"cold{i}.mp3", root=source)
    with slowfs.mounted(source, read_delay_us=READ_DELAY_MS * 1000) as fs:
        cold = [library.add_document(fs.mountpoint / f"cold{i}.mp3", name=f"cold{i}.mp3")
                for i in range(COLD_TRACKS)]
        cached = library.add(library.media.short, "cached.mp3")
        server = musicd.start(media_roots=[fs.mountpoint, library.root], extra_args=[
            "--x-accel-redirect", SHIPPED_ACCEL_PREFIX, "--x-accel-redirect", FAST_PREFIX])
        nginx = frontends.nginx(server.port, offload=True, media_root=fs.mountpoint,
                                more_roots=[(FAST_PREFIX, library.root)])
        big = library.media.big.read_bytes()
        assert get(nginx, cached).content == cached.data  # cached from here on
        yield types.SimpleNamespace(fs=fs, musicd=server, nginx=nginx, cold=cold, big=big,
                                    cached=cached)


def get(nginx, track, timeout=TIMEOUT, **kw):
    return requests.get(nginx.url + track.url_path, timeout=timeout, **kw)


class Download(threading.Thread):
    """A whole GET of a track through nginx on a thread of its own: .response once done."""

    def __init__(self, nginx, track):
        super().__init__(daemon=True)
        self.nginx, self.track = nginx, track
        self.response = self.error = None
        self.finished_at = None

    def run(self):
        try:
            self.response = get(self.nginx, self.track, timeout=scaled(60))
        except requests.RequestException as e:
            self.error = e
        self.finished_at = time.monotonic()


def test_cold_tracks_from_the_slow_mount_are_byte_exact_with_ranges(stack):
    fs, nginx, data = stack.fs, stack.nginx, stack.big
    before = fs.stats()["read_bytes"]
    for track in stack.cold:
        r = get(nginx, track)
        assert r.status_code == 200
        assert r.headers["Content-Length"] == str(len(data))
        assert sha256(r.content) == sha256(data)
    # every byte came through the slow filesystem (nothing of these files was cached)
    assert fs.stats()["read_bytes"] - before >= COLD_TRACKS * len(data)

    track = stack.cold[0]
    for spec, first, last in (("bytes=3000000-3000999", 3000000, 3000999),
                              ("bytes=-1000", len(data) - 1000, len(data) - 1),
                              ("bytes=1-1", 1, 1)):
        fs.drop_cache(f"{track.name}")  # cold again: the range is read from the slow mount
        r = get(nginx, track, headers={"Range": spec})
        assert r.status_code == 206, spec
        assert parse_content_range(r.headers["Content-Range"]) == (first, last, len(data))
        assert r.content == data[first:last + 1], spec
    fs.drop_cache(track.name)
    r = get(nginx, track, headers={"Range": "bytes=0-99,2000000-2131071"})
    assert r.status_code == 206
    parts = parse_multipart(r.headers["Content-Type"], r.content)
    assert [(p.first, p.last, p.data) for p in parts] == \
        [(0, 99, data[:100]), (2000000, 2131071, data[2000000:2131072])]


def test_a_cached_track_answers_while_the_slow_mounts_reads_hang(stack):
    fs, nginx = stack.fs, stack.nginx
    fs.hang("cold*")
    downloads = [Download(nginx, track) for track in stack.cold]
    try:
        for d in downloads:
            d.start()
        fs.wait_hung(COLD_TRACKS)  # each download's first read waits in the daemon
        for _ in range(5):
            r = get(nginx, stack.cached)  # the worker is free: its sendfile waits in a thread
            assert r.status_code == 200 and r.content == stack.cached.data
        assert requests.get(nginx.url + "/healthz", timeout=TIMEOUT).status_code == 200
        assert not any(d.finished_at for d in downloads)  # still hung
    finally:
        fs.release()
        for d in downloads:
            d.join(scaled(60))
    for d in downloads:
        assert d.error is None, d.error
        assert d.response.status_code == 200
        assert sha256(d.response.content) == sha256(stack.big)


@pytest.mark.timing
def test_a_cached_track_answers_within_one_slow_read_while_cold_tracks_stream(stack):
    fs, nginx = stack.fs, stack.nginx
    slow_read_s = 0.25
    fs.set_read_delay(slow_read_s * 1e6)  # the cold downloads take many seconds
    downloads = [Download(nginx, track) for track in stack.cold]
    took = []
    try:
        for d in downloads:
            d.start()
        while fs.stats()["reads"] < 2 * COLD_TRACKS:  # bounded by the downloads' timeout
            assert not any(d.finished_at for d in downloads)
            time.sleep(0.05)
        for _ in range(10):
            t0 = time.monotonic()
            r = get(nginx, stack.cached)
            took.append(time.monotonic() - t0)
            assert r.status_code == 200 and r.content == stack.cached.data
        assert not any(d.finished_at for d in downloads)  # they were streaming throughout
    finally:
        fs.set_read_delay(0)
        for d in downloads:
            d.join(scaled(60))
    # a worker waiting in sendfile for one slow read would have held each fetch that long
    assert max(took) < slow_read_s, took
    for d in downloads:
        assert d.error is None and d.response.status_code == 200
        assert sha256(d.response.content) == sha256(stack.big)
