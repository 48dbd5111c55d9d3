"""A simulated replica set (or mongos) in front of the tests' real database (issue 16).

Each member is a python3-mockupdb server on 127.0.0.1: a wire-protocol peer, as the MongoDB
drivers' own tests use it. It answers hello (and the legacy isMaster handshake) as the test has
set its role, with setName, hosts, primary, me, electionId, tags and lastWrite, and forwards finds
(and getMore, killCursors) to the real database, so every document musicd reads is real. What the
test controls, per member:
  role          primary, secondary, or mongos (hello's msg: "isdbgrid"); step_down() and
                elect() move the primary, with a window without one in between
  lag           documents (by _id) and GridFS chunks (by files_id and n) not yet replicated
                here: finds on this member do not return them; lag_seconds puts lastWriteDate
                behind the primary's (what maxStalenessSeconds reads)
  down()/up()   unreachable: the listening socket is closed (connections refused) and the
                open connections are cut; up() listens on the same port again
  faults        the next finds (or every find, or the first find of each _id / GridFS span)
                answered with a server error code, or cut off halfway through the reply
Each member counts the finds it was sent, by collection, and the _ids they asked for.
"""

import collections
import datetime
import socket
import threading

import mockupdb
import pymongo
from bson import SON, Int64, ObjectId, Timestamp
from bson.codec_options import CodecOptions

from support import free_port

SET_NAME = "rs0"
WIRE_VERSION = 13            # MongoDB 5.0: within what libmongoc 1.23 speaks
HEARTBEAT_MS = 500           # libmongoc's smallest heartbeatFrequencyMS
FORWARDED = ("find", "getmore", "killcursors")
# Fields of musicd's commands that only a real replica set acts on; the one database behind the
# members is a standalone server (FerretDB refuses some of them).
DROPPED = {"$db", "lsid", "$readPreference", "$clusterTime", "readConcern", "txnNumber",
           "$readpreference", "apiVersion", "apiStrict", "apiDeprecationErrors"}
CODEC = CodecOptions(document_class=SON, tz_aware=True)

# Server error codes (src/mongo/base/error_codes.yml)
NOT_WRITABLE_PRIMARY = 10107
NOT_PRIMARY_NO_SECONDARY_OK = 13435
INTERRUPTED_DUE_TO_REPL_STATE_CHANGE = 11602
PRIMARY_STEPPED_DOWN = 189
SHUTDOWN_IN_PROGRESS = 91
RETRYABLE_CODES = (NOT_WRITABLE_PRIMARY, NOT_PRIMARY_NO_SECONDARY_OK,
                   INTERRUPTED_DUE_TO_REPL_STATE_CHANGE, PRIMARY_STEPPED_DOWN,
                   SHUTDOWN_IN_PROGRESS)
BAD_VALUE = 2                # not retryable: a driver gives it to the application at once
CODE_NAMES = {NOT_WRITABLE_PRIMARY: "NotWritablePrimary",
              NOT_PRIMARY_NO_SECONDARY_OK: "NotPrimaryNoSecondaryOk",
              INTERRUPTED_DUE_TO_REPL_STATE_CHANGE: "InterruptedDueToReplStateChange",
              PRIMARY_STEPPED_DOWN: "PrimarySteppedDown",
              SHUTDOWN_IN_PROGRESS: "ShutdownInProgress", BAD_VALUE: "BadValue"}


def election_id(term):
    return ObjectId(f"7fffffff{term:016x}")


class Fault:
    """What a member does to the finds it is sent instead of answering them: ('error', code)
    or ('cut',), for `count` finds (None: every one), or once per _id or GridFS span
    (first_of_each)."""

    def __init__(self, action, code=None, count=None, first_of_each=False, collections=None):
        self.action = action
        self.code = code
        self.count = count
        self.first_of_each = first_of_each
        self.collections = collections  # None: every collection
        self.seen = set()

    def applies(self, collection, key):
        """Whether this find is the fault's (called under the cluster's lock)."""
        if self.collections is not None and collection not in self.collections:
            return False
        if self.first_of_each:
            if key in self.seen:
                return False
            self.seen.add(key)
            return True
        if self.count is None:
            return True
        if self.count > 0:
            self.count -= 1
            return True
        return False


