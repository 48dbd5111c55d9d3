"""make install / make uninstall (GNU conventions: PREFIX, DESTDIR, the directory variables) and
the man page musicd(8): what is installed where with which mode, the paths rewritten to the
install's own, the installed layout's lines in musicd.conf, an install the system would not read
said so, the installed unit passing systemd-analyze verify, an operator's edited configuration
kept through install and uninstall, nothing else left behind; and man/musicd.8 rendering without
a single groff warning while naming exactly the long options --help lists."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from frontends import INCLUDE_LINE, block_on, documented_block_lines, vcl_compiles
from musicd_process import musicd_env, require_binary
from support import REPO, free_port, read_text, scaled, wait_until

# Every `make install` writes build/install/ (the unit and man page rewritten for its PREFIX), so
# no two of these tests may run at once: under xdist they share one worker.
pytestmark = pytest.mark.xdist_group("make-install")

MAKE_TIMEOUT = 300   # make install may have to (re)build the binaries first
# The nginx sites and the VCLs with their opt-in files, installed as examples side by side (the
# package's /usr/share/doc/musicd/examples/).
EXAMPLES = ["nginx-musicd.conf", "nginx-musicd-offload.conf", "nginx-musicd-cluster.conf",
            "varnish-musicd.vcl", "varnish-musicd-cluster.vcl", "varnish-musicd-request-limit.vcl",
            "varnish-musicd-url-signing.vcl", "varnish-musicd-cors.vcl"]
RUN_TIMEOUT = 10
MAN_PAGE = REPO / "man" / "musicd.8"
# Prometheus's rules, their unit tests and the Grafana dashboard, under $(datarootdir)/musicd as
# under config/.
MONITORING_FILES = ["prometheus/musicd.rules.yml", "prometheus/musicd.rules.test.yml",
                    "grafana/musicd-dashboard.json"]
VERSION = (REPO / "VERSION").read_text().strip()
# The lines of the installed layout in the installed musicd.conf, and the repository's lines they
# take the place of (config/musicd.conf's header lists them).
LAYOUT_LINES = {
    "#media-root = /srv/music": "media-root = /var/lib/musicd/music",
    "access-log = off": "access-log = /var/log/musicd/access.log",
    "error-log = stderr": "error-log = /var/log/musicd/error.log",
    "#user = musicd": "user = musicd",
    "pid-file = off": "pid-file = /run/musicd/musicd.pid",
}


def make(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args],
                            capture_output=True, text=True, timeout=MAKE_TIMEOUT, env=env)
    assert result.returncode == 0, f"make {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def files_under(root):
    """{relative path: octal mode} of every file and symlink under root."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            found[os.path.relpath(path, root)] = oct(os.lstat(path).st_mode & 0o7777)
    return found


def layout(prefix, sysconfdir, unitdir=None, sbindir=None):
    """The files make install puts under DESTDIR for this layout, with their modes."""
    p = prefix.lstrip("/")
    etc = sysconfdir.lstrip("/")
    return {
        f"{(sbindir or prefix + '/sbin').lstrip('/')}/musicd": "0o755",
        f"{p}/bin/musicd-import": "0o755",
        f"{etc}/musicd/musicd.conf": "0o644",
        f"{etc}/logrotate.d/musicd": "0o644",
        f"{(unitdir or prefix + '/lib/systemd/system').lstrip('/')}/musicd.service": "0o644",
        f"{(unitdir or prefix + '/lib/systemd/system').lstrip('/')}/musicd@.service": "0o644",
        f"{p}/lib/tmpfiles.d/musicd.conf": "0o644",
        f"{p}/lib/sysusers.d/musicd.conf": "0o644",
        f"{p}/share/man/man8/musicd.8": "0o644",
        f"{p}/share/man/man1/musicd-import.1": "0o644",
        **{f"{p}/share/doc/musicd/examples/{name}": "0o644" for name in EXAMPLES},
        **{f"{p}/share/musicd/{path}": "0o644" for path in MONITORING_FILES},
    }


def exec_start(unit_text):
    """The unit's ExecStart= command line, as words."""
    lines = [line for line in unit_text.splitlines() if line.startswith("ExecStart=")]
    assert len(lines) == 1, unit_text
    return lines[0][len("ExecStart="):].split()


