"""Command line and configuration file: --help, --version, start-up errors (exit status 2,
one message naming the problem, nothing served) and where settings come from."""

import dataclasses
import os
import re
import socket
import subprocess

import pytest
import requests

from assertions import assert_file_response
from musicd_process import CHECK_OK, MusicdFactory, musicd_env, require_binary
from support import REPO, free_port, port_accepts, scaled

TIMEOUT = scaled(10)
OPTIONS = ["--config", "--listen", "--mongodb-uri", "--database", "--collection", "--path-field",
           "--media-root", "--workers", "--lookup-threads", "--lookup-timeout", "--access-log",
           "--log-level", "--max-connections", "--max-header-size", "--header-timeout",
           "--keepalive-timeout", "--send-timeout", "--check-config", "--version", "--help"]


def valid_args(mongo, db, library, port):
    return ["--listen", f"127.0.0.1:{port}", "--mongodb-uri", mongo.uri, "--database", db.name,
            "--media-root", library.root, "--access-log", "off"]


@pytest.fixture
def offline_musicd(tmp_path):
    """musicd.run without a database: for runs that must stop before connecting to one."""
    factory = MusicdFactory(tmp_path, None, None, None)
    yield factory
    problems = factory.teardown()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def offline_args(tmp_path, port):
    """Valid settings but for a database that nothing answers on (never reached)."""
    return ["--listen", f"127.0.0.1:{port}", "--mongodb-uri", "mongodb://127.0.0.1:1/",
            "--media-root", tmp_path, "--access-log", "off"]


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


@pytest.mark.parametrize("given, meant", [("--medai-root", "--media-root"),
                                          ("--lookup-timout", "--lookup-timeout"),
                                          ("--Workers", "--workers"),
                                          ("--chek-config", "--check-config")])
def test_a_mistyped_option_exits_2_naming_the_option_meant(offline_musicd, tmp_path, given,
                                                          meant):
    # (fails before: "unknown option '--medai-root' (see --help)")
    port = free_port()
    result = offline_musicd.run(offline_args(tmp_path, port) + [given, "1"])
    assert result.returncode == 2, result
    assert result.stderr == f"musicd: unknown option '{given}' (did you mean '{meant}'?)\n"
    assert not port_accepts(port)


@pytest.mark.parametrize("given", ["--frobnicate", "--port", "--x"])
def test_an_option_near_none_gets_no_suggestion(offline_musicd, tmp_path, given):
    result = offline_musicd.run(offline_args(tmp_path, free_port()) + [given, "1"])
    assert result.returncode == 2, result
    assert result.stderr == f"musicd: unknown option '{given}' (see --help)\n"


def test_a_mistyped_setting_in_the_config_file_names_the_setting_meant(offline_musicd,
                                                                       tmp_path):
    conf = tmp_path / "musicd.conf"
    conf.write_text("workers = 2\nmedai-root = /srv/music\nnonsense = 1\n")
    port = free_port()
    result = offline_musicd.run(offline_args(tmp_path, port) + ["--config", conf])
    assert result.returncode == 2, result
    assert result.stderr == (f"musicd: {conf}:2: unknown setting 'medai-root' (did you mean "
                             "'media-root'?)\n")
    conf.write_text("workers = 2\nnonsense = 1\n")
    result = offline_musicd.run(offline_args(tmp_path, port) + ["--config", conf])
    assert result.stderr == f"musicd: {conf}:2: unknown setting 'nonsense'\n", result
    assert not port_accepts(port)


def test_option_without_its_value_exits_2(musicd, mongo, db, library):
    port = free_port()
    result = musicd.run(valid_args(mongo, db, library, port) + ["--workers"])
    assert_startup_error(result, "workers", port=port)


