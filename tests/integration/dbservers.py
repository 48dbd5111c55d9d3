"""MongoDB-compatible database servers for the tests.

DatabaseServer runs a private server process (FerretDB on SQLite, or mongod) in its own
directory on one fixed 127.0.0.1 port, and can be stopped and restarted on that same port
with its data kept: the outage tests use it. ExternalDatabase wraps a URI given by the user
(MUSICD_TEST_MONGODB_URI): there is nothing to stop, so outage tests put a TcpProxy in front.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import urllib.parse

import pymongo

from support import REPO, free_port, listens_on, read_text, wait_until

FERRETDB_BIN = pathlib.Path(os.environ.get("MUSICD_FERRETDB", REPO / "var" / "bin" / "ferretdb"))
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


def ping(uri, timeout=1.0):
    """True when a MongoDB-compatible server answers `ping` at uri within timeout seconds."""
    ms = int(timeout * 1000)
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms,
                                 socketTimeoutMS=ms)
    try:
        client.admin.command("ping")
        return True
    except pymongo.errors.PyMongoError:
        return False
    finally:
        client.close()


def uri_with_address(uri, host, port):
    """uri with its host list replaced by host:port (credentials and options kept), and
    directConnection=true so that the driver never goes around the new address."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "mongodb":
        raise ValueError(f"only mongodb:// URIs can be rewritten, not {parts.scheme}://")
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (userinfo + "@" if userinfo else "") + f"{host}:{port}"
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
             if k.lower() not in ("replicaset", "directconnection")]
    query.append(("directConnection", "true"))
    return urllib.parse.urlunsplit(("mongodb", netloc, parts.path or "/",
                                    urllib.parse.urlencode(query), ""))


def uri_address(uri):
    """(host, port) of a single-host mongodb:// URI."""
    hosts = urllib.parse.urlsplit(uri).netloc.rpartition("@")[2]
    if "," in hosts:
        raise ValueError(f"URI names several hosts: {hosts}")
    if hosts.startswith("["):
        host, _, rest = hosts[1:].partition("]")
        port = rest.lstrip(":")
    else:
        host, _, port = hosts.partition(":")
    return host, int(port or 27017)


class DatabaseServer:
    """A private database server process on 127.0.0.1:port, restartable on the same port."""

    kind = "abstract"

    def __init__(self, workdir, port=None):
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.proc = None
        self.log_path = self.workdir / f"{self.kind}.log"

    @property
    def uri(self):
        return f"mongodb://127.0.0.1:{self.port}/"

    def command(self):
        raise NotImplementedError

    def start(self, timeout=START_TIMEOUT):
        if self.proc is not None:
            raise RuntimeError(f"{self.kind} already running")
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.workdir,
                                         start_new_session=True)
        finally:
            log.close()

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.kind} exited with {self.proc.returncode} at start-up:"
                                     f"\n{read_text(self.log_path)[-3000:]}")
            # the answer must come from our process, not from whatever else took the port
            return listens_on(self.proc.pid, self.port) and ping(self.uri, timeout=0.5)

        try:
            wait_until(ready, timeout, interval=0.05, message=f"{self.kind} on port {self.port}")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout=STOP_TIMEOUT, kill=False):
        """Stop the server: SIGTERM (SIGKILL after timeout seconds), or at once with kill=True,
        like a crash (FerretDB's graceful stop waits ~3 s for connected clients)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)

    def restart(self):
        self.stop()
        return self.start()

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class FerretDB(DatabaseServer):
    kind = "ferretdb"

    def __init__(self, workdir, port=None, binary=FERRETDB_BIN):
        super().__init__(workdir, port)
        self.binary = pathlib.Path(binary)
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(exist_ok=True)

    def command(self):
        if not self.binary.exists():
            raise FileNotFoundError(f"{self.binary} missing: build it with "
                                    "`scripts/setup/ferretdb build`")
        return [str(self.binary), "--handler=sqlite", f"--sqlite-url=file:{self.data_dir}/",
                f"--listen-addr=127.0.0.1:{self.port}", f"--state-dir={self.data_dir}",
                "--debug-addr=-", "--telemetry=disable", "--log-level=warn"]


class Mongod(DatabaseServer):
    kind = "mongod"

    def __init__(self, workdir, port=None, binary=None):
        super().__init__(workdir, port)
        self.binary = binary or shutil.which("mongod")
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(exist_ok=True)

    def command(self):
        return [self.binary, "--dbpath", str(self.data_dir), "--port", str(self.port),
                "--bind_ip", "127.0.0.1", "--nounixsocket", "--quiet"]


class ExternalDatabase:
    """A database the user runs (MUSICD_TEST_MONGODB_URI); never stopped by the tests."""

    kind = "external"

    def __init__(self, uri):
        self.uri = uri

    def start(self, timeout=START_TIMEOUT):
        wait_until(lambda: ping(self.uri, timeout=1.0), timeout, interval=0.2,
                   message=f"the database at MUSICD_TEST_MONGODB_URI ({self.uri})")
        return self

    def stop(self):
        pass


def private_server(workdir, port=None):
    """A new private DatabaseServer (not started): mongod if on PATH, else FerretDB."""
    if shutil.which("mongod"):
        return Mongod(workdir, port)
    return FerretDB(workdir, port)


def session_database(workdir):
    """The database the whole session uses (started): the user's URI, mongod or FerretDB."""
    uri = os.environ.get("MUSICD_TEST_MONGODB_URI")
    if uri:
        return ExternalDatabase(uri).start()
    return private_server(workdir).start()


def wait_stopped(port, timeout=STOP_TIMEOUT):
    """Wait until nothing answers on 127.0.0.1:port any more."""
    wait_until(lambda: not ping(f"mongodb://127.0.0.1:{port}/", timeout=0.2), timeout,
               message=f"database on port {port} to be gone")


class ScratchDatabase:
    """One test's own database on a server (dropped afterwards), with helpers to insert tracks."""

    def __init__(self, client, name, collection="tracks", path_field="path"):
        self.client = client
        self.name = name
        self.collection_name = collection
        self.path_field = path_field

    @property
    def collection(self):
        return self.client[self.name][self.collection_name]

    def insert(self, doc, collection=None):
        """Insert doc (into collection, default the tracks collection); return the _id as hex."""
        coll = self.client[self.name][collection or self.collection_name]
        return str(coll.insert_one(dict(doc)).inserted_id)

    def insert_track(self, path, /, collection=None, path_field=None, **fields):
        """Insert {<path field>: path, **fields}; return the ObjectId as 24 hex digits."""
        doc = {path_field or self.path_field: path}
        doc.update(fields)
        return self.insert(doc, collection)

    def drop(self):
        self.client.drop_database(self.name)
