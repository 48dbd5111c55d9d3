"""systemd: readiness and the watchdog through sd_notify (a NOTIFY_SOCKET this test listens on,
as systemd does for Type=notify), and config/musicd.service as systemd-analyze verify sees it."""

import ctypes
import errno
import os
import pwd
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest
import requests

from musicd_process import MUSICD_BIN, Musicd
from support import REPO, free_port, listening_sockets, scaled, wait_until

TIMEOUT = scaled(10)
UNIT = REPO / "config" / "musicd.service"
UCRED = struct.Struct("iII")  # struct ucred: pid, uid, gid


class NotifySocket:
    """An AF_UNIX datagram socket standing in for systemd's: each message with its sender's pid."""

    def __init__(self):
        # sun_path holds 108 bytes: pytest's tmp_path can be longer.
        self.directory = tempfile.mkdtemp(prefix="musicd-notify-")
        self.path = os.path.join(self.directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.received = []  # (sender pid, {name: value}, raw text)
        self.uids = []      # the sender's user id, message by message

    def receive(self, timeout):
        """The next message as (pid, fields, text), or None after timeout seconds."""
        self.sock.settimeout(timeout)
        try:
            data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(UCRED.size))
        except socket.timeout:
            return None
        pid = uid = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, uid, _ = UCRED.unpack(payload[:UCRED.size])
        self.uids.append(uid)
        text = data.decode()
        fields = dict(line.split("=", 1) for line in text.split("\n") if "=" in line)
        message = (pid, fields, text)
        self.received.append(message)
        return message

    def wait_for(self, name, timeout=10.0):
        """Receive until a message sets name; return that message (AssertionError on timeout)."""
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            message = self.receive(max(0.01, deadline - time.monotonic()))
            if message and name in message[1]:
                return message
        raise AssertionError(f"no {name}= within {scaled(timeout):.0f}s; got {self.received}")

    def drain(self, seconds):
        """Every message arriving within seconds."""
        deadline = time.monotonic() + seconds
        got = []
        while time.monotonic() < deadline:
            message = self.receive(max(0.01, deadline - time.monotonic()))
            if message:
                got.append(message)
        return got

    def close(self):
        self.sock.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def notify():
    n = NotifySocket()
    yield n
    n.close()


def start_notifying(musicd, notify, extra_args=(), env=None, watchdog_pid=None):
    """musicd with NOTIFY_SOCKET (and env), not waited for: readiness is what is tested.
    watchdog_pid="self" sets WATCHDOG_PID to musicd's own pid, as systemd does (through a shell
    that execs musicd: `WATCHDOG_PID=$$ exec musicd ...`); another value is passed as it is."""
    environment = {"NOTIFY_SOCKET": notify.path, **(env or {})}
    if watchdog_pid not in (None, "self"):
        environment["WATCHDOG_PID"] = str(watchdog_pid)
    port = free_port()
    args = ["--listen", f"127.0.0.1:{port}", "--mongodb-uri", musicd.mongodb_uri,
            "--database", musicd.database, "--media-root", musicd.media_root,
            "--access-log", "off", *extra_args]
    server = Musicd(args, musicd.workdir, port, env=environment)
    if watchdog_pid == "self":
        server.args = ["/bin/sh", "-c", 'WATCHDOG_PID=$$ exec "$0" "$@"'] + server.args
    musicd.started.append(server)  # stopped and checked at teardown like any other
    return server.start(wait=False)


def test_ready_is_sent_once_every_worker_listens(musicd, notify, library):
    track = library.add(library.media.short, "short.mp3")
    workers = 32
    server = start_notifying(musicd, notify, extra_args=["--workers", str(workers)])
    pid, fields, _ = notify.wait_for("READY")
    # Frozen the moment READY=1 arrives: every worker's socket listens, every worker's thread runs.
    os.kill(server.pid, signal.SIGSTOP)
    try:
        listening = len(listening_sockets(server.pid, server.port))
        threads = len(os.listdir(f"/proc/{server.pid}/task"))
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert listening == workers
    assert threads > workers  # the workers, the lookup threads, main
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    assert pid == server.pid
    assert fields["READY"] == "1"
    assert fields["STATUS"] == f"listening on 127.0.0.1:{server.port}"
    assert [m for m in notify.received if "READY" in m[1]] == [notify.received[-1]]


