"""--user USER[:GROUP]: musicd started as root binds its listeners, opens its logs, then becomes
the user for good (its ids in /proc, root not regained); it still serves and still reopens its
logs on SIGUSR1 in a directory the user may write. Root without --user is warned about once; a
user or group that does not exist stops musicd (exit 2, one message)."""

import grp
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import tempfile

import pytest
import requests

from assertions import assert_file_response
from media import Library
from musicd_process import musicd_env, own_metrics_listener, require_binary
from support import free_port, port_accepts, scaled, wait_until

TIMEOUT = scaled(10)
USER = "nobody"
ROOT_WARNING = "running as root: give --user USER"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing user needs root")


@pytest.fixture
def open_dir():
    """A directory every user may enter (pytest's tmp_path is root's alone): the media and the
    logs of a musicd that drops to another user live here."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="musicd-user-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def user_library(open_dir, db, media):
    return Library(open_dir / "media", db, media)


def user_logs(open_dir, owner=USER):
    """A log directory owned by owner (root's when owner is None)."""
    logs = open_dir / "logs"
    logs.mkdir()
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(logs, entry.pw_uid, entry.pw_gid)
    return logs


def start_as(musicd, library, logs, user_spec):
    args = ["--error-log", logs / "error.log"]
    if user_spec is not None:
        args += ["--user", user_spec]
    return musicd.start(media_roots=[library.root], access_log=logs / "access.log",
                        extra_args=args)


def proc_ids(pid):
    """{'Uid': [real, effective, saved, fs], 'Gid': [...], 'Groups': [...]} from /proc."""
    ids = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("Uid", "Gid", "Groups"):
            ids[name] = [int(v) for v in value.split()]
    return ids


def lines_of(path):
    try:
        return pathlib.Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []


def test_user_becomes_that_user_and_its_group_after_start(musicd, user_library, open_dir):
    track = user_library.add(user_library.media.short, "short.mp3")
    server = start_as(musicd, user_library, user_logs(open_dir), USER)
    entry = pwd.getpwnam(USER)
    ids = proc_ids(server.pid)
    assert ids["Uid"] == [entry.pw_uid] * 4
    assert ids["Gid"] == [entry.pw_gid] * 4
    assert 0 not in ids["Groups"]  # root's groups were left behind (initgroups)
    assert sorted(ids["Groups"]) == sorted(
        {entry.pw_gid} | {g.gr_gid for g in grp.getgrall() if USER in g.gr_mem})
    response = requests.get(server.url + track.url_path, timeout=TIMEOUT)
    assert_file_response(response, track.path)
    errors = lines_of(open_dir / "logs" / "error.log")
    assert [line for line in errors if f"running as user {USER} (uid {entry.pw_uid}" in line]
    assert not [line for line in errors if ROOT_WARNING in line]


def test_user_with_a_group_takes_that_group(musicd, user_library, open_dir):
    server = start_as(musicd, user_library, user_logs(open_dir), f"{USER}:daemon")
    daemon = grp.getgrnam("daemon").gr_gid
    ids = proc_ids(server.pid)
    assert ids["Uid"] == [pwd.getpwnam(USER).pw_uid] * 4
    assert ids["Gid"] == [daemon] * 4


def test_logs_are_reopened_after_the_drop_in_a_directory_the_user_owns(musicd, user_library,
                                                                        open_dir):
    track = user_library.add(user_library.media.short, "short.mp3")
    logs = user_logs(open_dir)
    server = start_as(musicd, user_library, logs, USER)
    for name in ("access.log", "error.log"):
        (logs / name).rename(logs / f"{name}.1")

    server.send_signal(signal.SIGUSR1)
    wait_until(lambda: [line for line in lines_of(logs / "error.log")
                        if "SIGUSR1: logs reopened" in line], TIMEOUT, message="the reopen")
    assert requests.get(server.url + track.url_path + "?after", timeout=TIMEOUT).ok
    wait_until(lambda: [line for line in lines_of(logs / "access.log") if "?after" in line],
               TIMEOUT, message="the request in the new access log")
    uid = pwd.getpwnam(USER).pw_uid
    # Made by musicd as the user, after the drop.
    assert os.stat(logs / "access.log").st_uid == uid
    assert os.stat(logs / "error.log").st_uid == uid
    # Opened by root before the drop, and renamed.
    assert os.stat(logs / "access.log.1").st_uid == 0


def test_a_log_directory_the_user_cannot_write_is_warned_about(musicd, user_library, open_dir):
    logs = user_logs(open_dir, owner=None)
    start_as(musicd, user_library, logs, USER)
    warnings = [line for line in lines_of(logs / "error.log") if "not writable by user" in line]
    assert len(warnings) == 2, lines_of(logs / "error.log")  # the access log and the error log
    assert all(f"user {USER}" in line for line in warnings)


def test_root_without_user_is_warned_about_once(musicd, library):
    server = musicd.start()
    server.wait_for_stderr("listening on")
    assert server.stderr_text().count(ROOT_WARNING) == 1, server.stderr_text()
    assert proc_ids(server.pid)["Uid"] == [0, 0, 0, 0]


def offline_args(root, port):
    # A metrics listener of its own: a run that binds would otherwise take musicd's default.
    return ["--listen", f"127.0.0.1:{port}", "--mongodb-uri", "mongodb://127.0.0.1:1/",
            "--media-root", root, "--access-log", "off", *own_metrics_listener([])]


@pytest.mark.parametrize("spec, missing", [("no-such-user-x7", "no such user"),
                                           (f"{USER}:no-such-group-x7", "no such group")])
def test_a_user_or_group_that_does_not_exist_exits_2_with_one_message(musicd, open_dir, spec,
                                                                      missing):
    port = free_port()
    result = musicd.run(offline_args(open_dir, port) + ["--user", spec])
    assert result.returncode == 2, result
    assert result.stderr == f"musicd: --user {spec}: {missing}\n", result
    assert not port_accepts(port)
    check = musicd.run(offline_args(open_dir, port) + ["--user", spec, "-t"])
    assert check.returncode == 2 and f"--user {spec}: {missing}" in check.stderr, check


@pytest.mark.parametrize("spec", ["", ":daemon", f"{USER}:", f"{USER}:daemon:x"])
def test_a_malformed_user_exits_2_naming_it(musicd, open_dir, spec):
    result = musicd.run(offline_args(open_dir, free_port()) + [f"--user={spec}"])
    assert result.returncode == 2, result
    assert result.stderr.count("\n") == 1 and "user" in result.stderr, result


def test_user_when_not_started_as_root_exits_2_with_one_message(musicd, open_dir):
    # Started as nobody, musicd cannot become daemon: it says why and serves nothing.
    port = free_port()
    entry = pwd.getpwnam(USER)

    def become_nobody():
        os.setgroups([])
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)
    # A copy nobody may run: the clone (and so build/) may sit in root's own 0700 home.
    binary = open_dir / "musicd"
    shutil.copy2(require_binary(), binary)
    binary.chmod(0o755)
    result = subprocess.run([str(binary)] + [str(a) for a in offline_args(open_dir, port)]
                            + ["--user", "daemon"], capture_output=True, text=True,
                            preexec_fn=become_nobody, timeout=TIMEOUT, cwd=open_dir,
                            env=musicd_env())
    assert result.returncode == 2, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--user daemon" in lines[0] and "only root" in lines[0], result
    assert not port_accepts(port)


