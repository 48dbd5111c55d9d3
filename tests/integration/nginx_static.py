"""Debian's nginx (nginx-light) serving a directory statically, as the reference for musicd.

One non-daemon, single-process nginx per instance, on a free 127.0.0.1 port, with its own prefix
in a temporary directory: configuration, pid file, error and access logs and every temp path live
there, so nothing under /etc, /var or /run is touched. The configuration mirrors musicd's: sendfile,
TCP_NODELAY, If-Modified-Since at-or-before semantics (RFC 9110), max_ranges 16, audio/mpeg for
.mp3. stop() sends SIGTERM, waits (bounded) and kills as a last resort.
"""

import pathlib
import signal
import subprocess
import textwrap

from support import free_port, listens_on, read_text, scaled, wait_until

NGINX_BIN = pathlib.Path("/usr/sbin/nginx")
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
START_ATTEMPTS = 3  # a free port can be taken by someone else before nginx binds it

CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    types {{ audio/mpeg mp3; }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nodelay on;
    if_modified_since before;
    max_ranges {max_ranges};
    server_tokens off;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ }}
    }}
}}
"""


class NginxStatic:
    """nginx serving `root` at http://127.0.0.1:<port>/<relative path>."""

    def __init__(self, workdir, root, max_ranges=16):
        self.prefix = pathlib.Path(workdir)
        self.root = pathlib.Path(root)
        self.max_ranges = max_ranges
        self.port = None
        self.conf = self.prefix / "nginx.conf"
        self.error_log = self.prefix / "error.log"
        self.stderr_path = self.prefix / "nginx.stderr"
        self.proc = None
        (self.prefix / "tmp").mkdir(parents=True, exist_ok=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        if not NGINX_BIN.exists():
            raise FileNotFoundError(f"{NGINX_BIN} is missing: apt-get install nginx-light")
        for attempt in range(START_ATTEMPTS):
            try:
                return self._start_once()
            except AssertionError:
                self.stop()
                lost_port = "Address already in use" in read_text(self.error_log)
                if not lost_port or attempt == START_ATTEMPTS - 1:
                    raise

    def _start_once(self):
        self.port = free_port()
        self.conf.write_text(CONF.format(prefix=self.prefix, port=self.port, root=self.root,
                                         max_ranges=self.max_ranges))
        self.error_log.write_text("")
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [str(NGINX_BIN), "-p", str(self.prefix), "-c", str(self.conf),
                 "-e", str(self.error_log)],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=self.prefix)

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"nginx exited with status {self.proc.returncode} at start-up:\n"
                    f"{read_text(self.stderr_path)}\n{read_text(self.error_log)}\n"
                    f"{textwrap.indent(self.conf.read_text(), '  ')}")
            return _listens(self.proc.pid, self.port)

        wait_until(ready, START_TIMEOUT, interval=0.02,
                   message=f"nginx to accept connections on port {self.port}")
        return self

    def stop(self):
        """SIGTERM and wait; kill if it does not exit. Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(scaled(STOP_TIMEOUT))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def _listens(pid, port):
    """Whether process pid itself has a socket listening on port (another process that took
    the port must not pass for nginx, which retries bind() for a few seconds)."""
    return listens_on(pid, port)
