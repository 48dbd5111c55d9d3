"""Hostile clients through the shipped fronts (config/nginx-musicd.conf, config/varnish-musicd.vcl):
what one attacker sends must never change what the next, unrelated client gets.

The fronts keep their connections to musicd alive and reuse them for other clients, so a request
musicd reads differently from the front (a body musicd leaves unread, parsed as the next request)
would answer someone else. Whatever the front does with the attacker's request itself (relay it,
reject it), the next client must get the exact track it asked for.
"""

import hashlib
import re
import shutil

import pytest
import requests

import httpraw
from support import scaled

pytestmark = pytest.mark.skipif(
    not (shutil.which("nginx") or shutil.which("/usr/sbin/nginx")) or
    not (shutil.which("varnishd") or shutil.which("/usr/sbin/varnishd")),
    reason="nginx and varnishd are needed (scripts/install-deps)")

TIMEOUT = scaled(20)
HEALTHY_TIMEOUT = scaled(30)
# Varnish's probes of /healthz reach musicd over nginx's kept-alive upstream connections too;
# one probe at start-up (to turn the backend healthy) and none during the test, so that the
# next client, not a probe, is the one that takes the connection the attacker used.
QUIET_PROBE_INTERVAL = "300s"


def smuggling_request(method, target, inner, host="localhost"):
    """method (HEAD or TRACE: libevent 2.1 reads no body for them) on target, carrying `inner`
    as its body (Content-Length)."""
    head = (f"{method} {target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(inner)}\r\n"
            f"\r\n").encode()
    return head + inner


def inner_range_request(track, complete):
    """A GET for the first 16 bytes of track: complete, or its head left open (a header line
    begun) so that whatever comes next on the connection completes it."""
    text = f"GET {track.url_path} HTTP/1.1\r\nHost: localhost\r\nRange: bytes=0-15\r\n"
    return (text + "\r\n" if complete else text + "X-Swallow: ").encode()


def attack(front, method, target, inner):
    """Send the smuggling request to the front, read what comes back for a moment, leave."""
    with httpraw.connect(front.port, timeout=TIMEOUT) as s:
        s.sendall(smuggling_request(method, target, inner))
        httpraw.read_until_closed(s, scaled(1.0))


def musicd_statuses(server):
    """The statuses in musicd's access log of requests for /musicdb/ (probes left out)."""
    statuses = []
    for line in server.access_log_lines():
        m = re.match(r'^\S+ \S+ \S+ \[[^]]+\] "([^"]*)" (\d{3}) ', line)
        if m and " /musicdb/" in m.group(1):
            statuses.append(int(m.group(2)))
    return statuses


def assert_whole_track(resp, track):
    assert resp.status_code == 200, \
        f"the next client got {resp.status_code} with {len(resp.content)} bytes " \
        f"(Content-Range {resp.headers.get('Content-Range')!r})"
    assert len(resp.content) == track.size
    assert hashlib.sha256(resp.content).hexdigest() == track.sha256


def next_client_gets_the_whole_track(front, track, server):
    """Two unrelated clients, one after the other, each on its own connection to the front."""
    for _ in range(2):
        resp = requests.get(front.url + track.url_path, timeout=TIMEOUT,
                            headers={"Connection": "close"})
        assert_whole_track(resp, track)
    # nobody asked musicd for a range: a 206 there answered the smuggled request
    assert 206 not in musicd_statuses(server), server.access_log_lines()


@pytest.mark.parametrize("complete", [False, True], ids=["inner-head-open", "inner-complete"])
def test_head_with_a_body_through_nginx_does_not_answer_the_next_client(
        musicd, library, frontends, complete):
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start()
    nginx = frontends.nginx(server.port)
    assert_whole_track(requests.get(nginx.url + track.url_path, timeout=TIMEOUT), track)

    # (nginx answers TRACE 405 itself; it relays a HEAD with its body)
    attack(nginx, "HEAD", track.url_path, inner_range_request(track, complete))
    next_client_gets_the_whole_track(nginx, track, server)
    assert server.running


@pytest.mark.parametrize("chain,method,complete", [
    # Straight to musicd, Varnish relays a TRACE with its body on a pass.
    ("varnish-musicd", "TRACE", False),
    ("varnish-musicd", "TRACE", True),
    # The shipped stack: Varnish 7.1 answers a HEAD with a body 400 itself, and nginx answers
    # TRACE 405 itself; this guards the shipped files (a pipe or a pass there would expose it).
    ("varnish-nginx-musicd", "HEAD", False),
    ("varnish-nginx-musicd", "TRACE", False),
], ids=lambda v: v if isinstance(v, str) else ("inner-complete" if v else "inner-head-open"))
def test_a_body_musicd_does_not_read_through_varnish_does_not_answer_the_next_client(
        musicd, library, frontends, chain, method, complete):
    # Varnish looks HEAD /musicdb/... up in its cache (and fetches with a GET without the body)
    # but passes /healthz, and methods other than GET and HEAD, to its backend as they are:
    # the attacker uses /healthz.
    track = library.add(library.media.big, "big.mp3")
    server = musicd.start()
    if chain == "varnish-nginx-musicd":
        backend_port = frontends.nginx(server.port).port
    else:
        backend_port = server.port  # the shipped VCL pointed at musicd itself
    varnish = frontends.varnish(backend_port, probe_interval=QUIET_PROBE_INTERVAL)
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)

    attack(varnish, method, "/healthz", inner_range_request(track, complete))
    # a miss: Varnish fetches the track over its kept-alive backend connection
    next_client_gets_the_whole_track(varnish, track, server)
    assert server.running
