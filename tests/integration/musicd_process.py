"""Running build/musicd (or $MUSICD_BIN) as a child process for a test.

Musicd is one running server: its stdout, stderr and access log go to files in the test's
directory; start() waits until its port accepts TCP connections. MusicdFactory starts them with
the test's database and media root and, at teardown, stops every one with SIGTERM, requires exit
status 0 and, for a sanitized build (MUSICD_SANITIZED=1), a stderr free of sanitizer reports.
"""

import os
import pathlib
import re
import resource
import signal
import subprocess
import time

from support import (REPO, SANITIZED, SANITIZER_ENV, free_port, listening_sockets, listens_on,
                     port_accepts, read_text, sanitizer_errors, scaled, tcp_table, wait_until)

MUSICD_BIN = pathlib.Path(os.environ.get("MUSICD_BIN", REPO / "build" / "musicd")).resolve()
START_TIMEOUT = 10.0   # until the port accepts connections (scaled for sanitized builds)
STOP_TIMEOUT = 15.0    # from SIGTERM to exit (scaled)
RUN_TIMEOUT = 10.0     # for runs expected to exit by themselves (--help, bad options)
SWEEP_SECONDS = 1.0    # musicd's housekeeping interval (ops/worker.c), which flushes closes


# Without --config, musicd reads the configuration make install put in place
# (/usr/local/etc/musicd/musicd.conf for build/musicd): a machine with musicd installed would
# change what the tests run. Every musicd the suite starts reads none unless its test names one.
NO_CONFIG = ["--config", "off"]
# What -t answers for such a musicd when all is well.
CHECK_OK = ("configuration ok (no configuration file: --config off)\n"
            "database not contacted (--check-database reaches it)\n")


def without_installed_config(args):
    """args, with --config off first unless they name a config file (or --config off), or this
    build reads no installed configuration (an older musicd, run to compare)."""
    if any(str(a).startswith("--config") for a in args) or not reads_installed_config():
        return list(args)
    return NO_CONFIG + list(args)


def musicd_env(extra=None):
    """The environment for musicd: ours without MONGODB_URI, plus sanitizer options."""
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    if SANITIZED:
        env.update(SANITIZER_ENV)
    env.update(extra or {})
    return env


def require_binary():
    if not MUSICD_BIN.exists():
        raise FileNotFoundError(f"{MUSICD_BIN} does not exist: run `make` (or set MUSICD_BIN)")
    return MUSICD_BIN