def changed_lines(shipped, installed):
    """{shipped line: installed line} where two texts of as many lines differ."""
    shipped, installed = shipped.splitlines(), installed.splitlines()
    assert len(shipped) == len(installed)
    return {a: b for a, b in zip(shipped, installed) if a != b}


def groff_warnings(page):
    """groff's complaints (stderr) about a man page, with every warning enabled."""
    result = subprocess.run(["groff", "-man", "-ww", "-z", str(page)], capture_output=True,
                            text=True, timeout=RUN_TIMEOUT)
    return result.returncode, result.stderr


def rendered(page):
    """The man page as plain text, lines too long to wrap and no hyphenation (so every option
    stays whole)."""
    result = subprocess.run(["groff", "-man", "-Tascii", "-rLL=500n", "-rHY=0", "-P-cbou",
                             str(page)], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def check_install(destdir, prefix, sysconfdir, *variables, unitdir=None, sbindir=None):
    """Installs into destdir, checks every file; returns the expected layout."""
    make("-s", "install", f"DESTDIR={destdir}", f"PREFIX={prefix}", *variables)
    expected = layout(prefix, sysconfdir, unitdir, sbindir)
    assert files_under(destdir) == expected
    root = destdir
    binary = root / next(path for path in expected if path.endswith("/musicd"))
    installed_path = "/" + os.path.relpath(binary, root)

    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             timeout=RUN_TIMEOUT, env=musicd_env())
    assert (version.returncode, version.stdout) == (0, f"musicd {VERSION}\n"), version
    importer = root / prefix.lstrip("/") / "bin" / "musicd-import"
    version = subprocess.run([str(importer), "--version"], capture_output=True, text=True,
                             timeout=RUN_TIMEOUT)
    assert (version.returncode, version.stdout) == (0, f"musicd-import {VERSION}\n"), version

    etc = root / sysconfdir.lstrip("/")
    config = f"{sysconfdir}/musicd/musicd.conf"
    assert changed_lines((REPO / "config" / "musicd.conf").read_text(),
                         (etc / "musicd" / "musicd.conf").read_text()) == LAYOUT_LINES
    # The logrotate file signals only a process running the installed binary.
    signal_line = ("\t\t\tstart-stop-daemon --stop --signal USR1 --pidfile /run/musicd/musicd.pid "
                   "--exec {}")
    assert changed_lines((REPO / "config" / "musicd.logrotate").read_text(),
                         (etc / "logrotate.d" / "musicd").read_text()) == (
        {} if installed_path == "/usr/sbin/musicd"
        else {signal_line.format("/usr/sbin/musicd"): signal_line.format(installed_path)})
    examples = root / prefix.lstrip("/") / "share" / "doc" / "musicd" / "examples"
    for name in EXAMPLES:
        assert (examples / name).read_bytes() == (REPO / "config" / name).read_bytes(), name
    lib = root / prefix.lstrip("/") / "lib"
    assert (lib / "tmpfiles.d" / "musicd.conf").read_bytes() == \
        (REPO / "config" / "musicd.tmpfiles").read_bytes()
    assert (lib / "sysusers.d" / "musicd.conf").read_bytes() == \
        (REPO / "config" / "musicd.sysusers").read_bytes()
    share = root / prefix.lstrip("/") / "share" / "musicd"
    for path in MONITORING_FILES:
        assert (share / path).read_bytes() == (REPO / "config" / path).read_bytes(), path

    # Only ExecStart differs from the repository's unit (written for PREFIX=/usr), and the
    # template differs from the unit only in its Description.
    unit = next(root / path for path in expected if path.endswith("/musicd.service"))
    shipped = (REPO / "config" / "musicd.service").read_text()
    assert exec_start(unit.read_text()) == [installed_path, "--config", config]
    assert set(changed_lines(shipped, unit.read_text())) <= {
        "ExecStart=/usr/sbin/musicd --config /etc/musicd/musicd.conf"}
    template = unit.parent / "musicd@.service"
    assert [line.split(",")[0] for line in changed_lines(unit.read_text(),
                                                        template.read_text()).values()] == \
        ["Description=musicd (instance %i)"]

    page = root / prefix.lstrip("/") / "share" / "man" / "man8" / "musicd.8"
    text = rendered(page)
    assert installed_path in text and config in text, text
    assert groff_warnings(page) == (0, "")
    # The repository's paths (written for PREFIX=/usr) are all rewritten.
    if installed_path != "/usr/sbin/musicd":
        assert "/usr/sbin/musicd" not in text
    assert f"{prefix}/share/musicd/prometheus/musicd.rules.yml" in text, text
    if prefix != "/usr":
        assert "/usr/share/musicd" not in text
    if sysconfdir != "/etc":
        assert not re.search(r"(?<![\w/])/etc/(musicd|logrotate\.d)/", text), text
    return expected


