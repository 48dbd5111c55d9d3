"""scripts/setup/install-deps waits for another apt to finish (issue 28).

Run against a dpkg database and apt configuration of the test's own (APT_CONFIG, DPKG_ADMINDIR),
never the machine's: the packages of the build's and the deb group are "installed" there but
lintian, which a repository of the test's own (file:, trusted) serves as a small package made with
dpkg-deb, and apt-get and dpkg install it for real into a directory of the test. Another apt is a
process holding the fcntl locks apt and dpkg take (dpkg's lock-frontend and lock for an install,
the lists' lock for an update) until the test lets it go. The machine's own locks, lists and
packages are never touched.
"""

import hashlib
import os
import re
import select
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from support import REPO

pytestmark = [
    pytest.mark.no_c_binary,
    pytest.mark.skipif(os.geteuid() != 0, reason="install-deps runs as root"),
    pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("dpkg-deb")),
                       reason="not a Debian machine"),
]

INSTALL_DEPS = REPO / "scripts" / "setup" / "install-deps"
RUN_TIMEOUT = 120
HOLD_TIMEOUT = 60  # the holder lets go by itself after this, whatever the test does
WAITING = "install-deps: waiting for another apt to finish"
MISSING = "lintian"

# Holds the fcntl locks on the files named, as apt and dpkg do, until stdin closes.
HOLDER = """
import fcntl, os, select, sys
for path in sys.argv[2:]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[1]))
"""


def group_packages(*groups):
    """The packages install-deps lists for its groups (BUILD_PACKAGES='...', ...)."""
    text = INSTALL_DEPS.read_text()
    names = []
    for group in groups:
        names += re.search(rf"^{group}_PACKAGES='([^']*)'", text, re.M).group(1).split()
    return names


def status_entry(package):
    return (f"Package: {package}\nStatus: install ok installed\nVersion: 1\nArchitecture: all\n"
            f"Maintainer: musicd tests <tests@invalid>\nDescription: {package}\n\n")


class PrivateApt:
    """A dpkg database, package lists, cache and repository of the test's own."""

    def __init__(self, root):
        self.root = root
        for d in ("repo", "package/DEBIAN", "dpkg/updates", "dpkg/info", "state/lists/partial",
                  "cache/archives/partial", "log", "install", "empty"):
            (root / d).mkdir(parents=True)
        self.admin = root / "dpkg"
        self.lists = root / "state" / "lists"
        installed = [p for p in group_packages("BUILD", "DEB") if p != MISSING]
        (self.admin / "status").write_text("".join(status_entry(p) for p in installed))
        (self.admin / "available").write_text("")
        self._repository()
        (root / "apt.conf").write_text(textwrap.dedent(f"""\
            Dir::Etc::Parts "{root}/empty/";
            Dir::Etc::main "/dev/null";
            Dir::Etc::SourceList "{root}/sources.list";
            Dir::Etc::SourceParts "{root}/empty/";
            Dir::Etc::Preferences "/dev/null";
            Dir::Etc::PreferencesParts "{root}/empty/";
            Dir::State "{root}/state/";
            Dir::State::status "{self.admin}/status";
            Dir::Cache "{root}/cache/";
            Dir::Log "{root}/log/";
            DPkg::Options {{ "--instdir={root}/install"; "--admindir={self.admin}"; }};
            Acquire::Languages "none";
            """))
        self.env = dict(os.environ, APT_CONFIG=str(root / "apt.conf"),
                        DPKG_ADMINDIR=str(self.admin))

    def _repository(self):
        package = self.root / "package"
        (package / "DEBIAN" / "control").write_text(
            f"Package: {MISSING}\nVersion: 99:1\nArchitecture: all\n"
            f"Maintainer: musicd tests <tests@invalid>\nDescription: stands in for {MISSING}\n")
        deb = self.root / "repo" / f"{MISSING}.deb"
        subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(package), str(deb)],
                       check=True, capture_output=True, timeout=RUN_TIMEOUT)
        data = deb.read_bytes()
        packages = ((package / "DEBIAN" / "control").read_text()
                    + f"Filename: ./{deb.name}\nSize: {len(data)}\n"
                    + f"SHA256: {hashlib.sha256(data).hexdigest()}\n\n").encode()
        (self.root / "repo" / "Packages").write_bytes(packages)
        (self.root / "repo" / "Release").write_text(
            "Origin: musicd tests\nDate: Thu, 01 Jan 2026 00:00:00 UTC\nSHA256:\n"
            f" {hashlib.sha256(packages).hexdigest()} {len(packages)} Packages\n")
        (self.root / "sources.list").write_text(f"deb [trusted=yes] file:{self.root}/repo ./\n")

    def installed(self, package):
        out = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status} ${Version}", package],
                             capture_output=True, text=True, env=self.env, timeout=RUN_TIMEOUT)
        return out.stdout

    def install_deps(self, *groups):
        return subprocess.Popen([str(INSTALL_DEPS), *groups], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env)


