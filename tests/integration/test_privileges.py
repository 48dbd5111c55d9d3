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
from musicd_process import CHECK_OK, musicd_env, own_metrics_listener, require_binary
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
    assert result.stdout == CHECK_OK
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


# -- the logs, opened as root before the drop: nothing the user plants makes root write elsewhere --
# (fail before: root followed a link or a second name to the file behind it, appended to a file of
# another user's, and waited forever for a FIFO's reader; new logs were 0644.)
# musicd runs as root with --user nobody and its logs in a directory nobody owns. The "secret" is
# root's, outside that directory, and world-writable, so that musicd writing to it after the drop
# (as nobody, on SIGUSR1 or SIGHUP) would show too.
SECRET = "untouched\n"


def secret_in(open_dir):
    secret = open_dir / "secret"
    secret.write_text(SECRET)
    secret.chmod(0o666)
    return secret


# Each plants name in logs/ as the user could, and returns the file musicd must leave untouched.
def plant_symlink(logs, name, secret):
    (logs / name).symlink_to(secret)
    return secret


def plant_hard_link(logs, name, secret):
    # The user could make it with fs.protected_hardlinks=0; root plants it here.
    os.link(secret, logs / name)
    return secret


def plant_file_of_another_user(logs, name, secret):
    (logs / name).write_text(SECRET)
    (logs / name).chmod(0o666)
    os.chown(logs / name, pwd.getpwnam("daemon").pw_uid, -1)
    return logs / name


def plant_fifo(logs, name, secret):
    os.mkfifo(logs / name, 0o666)  # nothing reads it: nothing can be written to it
    return secret


def plant_link_on_the_way(logs, name, secret):
    """logs/sub becomes a link to a directory of root's where the log's own name is a regular
    file of root's with one name."""
    elsewhere = secret.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    target = elsewhere / pathlib.Path(name).name
    target.write_text(SECRET)
    target.chmod(0o666)
    sub = logs / "sub"
    if sub.exists():
        sub.rename(logs / "sub.old")
    sub.symlink_to(elsewhere)
    return target


ATTACKS = {  # how the user plants it, where the log lies (in logs/), what musicd says
    "symlink": (plant_symlink, "", "is a symbolic link; a log must be a regular file"),
    "hard-link": (plant_hard_link, "", "has 2 names (hard links); a log must have one"),
    "another-users-file": (plant_file_of_another_user, "",
                           "is owned by uid 1; a log must be root's or the user's musicd runs as "
                           f"(uid {pwd.getpwnam(USER).pw_uid})"),
    "fifo": (plant_fifo, "", "is a FIFO; a log must be a regular file"),
    "symlink-on-the-way": (plant_link_on_the_way, "sub/",
                           "sub is a symbolic link in a directory that others than root may "
                           "write (give a path without it)"),
}


def logs_with_a_subdirectory(open_dir):
    """The user's log directory, with a directory of the user's in it (logs/sub)."""
    logs = user_logs(open_dir)
    (logs / "sub").mkdir()
    os.chown(logs / "sub", pwd.getpwnam(USER).pw_uid, -1)
    return logs


