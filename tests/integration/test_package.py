"""make deb: the Debian package, built once for this module (into a directory of its own) and
read as dpkg reads it: its name and version, lintian's verdict, every file it installs with its
mode, its conffiles, the installed unit and configuration (the same layout as make install's),
dependencies that cover every library the binaries link (dpkg-shlibdeps', not a list written by
hand), maintainer scripts that make the user before the directories and remove the logs on
purge, a hardened binary that runs; and a build that leaves nothing in the tree.
Installing it on a fresh bookworm is scripts/tests/check-fresh-machine's part."""

import os
import re
import shutil
import subprocess

import pytest

from musicd_process import musicd_env
from support import REPO
from test_install import EXAMPLES, adapt_installed_configuration

# What BENCHMARKS.md links to (debian/musicd.docs ships the folder whole).
BENCHMARK_FILES = sorted(p.name for p in (REPO / "docs" / "benchmarks").iterdir() if p.is_file())

pytestmark = [pytest.mark.skipif(
    not (shutil.which("dpkg-buildpackage") and shutil.which("dh") and shutil.which("lintian")),
    reason="dpkg-dev, debhelper and lintian are needed (scripts/setup/install-deps test)"),
    pytest.mark.no_c_binary,  # it builds and runs the package's own binaries
    # One xdist worker runs the whole module, so the package (a whole build of the tree) is
    # built once, not once for each worker that draws one of its tests.
    pytest.mark.xdist_group("package")]

BUILD_TIMEOUT = 900   # a whole build of both binaries, then lintian, on a loaded machine
RUN_TIMEOUT = 30
VERSION = (REPO / "VERSION").read_text().strip()
ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                      check=True).stdout.strip()


# What dpkg-buildpackage run in the tree itself would leave there.
BUILD_LEFTOVERS = ["debian/musicd", "debian/files", "debian/.debhelper", "debian/musicd.substvars",
                   "debian/debhelper-build-stamp", "debian/musicd.postinst.debhelper"]


