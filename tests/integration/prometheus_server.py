"""Debian's prometheus, run by a test: on 127.0.0.1 (a reserved port), its storage in the test's
directory, scraping one target every SCRAPE_INTERVAL and, given rule files, evaluating them as
often; its HTTP API read with urllib. The conftest fixture `prometheus` starts them and stops
them after the test."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request

from support import free_port, scaled, wait_until

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SCRAPE_INTERVAL = "1s"
JOB = "musicd"                       # the job name docs/monitoring.md's scrape config gives
START_TIMEOUT = 60.0                 # until its API answers (scaled)
STOP_TIMEOUT = 20.0                  # after SIGTERM (scaled), before it is killed


def require(path):
    if not os.path.exists(path):
        raise AssertionError(f"{path} is missing: install Debian's prometheus "
                             "(scripts/setup/install-deps, which `make test` runs)")
    return path


class ApiError(AssertionError):
    """Prometheus answered a query with an error (a parse error, a bad query)."""


class Prometheus:
    """One prometheus scraping 127.0.0.1:target_port/metrics as job JOB."""

    def __init__(self, workdir, target_port, rule_files=()):
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.target = f"127.0.0.1:{target_port}"
        self.config = self.workdir / "prometheus.yml"
        rules = "".join(f"  - '{path}'\n" for path in rule_files)
        self.config.write_text(
            "global:\n"
            f"  scrape_interval: {SCRAPE_INTERVAL}\n"
            f"  scrape_timeout: {SCRAPE_INTERVAL}\n"
            f"  evaluation_interval: {SCRAPE_INTERVAL}\n"
            + (f"rule_files:\n{rules}" if rules else "") +
            "scrape_configs:\n"
            f"  - job_name: {JOB}\n"
            "    static_configs:\n"
            f"      - targets: ['{self.target}']\n")
        self.log_path = self.workdir / "prometheus.log"
        self.proc = None

    def start(self):
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [require(PROMETHEUS), f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.workdir)
        wait_until(self.ready, scaled(START_TIMEOUT), interval=0.2,
                   message="prometheus to answer")
        return self

    def log_text(self):
        return self.log_path.read_text(errors="replace")

    def ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.proc.returncode}:\n"
                                 f"{self.log_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def api(self, path, **params):
        """The data of an API answer; ApiError with Prometheus's message if it is an error."""
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}{query}",
                                        timeout=10) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as e:  # 400 and 422 carry the error as JSON
            body = json.loads(e.read())
        if body.get("status") != "success":
            raise ApiError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr):
        """The instant vector expr gives now (a list of {metric, value})."""
        return self.api("/api/v1/query", query=expr)["result"]

    def target_up(self):
        targets = self.api("/api/v1/targets")["activeTargets"]
        return bool(targets) and targets[0]["health"] == "up" and targets[0]

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(scaled(STOP_TIMEOUT))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class PrometheusFactory:
    """The `prometheus` fixture: start(target_port, rule_files=()) for each one a test needs."""

    def __init__(self, workdir):
        self.workdir = pathlib.Path(workdir)
        self.started = []

    def start(self, target_port, rule_files=()):
        p = Prometheus(self.workdir / f"prometheus-{len(self.started)}", target_port, rule_files)
        self.started.append(p)
        return p.start()

    def teardown(self):
        for p in self.started:
            p.stop()
