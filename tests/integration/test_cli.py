"""Command line and configuration file: --help, --version, start-up errors (exit status 2,
one message naming the problem, nothing served) and where settings come from."""

import socket

import pytest
import requests

from assertions import assert_file_response
from support import REPO, free_port, port_accepts, scaled

TIMEOUT = scaled(10)
OPTIONS = ["--config", "--listen", "--mongodb-uri", "--database", "--collection", "--path-field",
           "--media-root", "--workers", "--lookup-threads", "--lookup-timeout", "--access-log",
           "--log-level", "--version", "--help"]


def valid_args(mongo, db, library, port):
    return ["--listen", f"127.0.0.1:{port}", "--mongodb-uri", mongo.uri, "--database", db.name,
            "--media-root", library.root, "--access-log", "off"]


def assert_startup_error(result, *names, port=None):
    """Exit status 2 and a short stderr message naming each of names; nothing listening."""
    assert result.returncode == 2, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2, f"expected one message, got:\n{result.stderr}"
    for name in names:
        assert str(name) in result.stderr, f"{name!r} not named in: {result.stderr!r}"
    if port:
        assert not port_accepts(port)


def test_help_lists_every_option(musicd):
    result = musicd.run(["--help"])
    assert result.returncode == 0, result
    for option in OPTIONS:
        assert option in result.stdout, f"{option} missing from --help:\n{result.stdout}"


def test_version_prints_the_version(musicd):
    result = musicd.run(["--version"])
    assert result.returncode == 0, result
    assert (REPO / "VERSION").read_text().strip() in result.stdout


def test_unknown_option_exits_2_naming_it(musicd, mongo, db, library):
    port = free_port()
    result = musicd.run(valid_args(mongo, db, library, port) + ["--frobnicate"])
    assert_startup_error(result, "--frobnicate", port=port)


def test_option_without_its_value_exits_2(musicd, mongo, db, library):
    port = free_port()
    result = musicd.run(valid_args(mongo, db, library, port) + ["--workers"])
    assert_startup_error(result, "workers", port=port)


@pytest.mark.parametrize("option,value", [
    ("--workers", "0"), ("--workers", "many"), ("--lookup-threads", "-1"),
    ("--lookup-timeout", "soon"), ("--log-level", "loud"),
    ("--listen", "nowhere"), ("--listen", "127.0.0.1:99999"),
])
def test_invalid_option_value_exits_2_naming_it(musicd, mongo, db, library, option, value):
    port = free_port()
    result = musicd.run(valid_args(mongo, db, library, port) + [option, value])
    assert_startup_error(result, option.lstrip("-"), port=port)


def test_missing_media_root_exits_2_naming_it(musicd, mongo, db, library, tmp_path):
    port = free_port()
    missing = tmp_path / "no-such-dir"
    result = musicd.run(valid_args(mongo, db, library, port) + ["--media-root", missing])
    assert_startup_error(result, missing, port=port)


def test_media_root_that_is_a_file_exits_2_naming_it(musicd, mongo, db, library):
    port = free_port()
    afile = library.place(library.media.short, "not-a-dir.mp3")
    result = musicd.run(valid_args(mongo, db, library, port) + ["--media-root", afile])
    assert_startup_error(result, afile, port=port)


def test_no_media_root_exits_2_naming_the_option(musicd, mongo, db):
    port = free_port()
    result = musicd.run(["--listen", f"127.0.0.1:{port}", "--mongodb-uri", mongo.uri,
                         "--database", db.name])
    assert_startup_error(result, "media-root", port=port)


def test_port_in_use_exits_2_naming_it(musicd, mongo, db, library):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = musicd.run(valid_args(mongo, db, library, port))
    assert_startup_error(result, port)


def test_missing_config_file_exits_2_naming_it(musicd, mongo, db, library, tmp_path):
    port = free_port()
    missing = tmp_path / "nope.conf"
    result = musicd.run(valid_args(mongo, db, library, port) + ["--config", missing])
    assert_startup_error(result, missing, port=port)


