"""The error log (--error-log) and log rotation: SIGUSR1 reopens both logs under their names, so
logrotate can rename them; under load no line is lost, doubled or split across the renames;
config/musicd.logrotate, run by the real logrotate, rotates a running musicd's logs."""

import fcntl
import grp
import os
import pathlib
import pwd
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests

from musicd_process import CHECK_OK, MUSICD_BIN
from support import REPO, scaled, wait_until
from test_operation import COMBINED, parse_access_line

TIMEOUT = scaled(10)
ERROR_LINE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z (debug|info|warn|error): ")


def lines_of(path):
    try:
        return pathlib.Path(path).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []


def start_with_logs(musicd, tmp_path, extra_args=()):
    """musicd with its access log and error log as files in tmp_path/logs."""
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    server = musicd.start(access_log=logs / "access.log",
                          extra_args=["--error-log", logs / "error.log", *extra_args])
    return server, logs / "access.log", logs / "error.log"


def wait_for_line(path, text, timeout=5.0):
    return wait_until(lambda: [line for line in lines_of(path) if text in line], scaled(timeout),
                      message=f"{text!r} in {path}")


def test_error_log_receives_the_diagnostics_instead_of_stderr(musicd, tmp_path):
    server, _, error_log = start_with_logs(musicd, tmp_path)
    lines = wait_for_line(error_log, "listening on 127.0.0.1:")
    assert all(ERROR_LINE.match(line) for line in lines_of(error_log)), lines_of(error_log)
    assert "listening on" not in server.stderr_text()
    assert server.stop() == 0
    assert [line for line in lines_of(error_log) if "stopping" in line], lines_of(error_log)


def test_error_log_defaults_to_stderr(server):
    server.wait_for_stderr("listening on 127.0.0.1:")


def test_error_log_that_cannot_be_opened_exits_2_naming_it(musicd, tmp_path):
    target = tmp_path / "no-such-dir" / "error.log"
    result = musicd.run(["--media-root", tmp_path, "--mongodb-uri", "mongodb://127.0.0.1:1/",
                         "--error-log", target])
    assert result.returncode == 2, result
    assert result.stderr.count("\n") == 1 and f"error log {target}" in result.stderr, result


@pytest.mark.parametrize("value", ["off", "-"])
def test_error_log_off_or_dash_is_refused_rather_than_made_a_file(musicd, tmp_path, value):
    result = musicd.run(["--media-root", tmp_path, "--mongodb-uri", "mongodb://127.0.0.1:1/",
                         "--error-log", value])
    assert result.returncode == 2, result
    assert result.stderr == (f"musicd: error-log: '{value}' would be a file of that name; give "
                             "a file or stderr\n"), result
    assert not (tmp_path / value).exists()


def test_check_config_checks_the_error_log_without_making_it(musicd, tmp_path):
    args = ["--media-root", tmp_path, "--mongodb-uri", "mongodb://127.0.0.1:1/", "-t"]
    ok = musicd.run(args + ["--error-log", tmp_path / "error.log"])
    assert ok.returncode == 0 and ok.stdout == CHECK_OK, ok
    assert not (tmp_path / "error.log").exists()
    bad = musicd.run(args + ["--error-log", tmp_path / "missing" / "error.log"])
    assert bad.returncode == 2 and "error log" in bad.stderr, bad


def test_sigusr1_reopens_both_logs_after_a_rename(musicd, library, tmp_path):
    track = library.add(library.media.short, "short.mp3")
    server, access_log, error_log = start_with_logs(musicd, tmp_path)
    assert requests.get(server.url + track.url_path + "?before", timeout=TIMEOUT).ok
    wait_for_line(access_log, "?before")
    access_log.rename(str(access_log) + ".1")
    error_log.rename(str(error_log) + ".1")

    server.send_signal(signal.SIGUSR1)
    wait_for_line(error_log, "SIGUSR1: logs reopened")
    assert requests.get(server.url + track.url_path + "?after", timeout=TIMEOUT).ok
    after = wait_for_line(access_log, "?after")
    assert parse_access_line(after[0])["status"] == "200"
    old_access = lines_of(str(access_log) + ".1")
    assert len(old_access) == 1 and "?before" in old_access[0], old_access
    old_errors = lines_of(str(error_log) + ".1")
    assert [line for line in old_errors if "listening on" in line], old_errors
    assert not [line for line in old_errors if "reopened" in line], old_errors