class Musicd:
    """One musicd process."""

    def __init__(self, args, workdir, port, env=None, access_log=None, descriptor_limit=None,
                 stdout=None, stderr=None):
        self.args = [str(require_binary())] + without_installed_config([str(a) for a in args])
        extra = own_metrics_listener(self.args)
        self.metrics_port = int(extra[1].rpartition(":")[2]) if extra else None
        self.args += extra
        self.descriptor_limit = descriptor_limit
        self.workdir = pathlib.Path(workdir)
        self.port = port
        self.env = musicd_env(env)
        self.access_log = pathlib.Path(access_log) if access_log else None
        self.proc = None
        n = len(list(self.workdir.glob("musicd-*.stderr")))
        self.stdout_path = self.workdir / f"musicd-{n}.stdout"
        self.stderr_path = self.workdir / f"musicd-{n}.stderr"
        self.stdout = stdout  # a descriptor for stdout instead of the file (a pipe a test holds)
        self.stderr = stderr  # the same for stderr (the test copies what it reads to the file)
        self.returncode = None
        self.expect_status = 0  # the exit status teardown requires (tests of failures change it)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, wait=True, timeout=START_TIMEOUT):
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                         stdout=out if self.stdout is None else self.stdout,
                                         stderr=err if self.stderr is None else self.stderr,
                                         env=self.env, cwd=self.workdir,
                                         preexec_fn=descriptor_limit_setter(self.descriptor_limit))
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=START_TIMEOUT):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"musicd exited with status {self.proc.returncode} before accepting "
                    f"connections\nargs: {self.args}\nstderr:\n{self.stderr_text()}")
            # listening itself (not someone else on a port that was free a moment ago); the
            # cheap connect first, the process's sockets once something accepts
            return (port_accepts(self.port) and listens_on(self.pid, self.port)
                    and self.workers_started())

        try:
            wait_until(ready, scaled(timeout), interval=0.02,
                       message=f"musicd to accept connections on port {self.port} with every "
                               "worker started")
        except AssertionError as e:
            raise AssertionError(f"{e}\nstderr:\n{self.stderr_text()}") from None

    def workers_started(self):
        """Whether start-up is over, as far as a test can see: a thread named "worker N" for each
        of its listening sockets on the port. Each worker's socket is opened (and listens) first,
        then the metrics listener, then privileges are dropped (the warnings that go with it),
        then the workers start, each named at once: a port that accepts says none of the rest
        is done. (Where the sockets cannot be asked, the port accepting has to do.)"""
        try:
            listeners = len(listening_sockets(self.pid, self.port))
        except PermissionError:
            return True
        except (ProcessLookupError, FileNotFoundError):
            return False
        return listeners > 0 and sum(1 for name in thread_names(self.pid)
                                     if name.startswith("worker ")) >= listeners

    def wait_all_workers(self, timeout=30.0):
        """Wait for the line musicd logs once every worker has started. wait_ready returns as
        soon as the port accepts, which is when the first of the workers' listening sockets
        listens: the others are still being opened, and the workers started, after it (256 of
        them under ASan take seconds)."""
        self.wait_for_stderr(" workers, ", timeout)

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=STOP_TIMEOUT):
        """Wait for exit (bounded, scaled); return the exit status."""
        self.returncode = self.proc.wait(scaled(timeout))
        return self.returncode

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Signal (SIGTERM) and wait for exit; on timeout kill it and raise."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"musicd did not exit within {scaled(timeout):.0f}s of "
                                 f"{signal.Signals(sig).name}\nstderr:\n{self.stderr_text()}")

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    # -- observation ----------------------------------------------------------------------
    @property
    def pid(self):
        return self.proc.pid

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stderr_text(self):
        """stderr once no more is coming: musicd's error log writer thread writes a line a
        moment after the thread that logged it went on, so it is read until two reads 50 ms
        apart agree (for at most 2 s; at once when musicd has exited). A wait for a line reads
        it as it is (stderr_text_now)."""
        return self.settled(self.stderr_text_now)

    def settled(self, read):
        """read() once two calls 50 ms apart agree (2 s at most): a log musicd's writer threads
        are still writing is read again; once musicd has exited, nothing more is coming."""
        value = read()
        deadline = time.monotonic() + scaled(2)
        while self.running and time.monotonic() < deadline:
            time.sleep(0.05)
            again = read()
            if again == value:
                break
            value = again
        return value

    def stderr_text_now(self):
        return read_text(self.stderr_path)

    def stdout_text(self):
        return read_text(self.stdout_path)

    def access_log_text(self):
        return read_text(self.access_log) if self.access_log else ""

    def access_log_lines(self):
        """The access log's lines once no more is coming: musicd's log writer thread writes a
        line a moment after its answer went out, so the log is read until two reads 50 ms
        apart agree (for at most 2 s). A test that knows how many lines to expect waits for
        them instead (wait_for_access_log)."""
        return self.settled(self.access_log_lines_now)

    def access_log_lines_now(self):
        return [line for line in self.access_log_text().splitlines() if line.strip()]

    def wait_for_access_log(self, count, timeout=5.0):
        """Wait until the access log holds at least count lines; return them."""
        return wait_until(lambda: len(self.access_log_lines_now()) >= count and
                          self.access_log_lines_now(), scaled(timeout),
                          message=f"{count} access log lines")

    def wait_for_stderr(self, text, timeout=5.0):
        """Wait until stderr contains text; return the matching lines."""
        def found():
            lines = [line for line in self.stderr_text_now().splitlines() if text in line]
            return lines
        try:
            return wait_until(found, scaled(timeout), message=f"{text!r} in musicd's stderr")
        except AssertionError as e:
            raise AssertionError(f"{e}\nstderr:\n{self.stderr_text()}") from None

    def fd_count(self):
        """Number of open file descriptors of the process."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def settled_fd_count(self):
        """fd_count once the files musicd let go have been closed: a disk lane closes them in
        batches, and hands on a batch not yet full at its once-a-second sweep
        (media/disk_io.h). A baseline taken before that counts descriptors about to go, and
        could hide as many leaked ones."""
        time.sleep(SWEEP_SECONDS + 0.3)
        return self.fd_count()

    def cpu_seconds(self):
        """User plus system CPU time the process (all its threads) has used so far."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # after "pid (comm)": state is field 3, utime 14 and stime 15 (proc(5))
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_bytes(self):
        """The process's resident set size (VmRSS)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError(f"no VmRSS in /proc/{self.pid}/status")

    def stderr_size(self):
        """Bytes musicd has written to stderr so far."""
        try:
            return os.path.getsize(self.stderr_path)
        except FileNotFoundError:
            return 0

    def fds(self):
        """{fd: target} of the process's descriptors (for assertion messages)."""
        result = {}
        for fd in os.listdir(f"/proc/{self.pid}/fd"):
            try:
                result[int(fd)] = os.readlink(f"/proc/{self.pid}/fd/{fd}")
            except OSError:
                pass
        return result

    def sockets(self):
        """{fd: (local (ip, port), remote (ip, port), TCP state)} of the process's TCP sockets."""
        fds = self.fds()
        table = tcp_table(self.pid, {t[len("socket:["):-1] for t in fds.values()
                                     if t.startswith("socket:[")})
        result = {}
        for fd, target in fds.items():
            if target.startswith("socket:["):
                inode = target[len("socket:["):-1]
                if inode in table:
                    result[fd] = table[inode]
        return result

    def listening_fds(self):
        """fds of the sockets listening on musicd's port (each socket asked, not /proc/net/tcp)."""
        return listening_sockets(self.pid, self.port)

    def client_sockets(self):
        """fds of connections accepted on musicd's port (listening sockets excluded)."""
        return {fd: s for fd, s in self.sockets().items()
                if s[0][1] == self.port and s[2] != "LISTEN"}

    def sanitizer_report(self):
        """The sanitizer errors in stderr (empty unless a sanitized build found some)."""
        return sanitizer_errors(self.stderr_text())


