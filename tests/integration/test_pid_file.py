"""--pid-file FILE: musicd's pid in a file, for what must find one musicd among several without
systemd (the shipped logrotate file's postrotate): written once musicd serves, whole, replacing
and never following what was at the name; removed at exit unless a newer musicd (a restart
without dropping a connection) has taken it over; a file that cannot be written stops musicd
(exit 2), and -t says so beforehand without making one."""

import stat

import requests

from musicd_process import CHECK_OK
from support import free_port, port_accepts, scaled, wait_until

TIMEOUT = scaled(10)


def offline_args(tmp_path, port):
    """Valid settings but for a database that nothing answers on (never reached)."""
    return ["--listen", f"127.0.0.1:{port}", "--mongodb-uri", "mongodb://127.0.0.1:1/",
            "--media-root", tmp_path, "--access-log", "off"]


def pid_in(path):
    return path.read_text() if path.exists() else None


def test_the_pid_file_names_musicd_once_it_serves(musicd, library, tmp_path):
    track = library.add(library.media.short, "short.mp3")
    pid_file = tmp_path / "musicd.pid"
    server = musicd.start(extra_args=["--pid-file", pid_file])
    wait_until(lambda: pid_file.exists(), TIMEOUT, message="the pid file")
    assert pid_file.read_text() == f"{server.pid}\n"
    assert stat.S_IMODE(pid_file.stat().st_mode) & 0o644 == 0o644
    # Written after the listeners are bound: whoever reads it can connect.
    assert requests.get(server.url + track.url_path, timeout=TIMEOUT).status_code == 200
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_the_pid_file_goes_when_musicd_exits(musicd, tmp_path):
    pid_file = tmp_path / "musicd.pid"
    server = musicd.start(extra_args=["--pid-file", pid_file])
    wait_until(lambda: pid_file.exists(), TIMEOUT, message="the pid file")
    assert server.stop() == 0
    assert not pid_file.exists()


def test_a_newer_musicd_on_the_same_file_takes_it_over_and_keeps_it(musicd, tmp_path):
    pid_file = tmp_path / "musicd.pid"
    old = musicd.start(extra_args=["--pid-file", pid_file])
    wait_until(lambda: pid_in(pid_file) == f"{old.pid}\n", TIMEOUT, message="the old pid")
    new = musicd.start(port=old.port, extra_args=["--pid-file", pid_file])
    wait_until(lambda: pid_in(pid_file) == f"{new.pid}\n", TIMEOUT, message="the new pid")
    assert old.stop() == 0
    assert pid_in(pid_file) == f"{new.pid}\n"
    assert new.stop() == 0
    assert not pid_file.exists()


def test_a_symbolic_link_at_the_name_is_replaced_not_written_through(musicd, tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    pid_file = tmp_path / "musicd.pid"
    pid_file.symlink_to(target)
    server = musicd.start(extra_args=["--pid-file", pid_file])
    wait_until(lambda: not pid_file.is_symlink(), TIMEOUT, message="the link replaced")
    assert pid_file.read_text() == f"{server.pid}\n"
    assert target.read_text() == "keep me\n"


def test_a_pid_file_in_a_missing_directory_stops_musicd_with_exit_2(musicd, tmp_path):
    port = free_port()
    pid_file = tmp_path / "nowhere" / "musicd.pid"
    result = musicd.run(offline_args(tmp_path, port) + ["--pid-file", pid_file])
    assert result.returncode == 2, result
    assert result.stderr.splitlines()[-1] == \
        f"musicd: pid-file {pid_file}: open: No such file or directory", result
    assert "listening on" not in result.stderr, result  # before serving
    assert not port_accepts(port)


def test_check_config_reports_a_pid_file_it_could_not_write_and_makes_none(musicd, tmp_path):
    missing = tmp_path / "nowhere" / "musicd.pid"
    result = musicd.run(offline_args(tmp_path, free_port()) + ["--pid-file", missing, "-t"])
    assert result.returncode == 2 and f"pid-file {missing}: cannot create files in " \
        f"{missing.parent}" in result.stderr, result
    writable = tmp_path / "musicd.pid"
    result = musicd.run(offline_args(tmp_path, free_port()) + ["--pid-file", writable, "-t"])
    assert (result.returncode, result.stdout) == (0, CHECK_OK), result
    assert not writable.exists()


def test_pid_file_off_writes_none(musicd, tmp_path):
    server = musicd.start(extra_args=["--pid-file", "off"])
    assert server.stop() == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".pid")) == []