@pytest.mark.no_c_binary  # installs and runs build/musicd, whatever MUSICD_BIN is
@pytest.mark.parametrize("prefix, sysconfdir", [("/usr", "/etc"), ("/opt/x", "/opt/x/etc"),
                                                ("/usr/local", "/usr/local/etc")])
def test_install_then_uninstall_leaves_nothing(tmp_path, prefix, sysconfdir):
    destdir = tmp_path / "stage"
    check_install(destdir, prefix, sysconfdir)
    make("-s", "uninstall", f"DESTDIR={destdir}", f"PREFIX={prefix}")
    assert files_under(destdir) == {}
    # musicd's own configuration and data directories go too; the standard ones stay.
    assert not (destdir / sysconfdir.lstrip("/") / "musicd").exists()
    assert not (destdir / prefix.lstrip("/") / "share" / "musicd").exists()
    assert (destdir / prefix.lstrip("/") / "sbin").is_dir()


@pytest.mark.no_c_binary  # installs build/musicd, whatever MUSICD_BIN is
@pytest.mark.parametrize("prefix, unread", [
    ("/usr", []),
    ("/usr/local", ["/usr/local/etc/logrotate.d"]),
    ("/opt/x", ["/opt/x/lib/systemd/system", "/opt/x/lib/tmpfiles.d", "/opt/x/lib/sysusers.d",
                "/opt/x/etc/logrotate.d"])])
def test_install_says_where_the_system_would_not_read_a_file(tmp_path, prefix, unread):
    destdir = tmp_path / "stage"
    result = make("-s", "install", f"DESTDIR={destdir}", f"PREFIX={prefix}")
    notes = re.findall(r"^install: (\S+)/[^/\s]+: \S+ reads only ", result.stdout, re.MULTILINE)
    assert notes == [f"{destdir}{directory}" for directory in unread], result.stdout
    if unread:
        assert "logrotate reads only /etc/logrotate.d (give LOGROTATEDIR=/etc/logrotate.d)" in \
            result.stdout


@pytest.mark.no_c_binary
def test_installed_unit_passes_systemd_analyze_verify(tmp_path):
    """A real install (no DESTDIR) into a prefix of its own, so that the unit's ExecStart names
    the installed binary and its Documentation= the installed man page."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing: scripts/setup/install-deps installs it (systemd)")
    prefix = tmp_path / "prefix"
    result = make("-s", "install", f"PREFIX={prefix}")
    assert "systemd-sysusers" in result.stdout and "systemctl enable --now musicd" in result.stdout
    for name in ("musicd.service", "musicd@.service"):
        unit = prefix / "lib" / "systemd" / "system" / name
        verify = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                                timeout=60, stdin=subprocess.DEVNULL,
                                env=dict(os.environ, MANPATH=str(prefix / "share" / "man")))
        assert verify.returncode == 0 and "musicd" not in verify.stdout + verify.stderr, verify
    make("-s", "uninstall", f"PREFIX={prefix}")
    assert files_under(prefix) == {}


@pytest.mark.no_c_binary
def test_systemd_analyze_verify_of_the_installed_unit_can_fail(tmp_path):
    """The check above can fail: the same install without its man page is caught."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing: scripts/setup/install-deps installs it (systemd)")
    prefix = tmp_path / "prefix"
    make("-s", "install", f"PREFIX={prefix}")
    (prefix / "share" / "man" / "man8" / "musicd.8").unlink()
    verify = subprocess.run([analyze, "verify", str(prefix / "lib/systemd/system/musicd.service")],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                            env=dict(os.environ, MANPATH=str(prefix / "share" / "man")))
    assert verify.returncode != 0 and "musicd(8)" in verify.stderr, verify


# -- the installed configuration, read without --config ------------------------------------------