def thread_names(pid):
    """The names (comm) of process pid's threads."""
    names = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return names
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


def own_metrics_listener(args):
    """["--metrics-listen", "127.0.0.1:<reserved port>"] unless args choose the metrics listener
    (or this build has none): musicd's default, 127.0.0.1:23002, would be one port for every
    musicd the suite starts, in every xdist worker and every checkout on the machine."""
    if "metrics-listen" not in supported_options() or any(
            str(a).startswith("--metrics-listen") for a in args):
        return []
    return ["--metrics-listen", f"127.0.0.1:{free_port()}"]


_HELP_TEXT = {}


def help_text():
    """musicd's --help (asked once per binary)."""
    key = str(MUSICD_BIN)
    if key not in _HELP_TEXT:
        p = subprocess.run([str(require_binary()), "--help"], capture_output=True, text=True,
                           env=musicd_env(), timeout=scaled(RUN_TIMEOUT))
        _HELP_TEXT[key] = p.stdout
    return _HELP_TEXT[key]


def supported_options():
    """The long options musicd's --help lists."""
    return set(re.findall(r"--([a-z][a-z0-9-]*)", help_text()))


def reads_installed_config():
    """Whether musicd reads an installed configuration file when given no --config."""
    return "Without --config, musicd reads" in help_text()


# Caches (a later issue) would keep serving what a file or document was a moment ago; tests of
# the file system and database as they are now turn them off, when this build has them.
CACHE_OFF = [("lookup-cache-entries", "0"), ("open-file-cache-entries", "0")]


def cache_off_args():
    options = supported_options()
    args = []
    for name, value in CACHE_OFF:
        if name in options:
            args += [f"--{name}", value]
    return args


def descriptor_limit_setter(limit):
    """A preexec_fn that gives the child RLIMIT_NOFILE limit (soft and hard), or None."""
    if limit is None:
        return None

    def set_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    return set_limit


class RunResult:
    def __init__(self, returncode, stdout, stderr, elapsed):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed

    def __repr__(self):
        return (f"RunResult(status={self.returncode}, stdout={self.stdout[-2000:]!r}, "
                f"stderr={self.stderr[-2000:]!r})")


