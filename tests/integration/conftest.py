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
at db; with the session's sources, the audio files the import tests read: import_support.py),
prometheus (factory: prometheus.start(target_port, rule_files)).
"""

import contextlib
import fcntl
import os
import pathlib
import re
import secrets
import sys
import tempfile

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
import support  # noqa: E402
from frontends import FrontendFactory  # noqa: E402
from import_support import Importer, Sources  # noqa: E402
from media import Library, MediaFiles  # noqa: E402
from prometheus_server import PrometheusFactory  # noqa: E402
from musicd_process import MusicdFactory  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402
from webdriver import Browser  # noqa: E402


# -- port reservations (support.free_port) ------------------------------------------------------
# A port is reserved machine-wide from when free_port() hands it out until what took it is over:
# the test, with its function-scoped fixtures, or a fixture of a wider scope (module, session),
# whose servers outlive the test that first needed them.

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    with support.ports_taken() as taken, timing_lane(item):
        yield
    support.release_ports(taken)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.scope == "function":
        yield
        return
    with support.ports_taken() as taken:
        yield
    fixturedef.musicd_ports = getattr(fixturedef, "musicd_ports", []) + taken


def pytest_fixture_post_finalizer(fixturedef, request):
    support.release_ports(getattr(fixturedef, "musicd_ports", []))


# -- markers (pytest.ini) --------------------------------------------------------------------
TIMING_GROUP = "timing"  # the xdist group of the timing and load tests (scripts/tests/run-tests)
# scripts/tests/run-tests runs the sessions against build/musicd and build/asan/musicd at once, each
# with its own group, and names a lock file both share in MUSICD_TEST_TIMING_LANE. On it:
#   - the lane keeps a load test of one session from running beside a timing or load test of
#     the other: a load test holds it exclusively, a timing test shared (the two sessions'
#     timing tests, mostly waiting out deadlines, may run side by side);
#   - the run lock (the same name + ".run") keeps any test from running beside an `alone` one:
#     every test holds it shared, an `alone` test exclusively.
# Whoever waits for a lock exclusively holds its gate (the name + ".gate") meanwhile, so that the
# tests that follow wait behind it instead of keeping it out. A test takes the run lock first,
# then the lane: no test waiting for the lane holds anything another test waits for.
TIMING_LANE = os.environ.get("MUSICD_TEST_TIMING_LANE")
_lock_fds = {}


def _lock_fd(path):
    if path not in _lock_fds:
        _lock_fds[path] = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    return _lock_fds[path]


@contextlib.contextmanager
def _held(path, exclusive):
    """path locked (flock), exclusively or shared, through its gate."""
    gate, lock = _lock_fd(path + ".gate"), _lock_fd(path)
    fcntl.flock(gate, fcntl.LOCK_EX)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    finally:
        fcntl.flock(gate, fcntl.LOCK_UN)
    try:
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def timing_lane(item):
    """Holds the run lock and, for a timing or load test, the lane (above) while the test runs,
    setup and teardown included; without MUSICD_TEST_TIMING_LANE, nothing."""
    if not TIMING_LANE:
        yield
        return
    alone = item.get_closest_marker("alone") is not None
    load = item.get_closest_marker("load") is not None
    with _held(TIMING_LANE + ".run", exclusive=alone):
        if alone or not (load or item.get_closest_marker("timing")):
            yield  # an `alone` test holds everyone else off already
            return
        with _held(TIMING_LANE, exclusive=load):
            yield


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the items
def pytest_collection_modifyitems(config, items):
    grouped = []
    for item in items:
        if any(item.get_closest_marker(m) for m in ("timing", "load", "alone")):
            item.add_marker(pytest.mark.xdist_group(TIMING_GROUP))
            grouped.append(item)
    if hasattr(config, "workerinput") and grouped:
        # Under xdist the group is one unit of work that one worker runs from start to end, the
        # longest there is: handed out first, it runs beside the rest instead of after it. Its
        # `alone` tests go first: an `alone` test waits for every test of both sessions in flight
        # to end, and at the start few are (later, a 26 s pacing test could hold all 8 workers
        # idle meanwhile). (Every worker sorts alike, as xdist requires: a stable sort.)
        ids = {id(item) for item in grouped}
        grouped.sort(key=lambda item: item.get_closest_marker("alone") is None)
        items[:] = grouped + [i for i in items if id(i) not in ids]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Against the ASan build, a test that runs neither musicd nor musicd-import would only
    # repeat what the run against build/musicd did. Skipped here, before its fixtures, rather
    # than deselected: xdist's summary line counts skips (one line of -ra for all), not
    # deselections.
    if support.SANITIZED and item.get_closest_marker("no_c_binary"):
        pytest.skip("runs no binary under test: run once, against build/musicd")


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


def shares_server(request):
    """Whether the test is marked shared_server (pytest.ini) and takes `server`: it only reads,
    so it is served by its module's musicd instead of one of its own. A module marks its tests
    with pytestmark; shared_server(False) on a test of such a module gives it its own. A test
    that does not take `server` (it starts musicd with options of its own) has its own
    database and media root, as anywhere else."""
    mark = request.node.get_closest_marker("shared_server")
    return (mark is not None and (mark.args[0] if mark.args else True)
            and "server" in request.fixturenames)


@pytest.fixture(scope="module")
def module_db(mongo_client):
    """A database for one module's tests (shared_server ones, module-scoped fixtures)."""
    scratch = _scratch(mongo_client)
    yield scratch
    scratch.drop()


