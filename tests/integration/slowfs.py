"""Slow and hung storage for tests and benchmarks: build/tools/slowfs (tests/tools/slowfs.c,
built by `make tools`) mounted over a source directory.

    with slowfs.mounted(source, read_delay_us=10000) as fs:
        fs.mountpoint / "track.mp3"           # read through the mount: 10 ms a FUSE read
        fs.hang("slow/*.mp3")                 # those reads are not answered ...
        fs.wait_hung(1)                       # ... and one has reached the daemon
        fs.release()                          # every hung request answered now
        fs.stats()["read_bytes"]              # what the daemon served

The mount is read-only and open to every user (allow_other: nginx's workers run as nobody).
Without keep_cache, each open of a file through it drops the file's cached pages, so a file is
read from the slow daemon again (cold) on each open; with keep_cache=True its pages stay.

mounted() makes a mount point in a private temporary directory (or uses `mountpoint`),
starts the daemon, waits (bounded) until the mount answers and the connection's
max_background is what was asked, and always takes it down at the end, also when the body
raises: every hung request is released, the daemon gets SIGTERM (it answers what is queued
and detaches the mount), and, if it does not end in time, the connection is aborted through
/sys/fs/fuse/connections/<dev>/abort, the mount detached and the daemon killed. Where the
machine cannot mount (no /dev/fuse, not root, mounting refused) it skips the test with the
reason (pytest.skip), or raises Unavailable when skip=False (scripts/benchmarks/bench).

Only the standard library (and pytest, imported when a test is skipped):
scripts/benchmarks/bench imports this module too.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOL = REPO / "build" / "tools" / "slowfs"
FUSECTL = pathlib.Path("/sys/fs/fuse/connections")
READY_TIMEOUT = 10.0     # seconds for the mount to answer once the daemon is started
STOP_TIMEOUT = 10.0      # seconds for the daemon to end after SIGTERM, and again after abort
CONTROL_TIMEOUT = 5.0    # seconds for one control command's answer
DEFAULT_MAX_BACKGROUND = 1024


class Unavailable(Exception):
    """The machine cannot mount a FUSE filesystem here (the message says why)."""


def unavailable_reason():
    """Why this process cannot mount the slow filesystem, or None."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine (a container without the FUSE device?)"
    if os.geteuid() != 0:
        return "slowfs mounts with allow_other and sets limits in sysfs: needs root"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not readable and writable by this process"
    return None


def _unavailable(reason, skip):
    if skip:
        import pytest
        pytest.skip(f"slow filesystem unavailable: {reason}")
    raise Unavailable(reason)


def is_mounted(path):
    """True when path is a mount point in this process's mount namespace."""
    target = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            # field 5 is the mount point, with spaces and the like octal-escaped
            point = line.split()[4].encode().decode("unicode_escape")
            if point == target:
                return True
    return False


def connection_dir(dev_minor):
    return FUSECTL / str(dev_minor)


def raise_max_background(dev_minor, value):
    """Sets a FUSE connection's max_background (and congestion_threshold to 3/4 of it) in
    sysfs, mounting fusectl first if its directory is empty; returns what sysfs then says."""
    conn = connection_dir(dev_minor)
    if not conn.exists():
        subprocess.run(["mount", "-t", "fusectl", "none", str(FUSECTL)], check=False,
                       capture_output=True, timeout=10)
    (conn / "max_background").write_text(f"{value}\n")
    (conn / "congestion_threshold").write_text(f"{value * 3 // 4}\n")
    return int((conn / "max_background").read_text())