@pytest.fixture
def apt(tmp_path):
    return PrivateApt(tmp_path / "apt")


class Holder:
    """Another apt: holds the locks on paths until released (or HOLD_TIMEOUT)."""

    def __init__(self, paths):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(HOLD_TIMEOUT)]
                                     + [str(p) for p in paths],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline() == "held\n"

    def release(self):
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(timeout=RUN_TIMEOUT)


def read_line(proc, timeout):
    """The next line of proc's stdout, or "" at its end or after timeout seconds."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else ""


@pytest.mark.parametrize("locks", [["lock-frontend", "lock"], ["lists"]],
                         ids=["dpkg-locks-of-an-install", "lists-lock-of-an-update"])
def test_install_deps_waits_for_another_apt_then_installs(apt, locks):
    paths = [apt.lists / "lock" if name == "lists" else apt.admin / name for name in locks]
    holder = Holder(paths)
    deps = None
    try:
        deps = apt.install_deps("deb")
        lines = [read_line(deps, RUN_TIMEOUT), read_line(deps, RUN_TIMEOUT)]
        assert lines == [f"install-deps: installing {MISSING}\n", WAITING + "\n"], \
            (lines, deps.poll(), deps.stderr.read() if deps.poll() is not None else "")
        # It cannot be done while the locks are held: it waits, it has not failed.
        time.sleep(1)
        assert deps.poll() is None
        assert apt.installed(MISSING) == ""
        holder.release()
        out, err = deps.communicate(timeout=RUN_TIMEOUT)
    finally:
        holder.release()
        if deps is not None and deps.poll() is None:
            deps.kill()
            deps.wait()
    assert deps.returncode == 0, (out, err)
    assert WAITING not in out and err == "", (out, err)  # said once, above
    assert apt.installed(MISSING) == "installed 99:1"


def test_install_deps_says_nothing_of_waiting_when_no_apt_runs(apt):
    deps = apt.install_deps("deb")
    out, err = deps.communicate(timeout=RUN_TIMEOUT)
    assert (deps.returncode, out, err) == (0, f"install-deps: installing {MISSING}\n", "")
    assert apt.installed(MISSING) == "installed 99:1"


def test_install_deps_shows_apts_output_when_it_fails(apt):
    status = apt.admin / "status"
    status.write_text(status.read_text().replace(status_entry("debhelper"), ""))
    deps = apt.install_deps("deb")
    out, err = deps.communicate(timeout=RUN_TIMEOUT)
    assert deps.returncode == 1, (out, err)
    assert "Unable to locate package debhelper" in err, err
    log = re.search(r"^install-deps: apt-get install failed "
                    r"\(log: (/tmp/install-deps\.\w+\.log)\)$", err, re.M)
    assert log, err
    os.unlink(log.group(1))
