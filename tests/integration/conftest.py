"""Integration test harness for musicd: real database, real mp3s, the real binary, real sockets.

Environment:
  MUSICD_BIN                 the binary under test (default build/musicd)
  MUSICD_SANITIZED=1         it is an ASan/UBSan build: sanitizer options set, timeouts
                             stretched, any sanitizer report in its stderr fails the test
  MUSICD_TEST_MONGODB_URI    use this database server; else a mongod on PATH; else FerretDB
                             (var/bin/ferretdb, or MUSICD_FERRETDB) on SQLite, on a free port

Fixtures (session): mongo (the database server), mongo_client, media (generated mp3s).
Fixtures (per test): db (a fresh database t_<hex>, dropped after), library (the test's media
root + track documents), musicd (factory: musicd.start(...)), server (musicd started with the
defaults), db_proxy (a TcpProxy in front of the session database, with the URI through it),
restartable_db (a database the test may stop and start again), importer (musicd-import pointed
at db; with the session's sources, the audio files the import tests read: import_support.py).
"""

import os
import pathlib
import secrets
import sys

import pymongo
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

# Debian's libmongoc keeps its counters (for mongoc-stat) in /dev/shm/mongoc-PID, made when the
# library loads and removed only by a clean exit. The suite kills processes on purpose (an origin
# in a failover, a hung child), so segments are left behind, and a later musicd or musicd-import
# whose pid is a recycled one warns "Falling back to malloc for counters" on stderr, which the
# tests of one-line error messages then see (it happened in make test). Every process the suite
# starts inherits this; musicd itself needs no counters of libmongoc's (it has /metrics).
os.environ.setdefault("MONGOC_DISABLE_SHM", "1")

import dbservers  # noqa: E402
from frontends import FrontendFactory  # noqa: E402
from import_support import Importer, Sources  # noqa: E402
from media import Library, MediaFiles  # noqa: E402
from musicd_process import MusicdFactory  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402
from webdriver import Browser  # noqa: E402


@pytest.fixture(scope="session")
def mongo(tmp_path_factory):
    """The session's database server (dbservers.ExternalDatabase, Mongod or FerretDB)."""
    server = dbservers.session_database(tmp_path_factory.mktemp("database"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mongo_client(mongo):
    client = pymongo.MongoClient(mongo.uri, serverSelectionTimeoutMS=10000)
    yield client
    client.close()


def _scratch(client):
    name = "t_" + secrets.token_hex(6)
    return dbservers.ScratchDatabase(client, name)


@pytest.fixture
def db(mongo_client):
    """A database of this test's own on the session server, dropped afterwards."""
    scratch = _scratch(mongo_client)
    yield scratch
    scratch.drop()


@pytest.fixture(scope="session")
def media(tmp_path_factory):
    return MediaFiles(tmp_path_factory.mktemp("media-cache"))


@pytest.fixture
def library(tmp_path, db, media):
    return Library(tmp_path / "media", db, media)


@pytest.fixture(scope="session")
def sources(tmp_path_factory):
    """Tagged and untagged mp3s, Ogg Vorbis and FLAC made once (import_support.Sources)."""
    return Sources(tmp_path_factory.mktemp("import-sources"))


@pytest.fixture
def importer(mongo, db):
    """musicd-import pointed at the test's database (import_support.Importer)."""
    return Importer(mongo, db)


@pytest.fixture
def musicd(tmp_path, mongo, db, library):
    factory = MusicdFactory(tmp_path, mongo.uri, db.name, library.root)
    yield factory
    problems = factory.teardown()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def server(musicd):
    """musicd serving the test's library (db + media root) with default options."""
    return musicd.start()


class ProxiedDatabase:
    """The session database reached through a TcpProxy: give `uri` to musicd."""

    def __init__(self, mongo):
        self.target = dbservers.uri_address(mongo.uri)
        self.proxy = TcpProxy(self.target).start()
        self.uri = dbservers.uri_with_address(mongo.uri, "127.0.0.1", self.proxy.port)


@pytest.fixture
def db_proxy(mongo):
    proxied = ProxiedDatabase(mongo)
    yield proxied
    proxied.proxy.stop()


class RestartableDatabase:
    """A database the test may stop() and start() again (same port, data kept). With
    MUSICD_TEST_MONGODB_URI there is no server to stop: a proxy in front of it is stopped
    instead, which musicd sees the same way (connections cut, then refused)."""

    def __init__(self, mongo, workdir):
        if mongo.kind == "external":
            self.proxied = ProxiedDatabase(mongo)
            self.server = None
            self.uri = self.proxied.uri
            self.client = pymongo.MongoClient(mongo.uri, serverSelectionTimeoutMS=10000)
        else:
            self.proxied = None
            self.server = dbservers.private_server(workdir).start()
            self.uri = self.server.uri
            self.client = pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=10000)
        self.db = _scratch(self.client)

    def stop(self):
        """Make the database unreachable: the server is killed (existing connections reset,
        new ones refused), or the proxy in front of an external one stopped."""
        if self.server:
            self.server.stop(kill=True)
        else:
            self.proxied.proxy.stop()

    def start(self):
        if self.server:
            self.server.start()
        else:
            self.proxied.proxy.start()

    def close(self):
        try:
            if self.server is None:
                self.proxied.proxy.stop()
                self.db.drop()  # the client talks to the external server directly
        finally:
            self.client.close()
            if self.server:
                self.server.stop(kill=True)  # its data is thrown away anyway

    @property
    def running(self):
        return self.server.running if self.server else self.proxied.proxy.running


@pytest.fixture
def restartable_db(mongo, tmp_path):
    r = RestartableDatabase(mongo, tmp_path / "restartable-db")
    yield r
    r.close()


@pytest.fixture
def frontends(tmp_path):
    """Real nginx and Varnish from the shipped config files (frontends.FrontendFactory)."""
    factory = FrontendFactory(tmp_path / "frontends")
    yield factory
    factory.teardown()


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium (webdriver.Browser), started, its chromedriver and profile in the
    test's directory; closed, with whatever it started, after the test."""
    b = Browser(tmp_path / "browser")
    try:
        yield b.start()
    finally:
        b.close()
