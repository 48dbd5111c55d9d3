"""The slow filesystem itself (tests/tools/slowfs.c through slowfs.py), before anything is
measured or tested with it: bytes through it are the source's, a read waits at least the set
delay, a hung file holds only its own readers until released, each open makes a file cold
again, the connection's limits are raised, and it always comes down: unmounted while a read
hangs, stopped while one hangs, and nothing left behind when the test using it fails.
Skipped where the machine cannot mount (no /dev/fuse, not root)."""

import hashlib
import os
import subprocess
import threading
import time

import pytest

import slowfs
from support import wait_until

pytestmark = pytest.mark.no_c_binary

MiB = 1 << 20
DELAY_MS = 20


def write_random(path, size, seed):
    """A file of `size` pseudo-random bytes (distinct per seed), returned."""
    data = hashlib.shake_256(str(seed).encode()).digest(size) if size else b""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "source"
    root.mkdir()
    root.chmod(0o755)
    return root


def start_reader(path):
    """A process reading path whole (sha256sum): it blocks on a hung read, and a SIGKILL
    ends it there (the wait for a page being read is killable)."""
    return subprocess.Popen(["sha256sum", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def reader_digest(proc, timeout=20):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out.split()[0]


def still_running(proc, seconds=0.3):
    """True when proc has not ended within `seconds` (it waits on something)."""
    try:
        proc.wait(seconds)
        return False
    except subprocess.TimeoutExpired:
        return True


def test_bytes_read_through_the_mount_are_the_sources(source):
    files = {"empty.bin": 0, "one.bin": 1, "odd.bin": 4097, "a/b/deep.mp3": 3 * MiB + 17,
             "name with spaces.mp3": 200_000}
    want = {rel: write_random(source / rel, size, i) for i, (rel, size) in enumerate(files.items())}
    os.symlink("one.bin", source / "link.bin")
    with slowfs.mounted(source, read_delay_us=1000) as fs:
        for rel, data in want.items():
            assert (fs.mountpoint / rel).read_bytes() == data, rel
            assert (fs.mountpoint / rel).stat().st_size == len(data)
        assert os.readlink(fs.mountpoint / "link.bin") == "one.bin"
        assert sorted(os.listdir(fs.mountpoint)) == sorted(os.listdir(source))
        # ranges: reads at offsets that are not page-aligned, across a read-ahead window
        with open(fs.mountpoint / "a/b/deep.mp3", "rb") as f:
            data = want["a/b/deep.mp3"]
            for offset, length in ((0, 1), (4095, 2), (131071, 70000), (3 * MiB, 17),
                                   (3 * MiB + 10, 100)):
                assert os.pread(f.fileno(), length, offset) == data[offset:offset + length]
        stats = fs.stats()
        assert stats["reads"] > 0
        assert stats["read_bytes"] >= sum(files.values())  # all of it came through the daemon
        assert stats["hung"] == 0


def test_the_mount_is_read_only_and_refuses_writes(source):
    data = write_random(source / "t.mp3", 1000, 1)
    with slowfs.mounted(source) as fs:
        with pytest.raises(OSError):
            open(fs.mountpoint / "t.mp3", "r+b")
        with pytest.raises(OSError):
            (fs.mountpoint / "new.mp3").write_bytes(b"x")
    assert (source / "t.mp3").read_bytes() == data
    assert sorted(os.listdir(source)) == ["t.mp3"]


def test_a_read_waits_at_least_the_set_delay(source):
    write_random(source / "t.mp3", 4096, 2)
    with slowfs.mounted(source, read_delay_us=DELAY_MS * 1000) as fs:
        fd = os.open(fs.mountpoint / "t.mp3", os.O_RDONLY)
        try:
            before = fs.stats()["reads"]
            t0 = time.monotonic()
            os.pread(fd, 4096, 0)
            took = time.monotonic() - t0
            assert fs.stats()["reads"] == before + 1  # one FUSE read, so one delay
            assert took >= DELAY_MS / 1000
            t0 = time.monotonic()
            os.pread(fd, 4096, 0)  # now cached: no FUSE read, no delay
            assert time.monotonic() - t0 < took
            assert fs.stats()["reads"] == before + 1
        finally:
            os.close(fd)
        fs.set_read_delay(0)
        fs.drop_cache("t.mp3")
        fd = os.open(fs.mountpoint / "t.mp3", os.O_RDONLY)
        try:
            t0 = time.monotonic()
            os.pread(fd, 4096, 0)
            assert time.monotonic() - t0 < took  # the delay is the daemon's, and it is gone
        finally:
            os.close(fd)


def test_opens_and_closes_wait_the_meta_delay_only_when_asked(source):
    write_random(source / "t.mp3", 100, 3)
    # A meta delay far above what a loaded machine adds to an open (64 ms once, beside the
    # ASan run of make test, against 61 ms for three waits of 20 ms)
    meta_delay_ms = 250
    took = {}
    for meta_delay_us in (meta_delay_ms * 1000, 0):
        with slowfs.mounted(source, read_delay_us=DELAY_MS * 1000,
                            meta_delay_us=meta_delay_us) as fs:
            t0 = time.monotonic()
            os.close(os.open(fs.mountpoint / "t.mp3", os.O_RDONLY))
            took[meta_delay_us] = time.monotonic() - t0
            stats = fs.stats()
            assert (stats["lookups"], stats["opens"], stats["flushes"]) == (1, 1, 1)
            assert stats["reads"] == 0  # the read delay is for reads only
    assert took[meta_delay_ms * 1000] >= 3 * meta_delay_ms / 1000  # lookup, open, flush waited
    assert took[0] < took[meta_delay_ms * 1000]


def test_a_hung_file_holds_its_readers_and_no_other_file(source):
    hung_data = write_random(source / "hung/track.mp3", 2 * MiB, 4)
    other_data = write_random(source / "ok/track.mp3", 2 * MiB, 5)
    with slowfs.mounted(source, read_delay_us=2000) as fs:
        fs.hang("hung/*")
        reader = start_reader(fs.mountpoint / "hung/track.mp3")
        try:
            fs.wait_hung(1)
            assert (fs.mountpoint / "ok/track.mp3").read_bytes() == other_data
            assert still_running(reader)  # nothing of the hung file was answered
            os.stat(fs.mountpoint / "hung/track.mp3")  # its metadata still answers
            assert fs.release() >= 1
            assert reader_digest(reader) == hashlib.sha256(hung_data).hexdigest()
        finally:
            reader.kill()
            reader.wait(10)
        assert fs.stats()["hung"] == 0


def test_hung_opens_and_closes_wait_until_released(source):
    write_random(source / "nfs/track.mp3", 1000, 6)
    other = write_random(source / "local/track.mp3", 1000, 7)
    with slowfs.mounted(source, attr_timeout=0) as fs:
        fs.hang("nfs/*", meta=True)
        opened = {}

        def open_hung():
            opened["fd"] = os.open(fs.mountpoint / "nfs/track.mp3", os.O_RDONLY)

        opener = threading.Thread(target=open_hung, daemon=True)
        opener.start()
        fs.wait_hung(1)
        assert (fs.mountpoint / "local/track.mp3").read_bytes() == other
        assert opener.is_alive()
        fs.release()
        opener.join(10)
        assert not opener.is_alive() and "fd" in opened
        # close(2) on FUSE waits for the daemon's answer to FLUSH: a hung flush holds it
        fs.hang("nfs/*", meta=True)
        closer = threading.Thread(target=os.close, args=(opened["fd"],), daemon=True)
        closer.start()
        fs.wait_hung(1)
        assert closer.is_alive()
        fs.release()
        closer.join(10)
        assert not closer.is_alive()


def test_each_open_reads_the_file_again_unless_keep_cache(source):
    data = write_random(source / "t.mp3", 1 * MiB, 8)
    for keep_cache, times in ((False, 2), (True, 1)):
        with slowfs.mounted(source, keep_cache=keep_cache) as fs:
            for _ in range(2):
                assert (fs.mountpoint / "t.mp3").read_bytes() == data
            assert fs.stats()["read_bytes"] >= times * len(data)
            assert fs.stats()["read_bytes"] < (times + 1) * len(data)


def test_the_connection_limits_are_raised(source):
    write_random(source / "t.mp3", 8 * MiB, 9)
    with slowfs.mounted(source, max_background=300, read_ahead_kb=1024) as fs:
        assert fs.connection_value("max_background") == 300
        assert fs.connection_value("congestion_threshold") == 225
        assert fs.ready["read_ahead_kb"] == 1024
        (fs.mountpoint / "t.mp3").read_bytes()
        assert fs.stats()["read_size_max"] > 128 * 1024  # larger requests than the default


def test_unmounted_lazily_while_a_read_hangs(source):
    data = write_random(source / "t.mp3", 1 * MiB, 10)
    with slowfs.mounted(source) as fs:
        fs.hang("t.mp3")
        reader = start_reader(fs.mountpoint / "t.mp3")
        try:
            fs.wait_hung(1)
            # a plain unmount is refused while the reader has the file open ...
            busy = subprocess.run(["fusermount3", "-u", str(fs.mountpoint)],
                                  capture_output=True, text=True, timeout=30)
            assert busy.returncode != 0 and slowfs.is_mounted(fs.mountpoint)
            # ... a lazy one detaches the mount at once
            subprocess.run(["umount", "-l", str(fs.mountpoint)], check=True, timeout=30)
            assert not slowfs.is_mounted(fs.mountpoint)
            assert still_running(reader)
            fs.release()
            assert reader_digest(reader) == hashlib.sha256(data).hexdigest()
            # the last file closed, the connection ends and the daemon with it, unasked
            fs.proc.wait(10)
            assert fs.proc.returncode == 0
        finally:
            reader.kill()
            reader.wait(10)


def test_stopped_while_a_read_hangs(source):
    write_random(source / "t.mp3", 1 * MiB, 11)
    with slowfs.mounted(source) as fs:
        fs.hang("t.mp3")
        reader = start_reader(fs.mountpoint / "t.mp3")
        try:
            fs.wait_hung(1)
            fs.proc.send_signal(subprocess.signal.SIGTERM)
            fs.proc.wait(10)  # it answers the hung read, then detaches the mount
            assert fs.proc.returncode == 0
            assert not slowfs.is_mounted(fs.mountpoint)
            reader.communicate(timeout=10)  # it ends (its next read fails: not connected)
        finally:
            reader.kill()
            reader.wait(10)


def test_nothing_is_left_behind_when_the_test_fails_with_a_read_hung(source):
    write_random(source / "t.mp3", 1 * MiB, 12)
    seen = {}
    with pytest.raises(ZeroDivisionError):
        with slowfs.mounted(source) as fs:
            seen.update(fs=fs, conn=slowfs.connection_dir(fs.dev[1]))
            fs.hang("t.mp3")
            reader = start_reader(fs.mountpoint / "t.mp3")
            seen["reader"] = reader
            fs.wait_hung(1)
            1 / 0
    fs = seen["fs"]
    assert fs.proc.poll() is not None
    assert not slowfs.is_mounted(fs.mountpoint)
    assert not os.path.exists(fs.control)
    reader = seen["reader"]
    reader.communicate(timeout=10)  # released: it ended on its own
    wait_until(lambda: not seen["conn"].exists(), 10, message="the FUSE connection to go")
    assert fs.exit_stats["released"] >= 1


def test_hard_links_are_files_of_their_own(source):
    data = write_random(source / "body.mp3", 1 * MiB, 13)
    for i in range(3):
        os.link(source / "body.mp3", source / f"name{i}.mp3")
    with slowfs.mounted(source, keep_cache=True) as fs:
        inodes = {os.stat(fs.mountpoint / f"name{i}.mp3").st_ino for i in range(3)}
        assert len(inodes) == 3
        for i in range(3):
            assert (fs.mountpoint / f"name{i}.mp3").read_bytes() == data
        # each name was read from the daemon once, though the pages of the first were cached
        assert fs.stats()["read_bytes"] >= 3 * len(data)


def test_realtime_puts_every_thread_of_the_daemon_in_sched_rr(source):
    data = write_random(source / "t.mp3", 1 * MiB, 14)
    with slowfs.mounted(source, read_delay_us=1000, realtime=True) as fs:
        assert (fs.mountpoint / "t.mp3").read_bytes() == data  # the loop's threads are made
        tasks = os.listdir(f"/proc/{fs.pid}/task")
        policies = {int(open(f"/proc/{fs.pid}/task/{t}/stat").read().rsplit(")", 1)[1]
                        .split()[38]) for t in tasks}
        assert len(tasks) > 2 and policies == {os.SCHED_RR}
        stats = fs.stats()
        assert stats["answered"] >= stats["reads"] > 0
