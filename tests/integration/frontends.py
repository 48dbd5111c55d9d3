"""Real nginx and Varnish in front of musicd, configured from the shipped files in config/.

The shipped files are used as they are, with only addresses, ports, paths and the probe interval
substituted textually (substitute() fails if a value to replace is not in the file, so a changed
shipped file cannot silently stop being tested):

  config/nginx-musicd.conf, config/nginx-musicd-offload.conf
      upstream 127.0.0.1:23001 -> musicd's port; listen 127.0.0.1:8080 -> nginx's port;
      /srv/music/ -> the test's media root (offload variant)
  config/varnish-musicd.vcl
      backend .port "8080" -> nginx's port; probe .interval 1s -> PROBE_INTERVAL
  config/nginx-musicd-cluster.conf (several origins)
      server 10.0.0.1N:23001 -> 127.0.0.1:<origin N's port>, fail_timeout=10s -> the test's;
      listen 127.0.0.1:8080 -> nginx's port
  config/varnish-musicd-cluster.vcl (several origins, no nginx)
      backend originN's .host "10.0.0.1N" and .port "23001" -> 127.0.0.1 and origin N's port;
      probe .interval 1s -> PROBE_INTERVAL
  either VCL, with the opt-in files it includes (config/varnish-musicd-*.vcl) beside it, as an
      operator installs them; a block turned on (block_on) exactly as "Opt-in blocks of the VCLs" in
      docs/deployment.md says: the '#' of the VCL's one include line for it removed; ADAPT values of
      a block's file (the url-signing key file's path, the request limit) substituted the same way
      as the VCL's
  any nginx site, when a test turns its per-client cap on (limit_conn_on): the limit_conn line
      uncommented, as docs/signed-urls-and-limits.md says, with the test's count

Nginx runs in the foreground (`daemon off`) from a generated main nginx.conf in its own directory
(pid, logs, temp paths there) that includes the site file the way Debian's nginx.conf includes
sites-enabled/*. Varnish runs with -F (foreground) and -n <its own directory>. Both are stopped at
teardown, always (NginxFactory / VarnishFactory).
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess

from support import REPO, free_port, port_accepts, read_text, wait_until

CONFIG_DIR = REPO / "config"
NGINX_SITE = CONFIG_DIR / "nginx-musicd.conf"
NGINX_OFFLOAD_SITE = CONFIG_DIR / "nginx-musicd-offload.conf"
VARNISH_VCL = CONFIG_DIR / "varnish-musicd.vcl"
NGINX_CLUSTER_SITE = CONFIG_DIR / "nginx-musicd-cluster.conf"
VARNISH_CLUSTER_VCL = CONFIG_DIR / "varnish-musicd-cluster.vcl"

NGINX_BIN = shutil.which("nginx") or "/usr/sbin/nginx"
VARNISHD_BIN = shutil.which("varnishd") or "/usr/sbin/varnishd"
VARNISHADM_BIN = shutil.which("varnishadm") or "/usr/bin/varnishadm"

# The values the shipped files hold, and what the tests put in their place.
SHIPPED_UPSTREAM = "server 127.0.0.1:23001;"
SHIPPED_LISTEN = "listen 127.0.0.1:8080"   # the rest of the line (sndbuf) is kept
SHIPPED_MEDIA_ROOT = "alias /srv/music/;"
SHIPPED_ACCEL_PREFIX = "/protected/music/"   # musicd --x-accel-redirect matching the site
SHIPPED_BACKEND_PORT = '.port = "8080";'
SHIPPED_PROBE_INTERVAL = ".interval = 1s;"
PROBE_INTERVAL = "200ms"
# The cluster files' origins, in order (nginx `server` lines, Varnish backends origin1..3).
SHIPPED_ORIGINS = [("10.0.0.11", "23001"), ("10.0.0.12", "23001"), ("10.0.0.13", "23001")]
SHIPPED_FAIL_TIMEOUT = "fail_timeout=10s"
FAIL_TIMEOUT = "2s"   # how long nginx skips a failed origin in the tests

START_TIMEOUT = 30.0   # varnishd compiles the VCL with cc at start-up
START_ATTEMPTS = 3     # a free port may be taken by another process before we bind it
STOP_TIMEOUT = 10.0
RUN_TIMEOUT = 60.0


def substitute(text, replacements, source="config"):
    """text with each (old, new) replaced; AssertionError if an old value does not occur."""
    for old, new in replacements:
        count = text.count(old)
        assert count >= 1, f"{old!r} not found in {source}: the shipped file changed?"
        text = text.replace(old, new)
    return text


def nginx_site_text(musicd_port, nginx_port, offload=False, media_root=None, more_roots=(),
                    adapt=()):
    """The shipped site file (proxy or offload variant) for these ports and media root.
    more_roots (offload): (prefix, root) of musicd's further --x-accel-redirect and
    --media-root pairs, each served by a copy of the shipped internal location, as the site's
    "Several media roots" says; adapt: more (old, new) replacements, as a user would make at an
    ADAPT mark."""
    path = NGINX_OFFLOAD_SITE if offload else NGINX_SITE
    replacements = [(SHIPPED_UPSTREAM, f"server 127.0.0.1:{musicd_port};"),
                    (SHIPPED_LISTEN, f"listen 127.0.0.1:{nginx_port}"), *adapt]
    text = path.read_text()
    if offload:
        root = str(media_root).rstrip("/") + "/"
        replacements.append((SHIPPED_MEDIA_ROOT, f'alias "{root}";'))
        start = text.index(f"    location {SHIPPED_ACCEL_PREFIX} {{\n")
        block = text[start:text.index("\n    }\n", start) + len("\n    }\n")]
        copies = "".join("\n" + substitute(block, [
            (f"location {SHIPPED_ACCEL_PREFIX} ", f"location {prefix} "),
            (SHIPPED_MEDIA_ROOT, f'alias "{str(extra).rstrip("/")}/";')], path.name)
            for prefix, extra in more_roots)
        text = text.replace(block, block + copies)
    return substitute(text, replacements, path.name)


# An opt-in block's include line in the shipped VCLs, commented out: '#include "./FILE";'. The
# "./" makes varnishd read FILE from the including VCL's own directory, whatever vcl_path says.
INCLUDE_LINE = re.compile(r'^#?include "\./([^"/]+\.vcl)";$', re.M)


def vcl_files(vcl_path, replacements=()):
    """The shipped VCL at vcl_path and the opt-in files it includes, as an operator installs
    them side by side: {file name: text}, the VCL first. Each (old, new) of replacements is made
    in every file holding old; AssertionError if none does."""
    vcl_path = pathlib.Path(vcl_path)
    names = [vcl_path.name] + INCLUDE_LINE.findall(vcl_path.read_text())
    files = {name: (vcl_path.parent / name).read_text() for name in names}
    for old, new in replacements:
        holding = [name for name, text in files.items() if old in text]
        assert holding, f"{old!r} not found in {vcl_path.name} or its opt-in files: changed?"
        for name in holding:
            files[name] = files[name].replace(old, new)
    return files


def varnish_vcl_files(nginx_port, probe_interval=PROBE_INTERVAL, adapt=()):
    """The shipped VCL (and its opt-in files) pointed at nginx's port, probing every
    probe_interval; adapt: more (old, new) replacements, as a user would make at an ADAPT mark
    or to turn a block on (block_on)."""
    return vcl_files(VARNISH_VCL, [(SHIPPED_BACKEND_PORT, f'.port = "{nginx_port}";'),
                                   (SHIPPED_PROBE_INTERVAL, f".interval = {probe_interval};"),
                                   *adapt])


def _origin_replacements(origin_ports, old, new):
    """(old, new) pairs putting origin N of the shipped cluster files on 127.0.0.1:port N."""
    assert len(origin_ports) == len(SHIPPED_ORIGINS), \
        f"the cluster files name {len(SHIPPED_ORIGINS)} origins, not {len(origin_ports)}"
    return [(old(host, port), new(origin_port))
            for (host, port), origin_port in zip(SHIPPED_ORIGINS, origin_ports)]


def nginx_cluster_site_text(origin_ports, nginx_port, fail_timeout=FAIL_TIMEOUT, adapt=()):
    """The shipped cluster site for these origins' ports and nginx's port; adapt as for
    nginx_site_text."""
    replacements = _origin_replacements(origin_ports, lambda host, port: f"server {host}:{port} ",
                                        lambda port: f"server 127.0.0.1:{port} ")
    replacements += [(SHIPPED_FAIL_TIMEOUT, f"fail_timeout={fail_timeout}"),
                     (SHIPPED_LISTEN, f"listen 127.0.0.1:{nginx_port}"), *adapt]
    return substitute(NGINX_CLUSTER_SITE.read_text(), replacements, NGINX_CLUSTER_SITE.name)


def varnish_cluster_vcl_files(origin_ports, probe_interval=PROBE_INTERVAL, adapt=()):
    """The shipped cluster VCL (and its opt-in files) with backend originN at
    127.0.0.1:<port N>; adapt as for varnish_vcl_files."""
    replacements = _origin_replacements(
        origin_ports, lambda host, port: f'.host = "{host}";\n    .port = "{port}";',
        lambda port: f'.host = "127.0.0.1";\n    .port = "{port}";')
    replacements += [(SHIPPED_PROBE_INTERVAL, f".interval = {probe_interval};"), *adapt]
    return vcl_files(VARNISH_CLUSTER_VCL, replacements)


# The shipped VCLs' opt-in blocks, off as shipped. The deployment guide says how to turn one on,
# and the tests do exactly that: its table of "Opt-in blocks of the VCLs" names each block's line
# to uncomment.
DEPLOYMENT_GUIDE = REPO / "docs" / "deployment.md"
BLOCK_ROW = re.compile(r'^\| ([a-z-]+) \| `(#include "\./[^"]+";)` \|', re.M)
SHIPPED_URL_SIGNING_KEYS = "/etc/varnish/musicd-url-signing.keys"
SHIPPED_REQUEST_LIMIT = '"musicdb:" + client.identity, 300, 60s, 60s'
SHIPPED_CORS_ORIGINS = '"^(https://player\\.example\\.com)$"'


def documented_block_lines():
    """{block name: the VCL line docs/deployment.md says to uncomment for it}."""
    return dict(BLOCK_ROW.findall(read_text(DEPLOYMENT_GUIDE)))


def block_on(name):
    """The adapt pair that turns the opt-in block `name` on as docs/deployment.md says: the '#'
    of its include line removed."""
    line = documented_block_lines().get(name)
    assert line, f"docs/deployment.md's table of opt-in blocks has no {name!r} row"
    return (f"\n{line}\n", f"\n{line[1:]}\n")


def url_signing_on(key_file):
    """The adapt pairs that turn the url-signing block on, reading key_file."""
    return [block_on("url-signing"), (SHIPPED_URL_SIGNING_KEYS, str(key_file))]


def request_limit_on(limit):
    """The adapt pairs that turn the request-limit block on, with limit requests per client in
    60 s instead of 300."""
    return [block_on("request-limit"),
            (SHIPPED_REQUEST_LIMIT, f'"musicdb:" + client.identity, {limit}, 60s, 60s')]


def cors_origins_on(origin):
    """The adapt pairs that turn the cors block on, listing one origin (scheme://host:port)."""
    return [block_on("cors"), (SHIPPED_CORS_ORIGINS, f'"^({re.escape(origin)})$"')]


# The shipped nginx sites' per-client cap, off as shipped: docs/signed-urls-and-limits.md's way to
# turn it on is to uncomment the limit_conn line with musicd's --max-streams-per-client.
SHIPPED_LIMIT_CONN = "#limit_conn musicd_streams 2;"


def limit_conn_on(count):
    """The adapt pair that turns a shipped nginx site's limit_conn on at count streams."""
    return [(SHIPPED_LIMIT_CONN, f"limit_conn musicd_streams {count};")]


def nginx_main_conf(directory, site_path, worker_processes=1, extra_http=""):
    """A main nginx.conf like Debian's (same http-level defaults), everything under directory,
    including the site file inside http { } as sites-enabled/* is."""
    d = pathlib.Path(directory)
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read the tests' 0700 dirs
    temp = "\n".join(f'    {name}_temp_path "{d}/temp/{name}";'
                     for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""{user}worker_processes {worker_processes};
daemon off;
pid "{d}/nginx.pid";
error_log "{d}/error.log" info;

events {{
    worker_connections 1024;
}}

http {{
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log "{d}/access.log";
    gzip on;
{temp}
{extra_http}
    include "{site_path}";
}}
"""


class PortTaken(AssertionError):
    """The process could not bind its port: someone took it after free_port() chose it."""


def _check_started(proc, name, output):
    """Raise (PortTaken or AssertionError) if proc already exited at start-up."""
    if proc.poll() is None:
        return
    if "Address already in use" in output:
        raise PortTaken(f"{name}: port taken")
    raise AssertionError(f"{name} exited with {proc.returncode} at start-up:\n{output[-5000:]}")


class Nginx:
    """One nginx master (foreground) with its own prefix directory."""

    def __init__(self, directory, site_text, port, worker_processes=1):
        self.dir = pathlib.Path(directory)
        self.port = port
        (self.dir / "temp").mkdir(parents=True, exist_ok=True)
        self.site_path = self.dir / "site.conf"
        self.site_path.write_text(site_text)
        self.conf_path = self.dir / "nginx.conf"
        self.conf_path.write_text(nginx_main_conf(self.dir, self.site_path, worker_processes))
        self.stderr_path = self.dir / "nginx.stderr"
        self.proc = None

    def command(self, *extra):
        return [NGINX_BIN, "-p", str(self.dir), "-c", str(self.conf_path), "-e",
                str(self.dir / "error.log"), *extra]

    def config_test(self):
        """`nginx -t` on this configuration: (exit status, output)."""
        p = subprocess.run(self.command("-t"), capture_output=True, text=True,
                           timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout + p.stderr

    def start(self, timeout=START_TIMEOUT):
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err, start_new_session=True)

        def ready():
            # nginx writes its pid file only once its listening socket is bound (it retries a
            # taken port for a while): a connection accepted before that is someone else's.
            _check_started(self.proc, "nginx", read_text(self.stderr_path) + self.error_log())
            return (read_text(self.dir / "nginx.pid").strip() == str(self.proc.pid) and
                    port_accepts(self.port))

        try:
            wait_until(ready, timeout, interval=0.02, message=f"nginx on port {self.port}")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout=STOP_TIMEOUT):
        _stop(self.proc, signal.SIGTERM, timeout)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def error_log(self):
        return read_text(self.dir / "error.log")

    def access_log_lines(self):
        return [line for line in read_text(self.dir / "access.log").splitlines() if line]


class Varnish:
    """One varnishd (-F, -n <directory>) running a VCL: its text, or {file name: text} of it
    (the first) and its opt-in files, written side by side into directory."""

    def __init__(self, directory, vcl, port, storage="malloc,64m"):
        self.dir = pathlib.Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.workdir = self.dir / "n"          # varnishd -n: its working directory
        files = {"musicd.vcl": vcl} if isinstance(vcl, str) else vcl
        for name, text in files.items():
            (self.dir / name).write_text(text)
        self.vcl_path = self.dir / next(iter(files))
        self.port = port
        self.admin_port = free_port()
        self.storage = storage
        self.log_path = self.dir / "varnishd.log"
        self.proc = None

    def command(self):
        # -j none: no privilege separation, so varnishd running as root in a test keeps root and
        # can use the test's private (0700) directories; not for production. The -p values
        # keep a test instance small (one thread pool, a small shared-memory log).
        return [VARNISHD_BIN, "-F", "-j", "none", "-n", str(self.workdir),
                "-a", f"127.0.0.1:{self.port}", "-T", f"127.0.0.1:{self.admin_port}",
                "-f", str(self.vcl_path), "-s", self.storage,
                "-p", "thread_pools=1", "-p", "thread_pool_min=10",
                "-p", "vsl_space=4M", "-p", "auto_restart=off"]

    def start(self, timeout=START_TIMEOUT):
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

        def ready():
            # The child running (varnishadm status) means the -a socket is varnishd's.
            _check_started(self.proc, "varnishd", read_text(self.log_path))
            return port_accepts(self.port) and self.child_running()

        try:
            wait_until(ready, timeout, interval=0.05, message=f"varnishd on port {self.port}")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout=STOP_TIMEOUT):
        _stop(self.proc, signal.SIGTERM, timeout)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def adm(self, *args, timeout=10.0):
        """varnishadm -n <dir> args...: its output (AssertionError if it fails)."""
        p = subprocess.run([VARNISHADM_BIN, "-n", str(self.workdir), *args], capture_output=True,
                           text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, f"varnishadm {' '.join(args)}: {p.returncode} {p.stderr}"
        return p.stdout

    def child_running(self):
        try:
            return "Child in state running" in self.adm("status", timeout=5.0)
        except (AssertionError, subprocess.TimeoutExpired):
            return False

    def backend_health(self):
        """The health of the VCL's backend `nginx` as backend.list prints it:
        "healthy" or "sick" (or "probe" states of other versions), None if not listed."""
        for line in self.adm("backend.list").splitlines():
            fields = line.split()
            if fields and fields[0].endswith(".nginx"):
                for word in fields[1:]:
                    if word.lower() in ("healthy", "sick"):
                        return word.lower()
        return None

    def backend_healths(self):
        """{backend name without the VCL prefix: "healthy" or "sick"} from backend.list."""
        result = {}
        for line in self.adm("backend.list").splitlines()[1:]:
            fields = line.split()
            states = [w.lower() for w in fields[1:] if w.lower() in ("healthy", "sick")]
            if fields and states:
                result[fields[0].rpartition(".")[2]] = states[0]
        return result

    def wait_backends(self, expected, timeout=15.0):
        """Poll backend.list until each backend named in expected has its state there."""
        def reached():
            healths = self.backend_healths()
            return all(healths.get(name) == state for name, state in expected.items()) and healths
        return wait_until(reached, timeout, interval=0.1, message=f"Varnish backends {expected}")

    def wait_backend(self, state, timeout=15.0):
        """Poll backend.list until the backend is `state` ("healthy" or "sick")."""
        return wait_until(lambda: self.backend_health() == state and state, timeout,
                          interval=0.1, message=f"Varnish backend to be {state}")


def vcl_compiles(vcl_path, files=None):
    """`varnishd -C -j none -f vcl_path`: (exit status, stderr); files: {name: text} to write
    beside it first (vcl_path's name the first). -j none: as root, varnishd would read the file
    as its unprivileged user, and fail in a clone under /root (0700)."""
    for name, text in (files or {}).items():
        (pathlib.Path(vcl_path).parent / name).write_text(text)
    p = subprocess.run([VARNISHD_BIN, "-C", "-j", "none", "-f", str(vcl_path)],
                       capture_output=True, text=True, timeout=RUN_TIMEOUT,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stderr


def _stop(proc, sig, timeout):
    """Signal a process we started, wait (bounded), then kill it if it is still there."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


class FrontendFactory:
    """Starts nginx and Varnish for one test and stops every one at teardown."""

    def __init__(self, workdir):
        self.workdir = pathlib.Path(workdir)
        self.started = []

    def _dir(self, kind):
        d = self.workdir / f"{kind}-{len(self.started)}"
        d.mkdir(parents=True)
        return d

    def _start(self, make):
        """make() a process on new free ports and start it, again if its port was taken."""
        for attempt in range(START_ATTEMPTS):
            process = make()
            self.started.append(process)
            try:
                return process.start()
            except PortTaken:
                if attempt == START_ATTEMPTS - 1:
                    raise

    def nginx(self, musicd_port, offload=False, media_root=None, more_roots=(), adapt=()):
        def make():
            port = free_port()
            return Nginx(self._dir("nginx"),
                         nginx_site_text(musicd_port, port, offload, media_root, more_roots,
                                         adapt),
                         port)
        return self._start(make)

    def varnish(self, nginx_port, probe_interval=PROBE_INTERVAL, adapt=()):
        return self._start(lambda: Varnish(self._dir("varnish"),
                                           varnish_vcl_files(nginx_port, probe_interval, adapt),
                                           free_port()))

    def nginx_cluster(self, origin_ports, fail_timeout=FAIL_TIMEOUT, adapt=()):
        """nginx from the shipped cluster site, its upstream the given origins' ports."""
        def make():
            port = free_port()
            return Nginx(self._dir("nginx"),
                         nginx_cluster_site_text(origin_ports, port, fail_timeout, adapt), port)
        return self._start(make)

    def varnish_cluster(self, origin_ports, probe_interval=PROBE_INTERVAL, adapt=()):
        """Varnish from the shipped cluster VCL, its backends the given origins' ports."""
        return self._start(lambda: Varnish(
            self._dir("varnish"), varnish_cluster_vcl_files(origin_ports, probe_interval, adapt),
            free_port()))

    def teardown(self):
        for p in reversed(self.started):
            p.stop()


def parse_content_range(value):
    """'bytes 10-19/100' -> (10, 19, 100)."""
    m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", value or "")
    assert m, f"not a byte Content-Range: {value!r}"
    return tuple(int(g) for g in m.groups())