class Member:
    """One simulated mongod (or mongos) on 127.0.0.1:port."""

    def __init__(self, cluster, name, tags=None, role="secondary"):
        self.cluster = cluster
        self.name = name
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.tags = dict(tags or {})
        self.role = role
        self.lag_seconds = 0
        self.hidden_ids = set()
        self.hidden_chunks = set()   # (files_id, n)
        self.fault = None
        self.finds = collections.Counter()      # collection -> finds answered or faulted
        self.ids = collections.Counter()        # _id (hex) -> finds of it
        self.server = None

    # -- lifecycle ------------------------------------------------------------------------
    def up(self):
        self.server = mockupdb.MockupDB(port=self.port)
        self.server.autoresponds(self.handle)
        self.server.run()
        return self

    def down(self):
        if self.server is not None:
            server, self.server = self.server, None
            server.stop()

    # -- controls -------------------------------------------------------------------------
    def lag(self, *ids):
        """Documents (ObjectIds or hex strings) this member does not have yet."""
        with self.cluster.lock:
            self.hidden_ids.update(ObjectId(str(i)) for i in ids)

    def lag_chunks(self, files_id, numbers):
        with self.cluster.lock:
            self.hidden_chunks.update((ObjectId(str(files_id)), n) for n in numbers)

    def catch_up(self):
        with self.cluster.lock:
            self.hidden_ids.clear()
            self.hidden_chunks.clear()

    def set_fault(self, fault):
        with self.cluster.lock:
            self.fault = fault

    def finds_of(self, collection):
        with self.cluster.lock:
            return self.finds[collection]

    # -- the wire -------------------------------------------------------------------------
    def handle(self, request):
        name = (request.command_name or "").lower()
        if name in ("hello", "ismaster"):
            return request.replies(self.hello())
        if name in FORWARDED:
            return self.forward(request, name)
        if name in ("ping", "endsessions"):
            return request.replies(ok=1)
        return request.command_err(59, f"no such command: '{request.command_name}'")

    def hello(self):
        with self.cluster.lock:
            now = datetime.datetime.now(datetime.timezone.utc)
            doc = SON([("helloOk", True), ("minWireVersion", 0),
                       ("maxWireVersion", WIRE_VERSION), ("maxBsonObjectSize", 16 * 1024 * 1024),
                       ("maxMessageSizeBytes", 48000000), ("maxWriteBatchSize", 100000),
                       ("localTime", now), ("logicalSessionTimeoutMinutes", 30),
                       ("connectionId", 1), ("readOnly", False)])
            if self.role == "mongos":
                doc.update(ismaster=True, isWritablePrimary=True, msg="isdbgrid")
                return doc
            primary = self.role == "primary"
            written = now - datetime.timedelta(seconds=self.lag_seconds)
            optime = {"ts": Timestamp(int(written.timestamp()), 1), "t": Int64(self.cluster.term)}
            doc.update(ismaster=primary, isWritablePrimary=primary,
                       secondary=self.role == "secondary", setName=self.cluster.set_name,
                       setVersion=1, hosts=[m.host for m in self.cluster.members],
                       me=self.host, tags=self.tags,
                       lastWrite={"opTime": optime, "lastWriteDate": written,
                                  "majorityOpTime": optime, "majorityWriteDate": written})
            if self.cluster.primary is not None:
                doc["primary"] = self.cluster.primary.host
            if primary:
                doc["electionId"] = election_id(self.cluster.term)
            return doc

    def forward(self, request, name):
        command = SON((k, v) for k, v in request.doc.items() if k not in DROPPED)
        collection = command.get("find") if name == "find" else command.get("collection")
        key = self.fault_key(command) if name == "find" else None
        mode = (request.doc.get("$readPreference") or {}).get("mode", "primary")
        with self.cluster.lock:
            self.finds[collection] += name == "find"
            if key is not None and key[0] == "_id":
                self.ids[str(key[1])] += 1
            fault = self.fault if self.fault and name == "find" and \
                self.fault.applies(collection, key) else None
            role = self.role
        if fault is not None and fault.action == "error":
            return request.command_err(fault.code, CODE_NAMES.get(fault.code, "error"),
                                       codeName=CODE_NAMES.get(fault.code, "Error"))
        if role == "secondary" and mode == "primary":
            return request.command_err(NOT_PRIMARY_NO_SECONDARY_OK,
                                       "not primary and secondaryOk=false",
                                       codeName="NotPrimaryNoSecondaryOk")
        try:
            reply = self.cluster.client[request.doc["$db"]].command(command,
                                                                      codec_options=CODEC)
        except pymongo.errors.OperationFailure as e:
            return request.command_err(e.code or 1, str(e))
        if name == "find":
            self.hide(command, reply)
        if fault is not None and fault.action == "cut":
            return self.cut(request, reply)
        return request.replies(reply)

    @staticmethod
    def fault_key(command):
        """What first_of_each faults count: the _id asked for, or the GridFS span."""
        flt = command.get("filter") or {}
        if "_id" in flt:
            return ("_id", flt["_id"])
        if "files_id" in flt:
            return ("span", flt["files_id"], str(flt.get("n")))
        return ("other", str(flt))

    def hide(self, command, reply):
        """Takes out of the reply's batch what has not reached this member yet."""
        cursor = reply.get("cursor") or {}
        batch = cursor.get("firstBatch")
        if batch is None:
            return
        with self.cluster.lock:
            if not self.hidden_ids and not self.hidden_chunks:
                return
            files_id = (command.get("filter") or {}).get("files_id")
            cursor["firstBatch"] = [
                d for d in batch
                if d.get("_id") not in self.hidden_ids and
                (files_id is None or (files_id, d.get("n")) not in self.hidden_chunks)]

    @staticmethod
    def cut(request, reply):
        """Half of the reply's bytes, then the connection closed."""
        data = mockupdb.OpMsgReply(reply).reply_bytes(request)
        try:
            request._client.sendall(data[:len(data) // 2])
            request._client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True


class ReplicaSet:
    """Three members (a, b, c; a the primary) in front of database_uri's server."""

    def __init__(self, database_uri, tags=None, set_name=SET_NAME):
        self.lock = threading.RLock()
        self.set_name = set_name
        self.term = 1
        self.client = pymongo.MongoClient(database_uri, serverSelectionTimeoutMS=10000)
        tags = tags or {}
        self.members = [Member(self, n, tags.get(n)) for n in ("a", "b", "c")]
        self.primary = self.members[0]
        self.primary.role = "primary"

    def __getitem__(self, name):
        return next(m for m in self.members if m.name == name)

    def start(self):
        for m in self.members:
            m.up()
        return self

    def stop(self):
        for m in self.members:
            m.down()
        self.client.close()

    def uri(self, **options):
        options.setdefault("replicaSet", self.set_name)
        options.setdefault("heartbeatFrequencyMS", HEARTBEAT_MS)
        query = "&".join(f"{k}={v}" for k, v in options.items())
        return f"mongodb://{','.join(m.host for m in self.members)}/?{query}"

    def step_down(self):
        """The primary becomes a secondary; no member is primary until elect()."""
        with self.lock:
            if self.primary is not None:
                self.primary.role = "secondary"
            self.primary = None

    def elect(self, name):
        with self.lock:
            self.term += 1
            member = self[name]
            member.role = "primary"
            self.primary = member

    def finds(self, collection):
        """{member name: finds of collection it was sent}."""
        return {m.name: m.finds_of(collection) for m in self.members}

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Mongos(ReplicaSet):
    """One router (hello: msg "isdbgrid") in front of database_uri's server."""

    def __init__(self, database_uri):
        self.lock = threading.RLock()
        self.set_name = None
        self.term = 1
        self.client = pymongo.MongoClient(database_uri, serverSelectionTimeoutMS=10000)
        self.members = [Member(self, "router", role="mongos")]
        self.primary = None

    def uri(self, **options):
        options.setdefault("heartbeatFrequencyMS", HEARTBEAT_MS)
        query = "&".join(f"{k}={v}" for k, v in options.items())
        return f"mongodb://{self.members[0].host}/?{query}"