@pytest.mark.skipif(os.geteuid() != 0, reason="changing user needs root")
def test_ready_is_sent_after_dropping_to_user(musicd, notify):
    # systemd's notify socket is writable by every user; so is this one, for the test.
    os.chmod(notify.directory, 0o755)
    os.chmod(notify.path, 0o777)
    server = start_notifying(musicd, notify, extra_args=["--user", "nobody"])
    pid, fields, _ = notify.wait_for("READY")
    assert pid == server.pid
    assert notify.uids[-1] == pwd.getpwnam("nobody").pw_uid


def test_no_ready_when_start_up_fails(musicd, notify, library):
    # Port 0: a port from free_port() may hold a TIME_WAIT, which a bind without SO_REUSEADDR
    # refuses (musicd's own bind sets it, so free_port() counts such a port as free).
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = start_notifying(musicd, notify, extra_args=["--listen", f"127.0.0.1:{port}"])
        server.expect_status = 2
        assert server.wait(TIMEOUT) == 2
    assert notify.drain(0.2) == []


def test_stopping_is_sent_on_sigterm(musicd, notify):
    server = start_notifying(musicd, notify)
    notify.wait_for("READY")
    server.send_signal(signal.SIGTERM)
    pid, fields, _ = notify.wait_for("STOPPING")
    assert pid == server.pid and fields["STOPPING"] == "1"
    assert server.wait(TIMEOUT) == 0


def test_reloading_and_ready_are_sent_around_a_sighup(musicd, notify, tmp_path):
    config = tmp_path / "musicd.conf"
    config.write_text("cache-control = max-age=60\n")
    server = start_notifying(musicd, notify, extra_args=["--config", str(config)])
    notify.wait_for("READY")
    config.write_text("cache-control = max-age=120\n")
    server.send_signal(signal.SIGHUP)
    pid, fields, _ = notify.wait_for("RELOADING")
    assert pid == server.pid and fields["RELOADING"] == "1"
    assert int(fields["MONOTONIC_USEC"]) > 0  # systemd 253 wants it beside RELOADING=1
    pid, fields, _ = notify.wait_for("READY")
    assert pid == server.pid and fields["READY"] == "1"
    server.wait_for_stderr("SIGHUP: settings reloaded")


@pytest.mark.no_c_binary
def test_unit_reloads_with_sighup():
    assert unit_setting(UNIT.read_text(), "ExecReload") == "/bin/kill -HUP $MAINPID"


def test_watchdog_pings_come_with_watchdog_usec(musicd, notify):
    server = start_notifying(musicd, notify, env={"WATCHDOG_USEC": "200000"},
                             watchdog_pid="self")
    notify.wait_for("READY")
    pings = []
    while len(pings) < 3:
        pid, fields, _ = notify.wait_for("WATCHDOG")
        assert pid == server.pid and fields["WATCHDOG"] == "1"
        pings.append(pid)


def thread_named(pid, name):
    """The id of process pid's thread called name (in /proc/PID/task/TID/comm)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as comm:
            if comm.read().strip() == name:
                return int(tid)
    raise AssertionError(f"no thread {name!r} in {pid}")


class StoppedThread:
    """One thread of another process held still with ptrace (PTRACE_SEIZE, PTRACE_INTERRUPT),
    while the process's other threads run on: how a worker stuck in a callback looks."""
    PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
    WALL = 0x40000000

    def __init__(self, tid):
        self.tid = tid
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                                     ctypes.c_void_p]
        try:
            self.call(self.PTRACE_SEIZE)
        except OSError as e:  # a container whose seccomp profile refuses ptrace(2)
            if e.errno in (errno.EPERM, errno.ENOSYS):
                pytest.skip(f"ptrace is refused here ({e}): no way to hold one thread still")
            raise
        self.call(self.PTRACE_INTERRUPT)
        os.waitpid(tid, self.WALL)  # stopped

    def call(self, request):
        if self.libc.ptrace(request, self.tid, None, None) != 0:
            raise OSError(ctypes.get_errno(), f"ptrace({request:#x}, {self.tid})")

    def resume(self):
        self.call(self.PTRACE_DETACH)


