"""Tracks stored in GridFS (issue 11): a track document without a path whose gridfs_id holds an
ObjectId is served from that file of the fs bucket, with everything a disk file gets: exact bytes,
HEAD, single and multipart ranges cut from the right chunks, 416, conditionals on a strong ETag
from the file's _id and length and on Last-Modified from uploadDate. Chunks that are missing or
short are a logged data error: 500 before the head, a closed connection after it, never wrong
bytes and never a hang. A stalled database stalls only the GridFS streams waiting on it, and many
slow GridFS readers hold at most a window of data each. With the lookup cache, a GridFS track's
fs.files fields are remembered like a disk track's path: a request for it asks the database
nothing, so with its spooled copy it is answered while the database is cut off; without a copy the
chunks still need the database (503 when it is cut, before any byte of the body).

Files are put into GridFS with scripts/setup/gridfs-put (pymongo's gridfs), as the demo does.
"""

import datetime
import email.utils
import hashlib
import random
import re
import subprocess
import threading
import time

import pytest
from bson import ObjectId

from byteranges import parse_multipart
from httpraw import Reader, abort, connect, exchange, read_until_closed, request_bytes
from pacing import PacedListener, timed_get
from support import REPO, SANITIZED, SANITIZER_ENV, scaled, wait_until

# Each test has a database of its own, none is shared_server (conftest.py): FerretDB reads a
# chunk by scanning all of fs.chunks, so chunks that other tests put there make every read
# slower (under load, late enough for a chunk read to miss its deadline).
GRIDFS_PUT = REPO / "scripts" / "setup" / "gridfs-put"
CHUNK = 1000                 # the small file's chunkSize: ranges cross boundaries at 1000s
SMALL_LENGTH = 5500          # six chunks, the last one 500 bytes
PUT_TIMEOUT = 60.0
READ_TIMEOUT = 10.0          # any response, or the close after a data error (scaled)


def _bytes(length, seed):
    return random.Random(seed).randbytes(length)


def put(mongo_uri, db, path, *, chunk_size=CHUNK, content_type=None, tracks="tracks"):
    """(fs.files _id, track _id or None) of path put into db's fs bucket by
    scripts/setup/gridfs-put."""
    args = ["/usr/bin/python3", str(GRIDFS_PUT), "--mongodb-uri", mongo_uri,
            "--database", db.name, "--chunk-size", str(chunk_size)]
    if content_type:
        args += ["--content-type", content_type]
    if tracks:
        args += ["--tracks", tracks]
    out = subprocess.run(args + [str(path)], check=True, capture_output=True, text=True,
                         timeout=PUT_TIMEOUT).stdout.split()
    assert len(out) == 3 and out[2] == path.name, out
    return out[0], (out[1] if tracks else None)


class GridfsTrack:
    def __init__(self, files_id, track_id, data, name):
        self.files_id = files_id
        self.id = track_id
        self.data = data
        self.url_path = f"/musicdb/{track_id}/{name}"


@pytest.fixture
def gridfs_file(tmp_path, mongo, db):
    """A factory: gridfs_file(length, name=..., **put options) -> GridfsTrack."""
    def make(length=SMALL_LENGTH, name="song.mp3", seed=1, data=None, **options):
        data = data if data is not None else _bytes(length, seed)
        path = tmp_path / "upload" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        files_id, track_id = put(mongo.uri, db, path, **options)
        return GridfsTrack(files_id, track_id, data, name)
    return make


def files_entry(db, track):
    return db.client[db.name]["fs.files"].find_one({"_id": ObjectId(track.files_id)})


def chunks(db):
    return db.client[db.name]["fs.chunks"]


def get(server, target, headers=None, method="GET"):
    resp, rest = exchange(server.port, method, target, headers=headers,
                          timeout=scaled(READ_TIMEOUT))
    assert rest == b"", f"{len(rest)} bytes after the response"
    return resp


def expected_etag(track):
    return f'"{track.files_id}-{len(track.data):x}"'