def adapt_installed_configuration(conf, tmp_path, port):
    """The installed musicd.conf with the layout's lines pointed into tmp_path, as an operator
    edits it (no user musicd, no /var/log/musicd here), listening on port; returns the media
    root."""
    media = tmp_path / "music"
    media.mkdir(exist_ok=True)
    edits = {"media-root = /var/lib/musicd/music": f"media-root = {media}",
             "access-log = /var/log/musicd/access.log": f"access-log = {tmp_path}/access.log",
             "error-log = /var/log/musicd/error.log": f"error-log = {tmp_path}/error.log",
             "user = musicd": "#user = musicd",
             "pid-file = /run/musicd/musicd.pid": "pid-file = off",
             "listen = 127.0.0.1:23001": f"listen = 127.0.0.1:{port}",
             "metrics-listen = 127.0.0.1:23002": "metrics-listen = off"}
    text = conf.read_text()
    for shipped, edited in edits.items():
        assert f"\n{shipped}\n" in text, shipped
        text = text.replace(f"\n{shipped}\n", f"\n{edited}\n")
    # A database nothing answers on: musicd starts all the same.
    conf.write_text(text + "mongodb-uri = mongodb://127.0.0.1:1/\n")
    return media


def run_installed(binary, *args):
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=musicd_env())


NOT_CONTACTED = "database not contacted (--check-database reaches it)\n"


@pytest.mark.no_c_binary  # installs and runs build/musicd, whatever MUSICD_BIN is
def test_the_installed_musicd_reads_the_installed_configuration_without_config(tmp_path):
    """(fails before: without --config musicd read no file, and -t said "no media root")"""
    prefix = tmp_path / "prefix"
    make("-s", "install", f"PREFIX={prefix}")
    binary = prefix / "sbin" / "musicd"
    conf = prefix / "etc" / "musicd" / "musicd.conf"
    adapt_installed_configuration(conf, tmp_path, 1)
    help_text = run_installed(binary, "--help").stdout
    assert f"Without --config, musicd reads {conf} if it exists." in help_text, help_text

    check = run_installed(binary, "-t")
    assert (check.returncode, check.stdout) == (0, f"configuration ok (read {conf})\n" +
                                                NOT_CONTACTED), check
    # --config off reads none, so the media root is missing; --config FILE reads FILE.
    off = run_installed(binary, "-t", "--config", "off")
    assert off.returncode == 2 and "no media root" in off.stderr, off
    other = tmp_path / "other.conf"
    other.write_text(f"media-root = {tmp_path}\n")
    given = run_installed(binary, "-t", "--config", other)
    assert given.stdout == f"configuration ok (read {other})\n" + NOT_CONTACTED, given
    # Without the installed file, musicd runs on its flags and says where it looked.
    conf.unlink()
    missing = run_installed(binary, "-t", "--media-root", tmp_path)
    assert missing.stdout == (f"configuration ok (no configuration file: {conf} does not "
                              "exist)\n" + NOT_CONTACTED), missing
    make("-s", "uninstall", f"PREFIX={prefix}")
    assert files_under(prefix) == {}


@pytest.mark.no_c_binary  # installs and runs build/musicd-import, whatever MUSICD_IMPORT_BIN is
def test_the_installed_musicd_import_reads_the_installed_configuration_without_config(
        tmp_path, mongo, db, media):
    """(fails before: without --config musicd-import read no file and wrote to its defaults, not
    where the installed musicd reads)"""
    prefix = tmp_path / "prefix"
    make("-s", "install", f"PREFIX={prefix}")
    binary = prefix / "bin" / "musicd-import"
    conf = prefix / "etc" / "musicd" / "musicd.conf"
    assert conf.exists()
    help_text = run_installed(binary, "--help").stdout
    assert f"Without --config, musicd-import reads musicd's {conf} if it exists." in help_text
    music = tmp_path / "music"
    music.mkdir()
    shutil.copyfile(media.short, music / "a.mp3")
    conf.write_text(f"media-root = {music}\nmongodb-uri = {mongo.uri}\ndatabase = {db.name}\n"
                    "collection = installed\n")
    result = run_installed(binary, music)
    assert result.returncode == 0, result
    tracks = db.client[db.name]
    assert [d["path"] for d in tracks["installed"].find({})] == [str(music / "a.mp3")]
    # --config off reads none: the flags alone, and musicd's default collection.
    off = run_installed(binary, "--config", "off", "--mongodb-uri", mongo.uri, "--database",
                        db.name, music)
    assert off.returncode == 0, off
    assert [d["path"] for d in tracks["tracks"].find({})] == [str(music / "a.mp3")]
    make("-s", "uninstall", f"PREFIX={prefix}")