def drop_all_caches():
    """Empties the whole page cache of clean pages (root): every file is cold again, on
    every filesystem (this machine's other users' files too: for benchmarks, not tests)."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("1\n")


class SlowFs:
    """A mounted slow filesystem (made by mounted())."""

    def __init__(self, source, mountpoint, control, proc, log_path):
        self.source = pathlib.Path(source)
        self.mountpoint = pathlib.Path(mountpoint)
        self.control = control
        self.proc = proc
        self.log_path = log_path
        self.dev = None            # (major, minor) of the mount
        self.ready = {}            # the ready line's figures
        self.exit_stats = None     # the daemon's last stats, once it has ended

    @property
    def pid(self):
        return self.proc.pid

    # -- control ----------------------------------------------------------------------
    def command(self, line):
        """Sends one control command; returns its reply ("ok ..."), raises on "error"."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(CONTROL_TIMEOUT)
            s.connect(self.control)
            s.sendall(line.encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        reply = reply.decode().strip()
        if not reply.startswith("ok"):
            raise RuntimeError(f"slowfs {line!r}: {reply or 'no answer'}")
        return reply

    def hang(self, pattern, meta=False):
        """Reads (meta=True: lookups, getattr, open and flush) of paths matching pattern
        (fnmatch, '*' crosses '/', relative to the mount's root) wait until release()."""
        self.command(f"hang-{'meta' if meta else 'read'} {pattern}")

    def release(self):
        """Forgets every pattern and answers every hung request; how many were hung."""
        return int(self.command("release").split("released=")[1])

    def set_read_delay(self, us):
        self.command(f"read-delay {int(us)}")

    def set_meta_delay(self, us):
        self.command(f"meta-delay {int(us)}")

    def stats(self):
        """{reads, read_bytes, read_size_max, in_flight_max, hung, hung_total, released,
        lookups, getattrs, opens, flushes, answered, late_us_total, late_us_max}: what the
        daemon has answered so far, and how late after the delay asked for."""
        return parse_stats(self.command("stats"))

    def wait_hung(self, count, timeout=10.0):
        """Waits until at least `count` requests are hung in the daemon (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            hung = self.stats()["hung"]
            if hung >= count:
                return hung
            if time.monotonic() >= deadline:
                raise AssertionError(f"slowfs: {hung} requests hung after {timeout:.1f}s, "
                                     f"expected {count}")
            time.sleep(0.02)

    # -- caches and figures -----------------------------------------------------------
    def drop_cache(self, *relative):
        """Drops the cached pages of these files of the mount (posix_fadvise DONTNEED, which
        opening a file does too unless keep_cache), not anybody else's."""
        for rel in relative:
            fd = os.open(self.mountpoint / rel, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)

    def cpu_seconds(self):
        """The daemon's CPU time so far (user + system, all threads), seconds."""
        try:
            fields = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def connection_value(self, name):
        """A file of the mount's /sys/fs/fuse/connections/<dev>/ (max_background, waiting)."""
        return int((connection_dir(self.dev[1]) / name).read_text())

    def log_text(self):
        return pathlib.Path(self.log_path).read_text(errors="replace")


def parse_stats(line):
    """The key=number pairs of a stats or ready line (others, as dev=0:39, left out)."""
    pairs = (kv.split("=", 1) for kv in line.split() if "=" in kv)
    return {k: int(v) for k, v in pairs if v.lstrip("-").isdigit()}


def _options(read_delay_us, meta_delay_us, hang_read, hang_meta, keep_cache, attr_timeout,
             max_background, read_ahead_kb, max_read_kb, threads, repliers, realtime):
    args = ["--read-delay-us", str(int(read_delay_us)),
            "--meta-delay-us", str(int(meta_delay_us)),
            "--max-background", str(max_background)]
    for pattern in hang_read:
        args += ["--hang-read", pattern]
    for pattern in hang_meta:
        args += ["--hang-meta", pattern]
    if keep_cache:
        args.append("--keep-cache")
    if realtime:
        args.append("--realtime")
    for flag, value in (("--attr-timeout", attr_timeout), ("--read-ahead-kb", read_ahead_kb),
                        ("--max-read-kb", max_read_kb), ("--threads", threads),
                        ("--repliers", repliers)):
        if value is not None:
            args += [flag, str(value)]
    return args


def _wait_ready(fs, skip):
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        text = fs.log_text()
        for line in text.splitlines():
            if line.startswith("slowfs: ready "):
                fs.ready = parse_stats(line)
                major, minor = line.split("dev=")[1].split()[0].split(":")
                fs.dev = (int(major), int(minor))
                return
        if fs.proc.poll() is not None:
            refused = ("fuse: device not found", "Operation not permitted", "Permission denied",
                       "fusermount3: not found", "No such device")
            if any(r in text for r in refused):
                _unavailable(f"mounting refused: {text.strip()[-500:]}", skip)
            raise RuntimeError(f"slowfs exited with status {fs.proc.returncode} before its "
                               f"mount answered:\n{text[-2000:]}")
        if time.monotonic() >= deadline:
            raise RuntimeError(f"slowfs: mount not ready after {READY_TIMEOUT:.0f}s:\n"
                               f"{text[-2000:]}")
        time.sleep(0.02)


def _abort_connection(fs):
    if fs.dev is None:
        return
    with contextlib.suppress(OSError):
        (connection_dir(fs.dev[1]) / "abort").write_text("1\n")


def unmount(fs):
    """Takes the mount down, bounded: release, SIGTERM, then abort and kill. Returns the
    daemon's exit status."""
    if fs.proc.poll() is None:
        with contextlib.suppress(OSError, RuntimeError):
            fs.release()
        fs.proc.send_signal(signal.SIGTERM)
        try:
            fs.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            _abort_connection(fs)
            try:
                fs.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                fs.proc.kill()
                fs.proc.wait(STOP_TIMEOUT)
    if is_mounted(fs.mountpoint):
        _abort_connection(fs)
        subprocess.run(["umount", "-l", str(fs.mountpoint)], check=False,
                       capture_output=True, timeout=30)
    for line in fs.log_text().splitlines():
        if line.startswith("slowfs: exit "):
            fs.exit_stats = parse_stats(line)
    return fs.proc.returncode


@contextlib.contextmanager
def mounted(source, mountpoint=None, read_delay_us=0, meta_delay_us=0, hang_read=(),
            hang_meta=(), keep_cache=False, attr_timeout=None,
            max_background=DEFAULT_MAX_BACKGROUND, read_ahead_kb=None, max_read_kb=None,
            threads=None, repliers=None, realtime=False, skip=True):
    """Mounts `source` slowly (see the module's doc); yields a SlowFs; always unmounts.
    realtime: the daemon's threads SCHED_RR, so that a busy machine does not answer its
    requests late (a benchmark's storage keeps its pace whatever else runs)."""
    reason = unavailable_reason()
    if reason:
        _unavailable(reason, skip)
    if not TOOL.exists():
        raise FileNotFoundError(f"{TOOL} is missing: `make tools` builds it (libfuse3-dev)")
    # A short private directory: the control socket's path must fit in sun_path (108 bytes).
    private = tempfile.mkdtemp(prefix="slowfs.")
    os.chmod(private, 0o755)  # the mount point inside it is reached by nginx's workers
    if mountpoint is None:
        mountpoint = os.path.join(private, "mnt")
        os.mkdir(mountpoint)
    control = os.path.join(private, "control")
    log_path = os.path.join(private, "slowfs.log")
    cmd = [str(TOOL), "--control", control] + _options(
        read_delay_us, meta_delay_us, hang_read, hang_meta, keep_cache, attr_timeout,
        max_background, read_ahead_kb, max_read_kb, threads, repliers, realtime) + \
        [str(source), str(mountpoint)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    fs = SlowFs(source, mountpoint, control, proc, log_path)
    try:
        _wait_ready(fs, skip)
        if fs.ready.get("max_background", 0) < max_background:
            fs.ready["max_background"] = raise_max_background(fs.dev[1], max_background)
        yield fs
    finally:
        unmount(fs)
        if is_mounted(mountpoint):
            raise RuntimeError(f"slowfs: {mountpoint} still mounted after unmount")
        shutil.rmtree(private, ignore_errors=True)