def test_the_whole_file_is_sent_with_exact_bytes_and_its_validators(server, db, gridfs_file):
    track = gridfs_file()
    resp = get(server, track.url_path)
    assert resp.status == 200
    assert resp.body == track.data
    assert resp.header("Content-Length") == str(SMALL_LENGTH)
    assert resp.header("Content-Type") == "audio/mpeg"   # the filename's extension
    assert resp.header("Accept-Ranges") == "bytes"
    assert resp.header("ETag") == expected_etag(track)
    upload = files_entry(db, track)["uploadDate"].replace(tzinfo=datetime.timezone.utc)
    assert resp.header("Last-Modified") == email.utils.format_datetime(
        upload.replace(microsecond=0), usegmt=True)
    assert resp.header("Cache-Control") == "public, max-age=86400"


def test_a_file_of_many_default_size_chunks_is_sent_whole(server, gridfs_file, media):
    data = media.big.read_bytes()
    track = gridfs_file(data=data, name="big.mp3", chunk_size=255 * 1024)
    resp = get(server, track.url_path)
    assert resp.status == 200
    assert len(resp.body) == len(data)
    assert hashlib.sha256(resp.body).digest() == hashlib.sha256(data).digest()


@pytest.mark.parametrize("header, first, last", [
    ("bytes=900-2100", 900, 2100),       # across two chunk boundaries
    ("bytes=1200-1300", 1200, 1300),     # inside one chunk
    ("bytes=5000-5499", 5000, 5499),     # the last chunk, which is short
    ("bytes=4990-", 4990, 5499),         # open-ended, across into the last chunk
    ("bytes=0-0", 0, 0),                 # one byte: 206, not 200
    ("bytes=-700", 4800, 5499),          # a suffix range
    ("bytes=999-1000", 999, 1000),       # the last byte of one chunk and the first of the next
])
def test_a_range_is_cut_from_the_right_chunks(server, gridfs_file, header, first, last):
    track = gridfs_file()
    resp = get(server, track.url_path, headers={"Range": header})
    assert resp.status == 206
    assert resp.header("Content-Range") == f"bytes {first}-{last}/{SMALL_LENGTH}"
    assert resp.header("Content-Length") == str(last - first + 1)
    assert resp.body == track.data[first:last + 1]


def test_a_range_reads_only_the_chunks_it_needs(server, db, gridfs_file):
    track = gridfs_file()
    # Every chunk but 1 and 2 is gone: a range within them is still answered in full.
    chunks(db).delete_many({"files_id": ObjectId(track.files_id), "n": {"$nin": [1, 2]}})
    resp = get(server, track.url_path, headers={"Range": "bytes=1500-2499"})
    assert resp.status == 206
    assert resp.body == track.data[1500:2500]


def test_streams_follow_each_other_on_one_kept_alive_connection(musicd, library, gridfs_file):
    # A small window: each GridFS body goes out in several reads, the output emptying between
    # them, after a disk response on the same connection.
    server = musicd.start(extra_args=["--gridfs-window", "1024"])
    disk = library.add()
    track = gridfs_file()
    with connect(server.port, timeout=scaled(READ_TIMEOUT)) as s:
        reader = Reader(s)
        for target, expected in [(disk.url_path, disk.data), (track.url_path, track.data),
                                 (track.url_path, track.data), (disk.url_path, disk.data)]:
            s.sendall(request_bytes("GET", target))
            resp = reader.read_response()
            assert resp.status == 200 and resp.body == expected, target
            assert resp.header("Connection") is None
        s.sendall(request_bytes("GET", track.url_path, headers={"Range": "bytes=10-3009"}))
        resp = reader.read_response()
        assert resp.status == 206 and resp.body == track.data[10:3010]