@pytest.mark.parametrize("option,value", [
    ("--workers", "0"), ("--workers", "many"), ("--lookup-threads", "-1"),
    ("--lookup-timeout", "soon"), ("--log-level", "loud"),
    ("--listen", "nowhere"), ("--listen", "127.0.0.1:99999"),
    ("--limit-rate", "fast"), ("--limit-rate", "2T"), ("--limit-rate-after", "-1"),
    ("--max-streams-per-client", "-1"), ("--max-streams-per-client", "two"),
    ("--client-ipv6-prefix", "31"), ("--client-ipv6-prefix", "129"),
    ("--client-ipv6-prefix", "/64"),
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


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")
def test_listen_on_a_bare_port_serves_every_address_ipv4_and_ipv6(musicd, mongo, db, library):
    track = library.add(library.media.short, "short.mp3")
    port = free_port()
    server = musicd.start(base_args=False, port=port, extra_args=[
        "--listen", f":{port}", "--mongodb-uri", mongo.uri, "--database", db.name,
        "--media-root", library.root, "--access-log", "off"])
    for host in ("127.0.0.1", "[::1]"):
        resp = requests.get(f"http://{host}:{port}{track.url_path}", timeout=TIMEOUT)
        assert_file_response(resp, track.path)
    assert server.wait_for_stderr(f"listening on [::]:{port} ")


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")
def test_listen_on_an_ipv4_address_does_not_serve_ipv6(musicd, library):
    server = musicd.start()  # --listen 127.0.0.1:PORT
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://[::1]:{server.port}/healthz", timeout=TIMEOUT)


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


# -- Header values: refused at start-up, so a head built from them is never cut or forged -----

@pytest.mark.parametrize("option,value,byte", [
    ("--cache-control", "public\r\nX-Forged: 1", "0x0d"),
    ("--cache-control", "public\nX-Forged: 1", "0x0a"),
    ("--error-cache-control", "no-store\r\nX-Forged: 1", "0x0d"),
    ("--error-cache-control", "no-store\nX-Forged: 1", "0x0a"),
])
def test_header_value_with_cr_or_lf_exits_2_naming_it(offline_musicd, tmp_path, option, value,
                                                      byte):
    port = free_port()
    result = offline_musicd.run(offline_args(tmp_path, port) + [option, value])
    assert_startup_error(result, option.lstrip("-"), byte, "control character", port=port)


@pytest.mark.parametrize("option", ["--cache-control", "--error-cache-control"])
def test_header_value_longer_than_1024_bytes_exits_2_naming_it(offline_musicd, tmp_path, option):
    port = free_port()
    result = offline_musicd.run(offline_args(tmp_path, port) + [option, "max-age=0, " + "x" * 1014])
    assert_startup_error(result, option.lstrip("-"), "1025 bytes", "1024", port=port)


@pytest.mark.parametrize("check", [[], ["-t"]], ids=["start", "check-config"])
def test_a_config_file_user_that_does_not_exist_exits_2_naming_the_file_and_line(
        offline_musicd, tmp_path, check):
    port = free_port()
    conf = tmp_path / "musicd.conf"
    conf.write_text("# the operator's\nworkers = 2\nuser = no-such-user-x7\n")
    result = offline_musicd.run(offline_args(tmp_path, port) + ["--config", conf] + check)
    assert result.returncode == 2, result
    assert result.stderr == f"musicd: {conf}:3: user no-such-user-x7: no such user\n", result
    assert not port_accepts(port)


def test_a_user_flag_replaces_the_config_file_user_and_its_error_names_the_flag(offline_musicd,
                                                                               tmp_path):
    conf = tmp_path / "musicd.conf"
    conf.write_text("user = no-such-user-x7\n")
    result = offline_musicd.run(offline_args(tmp_path, free_port()) +
                                ["--config", conf, "--user", "no-such-user-y8", "-t"])
    assert result.returncode == 2, result
    assert result.stderr == "musicd: --user no-such-user-y8: no such user\n", result


def test_header_value_with_a_cr_in_the_config_file_exits_2_naming_it(offline_musicd, tmp_path):
    port = free_port()
    conf = tmp_path / "musicd.conf"
    conf.write_bytes(b"error-cache-control = no-store\rX-Forged: 1\n")
    result = offline_musicd.run(offline_args(tmp_path, port) + ["--config", conf])
    assert_startup_error(result, "error-cache-control", "0x0d", port=port)


@pytest.mark.parametrize("option,value", [
    ("--max-header-size", "1023"), ("--max-header-size", "1048577"),
    ("--header-timeout", "0"), ("--keepalive-timeout", "3601"), ("--send-timeout", "soon"),
    ("--max-connections", "0"),
])
def test_connection_option_out_of_bounds_exits_2_naming_it(offline_musicd, tmp_path, option,
                                                           value):
    port = free_port()
    result = offline_musicd.run(offline_args(tmp_path, port) + [option, value])
    assert_startup_error(result, option.lstrip("-"), value, port=port)


# -- --help, config/musicd.conf and the man page say the same ----------------------------------
#
# The option table in server/config/option_table.c is the one place a default is written; --help prints it
# as "(default VALUE)" (the value as a user would write it) or "(default: NOTE)" (a default
# settled at start-up, described). config/musicd.conf shows every file setting exactly once:
# "name = VALUE" when it has a fixed default (VALUE is that default), "#name = example" when it
# has none or a described one. man/musicd.8, the option reference, has an entry under OPTIONS
# per option, its tag the option as --help writes it, and its text says "Default VALUE" or
# "Default: NOTE" (VALUE or NOTE as --help has it) when there is one, and no "Default" otherwise.

COMMAND_LINE_ONLY = {"config", "help", "version", "check-config", "check-database", "sign-url",
                     "url-lifetime"}  # never in a config file
CONF_SETTING = re.compile(r"^(#?)([a-z][a-z0-9-]*)\s*=\s*(.*?)\s*$")
HELP_LINE = re.compile(r"^  --(?P<name>[a-z][a-z0-9-]*)(?: (?P<value>\S+))?\s+(?P<help>.*)$")
HELP_DEFAULT = re.compile(r" \(default(?P<note>:?) (?P<default>.*)\)$")
MAN_PAGE = REPO / "man" / "musicd.8"
# The rendered page: a tag at 7 columns (-t, --check-config), its text at 14, one line a
# paragraph (no wrapping, no hyphenation).
MAN_TAG = re.compile(r"^ {7}(?:-[a-zA-Z], )?(?P<usage>--[a-z][a-z0-9-]*(?: \S+)?)$")
MAN_TEXT = re.compile(r"^ {14}(?P<text>\S.*)$")
# "Default VALUE." or "Default: NOTE" up to the end of its sentence, a "; ", a ": " or a " (".
MAN_DEFAULT = re.compile(r"(?:^|(?<=\. ))Default:? (?P<default>.+?)(?:\.(?= |$)|; |: | \()")


@dataclasses.dataclass
class HelpOption:
    usage: str      # "--name VALUE" as --help shows it
    default: str    # "" when there is none
    fixed: bool     # a value as written (musicd.conf shows it as an active line)


def parse_help(text):
    options = {}
    for line in text.splitlines():
        match = HELP_LINE.match(line)
        if not match:
            continue
        usage = "--" + match["name"] + (" " + match["value"] if match["value"] else "")
        default = HELP_DEFAULT.search(match["help"])
        options[match["name"]] = HelpOption(
            usage, default["default"] if default else "", bool(default and not default["note"]))
    return options


def parse_conf(text):
    """{name: [(line number, commented, value)]} for every `name = value` or `#name = value`
    line (prose comments start with "# ")."""
    settings = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = CONF_SETTING.match(line)
        if match:
            settings.setdefault(match[2], []).append((number, match[1] == "#", match[3]))
    return settings


def render_man(source):
    """The man page's roff source as plain text, each paragraph on one line."""
    result = subprocess.run(["groff", "-man", "-Tascii", "-rLL=2000n", "-rHY=0", "-P-cbou"],
                            input=source, capture_output=True, text=True, timeout=scaled(30))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def parse_man_options(rendered):
    """{name: [(usage, default)]} from the entries under OPTIONS; a name twice is listed twice."""
    section = rendered.split("\nOPTIONS\n", 1)[1]
    section = re.split(r"\n(?=[A-Z])", section, maxsplit=1)[0]
    entries = {}
    usage, text = None, []

    def close():
        if usage:
            name = usage.split()[0][2:]
            words = " ".join(" ".join(text).split())  # groff's two spaces after a sentence: one
            defaults = [m["default"] for m in MAN_DEFAULT.finditer(words)]
            entries.setdefault(name, []).append((usage, defaults))

    for line in section.splitlines():
        tag, body = MAN_TAG.match(line), MAN_TEXT.match(line)
        if tag:
            close()
            usage, text = tag["usage"], []
        elif body and usage:
            text.append(body["text"])
        elif line.strip() and not body:
            close()
            usage, text = None, []
    close()
    return entries


def disagreements(help_text, conf_text, man_source):
    """Every way config/musicd.conf or the man page differs from --help."""
    found = []
    options = parse_help(help_text)
    conf = parse_conf(conf_text)
    man = parse_man_options(render_man(man_source))
    if len(options) < 20:
        found.append(f"--help lists only {len(options)} options: is its format still parsed?")
    for name, option in options.items():
        entries = man.get(name, [])
        if len(entries) != 1:
            found.append(f"musicd.8: {len(entries)} entries for --{name}, not one")
        else:
            usage, defaults = entries[0]
            if usage != option.usage:
                found.append(f"musicd.8: entry `{usage}`, --help says `{option.usage}`")
            if defaults != ([option.default] if option.default else []):
                found.append(f"musicd.8: --{name} defaults {defaults!r}, --help says "
                             f"{option.default!r}")
        lines = conf.get(name, [])
        if name in COMMAND_LINE_ONLY:
            if lines:
                found.append(f"musicd.conf:{lines[0][0]}: {name} only works on the command line")
            continue
        if len(lines) != 1:
            found.append(f"musicd.conf: {name} appears {len(lines)} times, not once")
            continue
        number, commented, value = lines[0]
        if option.fixed and commented:
            found.append(f"musicd.conf:{number}: {name} has the fixed default "
                         f"{option.default!r}: write it as an active line")
        elif option.fixed and value != option.default:
            found.append(f"musicd.conf:{number}: {name} = {value!r}, --help says the default "
                         f"is {option.default!r}")
        elif not option.fixed and not commented:
            found.append(f"musicd.conf:{number}: {name} has no fixed default: comment it out "
                         "(#name = example)")
    for name in sorted(set(man) - set(options)):
        found.append(f"musicd.8: an entry for --{name}, which --help does not list")
    for name in sorted(set(conf) - set(options)):
        found.append(f"musicd.conf:{conf[name][0][0]}: {name} is not an option of musicd")
    return found


@pytest.fixture(scope="module")
def documents():
    """(--help, config/musicd.conf, man/musicd.8) as they are now."""
    result = subprocess.run([str(require_binary()), "--help"], capture_output=True,
                            env=musicd_env(), timeout=scaled(10))
    assert result.returncode == 0, result
    return (result.stdout.decode(), (REPO / "config" / "musicd.conf").read_text(),
            MAN_PAGE.read_text())


def test_help_config_file_and_man_page_agree_on_every_option_and_default(documents):
    assert disagreements(*documents) == []


def test_help_shows_each_fixed_default_and_each_described_one(documents):
    options = parse_help(documents[0])
    assert options["lookup-timeout"] == HelpOption("--lookup-timeout MS", "2000", True)
    assert options["cache-control"].default == "public, max-age=86400"
    assert options["workers"] == HelpOption("--workers N", "one per CPU, at most 256", False)
    assert options["media-root"].default == ""
    assert "(default" not in options["x-accel-redirect"].usage


def test_the_man_page_s_entries_are_read_with_their_defaults(documents):
    """The man page's parser finds what a reader sees: a fixed default, a described one, none."""
    man = parse_man_options(render_man(documents[2]))
    assert len(man) >= 20, man
    assert man["lookup-timeout"] == [("--lookup-timeout MS", ["2000"])]
    assert man["workers"] == [("--workers N", ["one per CPU, at most 256"])]
    assert man["listen"] == [("--listen ADDR:PORT", ["127.0.0.1:23001"])]
    assert man["cache-control"][0][1] == ["public, max-age=86400"]
    assert man["check-config"] == [("--check-config", [])]
    assert man["media-root"] == [("--media-root DIR", [])]


def _replace_once(text, old, new):
    assert text.count(old) == 1, f"{old!r} is not in the document exactly once"
    return text.replace(old, new)


# Each edit breaks the agreement one way; the check must name the option it broke.
EDITS = {
    "a default changed in musicd.conf": (1, "lookup-timeout = 2000\n", "lookup-timeout = 2001\n",
                                         "lookup-timeout"),
    "a default changed in the man page": (2, "A slow but reading client is never cut off.\n"
                                             "Default 60.\n",
                                          "A slow but reading client is never cut off.\n"
                                          "Default 30.\n", "send-timeout"),
    "a default changed in --help": (0, "(default 16384)", "(default 8192)", "max-header-size"),
    "a described default changed in the man page": (2, "Default: one per CPU, at most 256;",
                                                    "Default: one per CPU;", "workers"),
    "a default the man page does not give": (2, "Default\n.BR tracks .\n", "", "collection"),
    "a default the man page gives that --help does not": (
        2, "Repeatable; at least one is required.\n",
        "Repeatable; at least one is required.\nDefault /srv/music.\n", "media-root"),
    "a fixed default commented out": (1, "\nheader-timeout = 20\n", "\n#header-timeout = 20\n",
                                      "header-timeout"),
    "an example made active": (1, "\n#max-connections = ", "\nmax-connections = ",
                               "max-connections"),
    "an option missing from musicd.conf": (1, "\nkeepalive-timeout = 60\n", "\n",
                                           "keepalive-timeout"),
    "an option missing from the man page": (2, ".TP\n.BI \\-\\-max\\-ranges \" N\"\n", "",
                                            "max-ranges"),
    "an option twice in the man page": (2, ".SS Files\n", ".SS Files\n.TP\n.BI \\-\\-max\\-ranges"
                                        " \" N\"\nDefault 16.\n", "max-ranges"),
    "an option twice in musicd.conf": (1, "\nlog-level = info\n",
                                       "\nlog-level = info\n#log-level = info\n", "log-level"),
    "a renamed option in musicd.conf": (1, "\nsend-timeout = 60\n", "\nwrite-timeout = 60\n",
                                        "write-timeout"),
    "a renamed option in the man page": (2, ".BI \\-\\-send\\-timeout \" SECONDS\"",
                                         ".BI \\-\\-write\\-timeout \" SECONDS\"", "write-timeout"),
    "a value name changed in the man page": (2, ".BI \\-\\-lookup\\-timeout \" MS\"",
                                             ".BI \\-\\-lookup\\-timeout \" SECONDS\"",
                                             "--lookup-timeout"),
}


@pytest.mark.parametrize("edit", EDITS.keys())
def test_agreement_check_notices(documents, edit):
    which, old, new, named = EDITS[edit]
    edited = list(documents)
    edited[which] = _replace_once(edited[which], old, new)
    found = disagreements(*edited)
    assert found, f"{edit}: no disagreement found"
    assert any(named in problem for problem in found), found


def test_shipped_config_file_loads_needing_only_a_media_root(offline_musicd):
    result = offline_musicd.run(["--config", REPO / "config" / "musicd.conf"])
    assert result.returncode == 2, result
    assert result.stderr.strip() == ("musicd: no media root: give at least one --media-root DIR "
                                     "(or media-root in the config file)"), result.stderr


def test_shipped_config_file_examples_are_valid_settings(offline_musicd, tmp_path):
    """Every commented-out example, uncommented, is accepted (musicd then stops only at the
    media root, which does not exist)."""
    text = (REPO / "config" / "musicd.conf").read_text()
    uncommented = re.sub(r"^#([a-z][a-z0-9-]* = )", r"\1", text, flags=re.M)
    assert uncommented != text
    conf = tmp_path / "examples.conf"
    conf.write_text(uncommented)
    port = free_port()
    missing = tmp_path / "no-such-root"
    result = offline_musicd.run(["--config", conf, "--listen", f"127.0.0.1:{port}",
                                 "--media-root", missing])
    assert_startup_error(result, missing, port=port)
    assert "examples.conf" not in result.stderr, result.stderr


# -- -t / --check-config: validate everything, serve nothing ------------------------------------

def check_config_args(tmp_path, port, *extra):
    media = tmp_path / "check-media"
    media.mkdir(exist_ok=True)
    # Nothing listens on port 1: a check that tried the database would fail or hang.
    return ["--listen", f"127.0.0.1:{port}", "--mongodb-uri", "mongodb://127.0.0.1:1",
            "--media-root", str(media), *extra]


@pytest.mark.parametrize("flag", ["-t", "--check-config"])
def test_check_config_says_configuration_ok_and_exits_0(offline_musicd, tmp_path, flag):
    port = free_port()
    result = offline_musicd.run([flag] + check_config_args(tmp_path, port))
    assert result.returncode == 0, result
    assert result.stdout == CHECK_OK
    assert result.stderr == ""
    assert not port_accepts(port)


NOT_CONTACTED = "database not contacted (--check-database reaches it)\n"


def installed_configuration():
    """The file musicd reads without --config, as its --help names it."""
    result = subprocess.run([str(require_binary()), "--help"], capture_output=True, text=True,
                            env=musicd_env(), timeout=TIMEOUT)
    found = re.search(r"^Without --config, musicd reads (\S+) if it exists\.$", result.stdout,
                      re.MULTILINE)
    assert found, result.stdout
    return found[1]


def test_check_config_names_the_file_it_read_or_why_it_read_none(offline_musicd, tmp_path):
    # (fails before: "configuration ok", whichever file was read; and --config off was a file)
    conf = tmp_path / "musicd.conf"
    conf.write_text("workers = 2\n")
    args = check_config_args(tmp_path, free_port())
    read = offline_musicd.run(["-t", "--config", conf] + args)
    assert read.stdout == f"configuration ok (read {conf})\n" + NOT_CONTACTED, read
    none = offline_musicd.run(["-t", "--config", "off"] + args)
    assert none.stdout == "configuration ok (no configuration file: --config off)\n" + \
        NOT_CONTACTED, none
    # Without --config, the installed file (build/musicd's: make install's default PREFIX).
    installed = installed_configuration()
    if os.path.exists(installed):
        pytest.skip(f"{installed} exists: musicd is installed on this machine")
    result = subprocess.run([str(require_binary()), "-t", *map(str, args)], capture_output=True,
                            text=True, env=musicd_env(), timeout=TIMEOUT)
    assert result.stdout == (f"configuration ok (no configuration file: {installed} does not "
                             "exist)\n" + NOT_CONTACTED), result


def test_check_database_says_when_no_server_can_be_selected(offline_musicd, tmp_path):
    # (fails before: no such option; -t never tried the database)
    dead = f"mongodb://127.0.0.1:{free_port()}/"
    result = offline_musicd.run(["--check-database"] + check_config_args(tmp_path, free_port()) +
                                ["--mongodb-uri", dead, "--lookup-timeout", "1500"])
    assert result.returncode == 2, result
    assert result.stdout == "configuration ok (no configuration file: --config off)\n", result
    assert result.stderr.startswith("musicd: database: no server could be selected within "
                                    "1500 ms ("), result
    assert dead[len("mongodb://"):-1] in result.stderr, result


def test_check_database_names_the_server_it_reached(offline_musicd, tmp_path, mongo):
    result = offline_musicd.run(["-t", "--check-database"] +
                                check_config_args(tmp_path, free_port()) +
                                ["--mongodb-uri", mongo.uri])
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    assert lines[0] == "configuration ok (no configuration file: --config off)", result
    assert re.fullmatch(r"database reached: \S+:\d+ \(\w+\)", lines[1]), result
    assert len(lines) == 2 and result.stderr == "", result


def test_check_config_neither_binds_nor_minds_a_port_in_use(offline_musicd, tmp_path):
    # It opens no socket: a port another process holds is no error for the check.
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    with holder:
        port = holder.getsockname()[1]
        result = offline_musicd.run(["-t"] + check_config_args(tmp_path, port))
    assert result.returncode == 0, result


def test_check_config_creates_no_access_log(offline_musicd, tmp_path):
    log = tmp_path / "access.log"
    result = offline_musicd.run(["-t"] + check_config_args(tmp_path, free_port(),
                                                           "--access-log", str(log)))
    assert result.returncode == 0, result
    assert not log.exists()


@pytest.mark.parametrize("extra, named", [
    (["--media-root", "/nonexistent/music"], "/nonexistent/music"),
    (["--mongodb-uri", "mongodb://"], "mongodb-uri"),
    (["--mongodb-uri", "http://not-mongo"], "mongodb-uri"),
    (["--access-log", "/nonexistent/dir/access.log"], "/nonexistent/dir/access.log"),
    (["--workers", "0"], "workers"),
    (["--error-cache-control", "no-store\r\nX: y"], "error-cache-control"),
], ids=["media-root", "empty-uri", "not-a-uri", "access-log", "workers", "header-value"])
def test_check_config_finds_each_problem_in_one_message_with_exit_2(offline_musicd, tmp_path,
                                                                    extra, named):
    port = free_port()
    args = check_config_args(tmp_path, port)
    if extra[0] == "--media-root":
        args = [a for a in args if a != "--media-root" and "check-media" not in a]
    result = offline_musicd.run(["-t"] + args + extra)
    assert_startup_error(result, named, port=port)
    assert "configuration ok" not in result.stdout


@pytest.mark.parametrize("make, reason", [
    (lambda path: None, "No such file or directory"),
    (lambda path: path.write_text("not a directory\n"), "Not a directory"),
], ids=["missing", "a-file"])
def test_check_config_checks_the_gridfs_cache_dir_as_start_up_opens_it(offline_musicd, tmp_path,
                                                                       make, reason):
    spool = tmp_path / "spool"
    make(spool)
    port = free_port()
    result = offline_musicd.run(["-t"] + check_config_args(tmp_path, port,
                                                           "--gridfs-cache-dir", str(spool)))
    assert_startup_error(result, f"gridfs-cache-dir {spool}: {reason}", port=port)
    assert "configuration ok" not in result.stdout


def test_check_config_accepts_a_gridfs_cache_dir_it_may_write(offline_musicd, tmp_path):
    spool = tmp_path / "spool"
    spool.mkdir()
    result = offline_musicd.run(["-t"] + check_config_args(tmp_path, free_port(),
                                                           "--gridfs-cache-dir", str(spool)))
    assert result.returncode == 0, result
    assert result.stdout == CHECK_OK
    assert list(spool.iterdir()) == []  # the check makes nothing there


def test_check_config_reads_the_config_file_and_names_its_bad_line(offline_musicd, tmp_path):
    conf = tmp_path / "musicd.conf"
    conf.write_text("# a comment\nlookup-timeout = soon\n")
    result = offline_musicd.run(["-t", "--config", str(conf)] +
                                check_config_args(tmp_path, free_port()))
    assert_startup_error(result, f"{conf}:2", "lookup-timeout")


def test_the_shipped_config_file_checks_ok_once_given_a_media_root(offline_musicd, tmp_path):
    conf = REPO / "config" / "musicd.conf"
    result = offline_musicd.run(["-t", "--config", str(conf)] +
                                check_config_args(tmp_path, free_port()))
    assert result.returncode == 0, result
    assert result.stdout == (f"configuration ok (read {conf})\n"
                             "database not contacted (--check-database reaches it)\n")
