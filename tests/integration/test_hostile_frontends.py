"""Hostile clients through the shipped fronts (config/nginx-musicd*.conf, config/varnish-musicd*.vcl):
what one attacker sends must never change what the next, unrelated client gets, and no spelling
of a target gets past the rules a front applies to tracks.

The fronts keep their connections to musicd alive and reuse them for other clients, so a request
musicd reads differently from the front (a body musicd leaves unread, parsed as the next request)
would answer someone else. Whatever the front does with the attacker's request itself (relay it,
reject it), the next client must get the exact track it asked for.

A front that reads a target differently from musicd is the same hazard for its rules: every
spelling of a track's target (absolute form, any scheme's case, a Host field disagreeing) must
meet Varnish's token check and request limit and nginx's track location, and the spellings that
only look like a track's must not reach it, through each shipped front.
"""

import hashlib
import re
import shutil
import subprocess
import time

import pytest
import requests

import httpraw
from edgeauth import new_key, python_token, track_acl, write_key_file
from frontends import SHIPPED_ACCEL_PREFIX, request_limit_on, url_signing_on
from support import scaled, wait_until
from test_limits import assert_429, connect_from

pytestmark = pytest.mark.skipif(
    not (shutil.which("nginx") or shutil.which("/usr/sbin/nginx")) or
    not (shutil.which("varnishd") or shutil.which("/usr/sbin/varnishd")),
    reason="nginx and varnishd are needed (scripts/setup/install-deps)")

TIMEOUT = scaled(20)
VARNISHLOG = shutil.which("varnishlog") or "/usr/bin/varnishlog"
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


# -- Every spelling of a target meets the same rules ---------------------------------------------
# RFC 9112 section 3.2.2: a server must accept a target in absolute form ("GET https://host/...",
# the scheme in any case), and musicd and nginx serve it as its path. The rules a front applies
# to tracks (Varnish's token check and request limit, opt-in; nginx's location /musicdb/) must
# meet every spelling that reaches a track, and the spellings that only look like a track's
# must not reach it. Each request carries a Host field naming another host than its target.

HOST = "music.example"
HOST_FIELD = "other.example"
NO_LEAK_LIMITS = ["--trusted-proxy", "127.0.0.1/32", "--limit-rate", "1M",
                  "--limit-rate-after", "1M"]   # musicd hands X-Accel-* to nginx, which hides them


def track_targets(path):
    """The spellings of path's target that name its track, to musicd and every front."""
    return [path, f"http://{HOST}{path}", f"https://{HOST}{path}", f"HTTPS://{HOST}{path}",
            f"hTtP://{HOST}{path}", f"https://{HOST}:8443{path}"]


def foreign_targets(path):
    """Absolute forms of other schemes: nginx serves any scheme's path, musicd none."""
    return [f"ftp://{HOST}{path}", f"x-y://{HOST}{path}"]


def malformed_targets(path):
    """Absolute forms musicd and nginx refuse (400): no host, userinfo (RFC 9110 4.2.4)."""
    return [f"https://{path}", f"https://user@{HOST}{path}"]


def lookalike_targets(path):
    """Targets musicd reads as no track (its route reads the path as sent: no merged slashes,
    no dot segments, no decoding), though nginx, which does all three, may see one."""
    track_dir = path[:path.rindex("/")]
    return [f"/{path}", f"//{HOST}{path}", f"/.{path}", f"https://{HOST}/{path}",
            path.replace("/musicdb/", "/%6Dusicdb/"), f"{track_dir}/..%2F..%2Fhealthz",
            f"https://{HOST}{track_dir}/..%2f..%2fhealthz?x"]


def answer(front, target, source="127.0.0.1"):
    """GET target as sent, on a connection of its own from source: an httpraw.Response."""
    with connect_from(source, front.port, timeout=TIMEOUT) as sock:
        sock.sendall(httpraw.request_bytes("GET", target, host=HOST_FIELD,
                                           headers={"Connection": "close"}))
        return httpraw.Reader(sock).read_response()


def vcl_front(musicd, frontends, library, site, adapt, extra_args=()):
    """musicd, then Varnish with a shipped VCL (its blocks turned on by adapt): the cluster VCL
    straight over musicd (site "cluster-vcl"), else the main VCL over the shipped nginx site
    `site`."""
    offload = ["--x-accel-redirect", SHIPPED_ACCEL_PREFIX] if site == "offload" else []
    server = musicd.start(extra_args=[*offload, *extra_args])
    if site == "cluster-vcl":
        varnish = frontends.varnish_cluster([server.port] * 3, adapt=adapt)
        varnish.wait_backends({f"origin{i}": "healthy" for i in (1, 2, 3)}, HEALTHY_TIMEOUT)
        return server, varnish
    varnish = frontends.varnish(nginx_site(frontends, server, library, site).port,
                                adapt=adapt)
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    return server, varnish


def nginx_site(frontends, server, library, site):
    """The shipped nginx site `site` (proxy, offload, cluster) over musicd."""
    if site == "cluster":
        return frontends.nginx_cluster([server.port] * 3)
    return frontends.nginx(server.port, offload=site == "offload", media_root=library.root)


VCL_FRONTS = ["proxy", "offload", "cluster", "cluster-vcl"]