def test_several_ranges_are_a_multipart_answer_with_exact_parts(server, gridfs_file):
    track = gridfs_file()
    resp = get(server, track.url_path, headers={"Range": "bytes=0-9,1995-2005,5490-"})
    assert resp.status == 206
    assert int(resp.header("Content-Length")) == len(resp.body)
    parts = parse_multipart(resp.header("Content-Type"), resp.body)
    assert [(p.first, p.last) for p in parts] == [(0, 9), (1995, 2005), (5490, 5499)]
    for p in parts:
        assert p.total == SMALL_LENGTH and p.content_type == "audio/mpeg"
        assert p.data == track.data[p.first:p.last + 1]


def test_a_range_past_the_end_is_416(server, gridfs_file):
    track = gridfs_file()
    resp = get(server, track.url_path, headers={"Range": "bytes=5500-"})
    assert resp.status == 416
    assert resp.header("Content-Range") == f"bytes */{SMALL_LENGTH}"


def test_head_has_the_headers_of_get_and_no_body(server, gridfs_file):
    track = gridfs_file()
    resp = get(server, track.url_path, method="HEAD")
    assert resp.status == 200
    assert resp.header("Content-Length") == str(SMALL_LENGTH)
    assert resp.header("ETag") == expected_etag(track)
    ranged = get(server, track.url_path, method="HEAD", headers={"Range": "bytes=10-19"})
    assert ranged.status == 206 and ranged.header("Content-Range") == f"bytes 10-19/{SMALL_LENGTH}"


def test_if_none_match_with_the_etag_is_304(server, gridfs_file):
    track = gridfs_file()
    etag = get(server, track.url_path).header("ETag")
    resp = get(server, track.url_path, headers={"If-None-Match": etag})
    assert resp.status == 304
    assert resp.body == b""
    assert resp.header("ETag") == etag
    other = get(server, track.url_path, headers={"If-None-Match": '"something-else"'})
    assert other.status == 200 and other.body == track.data


def test_if_modified_since_last_modified_is_304(server, gridfs_file):
    track = gridfs_file()
    last_modified = get(server, track.url_path).header("Last-Modified")
    resp = get(server, track.url_path, headers={"If-Modified-Since": last_modified})
    assert resp.status == 304


def test_if_range_resumes_only_the_same_file(server, gridfs_file):
    track = gridfs_file()
    etag = get(server, track.url_path).header("ETag")
    same = get(server, track.url_path, headers={"Range": "bytes=1000-1999", "If-Range": etag})
    assert same.status == 206 and same.body == track.data[1000:2000]
    changed = get(server, track.url_path,
                  headers={"Range": "bytes=1000-1999", "If-Range": '"another-file"'})
    assert changed.status == 200 and changed.body == track.data


def test_the_stored_content_type_wins_over_the_extension(server, gridfs_file):
    track = gridfs_file(content_type="audio/ogg")
    assert get(server, track.url_path).header("Content-Type") == "audio/ogg"


def test_without_a_type_or_known_filename_the_urls_name_decides(server, gridfs_file):
    track = gridfs_file(name="upload.bin")
    flac = track.url_path.rsplit("/", 1)[0] + "/song.flac"
    assert get(server, flac).header("Content-Type") == "audio/flac"


def test_a_gridfs_id_with_no_files_entry_is_404_and_logged(server, db):
    missing = ObjectId()
    track_id = db.insert({"gridfs_id": missing, "title": "gone"})
    resp = get(server, f"/musicdb/{track_id}/x.mp3")
    assert resp.status == 404
    server.wait_for_stderr(f"GridFS file {missing}: no entry")


def test_the_documents_can_be_the_fs_files_entries(musicd, gridfs_file):
    track = gridfs_file(tracks=None)
    server = musicd.start(extra_args=["--collection", "fs.files", "--gridfs-field", "_id"])
    resp = get(server, f"/musicdb/{track.files_id}/song.mp3")
    assert resp.status == 200 and resp.body == track.data
    assert resp.header("ETag") == expected_etag(track)
    part = get(server, f"/musicdb/{track.files_id}/song.mp3", headers={"Range": "bytes=-1"})
    assert part.status == 206 and part.body == track.data[-1:]