def git_status():
    """What git sees in the tree, or None outside a git checkout (a copy made by git archive,
    as scripts/tests/check-fresh-machine's)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    return subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--ignored=no"],
                          capture_output=True, text=True, check=True).stdout


class Package:
    def __init__(self, directory, result):
        self.directory = directory
        self.result = result
        self.deb = directory / f"musicd_{VERSION}_{ARCH}.deb"

    def field(self, name):
        return subprocess.run(["dpkg-deb", "--field", str(self.deb), name], capture_output=True,
                              text=True, check=True).stdout.strip()

    def contents(self):
        """{path: (type and mode as ls writes it, owner)} of every entry of the data archive."""
        listing = subprocess.run(["dpkg-deb", "--contents", str(self.deb)], capture_output=True,
                                 text=True, check=True).stdout
        entries = {}
        for line in listing.splitlines():
            mode, owner, _, _, _, path = line.split(None, 5)
            entries[path.split(" -> ")[0].lstrip(".").rstrip("/") or "/"] = (mode, owner)
        return entries

    def control(self, name):
        out = self.directory / "control"
        if not out.exists():
            subprocess.run(["dpkg-deb", "--control", str(self.deb), str(out)], check=True)
        path = out / name
        return path.read_text() if path.exists() else None

    def extracted(self):
        out = self.directory / "root"
        if not out.exists():
            subprocess.run(["dpkg-deb", "--extract", str(self.deb), str(out)], check=True)
        return out


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    directory = tmp_path_factory.mktemp("deb")
    before = git_status()
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "-s", "deb",
                             f"DEBDIR={directory}"], capture_output=True, text=True,
                            timeout=BUILD_TIMEOUT, env=env)
    assert result.returncode == 0, f"make deb:\n{result.stdout}\n{result.stderr}"
    built = Package(directory, result)
    built.status_before, built.status_after = before, git_status()
    return built


def test_make_deb_leaves_the_package_it_names_and_nothing_in_the_tree(package):
    assert package.result.stdout.splitlines()[-1] == str(package.deb)
    assert package.deb.is_file()
    assert package.status_after == package.status_before
    assert [path for path in BUILD_LEFTOVERS if (REPO / path).exists()] == []


def test_the_package_is_musicd_at_the_tree_s_version(package):
    assert package.field("Package") == "musicd"
    assert package.field("Version") == VERSION
    assert package.field("Architecture") == ARCH


def test_lintian_reports_no_error_and_no_warning(package):
    log = (package.directory / "lintian.log").read_text()
    assert not re.findall(r"^[EW]: .*$", log, re.MULTILINE), log
    assert not (REPO / "debian" / "musicd.lintian-overrides").exists()


def test_the_package_installs_the_layout_and_nothing_else(package):
    files = {path: mode for path, (mode, _) in package.contents().items()
             if not mode.startswith("d")}
    expected = {
        "/usr/sbin/musicd": "-rwxr-xr-x",
        "/usr/bin/musicd-import": "-rwxr-xr-x",
        "/etc/musicd/musicd.conf": "-rw-r--r--",
        "/etc/logrotate.d/musicd": "-rw-r--r--",
        "/lib/systemd/system/musicd.service": "-rw-r--r--",
        "/lib/systemd/system/musicd@.service": "-rw-r--r--",
        "/usr/lib/sysusers.d/musicd.conf": "-rw-r--r--",
        "/usr/lib/tmpfiles.d/musicd.conf": "-rw-r--r--",
        "/usr/share/man/man8/musicd.8.gz": "-rw-r--r--",
        "/usr/share/man/man1/musicd-import.1.gz": "-rw-r--r--",
        "/usr/share/doc/musicd/copyright": "-rw-r--r--",
        "/usr/share/doc/musicd/changelog.gz": "-rw-r--r--",
        "/usr/share/musicd/prometheus/musicd.rules.yml": "-rw-r--r--",
        "/usr/share/musicd/prometheus/musicd.rules.test.yml": "-rw-r--r--",
        "/usr/share/musicd/grafana/musicd-dashboard.json": "-rw-r--r--",
    }
    # The README and docs/ (debian/musicd.docs): dh_compress compresses those over 4 KiB.
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        name = f"{doc.name}.gz" if doc.stat().st_size > 4096 else doc.name
        expected[f"/usr/share/doc/musicd/{name}"] = "-rw-r--r--"
    expected.update({f"/usr/share/doc/musicd/examples/{name}": "-rw-r--r--" for name in EXAMPLES})
    expected.update({f"/usr/share/doc/musicd/benchmarks/{name}": "-rw-r--r--"
                     for name in BENCHMARK_FILES})
    assert files == expected
    entries = package.contents()
    for directory in ("/var/log/musicd", "/var/lib/musicd/music"):
        assert entries[directory][0].startswith("d"), directory
    assert {owner for _, owner in entries.values()} == {"root/root"}


def test_the_shipped_examples_are_the_repository_s_files_uncompressed(package):
    examples = package.extracted() / "usr" / "share" / "doc" / "musicd" / "examples"
    for name in EXAMPLES:
        assert (examples / name).read_bytes() == (REPO / "config" / name).read_bytes(), name


def test_the_benchmark_charts_and_results_are_shipped_uncompressed_beside_benchmarks_md(package):
    # BENCHMARKS.md links to them as benchmarks/NAME: compressed, its charts would not show.
    shipped = package.extracted() / "usr" / "share" / "doc" / "musicd" / "benchmarks"
    assert BENCHMARK_FILES and any(name.endswith(".svg") for name in BENCHMARK_FILES)
    for name in BENCHMARK_FILES:
        assert (shipped / name).read_bytes() == (REPO / "docs" / "benchmarks" / name).read_bytes()


def test_the_rules_and_the_dashboard_are_the_repository_s_files(package):
    share = package.extracted() / "usr" / "share" / "musicd"
    for path in ["prometheus/musicd.rules.yml", "prometheus/musicd.rules.test.yml",
                 "grafana/musicd-dashboard.json"]:
        assert (share / path).read_bytes() == (REPO / "config" / path).read_bytes(), path


def test_the_configuration_and_logrotate_file_are_conffiles(package):
    assert sorted(package.control("conffiles").split()) == \
        ["/etc/logrotate.d/musicd", "/etc/musicd/musicd.conf"]


def test_the_unit_and_configuration_are_the_installed_layout(package):
    root = package.extracted()
    unit = (root / "lib" / "systemd" / "system" / "musicd.service").read_text()
    assert re.findall(r"^ExecStart=.*$", unit, re.MULTILINE) == \
        ["ExecStart=/usr/sbin/musicd --config /etc/musicd/musicd.conf"]
    assert unit == (REPO / "config" / "musicd.service").read_text()
    made = subprocess.run(["make", "-s", "-C", str(REPO), "build/install/musicd.conf"],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    conf = (root / "etc" / "musicd" / "musicd.conf").read_text()
    assert conf == (REPO / "build" / "install" / "musicd.conf").read_text()
    for line in ("media-root = /var/lib/musicd/music", "access-log = /var/log/musicd/access.log",
                 "error-log = /var/log/musicd/error.log", "user = musicd",
                 "pid-file = /run/musicd/musicd.pid"):
        assert line in conf.splitlines(), line
    logrotate = (root / "etc" / "logrotate.d" / "musicd").read_text()
    assert logrotate == (REPO / "config" / "musicd.logrotate").read_text()
    assert "/var/log/musicd/access.log /var/log/musicd/error.log {" in logrotate


def test_the_packaged_musicd_checks_the_installed_configuration_given_no_option(package,
                                                                                 tmp_path):
    """`musicd -t` as an operator types it after installing the package reads
    /etc/musicd/musicd.conf. (fails before: it read no file and said "no media root".) It runs
    in a mount namespace of its own whose /etc is an overlay holding the packaged configuration,
    adapted to this machine as an operator would (test_install.py), so the machine's /etc is
    left alone."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a mount namespace")
    root = package.extracted()
    upper, work = tmp_path / "etc", tmp_path / "work"
    (upper / "musicd").mkdir(parents=True)
    work.mkdir()
    conf = upper / "musicd" / "musicd.conf"
    shutil.copy(root / "etc" / "musicd" / "musicd.conf", conf)
    adapt_installed_configuration(conf, tmp_path, 1)
    overlay = f"lowerdir=/etc,upperdir={upper},workdir={work}"
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f'mount -t overlay overlay -o "$1" /etc && exec "$2" -t', "sh", overlay,
         str(root / "usr" / "sbin" / "musicd")],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, env=musicd_env())
    assert (result.returncode, result.stdout) == (
        0, "configuration ok (read /etc/musicd/musicd.conf)\n"
           "database not contacted (--check-database reaches it)\n"), result