@pytest.mark.parametrize("site", VCL_FRONTS)
def test_every_spelling_of_a_track_meets_varnish_s_token_check(musicd, frontends, library,
                                                                tmp_path, site):
    # musicd has no keys: Varnish's check is the only one (a setup the VCL presents as valid).
    key = new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [key])
    server, varnish = vcl_front(musicd, frontends, library, site, url_signing_on(keys))
    track = library.add()
    path = track.url_path
    for target in track_targets(path):
        resp = answer(varnish, target)
        assert (resp.status, resp.body) == (403, b"403 Forbidden\n"), (target, resp)
    for target in foreign_targets(path) + malformed_targets(path):
        resp = answer(varnish, target)
        assert (resp.status, resp.body) == (400, b"400 Bad Request\n"), (target, resp)
    for target in lookalike_targets(path):
        resp = answer(varnish, target)
        assert resp.status >= 400 and resp.body != track.data, (target, resp)
    token = python_token(key, track_acl(track.id), int(time.time()) + 3600)
    for target in track_targets(path):
        resp = answer(varnish, f"{target}?__token__={token}")
        assert resp.status == 200 and resp.body == track.data, (target, resp)


@pytest.mark.parametrize("site", ["proxy", "cluster-vcl"])
def test_varnish_sends_an_absolute_target_on_as_its_path_with_its_authority_as_host(
        musicd, frontends, library, site):
    # RFC 9112 section 3.2.2: the target's authority, not a Host field that disagrees.
    server, varnish = vcl_front(musicd, frontends, library, site, [])
    track = library.add()
    for scheme in ("https", "HTTPS"):
        resp = answer(varnish, f"{scheme}://{HOST}:8443{track.url_path}?v={scheme}")
        assert resp.status == 200 and resp.body == track.data
    sent = varnishlog(varnish, "BereqURL", "BereqHeader")
    assert re.findall(r"BereqURL +b (\S+)", sent) == [f"{track.url_path}?v=https",
                                                      f"{track.url_path}?v=HTTPS"], sent
    hosts = re.findall(r"BereqHeader +b Host: (\S+)", sent)
    assert hosts and set(hosts) == {f"{HOST}:8443"}, sent


def varnishlog(varnish, *tags):
    """The records of these tags in Varnish's log so far (varnishlog -d -g raw), fetches
    only: health probes are not logged as requests."""
    p = subprocess.run([VARNISHLOG, "-n", str(varnish.workdir), "-d", "-g", "raw",
                        *[arg for tag in tags for arg in ("-i", tag)]], capture_output=True,
                       text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("site", ["proxy", "cluster-vcl"])
def test_every_spelling_of_a_track_counts_for_varnish_s_request_limit(musicd, frontends,
                                                                      library, site):
    limit = len(track_targets(""))   # one request in each spelling
    server, varnish = vcl_front(musicd, frontends, library, site, request_limit_on(limit))
    track = library.add()
    targets = track_targets(track.url_path)
    for target in targets:
        resp = answer(varnish, target, source="127.0.0.2")
        assert resp.status == 200 and resp.body == track.data, (target, resp)
    for target in targets:
        resp = answer(varnish, target, source="127.0.0.2")
        assert_429((resp.status, {k.lower(): v for k, v in resp.headers}, resp.body),
                   retry_after="60")
    assert answer(varnish, track.url_path, source="127.0.0.3").status == 200


@pytest.mark.parametrize("site", ["proxy", "offload", "cluster"])
def test_every_spelling_nginx_serves_as_a_track_goes_through_its_track_location(
        musicd, frontends, library, site):
    offload = ["--x-accel-redirect", SHIPPED_ACCEL_PREFIX] if site == "offload" else []
    server = musicd.start(extra_args=offload + NO_LEAK_LIMITS)
    nginx = nginx_site(frontends, server, library, site)
    track = library.add()
    path = track.url_path
    served = track_targets(path) + foreign_targets(path)
    for target in served:
        resp = answer(nginx, target)
        assert resp.status == 200 and resp.body == track.data, (target, resp)
        # location /musicdb/ hides what musicd hands nginx for pacing
        assert not [name for name, _ in resp.headers if name.lower().startswith("x-accel")]
    for target in malformed_targets(path):
        assert answer(nginx, target).status == 400, target
    for target in lookalike_targets(path):
        resp = answer(nginx, target)
        assert resp.body != track.data, (target, resp)
    # ... and logs each (the health check's location logs nothing). A worker writes its line
    # after the last byte left, so on a busy machine a line can come after its answer was read.
    # Lines are matched by their request, not their byte count: behind the offload site a line
    # can say 200 0 though the client read every byte (CI, 4 of 8 answers). There a pool thread
    # sends the file (aio threads), and the worker counts what it sent only when it picks the
    # task up again.
    requests_served = {f'"GET {target} HTTP/1.1" 200 ' for target in served}

    def logged():
        return [line for line in nginx.access_log_lines()
                if any(request in line for request in requests_served)]
    try:
        wait_until(lambda: len(logged()) >= len(served), scaled(5),
                   message=f"{len(served)} access log lines of whole answers")
    except AssertionError:
        pass
    assert len(logged()) == len(served), nginx.access_log_lines()