# -- data errors ------------------------------------------------------------------------------

def _get_until_closed(server, target, headers=None):
    """(response, body bytes received, how the connection ended) of one request read until
    musicd closes it, within a bounded time."""
    with connect(server.port, timeout=scaled(READ_TIMEOUT)) as s:
        s.sendall(request_bytes("GET", target, headers=headers))
        data, how = read_until_closed(s, scaled(READ_TIMEOUT), limit=1 << 24)
    reader = Reader(None)
    reader.buf = data
    head = reader.read_until(b"\r\n\r\n")
    return head.decode("iso-8859-1"), reader.buf, how


def test_a_missing_first_chunk_is_500_and_logged(server, db, gridfs_file):
    track = gridfs_file()
    chunks(db).delete_one({"files_id": ObjectId(track.files_id), "n": 0})
    resp = get(server, track.url_path)
    assert resp.status == 500
    server.wait_for_stderr(f"data error: GridFS file {track.files_id}: chunk 0 is missing")


def test_a_missing_chunk_mid_file_closes_the_connection_after_the_right_bytes(musicd, db,
                                                                               gridfs_file):
    # A small window: the head and the first chunks go out before chunk 3 is read.
    server = musicd.start(extra_args=["--gridfs-window", "1024"])
    track = gridfs_file()
    chunks(db).delete_one({"files_id": ObjectId(track.files_id), "n": 3})
    head, body, how = _get_until_closed(server, track.url_path)
    assert head.startswith("HTTP/1.1 200 "), head
    assert f"Content-Length: {SMALL_LENGTH}" in head
    assert how in ("eof", "reset"), "the connection was left open"
    assert len(body) < SMALL_LENGTH
    assert body == track.data[:len(body)], "bytes that are not the file's"
    assert len(body) <= 3 * CHUNK
    server.wait_for_stderr(f"data error: GridFS file {track.files_id}: chunk 3 is missing")


def test_a_short_chunk_is_a_data_error_never_wrong_bytes(musicd, db, gridfs_file):
    server = musicd.start(extra_args=["--gridfs-window", "1024"])
    track = gridfs_file()
    chunks(db).update_one({"files_id": ObjectId(track.files_id), "n": 2},
                          {"$set": {"data": track.data[2000:2900]}})
    head, body, how = _get_until_closed(server, track.url_path)
    assert head.startswith("HTTP/1.1 200 "), head
    assert how in ("eof", "reset")
    assert body == track.data[:len(body)] and len(body) <= 2 * CHUNK
    server.wait_for_stderr(f"GridFS file {track.files_id}: chunk 2 holds 900 bytes, not 1000")


def test_a_short_last_chunk_in_a_range_is_500(server, db, gridfs_file):
    track = gridfs_file()
    chunks(db).update_one({"files_id": ObjectId(track.files_id), "n": 5},
                          {"$set": {"data": track.data[5000:5100]}})
    resp = get(server, track.url_path, headers={"Range": "bytes=5000-"})
    assert resp.status == 500
    server.wait_for_stderr("chunk 5 holds 100 bytes, not 500")


# -- the database stalls; many slow readers ---------------------------------------------------

STALL_DELAY = 1.5     # the proxy holds each answer from the database this long, s
STALL_SECONDS = 5.0   # how long the stall is watched, s
STALL_DRAIN = 2.0     # its first part: what was in the window and the sockets before it is read
PACE = 16384 * 10     # the listeners read 16 KiB every 100 ms