@pytest.mark.timing
def test_a_stuck_worker_withholds_the_watchdog_ping_until_it_runs_again(musicd, notify, library):
    # (fails before the heartbeat: the main thread pinged whatever the workers did.)
    track = library.add(library.media.short, "short.mp3")
    server = start_notifying(musicd, notify, extra_args=["--workers", "2"],
                             env={"WATCHDOG_USEC": "200000"}, watchdog_pid="self")
    notify.wait_for("READY")
    notify.wait_for("WATCHDOG")
    stuck = StoppedThread(thread_named(server.pid, "worker 1"))
    try:
        server.wait_for_stderr("worker 1 has not run its loop since the last watchdog tick")
        notify.drain(0.2)  # a ping that left before the tick that noticed
        assert [m for m in notify.drain(scaled(1.0)) if "WATCHDOG" in m[1]] == []
    finally:
        stuck.resume()
    notify.wait_for("WATCHDOG")
    server.wait_for_stderr("every worker runs its loop again")
    assert len([line for line in server.stderr_text().splitlines()
                if "has not run its loop" in line]) == 1
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200


def test_workers_are_named_threads(musicd, notify):
    server = start_notifying(musicd, notify, extra_args=["--workers", "3"])
    notify.wait_for("READY")
    for index in range(3):
        thread_named(server.pid, f"worker {index}")


def test_no_watchdog_pings_without_watchdog_usec(musicd, notify):
    start_notifying(musicd, notify)
    notify.wait_for("READY")
    assert [m for m in notify.drain(scaled(1.0)) if "WATCHDOG" in m[1]] == []


def test_no_watchdog_pings_when_watchdog_pid_is_another_process(musicd, notify):
    # WATCHDOG_PID names the process systemd watches; a child that inherited it must not ping.
    start_notifying(musicd, notify, env={"WATCHDOG_USEC": "200000"}, watchdog_pid=1)
    notify.wait_for("READY")
    assert [m for m in notify.drain(scaled(1.0)) if "WATCHDOG" in m[1]] == []


# -- config/musicd.service --------------------------------------------------------------------
def unit_setting(text, name):
    values = [line.split("=", 1)[1].strip() for line in text.splitlines()
              if line.startswith(f"{name}=")]
    assert len(values) == 1, f"{name}= appears {len(values)} times in {UNIT.name}"
    return values[0]


@pytest.mark.no_c_binary
def test_unit_is_type_notify_with_a_watchdog():
    text = UNIT.read_text()
    assert unit_setting(text, "Type") == "notify"
    assert unit_setting(text, "NotifyAccess") == "main"
    watchdog = unit_setting(text, "WatchdogSec")
    assert watchdog.endswith("s") and 5 <= int(watchdog[:-1]) <= 300, watchdog


def verify_output(unit_text, tmp_path):
    """What systemd-analyze verify says about the unit written to tmp_path (lines naming it)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing: scripts/setup/install-deps installs it (systemd)")
    directory = tmp_path / "unit"
    directory.mkdir()
    path = directory / "musicd.service"
    path.write_text(unit_text)
    # verify looks up Documentation='s man:musicd(8): the repository's page, where man finds it.
    man8 = tmp_path / "man" / "man8"
    man8.mkdir(parents=True)
    (man8 / "musicd.8").symlink_to(REPO / "man" / "musicd.8")
    result = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True,
                            timeout=scaled(60), env=dict(os.environ, MANPATH=str(man8.parent)))
    about = [line for line in (result.stdout + result.stderr).splitlines()
             if "musicd" in line]
    return result.returncode, about


def unit_with_built_binary():
    """The shipped unit with ExecStart's binary the one under test (verify checks it exists)."""
    text = UNIT.read_text()
    assert "ExecStart=/usr/sbin/musicd " in text
    return text.replace("ExecStart=/usr/sbin/musicd ", f"ExecStart={MUSICD_BIN} ")


@pytest.mark.no_c_binary
def test_unit_passes_systemd_analyze_verify(tmp_path):
    returncode, about = verify_output(unit_with_built_binary(), tmp_path)
    assert about == [] and returncode == 0, about


@pytest.mark.no_c_binary
def test_systemd_analyze_verify_finds_a_broken_unit(tmp_path):
    # The check above can fail: an unknown setting in the same unit is reported.
    broken = unit_with_built_binary().replace("[Service]\n", "[Service]\nWatchdogSecs=30s\n")
    _, about = verify_output(broken, tmp_path)
    assert any("WatchdogSecs" in line for line in about), about
