"""A MongoDB wire-protocol relay that cuts the connection at the Nth write command.

tcp_proxy.TcpProxy forwards bytes; this one reads the client's side as whole messages (the
16-byte header's length), so it knows which message is a write: an OP_MSG whose body section's
first key is insert, update or delete. At the Nth write (counted over every connection) it
resets both sides of that connection, in one of two ways:

  when="sent"    the write is never forwarded: the database has not seen it;
  when="applied" the write is forwarded and the database's reply dropped: it is applied, and the
                 client never learns so (the hard case for a client that counts what it wrote).

Every other connection, and every message after the cut, is forwarded unchanged. Bounded: one
thread per connection (at most max_connections), each select() wakes up every POLL_INTERVAL to
look at the stop flag, stop() joins with a deadline.

    with WriteCutter(("127.0.0.1", 27017), cut_at=2, when="applied") as cutter:
        ... cutter.uri(mongo_uri) ...
        assert cutter.cut
"""

import select
import socket
import struct
import threading
import time

import dbservers

POLL_INTERVAL = 0.05
OP_MSG = 2013
WRITE_COMMANDS = (b"insert", b"update", b"delete")
HEADER = struct.Struct("<iiii")  # messageLength, requestID, responseTo, opCode


def command_name(message):
    """The command an OP_MSG carries (its body section's first key), or None."""
    if len(message) < HEADER.size + 5 + 5:
        return None
    if HEADER.unpack_from(message)[3] != OP_MSG:
        return None
    body = HEADER.size + 4  # after flagBits
    if message[body] != 0:  # section kind 0: the body document
        return None
    key = body + 1 + 4 + 1  # section kind, the document's length, the first element's type
    end = message.find(b"\0", key)
    return message[key:end] if end > key else None


class WriteCutter:
    def __init__(self, target, cut_at, when="sent", max_connections=32):
        if when not in ("sent", "applied"):
            raise ValueError(when)
        self.target = (target[0], int(target[1]))
        self.cut_at = cut_at
        self.when = when
        self.max_connections = max_connections
        self.writes = 0          # write commands seen, the cut one included
        self.cut = False         # whether the cut happened
        self.commands = []       # the command names seen, in order (for a failing test's message)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads = []
        self._listener = None
        self.port = None

    def uri(self, uri):
        """uri pointed at this relay instead of its database."""
        return dbservers.uri_with_address(uri, "127.0.0.1", self.port)

    def start(self):
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(POLL_INTERVAL)
        self.port = self._listener.getsockname()[1]
        self._spawn(self._accept)
        return self

    def stop(self, timeout=5.0):
        self._stopping.set()
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._listener:
            self._listener.close()
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            raise RuntimeError(f"write cutter threads did not stop: {alive}")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _spawn(self, target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True,
                                  name=f"write-cutter-{self.port}-{len(self._threads)}")
        self._threads.append(thread)
        thread.start()

    def _accept(self):
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if sum(t.is_alive() for t in self._threads) > self.max_connections:
                _reset(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                _reset(client)
                continue
            self._spawn(self._relay, client, server)

    def _is_the_cut(self, message):
        """Counts a write; True for the one to cut at (once)."""
        name = command_name(message)
        with self._lock:
            self.commands.append(name)
            if name not in WRITE_COMMANDS:
                return False
            self.writes += 1
            if self.writes == self.cut_at and not self.cut:
                self.cut = True
                return True
            return False

    def _relay(self, client, server):
        """One connection: whole messages from the client, bytes back from the server."""
        pending = b""            # the client's bytes not yet a whole message
        drop_reply = False       # the cut write was forwarded: reset on the reply
        try:
            while not self._stopping.is_set():
                readable, _, _ = select.select([client, server], [], [], POLL_INTERVAL)
                if client in readable:
                    data = client.recv(65536)
                    if not data:
                        return
                    pending += data
                    while len(pending) >= 4:
                        length = struct.unpack_from("<i", pending)[0]
                        if len(pending) < length:
                            break
                        message, pending = pending[:length], pending[length:]
                        if self._is_the_cut(message):
                            if self.when == "sent":
                                return
                            drop_reply = True
                        server.sendall(message)
                if server in readable:
                    data = server.recv(65536)
                    if not data or drop_reply:
                        return
                    client.sendall(data)
        except OSError:
            return
        finally:
            _reset(client)
            _reset(server)


def _reset(sock):
    """Close with a reset (SO_LINGER 0), as a dropped connection looks to the peer."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()