@pytest.mark.timing
def test_a_stalled_database_stalls_only_the_gridfs_stream(musicd, library, db_proxy,
                                                          gridfs_file, media):
    big = library.add(media.big, "big.mp3")
    cached = library.add(media.short, "cached.mp3")
    data = media.big.read_bytes()
    stored = gridfs_file(data=data, name="big.mp3", chunk_size=64 * 1024)
    server = musicd.start(mongodb_uri=db_proxy.uri,
                          extra_args=["--workers", "1", "--lookup-timeout", "10000",
                                      "--gridfs-window", "65536", "--lookup-cache-ttl", "300"])
    assert timed_get(server.port, cached.url_path, timeout=scaled(10)).status == 200
    disk = PacedListener(server.port, big.url_path, big.data, rate=PACE).start(
        timeout=scaled(10))
    grid = PacedListener(server.port, stored.url_path, data, rate=PACE).start(
        timeout=scaled(10))
    try:
        time.sleep(1.0)
        assert disk.error is None and grid.error is None
        db_proxy.proxy.delay_to_client = STALL_DELAY
        cached_answers = []
        stall_began = time.monotonic()
        drained = None   # (disk, grid) received once the first part of the stall is over
        while time.monotonic() < stall_began + STALL_SECONDS:
            if drained is None and time.monotonic() >= stall_began + STALL_DRAIN:
                drained = disk.received, grid.received
            cached_answers.append(timed_get(server.port, cached.url_path, timeout=scaled(10)))
            time.sleep(0.2)
        assert drained is not None
        disk_during, grid_during = disk.received - drained[0], grid.received - drained[1]
        db_proxy.proxy.delay_to_client = 0
        # Compared after the stall's first part: until then the GridFS listener still reads what
        # musicd had sent before the stall (its window and the sockets' queues: up to ~400 KB
        # was seen on a loaded machine). Then the disk stream keeps flowing at about its pace;
        # the GridFS stream, which needs a 1.5 s round trip per 64 KiB, falls well behind it
        # (a coarse comparison, not a timing).
        watched = STALL_SECONDS - STALL_DRAIN
        assert disk_during >= PACE * watched / 2, (disk_during, grid_during)
        assert grid_during < disk_during / 2, (disk_during, grid_during)
        assert all(r.status == 200 for r in cached_answers), cached_answers
        assert len(cached_answers) >= 5
        # Once the database answers again, the GridFS stream goes on with the right bytes.
        resumed = grid.received
        wait_until(lambda: grid.received > resumed + 2 * 65536, scaled(15),
                   message="the GridFS stream to resume")
    finally:
        disk.stop()
        grid.stop()
    assert disk.mismatch is None and grid.mismatch is None
    assert disk.error is None and grid.error is None


SLOW_READERS = 30
READER_WINDOW = 65536


@pytest.mark.load
def test_many_slow_gridfs_readers_hold_about_a_window_each(musicd, gridfs_file, media):
    data = media.big.read_bytes()   # ~4 MB: unbounded read-ahead would hold it all, per reader
    stored = gridfs_file(data=data, name="big.mp3", chunk_size=64 * 1024)
    # FerretDB scans fs.chunks for every read: a generous deadline, so none of the readers'
    # reads, queued behind the others', gets a 503 instead.
    # Under ASan freed memory waits in a quarantine instead of being reused, so RSS would
    # count every byte ever read rather than what is held: no quarantine here.
    env = {"ASAN_OPTIONS": SANITIZER_ENV["ASAN_OPTIONS"] + ":quarantine_size_mb=0"} \
        if SANITIZED else None
    server = musicd.start(extra_args=["--gridfs-window", str(READER_WINDOW),
                                      "--lookup-threads", "4", "--lookup-timeout", "60000"],
                          env=env)
    assert get(server, stored.url_path).body == data   # warm: pools, allocator
    baseline = server.rss_bytes()
    readers = []
    try:
        for _ in range(SLOW_READERS):
            s = connect(server.port, timeout=scaled(10), rcvbuf=4096)
            s.sendall(request_bytes("GET", stored.url_path))
            readers.append(s)
        for s in readers:   # each has its head and the first bytes; then reads nothing more
            s.settimeout(scaled(60))
            assert s.recv(1024).startswith(b"HTTP/1.1 200 ")
        # musicd fills each reader's window and socket buffer, then stops reading: let it do
        # whatever it would do (bounded), then look at what it holds.
        time.sleep(scaled(3.0))
        grown = server.rss_bytes() - baseline
    finally:
        for s in readers:
            abort(s)
    # A window, a chunk in flight and socket-side buffers per reader, with slack; reading the
    # whole file for each would be ~SLOW_READERS * 4 MB.
    bound = SLOW_READERS * (READER_WINDOW + 64 * 1024 + 512 * 1024)
    assert grown < bound, f"RSS grew {grown} bytes for {SLOW_READERS} readers (bound {bound})"
    wait_until(lambda: len(server.client_sockets()) == 0, scaled(10),
               message="the aborted readers' connections to close")