def needed_libraries(binary):
    dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                             check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dynamic)


def owning_package(soname):
    """The Debian package holding the library soname on this machine (the build's)."""
    result = subprocess.run(["dpkg-query", "--search", f"*/{soname}"], capture_output=True,
                            text=True, check=True)
    return result.stdout.splitlines()[0].split(":")[0]


def test_dependencies_come_from_dpkg_shlibdeps_and_cover_every_linked_library(package):
    control = (REPO / "debian" / "control").read_text()
    assert re.search(r"^Depends: \$\{misc:Depends\}, \$\{shlibs:Depends\}$", control,
                     re.MULTILINE), control
    root = package.extracted()
    binaries = [root / "usr" / "sbin" / "musicd", root / "usr" / "bin" / "musicd-import"]
    # dpkg-shlibdeps again, on the binaries as packaged: what their libraries' own shlibs and
    # symbols files say they need, which the package must depend on, no more and no less.
    shlibs = subprocess.run(["dpkg-shlibdeps", "-O", *[f"-e{b}" for b in binaries]],
                            capture_output=True, text=True, timeout=RUN_TIMEOUT,
                            cwd=package.directory / f"musicd-{VERSION}")
    assert shlibs.returncode == 0, shlibs.stderr
    expected = shlibs.stdout.strip().split("=", 1)[1]
    clauses = [clause.strip() for clause in package.field("Depends").split(",")]
    assert sorted(c for c in clauses if not c.startswith("systemd")) == \
        sorted(c.strip() for c in expected.split(","))
    assert "systemd | systemd-standalone-sysusers | systemd-sysusers" in clauses  # sysusers.d
    # Every library linked is there: libmongoc, libevent and TagLib among them.
    linked = {owning_package(soname) for b in binaries for soname in needed_libraries(b)}
    assert {"libmongoc-1.0-0", "libevent-2.1-7", "libbson-1.0-0"} <= linked
    assert any(name.startswith("libtag1") for name in linked), linked


def test_postinst_makes_the_user_before_the_directories_and_starts_musicd_last(package):
    postinst = package.control("postinst")
    sysusers = postinst.index("systemd-sysusers")
    tmpfiles = postinst.index("systemd-tmpfiles")
    start = postinst.index("deb-systemd-invoke $_dh_action 'musicd.service'")
    assert sysusers < tmpfiles < start, postinst
    assert "musicd@.service" not in postinst  # the template is started by name, not on install


def test_purge_removes_the_logs_and_the_pid_directory(package):
    postrm = package.control("postrm")
    purge = postrm[postrm.index('if [ "$1" = "purge" ]'):]
    assert "rm -rf /var/log/musicd /run/musicd" in purge.split("fi", 1)[0], postrm


def test_the_packaged_musicd_is_hardened_and_runs(package):
    root = package.extracted()
    binary = root / "usr" / "sbin" / "musicd"
    dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                             check=True).stdout
    assert "BIND_NOW" in dynamic  # hardening=+all: full RELRO
    symbols = subprocess.run(["readelf", "--dyn-syms", "-W", str(binary)], capture_output=True,
                             text=True, check=True).stdout
    assert "__stack_chk_fail" in symbols and re.search(r"__\w+_chk\b", symbols.replace(
        "__stack_chk_fail", "")), "no fortified calls"
    for program, name in ((binary, "musicd"), (root / "usr/bin/musicd-import", "musicd-import")):
        version = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                                 timeout=RUN_TIMEOUT)
        assert (version.returncode, version.stdout) == (0, f"{name} {VERSION}\n"), version