def user_args(user_library, logs, access_log):
    return ["--media-root", user_library.root, "--access-log", access_log,
            "--error-log", logs / "error.log", "--user", USER]


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("log", ["access", "error"])
def test_a_log_planted_by_the_user_is_refused_at_start(musicd, mongo, db, user_library,
                                                       open_dir, attack, log):
    plant, where, reason = ATTACKS[attack]
    logs = logs_with_a_subdirectory(open_dir)
    untouched = plant(logs, f"{where}{log}.log", secret_in(open_dir))
    target = logs / f"{where}{log}.log"
    args = user_args(user_library, logs, logs / "access-ok.log")
    args[args.index("--access-log" if log == "access" else "--error-log") + 1] = target
    port = free_port()
    result = musicd.run(["--listen", f"127.0.0.1:{port}", "--mongodb-uri", mongo.uri,
                         "--database", db.name, *args])
    assert result.returncode == 2, result
    assert f"musicd: {log} log {target}: {reason}" in result.stderr, result
    assert not port_accepts(port)
    assert untouched.read_text() == SECRET
    # -t says the same, as root, before anything is opened.
    check = musicd.run(["--mongodb-uri", mongo.uri, *args, "-t"])
    assert check.returncode == 2 and f"{log} log {target}: {reason}" in check.stderr, check


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_log_planted_by_the_user_is_refused_at_reopen_and_the_old_file_kept(
        musicd, user_library, open_dir, attack):
    plant, where, reason = ATTACKS[attack]
    track = user_library.add(user_library.media.short, "short.mp3")
    logs = logs_with_a_subdirectory(open_dir)
    access_log = logs / f"{where}access.log"
    server = musicd.start(media_roots=[user_library.root], access_log=access_log,
                          extra_args=["--error-log", logs / "error.log", "--user", USER])
    # logrotate renames the log; the user plants something in its place.
    access_log.rename(logs / "rotated.log")
    untouched = plant(logs, f"{where}access.log", secret_in(open_dir))

    server.send_signal(signal.SIGUSR1)
    refusal = wait_until(lambda: [line for line in lines_of(logs / "error.log")
                                  if "SIGUSR1: access log" in line], TIMEOUT,
                         message="the refusal in the error log")
    assert f"access log {access_log}: {reason}; still writing to the file it had" in \
        refusal[0], refusal
    assert requests.get(server.url + track.url_path + "?kept", timeout=TIMEOUT).ok
    wait_until(lambda: [line for line in lines_of(logs / "rotated.log") if "?kept" in line],
               TIMEOUT, message="the request in the file it had")
    assert untouched.read_text() == SECRET


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_log_planted_by_the_user_is_refused_at_reload_and_the_settings_kept(
        musicd, mongo, db, user_library, open_dir, attack):
    plant, where, reason = ATTACKS[attack]
    track = user_library.add(user_library.media.short, "short.mp3")
    logs = logs_with_a_subdirectory(open_dir)
    conf = open_dir / "musicd.conf"
    port = free_port()
    settings = (f"listen = 127.0.0.1:{port}\nmongodb-uri = {mongo.uri}\ndatabase = {db.name}\n"
                f"media-root = {user_library.root}\nerror-log = {logs / 'error.log'}\n"
                f"user = {USER}\n")
    conf.write_text(settings + f"access-log = {logs / 'access.log'}\n")
    conf.chmod(0o644)
    server = musicd.start(base_args=False, port=port, extra_args=["--config", conf])
    planted = logs / f"{where}new.log"
    untouched = plant(logs, f"{where}new.log", secret_in(open_dir))
    conf.write_text(settings + f"access-log = {planted}\n")

    server.send_signal(signal.SIGHUP)
    refusal = wait_until(lambda: [line for line in lines_of(logs / "error.log")
                                  if "SIGHUP: access log" in line], TIMEOUT,
                         message="the refusal in the error log")
    assert f"access log {planted}: {reason}; settings unchanged" in refusal[0], refusal
    assert requests.get(server.url + track.url_path + "?kept", timeout=TIMEOUT).ok
    wait_until(lambda: [line for line in lines_of(logs / "access.log") if "?kept" in line],
               TIMEOUT, message="the request in the access log it had")
    assert untouched.read_text() == SECRET


def test_logs_made_before_the_drop_are_0640(musicd, user_library, open_dir):
    # (fails before: 0644, readable by every user of the machine)
    logs = user_logs(open_dir)
    old_mask = os.umask(0)
    try:
        start_as(musicd, user_library, logs, USER)
    finally:
        os.umask(old_mask)
    for name in ("access.log", "error.log"):
        assert oct(os.stat(logs / name).st_mode & 0o777) == "0o640", name
        assert os.stat(logs / name).st_uid == 0