@pytest.mark.timing
def test_stopping_with_gridfs_streams_in_flight_ends_them_and_exits_cleanly(musicd, db_proxy,
                                                                           gridfs_file, media):
    # One reader takes nothing (its stream waits for the socket to drain), the other reads as
    # fast as it can from a slow database (its stream always has a read in flight): the
    # shutdown's grace period ends with both unfinished, and musicd still exits 0 (under ASan:
    # with nothing leaked).
    data = media.big.read_bytes()
    stored = gridfs_file(data=data, name="big.mp3", chunk_size=64 * 1024)
    server = musicd.start(mongodb_uri=db_proxy.uri, extra_args=["--gridfs-window", "65536"])
    idle = connect(server.port, timeout=scaled(10), rcvbuf=4096)
    busy = connect(server.port, timeout=scaled(10))
    try:
        for s in (idle, busy):
            s.sendall(request_bytes("GET", stored.url_path))
            assert s.recv(1024).startswith(b"HTTP/1.1 200 ")
        db_proxy.proxy.delay_to_client = 1.0
        stop = threading.Event()

        def read_busy():
            while not stop.is_set():
                try:
                    if not busy.recv(65536):
                        return
                except OSError:
                    return

        reader = threading.Thread(target=read_busy, daemon=True)
        reader.start()
        time.sleep(1.5)
        server.stop()
        assert server.returncode == 0
        assert re.search(r"responses still in flight .*at the end of the shutdown grace period",
                         server.stderr_text()), server.stderr_text()
        stop.set()
        reader.join(scaled(10))
    finally:
        idle.close()
        busy.close()


# -- the spool --------------------------------------------------------------------------------

def spool_args(directory, size=50_000_000):
    directory.mkdir(exist_ok=True)
    return ["--gridfs-cache-dir", str(directory), "--gridfs-cache-size", str(size)]


def copy_name(track):
    return f"{track.files_id}-{len(track.data):x}"


def wait_for_copy(directory, track):
    path = directory / copy_name(track)
    wait_until(lambda: path.exists(), scaled(10), message=f"the copy {path.name}")
    return path


def test_a_spooled_file_is_sent_from_its_copy_once_the_database_has_read_it(musicd, db, tmp_path,
                                                                          gridfs_file):
    spool = tmp_path / "spool"
    server = musicd.start(extra_args=spool_args(spool))
    track = gridfs_file()
    first = get(server, track.url_path)
    assert first.status == 200 and first.body == track.data
    copy = wait_for_copy(spool, track)
    assert copy.read_bytes() == track.data
    assert [p.name for p in spool.iterdir()] == [copy.name]   # no temporary file left
    # The chunks are gone from the database: only the copy can answer now.
    chunks(db).delete_many({"files_id": ObjectId(track.files_id)})
    again = get(server, track.url_path)
    assert again.status == 200 and again.body == track.data
    assert again.header("ETag") == first.header("ETag")
    assert again.header("Last-Modified") == first.header("Last-Modified")
    part = get(server, track.url_path, headers={"Range": "bytes=999-2000"})
    assert part.status == 206 and part.body == track.data[999:2001]
    multi = get(server, track.url_path, headers={"Range": "bytes=0-0,-1"})
    parts = parse_multipart(multi.header("Content-Type"), multi.body)
    assert [p.data for p in parts] == [track.data[:1], track.data[-1:]]