class MusicdFactory:
    """Starts musicd processes for one test and checks them at teardown."""

    def __init__(self, workdir, mongodb_uri, database, media_root):
        self.workdir = pathlib.Path(workdir)
        self.mongodb_uri = mongodb_uri
        self.database = database
        self.media_root = media_root
        self.started = []
        self.stop_problems = []  # stop_all()'s, for teardown()

    def start(self, media_roots=None, database=None, mongodb_uri=None, extra_args=(),
              env=None, port=None, base_args=True, access_log=None, wait=True, caches=True,
              descriptor_limit=None, stdout=None, stderr=None):
        """Start musicd on a free port. With base_args (the default), pass --listen,
        --mongodb-uri, --database, --media-root (each of media_roots, default the test's
        library root) and --access-log (a file in the test dir, unless access_log is given,
        e.g. "off" or "-"); then extra_args. Without base_args only extra_args are passed
        (give port= to say where it will listen). caches=False turns off the lookup and
        open-file caches if this build has them. descriptor_limit sets RLIMIT_NOFILE (soft and
        hard) in the child, so a test does not depend on the limits of the machine it runs on.
        stdout, stderr: a descriptor for its stdout, its stderr (else a file in the test dir)."""
        port = port or free_port()
        args = []
        log_path = None
        if base_args:
            args += ["--listen", f"127.0.0.1:{port}",
                     "--mongodb-uri", mongodb_uri or self.mongodb_uri,
                     "--database", database or self.database]
            for root in media_roots or [self.media_root]:
                args += ["--media-root", root]
            if access_log is None:
                log_path = self.workdir / f"access-{len(self.started)}.log"
                args += ["--access-log", log_path]
            else:
                args += ["--access-log", access_log]
        if not caches:
            args += cache_off_args()
        args += list(extra_args)
        m = Musicd(args, self.workdir, port, env=env, access_log=log_path,
                   descriptor_limit=descriptor_limit, stdout=stdout, stderr=stderr)
        self.started.append(m)
        return m.start(wait=wait)

    def run(self, args, env=None, timeout=RUN_TIMEOUT, input=None, descriptor_limit=None):
        """Run musicd with args, expecting it to exit by itself; a sanitized build's reports
        make the test fail. A run that gets as far as binding its listeners gets a metrics
        listener of its own (own_metrics_listener) unless args name one."""
        cmd = [str(a) for a in args]
        # first, so that it cannot change how the test's own arguments parse (a last option
        # without its value would take it as one)
        cmd = [str(require_binary())] + own_metrics_listener(cmd) + without_installed_config(cmd)
        t0 = time.monotonic()
        p = subprocess.run(cmd, input=input, capture_output=True, env=musicd_env(env),
                           cwd=self.workdir, timeout=scaled(timeout),
                           preexec_fn=descriptor_limit_setter(descriptor_limit))
        result = RunResult(p.returncode, p.stdout.decode(errors="replace"),
                           p.stderr.decode(errors="replace"), time.monotonic() - t0)
        found = sanitizer_errors(result.stderr)
        assert not found, f"sanitizer reported {found} for {args}:\n{result.stderr}"
        return result

    def stop_all(self):
        """SIGTERM every musicd still running and wait for it (bounded); what went wrong is
        reported by teardown()."""
        for m in self.started:
            if m.proc is not None and m.proc.poll() is None:
                try:
                    m.stop()
                except AssertionError as e:
                    self.stop_problems.append(str(e))

    def teardown(self):
        """Stop what is still running; return a list of problems (empty when all is well)."""
        problems = self.stop_problems
        self.stop_problems = []
        for m in self.started:
            if m.proc is None:
                continue
            try:
                if m.proc.poll() is None:
                    m.stop()
                else:
                    m.returncode = m.proc.returncode
            except AssertionError as e:
                problems.append(str(e))
                continue
            expected = m.expect_status
            if m.returncode != expected:
                problems.append(f"musicd (pid {m.pid}) exited with status {m.returncode}, "
                                f"expected {expected}\nstderr:\n{m.stderr_text()[-5000:]}")
            found = m.sanitizer_report()
            if found:
                problems.append(f"sanitizer reported {found} in musicd (pid {m.pid}):\n"
                                f"{m.stderr_text()[-20000:]}")
        return problems

