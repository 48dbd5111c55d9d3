"""Headless Chromium driven through chromedriver's W3C WebDriver HTTP API (needs only requests),
and a tiny loopback HTTP server for the pages it opens (conftest.py's `browser` fixture is a
started Browser in the test's directory).

    with PageServer({"/player.html": html}) as pages, Browser(workdir) as browser:
        browser.open(pages.url + "/player.html")
        browser.run("return document.title")

chromedriver is started on a free 127.0.0.1 port in its own process group, with a fresh
--user-data-dir in the test's directory; Chromium runs headless with the flags of issue 3. close()
ends the WebDriver session (which quits Chromium) and then stops chromedriver; whatever is left of
that process group (a Chromium that did not quit) is killed by its group id. Every HTTP call to
chromedriver has a timeout.
"""

import http.server
import os
import pathlib
import signal
import subprocess
import threading

import requests

from support import free_port, port_accepts, read_text, wait_until

CHROMEDRIVER = pathlib.Path("/usr/bin/chromedriver")
CHROMIUM = pathlib.Path("/usr/bin/chromium")
START_TIMEOUT = 20.0      # chromedriver listening
SESSION_TIMEOUT = 60.0    # Chromium started and the session created
CALL_TIMEOUT = 30.0       # any other WebDriver call
STOP_TIMEOUT = 10.0

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]


class WebDriverError(AssertionError):
    pass


class Browser:
    def __init__(self, workdir):
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.profile = self.workdir / "chromium-profile"
        self.log_path = self.workdir / "chromedriver.log"
        self.port = free_port()
        self.proc = None
        self.session = None
        self.http = requests.Session()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        for path in (CHROMEDRIVER, CHROMIUM):
            if not path.exists():
                raise FileNotFoundError(f"{path} is missing: apt-get install chromium "
                                        "chromium-driver")
        with open(self.workdir / "chromedriver.stderr", "wb") as err:
            self.proc = subprocess.Popen(
                [str(CHROMEDRIVER), f"--port={self.port}", "--allowed-ips=127.0.0.1",
                 f"--log-path={self.log_path}"],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=self.workdir,
                start_new_session=True)  # its own process group: Chromium joins it

        def ready():
            if self.proc.poll() is not None:
                raise WebDriverError(f"chromedriver exited with {self.proc.returncode}: "
                                     f"{read_text(self.workdir / 'chromedriver.stderr')}")
            return port_accepts(self.port)

        wait_until(ready, START_TIMEOUT, message="chromedriver to listen")
        capabilities = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": str(CHROMIUM),
                "args": CHROMIUM_ARGS + [f"--user-data-dir={self.profile}"],
            },
        }}}
        value = self._call("POST", "/session", capabilities, timeout=SESSION_TIMEOUT)
        self.session = value["sessionId"]
        return self

    def _call(self, method, path, body=None, timeout=CALL_TIMEOUT):
        resp = self.http.request(method, self.base + path, json=body, timeout=timeout)
        try:
            payload = resp.json()
        except ValueError:
            raise WebDriverError(f"{method} {path}: {resp.status_code} {resp.text[:500]}")
        value = payload.get("value")
        if resp.status_code != 200:
            raise WebDriverError(f"{method} {path}: {resp.status_code} {value}\n"
                                 f"log: {read_text(self.log_path)[-3000:]}")
        return value

    def _session_call(self, method, path, body=None, timeout=CALL_TIMEOUT):
        return self._call(method, f"/session/{self.session}{path}", body, timeout)

    def open(self, url):
        self._session_call("POST", "/url", {"url": url})

    def run(self, script, *args):
        """Run script (a function body: use `return`) in the page; its JSON result."""
        return self._session_call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def cdp(self, command, params=None):
        """Run a Chrome DevTools Protocol command (chromedriver's goog/cdp/execute); its result."""
        return self._session_call("POST", "/goog/cdp/execute",
                                  {"cmd": command, "params": params or {}})

    def close(self):
        try:
            if self.session is not None:
                try:
                    self._call("DELETE", f"/session/{self.session}", timeout=STOP_TIMEOUT)
                except (requests.RequestException, WebDriverError):
                    pass
                self.session = None
        finally:
            if self.proc is not None:
                if self.proc.poll() is None:
                    self.proc.terminate()
                    try:
                        self.proc.wait(STOP_TIMEOUT)
                    except subprocess.TimeoutExpired:
                        self.proc.kill()
                        self.proc.wait(STOP_TIMEOUT)
                try:  # a Chromium left behind in chromedriver's process group
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.http.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


class PageServer:
    """Serves fixed pages ({path: html}) on a free 127.0.0.1 port from a thread."""

    def __init__(self, pages):
        self.pages = {path: html.encode() for path, html in pages.items()}
        self.httpd = None
        self.thread = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self):
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(STOP_TIMEOUT)
            self.httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