def test_concurrent_first_requests_read_the_file_from_the_database_once(musicd, tmp_path,
                                                                        db_proxy, gridfs_file):
    spool = tmp_path / "spool"
    server = musicd.start(mongodb_uri=db_proxy.uri,
                          extra_args=spool_args(spool) + ["--log-level", "debug",
                                                          "--lookup-timeout", "10000"])
    track = gridfs_file()
    db_proxy.proxy.delay_to_client = 0.3   # the requests arrive while the first fill runs
    results = [None] * 5

    def one(i):
        results[i] = get(server, track.url_path)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(scaled(30))
    assert all(r is not None and r.status == 200 and r.body == track.data for r in results)
    fills = server.stderr_text().count(f"spooling GridFS file {track.files_id}")
    assert fills == 1, server.stderr_text()[-3000:]


def test_the_least_recently_used_copies_go_to_stay_within_the_size(musicd, tmp_path, gridfs_file):
    spool = tmp_path / "spool"
    size = 4 * SMALL_LENGTH + 100   # four copies fit (and each is at most a quarter of it)
    server = musicd.start(extra_args=spool_args(spool, size=size))
    tracks = [gridfs_file(seed=i, name=f"s{i}.mp3") for i in range(5)]
    for track in tracks[:4]:
        assert get(server, track.url_path).status == 200
        wait_for_copy(spool, track)
    assert get(server, tracks[0].url_path).body == tracks[0].data   # 0 is now the newest
    assert get(server, tracks[4].url_path).status == 200
    wait_for_copy(spool, tracks[4])
    wait_until(lambda: len(list(spool.iterdir())) == 4, scaled(5), message="an eviction")
    assert {p.name for p in spool.iterdir()} == {copy_name(t) for t in tracks if t is not tracks[1]}
    assert sum(p.stat().st_size for p in spool.iterdir()) <= size


def test_a_file_larger_than_a_quarter_of_the_spool_is_streamed_without_a_copy(musicd, tmp_path,
                                                                              gridfs_file):
    spool = tmp_path / "spool"
    server = musicd.start(extra_args=spool_args(spool, size=4 * SMALL_LENGTH - 1))
    track = gridfs_file()
    resp = get(server, track.url_path)
    assert resp.status == 200 and resp.body == track.data
    assert list(spool.iterdir()) == []


def test_copies_outlive_a_restart_and_unfinished_ones_are_removed(musicd, db, tmp_path,
                                                                  gridfs_file):
    spool = tmp_path / "spool"
    server = musicd.start(extra_args=spool_args(spool))
    track = gridfs_file()
    assert get(server, track.url_path).status == 200
    wait_for_copy(spool, track)
    server.stop()
    (spool / ".tmp-unfinished").write_bytes(b"partial")
    chunks(db).delete_many({"files_id": ObjectId(track.files_id)})
    again = musicd.start(extra_args=spool_args(spool))
    resp = get(again, track.url_path)
    assert resp.status == 200 and resp.body == track.data
    assert not (spool / ".tmp-unfinished").exists()


def test_a_file_with_a_missing_chunk_gets_no_copy(musicd, db, tmp_path, gridfs_file):
    spool = tmp_path / "spool"
    server = musicd.start(extra_args=spool_args(spool))
    track = gridfs_file()
    chunks(db).delete_one({"files_id": ObjectId(track.files_id), "n": 3})
    resp = get(server, track.url_path)
    assert resp.status == 500
    server.wait_for_stderr(f"no copy of GridFS file {track.files_id}")
    assert list(spool.iterdir()) == []


# -- the lookup cache -------------------------------------------------------------------------

CUT_LOOKUP_TIMEOUT_MS = 2000   # how long a request waits for a database that was cut off


