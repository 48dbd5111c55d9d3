"""A small threaded TCP proxy for tests (stdlib and support.py only).

It listens on 127.0.0.1, forwards every accepted connection to one target address, and can:
  - be stopped: the listener is closed (new connections are refused) and every forwarded
    connection is cut; then restarted on the same port;
  - delay each forwarded chunk, per direction, with delays changeable while it runs
    (a slow database, a slow client...).

Everything is bounded: a maximum number of simultaneous connections (extra ones are closed
at once), timeouts on connecting to the target, and stop() joins its threads with a deadline.

    proxy = TcpProxy(("127.0.0.1", 27017))
    proxy.start()                  # proxy.port is now fixed, also across stop()/start()
    proxy.delay_to_client = 1.0    # every chunk coming back from the target waits 1 s
    proxy.stop(); proxy.start()
    proxy.close()                  # or use it as a context manager
"""

import select
import socket
import struct
import threading
import time

from support import free_port

POLL_INTERVAL = 0.05  # how often blocked threads look at the stop flag, seconds


class TcpProxy:
    def __init__(self, target, listen_host="127.0.0.1", port=None, *, delay_to_server=0.0,
                 delay_to_client=0.0, chunk_size=65536, max_connections=256,
                 connect_timeout=5.0):
        self.target = (target[0], int(target[1]))
        self.listen_host = listen_host
        # A reserved port (support.free_port), not one the kernel picks at bind(0): the proxy
        # stops and starts again on its port, and between the two the kernel could give an
        # ephemeral one to anybody. port=0 still asks the kernel.
        self.port = free_port() if port is None else port
        self.delay_to_server = delay_to_server
        self.delay_to_client = delay_to_client
        self.chunk_size = chunk_size
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout
        self.accepted = 0          # connections accepted since construction
        self.refused = 0           # connections closed because of max_connections or target down
        self.bytes_to_server = 0
        self.bytes_to_client = 0
        self._lock = threading.Lock()
        self._listener = None
        self._accept_thread = None
        self._stopping = None      # threading.Event of the current run
        self._conns = set()        # live (client_sock, server_sock) pairs
        self._threads = set()

    # -- configuration --------------------------------------------------------------------
    def set_delay(self, seconds):
        """Delay every forwarded chunk, both directions, by `seconds`."""
        self.delay_to_server = seconds
        self.delay_to_client = seconds

    @property
    def address(self):
        return (self.listen_host, self.port)

    @property
    def running(self):
        return self._listener is not None

    @property
    def active_connections(self):
        with self._lock:
            return len(self._conns)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, bind_timeout=5.0):
        """Listen (on the same port as before if restarted) and start forwarding."""
        if self._listener is not None:
            raise RuntimeError("proxy already running")
        deadline = time.monotonic() + bind_timeout
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.listen_host, self.port))
                break
            except OSError:
                sock.close()
                if self.port == 0 or time.monotonic() > deadline:
                    raise
                time.sleep(POLL_INTERVAL)
        sock.listen(128)
        sock.settimeout(POLL_INTERVAL)
        self.port = sock.getsockname()[1]
        self._listener = sock
        self._stopping = threading.Event()
        self._accept_thread = threading.Thread(target=self._accept_loop,
                                               args=(sock, self._stopping),
                                               name=f"proxy-accept-{self.port}", daemon=True)
        self._accept_thread.start()
        return self

    def stop(self, join_timeout=5.0):
        """Refuse new connections and cut the existing ones (with a reset)."""
        if self._listener is None:
            return
        self._stopping.set()
        self._listener.close()
        self._listener = None
        with self._lock:
            conns = list(self._conns)
            self._conns.clear()
        for pair in conns:
            for s in pair:
                _abort(s)
        deadline = time.monotonic() + join_timeout
        self._accept_thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            alive = [t.name for t in self._threads if t.is_alive()]
        if self._accept_thread.is_alive() or alive:
            raise RuntimeError(f"proxy threads did not stop: {alive}")

    def restart(self):
        self.stop()
        return self.start()

    close = stop

    def __enter__(self):
        if self._listener is None:
            self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- internals ------------------------------------------------------------------------
    def _accept_loop(self, listener, stopping):
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return  # listener closed by stop()
            client.settimeout(None)
            with self._lock:
                self.accepted += 1
                too_many = len(self._conns) >= self.max_connections
            if too_many:
                self.refused += 1
                _abort(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=self.connect_timeout)
            except OSError:
                self.refused += 1
                _abort(client)
                continue
            pair = (client, server)
            for s in pair:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.setblocking(False)
            with self._lock:
                if stopping.is_set():
                    _abort(client)
                    _abort(server)
                    return
                self._conns.add(pair)
            # One thread per direction keeps the per-chunk delay of one direction from holding
            # up the other.
            state = {"open": 2}
            for src, dst, to_server in ((client, server, True), (server, client, False)):
                t = threading.Thread(target=self._pump, args=(pair, src, dst, to_server,
                                                              stopping, state),
                                     name=f"proxy-{self.port}-{'up' if to_server else 'down'}",
                                     daemon=True)
                with self._lock:
                    self._threads.add(t)
                t.start()

    def _pump(self, pair, src, dst, to_server, stopping, state):
        clean = False  # True when this direction ended with an EOF passed on
        try:
            while not stopping.is_set():
                try:
                    readable, _, _ = select.select([src], [], [], POLL_INTERVAL)
                except (OSError, ValueError):
                    return
                if not readable:
                    continue
                try:
                    data = src.recv(self.chunk_size)
                except BlockingIOError:
                    continue
                except OSError:
                    return
                if not data:
                    # Half-close: pass the EOF on and let the other direction finish.
                    try:
                        dst.shutdown(socket.SHUT_WR)
                        clean = True
                    except OSError:
                        pass
                    return
                delay = self.delay_to_server if to_server else self.delay_to_client
                if delay > 0 and stopping.wait(delay):
                    return
                if not self._send_all(dst, data, stopping):
                    return
                with self._lock:
                    if to_server:
                        self.bytes_to_server += len(data)
                    else:
                        self.bytes_to_client += len(data)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())
                state["open"] -= 1
                last = state["open"] == 0
                if last or not clean:
                    self._conns.discard(pair)
            if not clean:
                # An error or stop(): cut both sides, which also ends the other direction.
                for s in pair:
                    _abort(s)
            elif last:
                for s in pair:
                    _close(s)

    @staticmethod
    def _send_all(sock, data, stopping):
        view = memoryview(data)
        while view and not stopping.is_set():
            try:
                _, writable, _ = select.select([], [sock], [], POLL_INTERVAL)
            except (OSError, ValueError):
                return False
            if not writable:
                continue
            try:
                n = sock.send(view)
            except BlockingIOError:
                continue
            except OSError:
                return False
            view = view[n:]
        return not view


def _abort(sock):
    """Close with a reset, so the peer sees the connection cut rather than a clean close."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    _close(sock)


def _close(sock):
    try:
        sock.close()
    except OSError:
        pass