@pytest.fixture(scope="module")
def module_library(tmp_path_factory, module_db, media):
    """A media root for one module's tests, its documents in module_db."""
    return Library(tmp_path_factory.mktemp("module-media"), module_db, media)


@pytest.fixture(scope="module")
def module_musicd(tmp_path_factory, mongo, module_db, module_library):
    """The musicd factory of module-scoped fixtures: module_db, module_library's root; every
    process it started is checked as `musicd`'s are, when the module is done."""
    factory = MusicdFactory(tmp_path_factory.mktemp("module-musicd"), mongo.uri, module_db.name,
                            module_library.root)
    yield factory
    problems = factory.teardown()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def module_server(module_musicd):
    """One musicd with the default options for a module's shared_server tests."""
    return module_musicd.start()


@pytest.fixture
def db(request, mongo_client):
    """A database of this test's own on the session server, dropped afterwards; for a
    shared_server test, its module's database (the test's documents have ids of their own)."""
    if shares_server(request):
        yield request.getfixturevalue("module_db")
        return
    scratch = _scratch(mongo_client)
    yield scratch
    scratch.drop()


@pytest.fixture(scope="session")
def media(tmp_path_factory):
    return MediaFiles(tmp_path_factory.mktemp("media-cache"))


@pytest.fixture
def library(request, tmp_path, db, media):
    """The test's media root; for a shared_server test, a directory of its own under its
    module's media root (which the module's musicd serves)."""
    if shares_server(request):
        shared = request.getfixturevalue("module_library")
        prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:40] + "-"
        root = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir=shared.root))
        return Library(root, db, media)
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
def server(request):
    """musicd serving the test's library (db + media root) with default options: the test's
    own, or for a shared_server test its module's, which must still be running and clean of
    sanitizer reports when the test is over (so a crash is put down to the test that made it)."""
    if not shares_server(request):
        yield request.getfixturevalue("musicd").start()
        return
    shared = request.getfixturevalue("module_server")
    assert shared.running, f"the module's musicd has exited ({shared.proc.returncode}):\n" \
        f"{shared.stderr_text()[-5000:]}"
    yield shared
    if not shared.running:
        pytest.fail(f"the module's musicd exited ({shared.proc.returncode}) during this test:\n"
                    f"{shared.stderr_text()[-5000:]}", pytrace=False)
    found = shared.sanitizer_report()
    if found:
        pytest.fail(f"sanitizer reported {found} in the module's musicd:\n"
                    f"{shared.stderr_text()[-20000:]}", pytrace=False)


class ProxiedDatabase:
    """The session database reached through a TcpProxy: give `uri` to musicd."""

    def __init__(self, mongo):
        self.target = dbservers.uri_address(mongo.uri)
        self.proxy = TcpProxy(self.target).start()
        self.uri = dbservers.uri_with_address(mongo.uri, "127.0.0.1", self.proxy.port)


def musicd_of(request):
    """The test's musicd factory if it has one, set up now (before the fixture asking): that
    fixture's teardown then comes before musicd's, and stops musicd first (stop_all)."""
    return request.getfixturevalue("musicd") if "musicd" in request.fixturenames else None


@pytest.fixture
def db_proxy(request, mongo):
    factory = musicd_of(request)
    proxied = ProxiedDatabase(mongo)
    yield proxied
    # musicd stops before its database is cut off: cut first, a lookup left waiting on it holds
    # musicd's exit for its whole 10 s grace period (teardown is not what any test is about).
    if factory is not None:
        factory.stop_all()
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
def restartable_db(request, mongo, tmp_path):
    factory = musicd_of(request)
    r = RestartableDatabase(mongo, tmp_path / "restartable-db")
    yield r
    if factory is not None:
        factory.stop_all()  # as db_proxy does
    r.close()


@pytest.fixture
def frontends(tmp_path):
    """Real nginx and Varnish from the shipped config files (frontends.FrontendFactory)."""
    factory = FrontendFactory(tmp_path / "frontends")
    yield factory
    factory.teardown()


@pytest.fixture
def prometheus(tmp_path):
    """Debian's prometheus (prometheus_server.PrometheusFactory): .start(target_port,
    rule_files=()) scrapes 127.0.0.1:target_port every second and evaluates the rule files as
    often; stopped at teardown."""
    factory = PrometheusFactory(tmp_path / "prometheus")
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