def metric(server, name):
    """The value of name's one unlabelled sample in GET /metrics (docs/monitoring.md)."""
    resp, _ = exchange(server.metrics_port, "GET", "/metrics", timeout=scaled(READ_TIMEOUT))
    assert resp.status == 200
    found = re.search(rf"^{re.escape(name)} (\S+)$", resp.body.decode(), re.M)
    assert found, f"{name} is not in /metrics"
    return float(found[1])


def start_cut_off_later(musicd, db_proxy, extra):
    return musicd.start(mongodb_uri=db_proxy.uri,
                        extra_args=extra + ["--lookup-timeout",
                                            str(int(scaled(CUT_LOOKUP_TIMEOUT_MS)))])


def test_a_cached_track_with_a_spooled_copy_is_answered_with_the_database_cut(musicd, db_proxy,
                                                                           tmp_path,
                                                                           gridfs_file):
    spool = tmp_path / "spool"
    server = start_cut_off_later(musicd, db_proxy, spool_args(spool))
    track = gridfs_file()
    first = get(server, track.url_path)   # the lookup, both finds, and the copy's fill
    assert first.status == 200 and first.body == track.data
    wait_for_copy(spool, track)
    hits = metric(server, "musicd_lookup_cache_hits_total")
    round_trips = metric(server, "musicd_lookup_duration_seconds_count")
    db_proxy.proxy.stop()   # every connection to the database cut, new ones refused
    whole = get(server, track.url_path)
    assert whole.status == 200 and whole.body == track.data
    for name in ("ETag", "Last-Modified", "Content-Type", "Content-Length"):
        assert whole.header(name) == first.header(name), name
    part = get(server, track.url_path, headers={"Range": "bytes=999-2000"})
    assert part.status == 206 and part.body == track.data[999:2001]
    assert part.header("Content-Range") == f"bytes 999-2000/{SMALL_LENGTH}"
    not_modified = get(server, track.url_path, headers={"If-None-Match": first.header("ETag")})
    assert not_modified.status == 304
    # Three lookups answered by the cache, and not one find sent.
    assert metric(server, "musicd_lookup_cache_hits_total") == hits + 3
    assert metric(server, "musicd_lookup_duration_seconds_count") == round_trips
    assert "database unavailable" not in server.stderr_text()


def test_a_cached_track_without_a_copy_needs_the_database_for_its_chunks(musicd, db_proxy,
                                                                         gridfs_file):
    server = start_cut_off_later(musicd, db_proxy, [])
    track = gridfs_file()
    assert get(server, track.url_path).body == track.data
    hits = metric(server, "musicd_lookup_cache_hits_total")
    db_proxy.proxy.stop()
    # The lookup is the cache's; the first chunks are read before the head, so a database that
    # cannot give them is a 503 with no body, never a 200 cut short or wrong bytes.
    for headers in (None, {"Range": "bytes=999-2000"}):
        resp = get(server, track.url_path, headers=headers)
        assert resp.status == 503, headers
        assert track.data[:64] not in resp.body
        assert resp.header("ETag") is None and resp.header("Content-Range") is None
    assert metric(server, "musicd_lookup_cache_hits_total") == hits + 2
    # Logged by the GridFS read (which names the fs.files _id), not by a findById.
    wait_until(lambda: len(re.findall(
        rf"GridFS file {track.files_id}: database (did not answer|unavailable)",
        server.stderr_text())) == 2, scaled(10), message="two failed GridFS reads logged")
    assert f"mid={track.id}: database unavailable:" not in server.stderr_text()


def test_without_the_lookup_cache_a_spooled_copy_still_waits_for_the_lookup(musicd, db_proxy,
                                                                           tmp_path, gridfs_file):
    # The control for the test above: the cut is real, and only the cache makes it harmless.
    spool = tmp_path / "spool"
    server = start_cut_off_later(musicd, db_proxy,
                                 spool_args(spool) + ["--lookup-cache-entries", "0"])
    track = gridfs_file()
    assert get(server, track.url_path).body == track.data
    wait_for_copy(spool, track)
    db_proxy.proxy.stop()
    assert get(server, track.url_path).status == 503