@pytest.mark.no_c_binary  # installs and runs build/musicd, whatever MUSICD_BIN is
def test_sighup_re_reads_the_installed_configuration_musicd_started_with(tmp_path):
    prefix = tmp_path / "prefix"
    make("-s", "install", f"PREFIX={prefix}")
    conf = prefix / "etc" / "musicd" / "musicd.conf"
    port = free_port()
    adapt_installed_configuration(conf, tmp_path, port)
    error_log = tmp_path / "error.log"
    proc = subprocess.Popen([str(prefix / "sbin" / "musicd")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=musicd_env())
    try:
        def logged(text):
            return wait_until(lambda: [line for line in read_text(error_log).splitlines()
                                       if text in line], scaled(10), message=repr(text))
        logged(f"listening on 127.0.0.1:{port}")
        conf.write_text(conf.read_text().replace("\ncache-control = public, max-age=86400\n",
                                                 "\ncache-control = public, max-age=60\n"))
        proc.send_signal(signal.SIGHUP)
        assert logged(f"SIGHUP: settings reloaded from {conf}")[0].endswith(
            "changed cache-control")
        # The file it started with is the one it reads: gone, nothing changes.
        conf.rename(tmp_path / "moved.conf")
        proc.send_signal(signal.SIGHUP)
        logged(f"SIGHUP: config file {conf}: No such file or directory; settings unchanged")
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(scaled(20)) == 0
    make("-s", "uninstall", f"PREFIX={prefix}")


@pytest.mark.no_c_binary  # installs and runs build/musicd, whatever MUSICD_BIN is
def test_install_twice_and_uninstall_twice(tmp_path):
    destdir = tmp_path / "stage"
    check_install(destdir, "/usr", "/etc")
    check_install(destdir, "/usr", "/etc")
    make("-s", "uninstall", f"DESTDIR={destdir}", "PREFIX=/usr")
    make("-s", "uninstall", f"DESTDIR={destdir}", "PREFIX=/usr")
    assert files_under(destdir) == {}


@pytest.mark.no_c_binary  # installs and runs build/musicd, whatever MUSICD_BIN is
def test_directory_variables_are_honoured(tmp_path):
    destdir = tmp_path / "stage"
    check_install(destdir, "/usr", "/srv/conf", "sbindir=/usr/bin", "SYSCONFDIR=/srv/conf",
                  "SYSTEMDUNITDIR=/etc/systemd/system",
                  unitdir="/etc/systemd/system", sbindir="/usr/bin")
    make("-s", "uninstall", f"DESTDIR={destdir}", "PREFIX=/usr", "sbindir=/usr/bin",
         "SYSCONFDIR=/srv/conf", "SYSTEMDUNITDIR=/etc/systemd/system")
    assert files_under(destdir) == {}


@pytest.mark.no_c_binary  # installs and runs build/musicd, whatever MUSICD_BIN is
def test_an_edited_configuration_survives_install_and_uninstall(tmp_path):
    destdir = tmp_path / "stage"
    conf = destdir / "etc" / "musicd" / "musicd.conf"
    conf.parent.mkdir(parents=True)
    edited = "# the operator's\nmedia-root = /srv/music\n"
    conf.write_text(edited)
    conf.chmod(0o600)

    result = make("-s", "install", f"DESTDIR={destdir}", "PREFIX=/usr")
    assert f"{conf} exists, kept" in result.stdout
    assert conf.read_text() == edited
    assert oct(conf.stat().st_mode & 0o777) == "0o600"
    assert set(files_under(destdir)) == set(layout("/usr", "/etc"))

    result = make("-s", "uninstall", f"DESTDIR={destdir}", "PREFIX=/usr")
    assert f"{conf} was edited, kept" in result.stdout
    assert files_under(destdir) == {"etc/musicd/musicd.conf": "0o600"}
    assert conf.read_text() == edited


@pytest.mark.no_c_binary  # installs and runs build/musicd, whatever MUSICD_BIN is
def test_a_shipped_configuration_edited_after_install_is_kept(tmp_path):
    destdir = tmp_path / "stage"
    check_install(destdir, "/usr", "/etc")
    conf = destdir / "etc" / "musicd" / "musicd.conf"
    shipped = conf.read_text()
    conf.write_text(shipped.replace("media-root = /var/lib/musicd/music", "media-root = /srv/m"))
    assert conf.read_text() != shipped
    make("-s", "uninstall", f"DESTDIR={destdir}", "PREFIX=/usr")
    assert list(files_under(destdir)) == ["etc/musicd/musicd.conf"]



@pytest.mark.no_c_binary
@pytest.mark.skipif(not (shutil.which("varnishd") or shutil.which("/usr/sbin/varnishd")),
                    reason="varnishd is needed (scripts/setup/install-deps)")
@pytest.mark.parametrize("vcl", ["varnish-musicd.vcl", "varnish-musicd-cluster.vcl"])
def test_the_installed_vcls_compile_with_every_opt_in_block_on(tmp_path, vcl):
    """As "Opt-in blocks of the VCLs" in docs/deployment.md has an operator do it, from the
    package's layout: the VCL and its opt-in files copied side by side out of the installed
    examples, each block's one include line uncommented."""
    destdir = tmp_path / "stage"
    make("-s", "install", f"DESTDIR={destdir}", "PREFIX=/usr")
    examples = destdir / "usr" / "share" / "doc" / "musicd" / "examples"
    etc_varnish = tmp_path / "etc" / "varnish"
    etc_varnish.mkdir(parents=True)
    for name in INCLUDE_LINE.findall((examples / vcl).read_text()):
        shutil.copy(examples / name, etc_varnish / name)
    text = (examples / vcl).read_text()
    for name in documented_block_lines():
        old, new = block_on(name)
        assert text.count(old) == 1, name
        text = text.replace(old, new)
    (etc_varnish / "musicd.vcl").write_text(text)
    status, errors = vcl_compiles(etc_varnish / "musicd.vcl")
    assert status == 0, errors
    # ... and the opt-in files are what made it compile: without one, it does not.
    (etc_varnish / "varnish-musicd-cors.vcl").unlink()
    status, errors = vcl_compiles(etc_varnish / "musicd.vcl")
    assert status != 0 and "varnish-musicd-cors.vcl" in errors, errors

# -- the man page -----------------------------------------------------------------------------

def help_options():
    """The long options in --help's option column."""
    result = subprocess.run([str(require_binary()), "--help"], capture_output=True, text=True,
                            timeout=RUN_TIMEOUT, env=musicd_env())
    assert result.returncode == 0, result
    options = set(re.findall(r"^ +(--[a-z][a-z0-9-]*)", result.stdout, re.MULTILINE))
    assert len(options) > 30, result.stdout
    return options


def man_options():
    """Every long option the rendered man page names, anywhere."""
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rendered(MAN_PAGE)))