# -- the GridFS spool is opened after the drop: -t and start-up check it as --user -------------

def spool_in(open_dir, mode):
    spool = open_dir / "spool"
    spool.mkdir()
    spool.chmod(mode)  # owned by root: with 0o755 the user may read it but not write it
    return spool


def test_check_config_refuses_a_spool_the_user_cannot_write(musicd, open_dir):
    spool = spool_in(open_dir, 0o755)
    port = free_port()
    result = musicd.run(offline_args(open_dir, port) +
                        ["--user", USER, "--gridfs-cache-dir", str(spool), "-t"])
    assert result.returncode == 2, result
    assert result.stderr == (f"musicd: gridfs-cache-dir {spool}: user {USER} cannot create "
                             "files in it (Permission denied)\n"), result
    assert "configuration ok" not in result.stdout
    assert not port_accepts(port)


def test_check_config_accepts_a_spool_the_user_can_write_and_stays_root(musicd, open_dir):
    spool = spool_in(open_dir, 0o755)
    os.chown(spool, pwd.getpwnam(USER).pw_uid, -1)
    result = musicd.run(offline_args(open_dir, free_port()) +
                        ["--user", USER, "--gridfs-cache-dir", str(spool), "-t"])
    assert result.returncode == 0, result
    assert result.stdout == "configuration ok\n"
    assert list(spool.iterdir()) == []


def test_start_up_refuses_a_spool_the_user_cannot_write(musicd, open_dir):
    spool = spool_in(open_dir, 0o755)
    port = free_port()
    result = musicd.run(offline_args(open_dir, port) +
                        ["--user", USER, "--gridfs-cache-dir", str(spool)])
    assert result.returncode == 2, result
    assert (f"musicd: gridfs-cache-dir {spool}: cannot create files in it (Permission denied)"
            in result.stderr), result
    assert not port_accepts(port)