def test_a_log_that_cannot_be_reopened_keeps_its_old_file(musicd, library, tmp_path):
    track = library.add(library.media.short, "short.mp3")
    server, access_log, error_log = start_with_logs(musicd, tmp_path)
    rotated = pathlib.Path(str(access_log) + ".1")
    access_log.rename(rotated)
    access_log.mkdir()  # the name is now a directory: opening it for writing fails (EISDIR)

    server.send_signal(signal.SIGUSR1)
    failure = wait_for_line(error_log, "SIGUSR1: access log")
    assert "is a directory; a log must be a regular file" in failure[0]
    assert "still writing to the file it had" in failure[0]
    assert not [line for line in lines_of(error_log) if "logs reopened" in line]
    assert requests.get(server.url + track.url_path + "?kept", timeout=TIMEOUT).ok
    wait_for_line(rotated, "?kept")


# -- rotation under load ------------------------------------------------------------------------
CLIENTS = 4
REQUESTS_PER_CLIENT = 250      # half HEADs of a track, half GETs of a document whose file is gone
ROTATIONS = 5
LOAD_DEADLINE = 120.0          # seconds (scaled) for all the requests


@pytest.mark.load
def test_rotating_under_load_loses_doubles_and_splits_no_line(musicd, library, tmp_path):
    track = library.add(library.media.short, "short.mp3")
    # One document per failing request: each 404 writes one error-log line naming its own path.
    gone = [f"{library.root}/gone-{n}.mp3" for n in range(CLIENTS * REQUESTS_PER_CLIENT // 2)]
    ids = [str(i) for i in library.db.collection.insert_many(
        [{library.db.path_field: path} for path in gone]).inserted_ids]
    server, access_log, error_log = start_with_logs(musicd, tmp_path)
    targets = [[] for _ in range(CLIENTS)]
    failures = []

    def client(index):
        deadline = time.monotonic() + scaled(LOAD_DEADLINE)
        with requests.Session() as session:
            for j in range(REQUESTS_PER_CLIENT):
                if time.monotonic() > deadline:
                    failures.append(f"client {index}: out of time at request {j}")
                    return
                n = index * REQUESTS_PER_CLIENT + j
                if j % 2 == 0:
                    target = f"{track.url_path}?n={n}"
                    expected = 200
                    response = session.head(server.url + target, timeout=TIMEOUT)
                else:
                    target = f"/musicdb/{ids[n // 2]}/gone.mp3?n={n}"
                    expected = 404
                    response = session.get(server.url + target, timeout=TIMEOUT)
                if response.status_code != expected:
                    failures.append(f"{target}: {response.status_code}")
                targets[index].append(target)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    rotated_access, rotated_errors = [], []
    try:
        for k in range(1, ROTATIONS + 1):
            wait_until(lambda: len(lines_of(access_log)) >= 20 or
                       not any(t.is_alive() for t in threads), scaled(30),
                       message="lines in the current access log")
            old_access = tmp_path / "logs" / f"access.log.{k}"
            old_errors = tmp_path / "logs" / f"error.log.{k}"
            access_log.rename(old_access)
            error_log.rename(old_errors)
            rotated_access.append(old_access)
            rotated_errors.append(old_errors)
            server.send_signal(signal.SIGUSR1)
            wait_for_line(error_log, "SIGUSR1: logs reopened")
    finally:
        for t in threads:
            t.join(scaled(LOAD_DEADLINE) + 30)
    assert not failures, failures[:10]
    expected = sorted(target for per_client in targets for target in per_client)
    assert len(expected) == CLIENTS * REQUESTS_PER_CLIENT

    access_files = rotated_access + [access_log]
    error_files = rotated_errors + [error_log]

    def logged_targets():
        return [parse_access_line(line)["request"].split(" ")[1]
                for path in access_files for line in lines_of(path)]
    # A line is written once the response is out, which the client may see a moment earlier.
    wait_until(lambda: len(logged_targets()) >= len(expected), scaled(10),
               message=f"{len(expected)} access-log lines")
    for path in access_files:
        for line in lines_of(path):
            assert COMBINED.match(line), f"{path.name}: not a whole line: {line!r}"

    assert sorted(logged_targets()) == expected
    # Rotations happened while requests ran: several files hold some of them.
    assert sum(1 for path in access_files if lines_of(path)) >= 3, \
        [len(lines_of(path)) for path in access_files]

    def gone_lines():
        return [m.group(1) for path in error_files for line in lines_of(path)
                for m in [re.search(r"(/\S*/gone-\d+\.mp3): ", line)] if m]
    # The error log's writer thread may be a moment behind the access log's.
    wait_until(lambda: len(gone_lines()) >= len(gone), scaled(10),
               message=f"{len(gone)} error-log lines")
    error_lines = [line for path in error_files for line in lines_of(path)]
    for line in error_lines:
        assert ERROR_LINE.match(line), f"not a whole error-log line: {line!r}"
    logged_gone = sorted(gone_lines())
    assert logged_gone == sorted(gone)
    assert sum(1 for path in error_files
               if any("gone-" in line for line in lines_of(path))) >= 3


# -- config/musicd.logrotate, run by logrotate ---------------------------------------------------
def logrotate_config_for(tmp_path, logs, pid_file):
    """The shipped file with its logs in logs/, its pid file pid_file, the binary under test as
    the one it signals, rotating as the user running the test, and its postrotate taking the
    branch for a machine without systemd."""
    text = (REPO / "config" / "musicd.logrotate").read_text()
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    for shipped, here in [("/var/log/musicd/", f"{logs}/"), ("/run/musicd/musicd.pid", pid_file),
                          ("--exec /usr/sbin/musicd\n", f"--exec {MUSICD_BIN}\n"),
                          ("su musicd adm", f"su {user} {group}"),
                          ("[ -d /run/systemd/system ]", f"[ -d {tmp_path}/no-systemd ]")]:
        assert shipped in text, shipped
        text = text.replace(shipped, str(here))
    path = tmp_path / "logrotate.conf"
    path.write_text(text)
    return path


def logrotate(tmp_path, config):
    if shutil.which("logrotate") is None:
        pytest.skip("logrotate is missing: scripts/setup/install-deps installs it")
    return subprocess.run(["logrotate", "--force", "--state", str(tmp_path / "logrotate.state"),
                           str(config)], capture_output=True, text=True, timeout=TIMEOUT)


def test_shipped_logrotate_file_rotates_a_running_musicd(musicd, library, tmp_path):
    track = library.add(library.media.short, "short.mp3")
    pid_file = tmp_path / "musicd.pid"
    server, access_log, error_log = start_with_logs(musicd, tmp_path,
                                                    extra_args=["--pid-file", pid_file])
    assert requests.get(server.url + track.url_path + "?first", timeout=TIMEOUT).ok
    wait_for_line(access_log, "?first")
    assert pid_file.read_text() == f"{server.pid}\n"
    result = logrotate(tmp_path, logrotate_config_for(tmp_path, access_log.parent, pid_file))
    assert result.returncode == 0 and "error" not in result.stderr.lower(), result

    wait_for_line(error_log, "SIGUSR1: logs reopened")
    assert requests.get(server.url + track.url_path + "?second", timeout=TIMEOUT).ok
    wait_for_line(access_log, "?second")
    first = lines_of(str(access_log) + ".1")  # delaycompress: the newest rotation stays plain
    assert len(first) == 1 and "?first" in first[0], first
    assert len(lines_of(access_log)) == 1
    assert [line for line in lines_of(str(error_log) + ".1") if "listening on" in line]


def test_shipped_logrotate_file_reports_a_musicd_it_cannot_signal(tmp_path):
    """A pid file naming no process (a musicd that crashed): logrotate says the script failed."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "access.log").write_text("a line\n")
    gone = subprocess.Popen(["true"])
    gone.wait()
    pid_file = tmp_path / "musicd.pid"
    pid_file.write_text(f"{gone.pid}\n")
    result = logrotate(tmp_path, logrotate_config_for(tmp_path, logs, pid_file))
    assert result.returncode != 0 and "postrotate" in result.stderr, result
    assert lines_of(logs / "access.log.1") == ["a line"]


def test_shipped_logrotate_file_signals_no_process_but_musicd(tmp_path):
    """A pid file naming another process (stale, its pid reused, or written by musicd's user to
    make root signal something else): that process is not signalled, and logrotate says the
    script failed. (fails before: kill -USR1 "$(cat ...)" as root killed the sleep.)"""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "access.log").write_text("a line\n")
    other = subprocess.Popen(["sleep", "60"])  # SIGUSR1 would end it
    try:
        pid_file = tmp_path / "musicd.pid"
        pid_file.write_text(f"{other.pid}\n")
        result = logrotate(tmp_path, logrotate_config_for(tmp_path, logs, pid_file))
        assert result.returncode != 0 and "postrotate" in result.stderr, result
        assert f"No {MUSICD_BIN} found running" in result.stdout + result.stderr, result
        time.sleep(0.2)  # a signal sent would have ended it by now
        assert other.poll() is None, f"the other process got a signal: {other.returncode}"
    finally:
        other.kill()
        other.wait()
    assert lines_of(logs / "access.log.1") == ["a line"]


def test_shipped_logrotate_file_with_no_musicd_running_rotates_and_signals_nothing(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "error.log").write_text("a line\n")
    result = logrotate(tmp_path, logrotate_config_for(tmp_path, logs, tmp_path / "none.pid"))
    assert result.returncode == 0 and result.stderr == "", result
    assert lines_of(logs / "error.log.1") == ["a line"] and not (logs / "error.log").exists()


@pytest.mark.timing
def test_a_408_logs_the_request_line_it_had_and_dash_for_none(musicd, tmp_path):
    # (fails before the fix: a connection that sent nothing was logged as "- - HTTP/0.0", and a
    # line cut before its version with HTTP/1.1: versions no client sent.)
    server, access_log, _ = start_with_logs(musicd, tmp_path, ["--header-timeout", "1"])
    for sent in (b"", b"GET /musicdb/partial"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
            s.sendall(sent)
            answer = b""
            while chunk := s.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 "), answer
    def logged_408s():
        return [parse_access_line(line) for line in lines_of(access_log) if '" 408 ' in line]
    wait_until(lambda: len(logged_408s()) >= 2, scaled(5), message="two 408s in the access log")
    lines = logged_408s()
    assert [(f["request"], f["status"]) for f in lines] == [
        ("-", "408"), ("GET /musicdb/partial", "408")], lines


# -- a log nobody reads -------------------------------------------------------------------------
def page_pipe():
    """A pipe (read end, write end) that holds one page: full after 4 KiB nobody reads."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    return read_end, write_end


def read_waiting(fd, into):
    """Appends to into what the pipe fd (non-blocking) holds now."""
    try:
        while chunk := os.read(fd, 1 << 16):
            into.extend(chunk)
    except BlockingIOError:
        pass


UNREAD_REQUESTS = 1200           # each line ~3 KiB: more than the writer's two 1 MiB buffers hold
LONG_AGENT = "agent-" + "x" * 3000


def test_an_access_log_nobody_reads_holds_no_request(musicd, tmp_path):
    """--access-log - with stdout a pipe nobody reads (a supervisor that stopped reading; a log on
    a hung disk is the same to musicd): every request is answered, the lines that do not fit the
    writer's buffer are dropped and counted, none split; once the pipe is read again every kept
    line comes out whole, the error log says how many were dropped, and lines flow again.
    (Before the writer thread the worker waited in write(2) once the pipe was full: the third
    request or so was never answered.)"""
    from test_metrics import scrape
    read_end, write_end = page_pipe()
    try:
        server = musicd.start(access_log="-", stdout=write_end,
                              extra_args=["--workers", "1"])
    finally:
        os.close(write_end)
    os.set_blocking(read_end, False)
    try:
        with requests.Session() as session:
            for i in range(UNREAD_REQUESTS):
                r = session.get(f"{server.url}/unread-{i}", headers={"User-Agent": LONG_AGENT},
                                timeout=TIMEOUT)
                assert r.status_code == 404, (i, r.status_code)
            # the server, not the request path, waits: /healthz answers too
            assert session.get(server.url + "/healthz", timeout=TIMEOUT).ok
        dropped = wait_until(
            lambda: scrape(server).value("musicd_log_lines_dropped_total", log="access") or None,
            TIMEOUT, message="access log lines counted as dropped")
        assert 0 < dropped < UNREAD_REQUESTS
        assert "lines dropped" not in server.stderr_text()  # said once the log has caught up

        # Read the pipe: the kept lines come out whole and in order, then the report.
        received = bytearray()

        def drained():
            read_waiting(read_end, received)
            lines = bytes(received).split(b"\n")
            total = scrape(server).value("musicd_log_lines_dropped_total", log="access")
            return len(lines) - 1 + total >= UNREAD_REQUESTS + 1 and total
        dropped = wait_until(drained, TIMEOUT, message="every kept line read from the pipe")
        lines = bytes(received).decode().splitlines()
        assert len(lines) + dropped == UNREAD_REQUESTS + 1  # the requests and the /healthz
        paths = [parse_access_line(line)["request"].split()[1] for line in lines]
        numbers = [int(p.split("-")[1]) for p in paths if p.startswith("/unread-")]
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
        assert all(f'"{LONG_AGENT}"' in line for line in lines if "/unread-" in line)
        report = server.wait_for_stderr("lines dropped")
        assert f"access log: {int(dropped)} lines dropped" in server.stderr_text(), report

        # And the log flows again.
        assert requests.get(server.url + "/after-the-drop", timeout=TIMEOUT).status_code == 404
        wait_until(lambda: drained() is not None and b"/after-the-drop" in received, TIMEOUT,
                   message="a new line on the pipe")
    finally:
        os.close(read_end)


UNREAD_LOOKUPS = 2200            # two debug lines each (the find, its answer): over 512 KiB


def test_an_error_log_nobody_reads_holds_no_request(musicd, tmp_path):
    """stderr (the error log) a pipe nobody reads, at debug level, where each lookup logs two
    lines from a database thread: every request is answered; the lines that do not fit the
    writer's buffer are dropped and counted, and once stderr is read again every kept line comes
    out whole, with the count of those dropped. (Before the writer thread the database threads
    waited in write(2) once the pipe was full, and so did every lookup.)"""
    from bson import ObjectId
    from test_metrics import scrape
    read_end, write_end = page_pipe()
    try:
        server = musicd.start(stderr=write_end, access_log="off",
                              extra_args=["--workers", "1", "--log-level", "debug"])
    finally:
        os.close(write_end)
    received = bytearray()
    try:
        with requests.Session() as session:
            for i in range(UNREAD_LOOKUPS):
                r = session.get(f"{server.url}/musicdb/{ObjectId()}/x.mp3", timeout=TIMEOUT)
                assert r.status_code == 404, (i, r.status_code)
            assert session.get(server.url + "/healthz", timeout=TIMEOUT).ok
        dropped = wait_until(
            lambda: scrape(server).value("musicd_log_lines_dropped_total", log="error") or None,
            TIMEOUT, message="error log lines counted as dropped")
        assert 0 < dropped < 2 * UNREAD_LOOKUPS

        os.set_blocking(read_end, False)

        def reported():
            read_waiting(read_end, received)
            return [line for line in bytes(received).decode(errors="replace").splitlines()
                    if "error log: " in line and " dropped: " in line]
        report = wait_until(reported, TIMEOUT, message="the error log's report of its drops")
        assert f"error log: {int(dropped)} lines dropped" in report[0], report
        lines = bytes(received).decode(errors="replace").splitlines()
        assert all(ERROR_LINE.match(line) for line in lines), \
            [line for line in lines if not ERROR_LINE.match(line)][:3]
        finds = [line for line in lines if "mongodb: find started: _id " in line]
        assert 0 < len(finds) < UNREAD_LOOKUPS
    finally:
        # Stopped while stderr is read, so that nothing at the exit waits; what came is kept in
        # the stderr file, where the harness looks for a sanitizer's report.
        os.set_blocking(read_end, True)

        def drain():
            while chunk := os.read(read_end, 1 << 16):
                received.extend(chunk)
        drainer = threading.Thread(target=drain)
        drainer.start()
        server.stop()
        drainer.join(TIMEOUT)
        server.stderr_path.write_bytes(bytes(received))
        os.close(read_end)