@pytest.mark.no_c_binary
def test_man_page_renders_without_a_warning():
    assert groff_warnings(MAN_PAGE) == (0, "")


@pytest.mark.no_c_binary
def test_groff_warnings_are_seen(tmp_path):
    """The check above can fail: the page with an undefined macro in it is caught."""
    broken = tmp_path / "musicd.8"
    broken.write_text(MAN_PAGE.read_text().replace(".SH SIGNALS", ".SH SIGNALS\n.XX"))
    status, warnings = groff_warnings(broken)
    assert "XX" in warnings, warnings


def test_man_page_names_every_option_of_help():
    missing = help_options() - man_options()
    assert not missing, f"in --help but not in {MAN_PAGE.name}: {sorted(missing)}"


def test_man_page_names_no_option_help_does_not_list():
    extra = man_options() - help_options()
    assert not extra, f"in {MAN_PAGE.name} but not in --help: {sorted(extra)}"


@pytest.mark.no_c_binary
def test_man_page_has_the_sections_an_operator_looks_for():
    text = rendered(MAN_PAGE)
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS", "FILES",
                    "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        assert re.search(rf"^{section}$", text, re.MULTILINE), f"no {section} section"
    for signal in ("SIGTERM", "SIGINT", "SIGUSR1", "SIGHUP"):
        assert signal in text
    assert "MONGODB_URI" in text
    statuses = text.split("EXIT STATUS", 1)[1].split("EXAMPLES", 1)[0]
    assert re.findall(r"^ {7}(\d)\b", statuses, re.MULTILINE) == ["0", "1", "2"], statuses