def test_config_line_with_unknown_key_exits_2_naming_it(musicd, mongo, db, library, tmp_path):
    port = free_port()
    conf = tmp_path / "musicd.conf"
    conf.write_text("# comment\n\nworkers = 2\nfrobnicate = 7\n")
    result = musicd.run(valid_args(mongo, db, library, port) + ["--config", conf])
    assert_startup_error(result, "frobnicate", port=port)


def test_config_line_without_equals_exits_2_naming_its_line(musicd, mongo, db, library,
                                                             tmp_path):
    port = free_port()
    conf = tmp_path / "musicd.conf"
    conf.write_text("# comment\nworkers = 2\nthis line means nothing\n")
    result = musicd.run(valid_args(mongo, db, library, port) + ["--config", conf])
    assert_startup_error(result, port=port)
    assert "3" in result.stderr or "this line means nothing" in result.stderr, result.stderr


def test_config_with_invalid_value_exits_2_naming_it(musicd, mongo, db, library, tmp_path):
    port = free_port()
    conf = tmp_path / "musicd.conf"
    conf.write_text("lookup-timeout = whenever\n")
    result = musicd.run(valid_args(mongo, db, library, port) + ["--config", conf])
    assert_startup_error(result, "lookup-timeout", port=port)


def test_config_file_configures_the_server(musicd, mongo, db, library, tmp_path):
    path = library.place(library.media.short, "conf.mp3")
    oid = db.insert_track(str(path), collection="songs", path_field="file")
    port = free_port()
    conf = tmp_path / "musicd.conf"
    conf.write_text(f"""# musicd test configuration
listen = 127.0.0.1:{port}
mongodb-uri = {mongo.uri}

database = {db.name}
collection = songs
path-field = file
   # an indented comment
media-root = {tmp_path / "elsewhere"}
media-root = {library.root}
workers = 2
lookup-threads = 2
lookup-timeout = 3000
access-log = {tmp_path / "conf-access.log"}
log-level = info
""")
    (tmp_path / "elsewhere").mkdir()
    server = musicd.start(base_args=False, port=port, extra_args=["--config", conf])
    resp = requests.get(f"{server.url}/musicdb/{oid}/conf.mp3", timeout=TIMEOUT)
    assert_file_response(resp, path)
    server.access_log = tmp_path / "conf-access.log"
    assert f"/musicdb/{oid}/conf.mp3" in server.wait_for_access_log(1)[0]


def test_flags_override_the_config_file(musicd, mongo, db, library, tmp_path):
    track = library.add(library.media.short, "short.mp3")
    conf_port, port = free_port(), free_port()
    conf = tmp_path / "musicd.conf"
    conf.write_text(f"listen = 127.0.0.1:{conf_port}\ndatabase = wrong_{db.name}\n"
                    f"mongodb-uri = mongodb://127.0.0.1:1/\nmedia-root = {library.root}\n")
    server = musicd.start(base_args=False, port=port,
                          extra_args=["--config", conf, "--listen", f"127.0.0.1:{port}",
                                      "--mongodb-uri", mongo.uri, "--database", db.name,
                                      "--access-log", "off"])
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)
    assert not port_accepts(conf_port)


def test_mongodb_uri_comes_from_the_environment(musicd, mongo, db, library):
    track = library.add(library.media.short, "short.mp3")
    port = free_port()
    server = musicd.start(base_args=False, port=port, env={"MONGODB_URI": mongo.uri},
                          extra_args=["--listen", f"127.0.0.1:{port}", "--database", db.name,
                                      "--media-root", library.root, "--access-log", "off"])
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)


def test_mongodb_uri_flag_overrides_the_environment(musicd, library):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(env={"MONGODB_URI": "mongodb://127.0.0.1:1/"})
    assert_file_response(requests.get(server.url + track.url_path, timeout=TIMEOUT), track.path)
