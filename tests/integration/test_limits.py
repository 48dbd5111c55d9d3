"""Per-client limits on musicd itself: --limit-rate / --limit-rate-after (pacing, with nginx's
meaning, for every body source, still by sendfile) and --max-streams-per-client (429 beyond it,
across workers). Through nginx and Varnish: test_limits_frontends.py.

Timings: pacing can only be late on a loaded machine, never early, and the credit it keeps (a
second's worth) absorbs late timers; so each paced time is asserted within 10% of what the rate
says, and only the time a test may take is stretched (scaled()) for the sanitized build.
"""

import hashlib
import socket
import threading
import time

import pytest
import requests

import httpraw
from support import scaled, wait_until

TIMEOUT = scaled(10)
KIB = 1024


def read_paced(port, target, source_ip="127.0.0.1", headers=None, timeout=120.0):
    """GET target on a new connection, reading as fast as the server sends: (status, headers
    dict with lower-case names, body, seconds to the last body byte, seconds to each marks'
    byte count {count: seconds})."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source_ip, 0))
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    t0 = time.monotonic()
    sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra}"
                 f"\r\n".encode())
    data = bytearray()
    arrivals = []   # (bytes so far, seconds)
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            arrivals.append((len(data), time.monotonic() - t0))
    finally:
        sock.close()
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    head_size = len(head) + 4

    def at(count):
        """Seconds until count body bytes had arrived."""
        return next(t for n, t in arrivals if n - head_size >= count)

    return status, fields, body, at(len(body)) if body else 0.0, at


def assert_paced(seconds, size, rate, after, what):
    """A body of size bytes, after bytes free, then rate bytes/s: within 10% of the expected
    time (a slice of credit to begin with shortens it by a fraction of a second at most)."""
    expected = (size - after) / rate
    assert 0.9 * expected <= seconds <= 1.1 * expected, \
        f"{what}: {seconds:.2f} s for {size} bytes at {rate} B/s after {after}: " \
        f"expected {expected:.2f} s +-10%"


def metric(server_or_url, name):
    """The value of a metric line (no labels) from a musicd's /metrics."""
    text = requests.get(server_or_url, timeout=TIMEOUT).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in the metrics")


def metrics_url(musicd_process):
    return f"http://127.0.0.1:{musicd_process.metrics_port}/metrics"


# -- pacing -----------------------------------------------------------------------------------

def test_a_4mb_track_at_128_kib_s_after_512_kib_arrives_within_10_percent_of_the_rate(
        musicd, library):
    track = library.add(library.media.big, "big.mp3")
    rate, after = 128 * KIB, 512 * KIB
    server = musicd.start(extra_args=["--limit-rate", "128K", "--limit-rate-after", "512K"])
    status, fields, body, seconds, at = read_paced(server.port, track.url_path)
    assert status == 200
    assert hashlib.sha256(body).digest() == hashlib.sha256(track.data).digest()
    assert "x-accel-limit-rate" not in fields   # musicd faces this client: it paces itself
    print("PACED", seconds, at(after), (track.size - after) / rate)
    assert_paced(seconds, track.size, rate, after, "4 MB track")
    # The first 512 KiB go at once (a player starts at once): far sooner than the rate allows.
    assert at(after) < after / rate / 2, f"the first {after} bytes took {at(after):.2f} s"
