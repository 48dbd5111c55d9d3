"""Every door through one wire (issue 15): each byte a client sends is scanned before evhttp
parses it, so the requests evhttp would refuse with its own HTML (or, worse, read two ways) are
answered by musicd with a short text/plain 4xx or 5xx and the connection closed, and what a
client sends meanwhile stays bounded whoever writes the answer; the metrics listener has the
same protections as --listen. Each test fails on the build before that change (9f81c54's).

Each test is bounded in time and in what it sends; the clients use plain sockets (httpraw).
"""

import os
import select
import socket
import subprocess
import time

import pytest
import requests

import httpraw
from assertions import assert_error
from nginx_static import NginxStatic
from support import SANITIZED, SANITIZER_ENV, scaled, wait_until
from test_hostile import assert_408_then_closed, drip
from test_metrics import scrape

# The tests that take `server` only read: one musicd serves the module (conftest.py), but for
# those marked shared_server(False).
pytestmark = pytest.mark.shared_server

TIMEOUT = scaled(10)
MiB = 1 << 20
RSS_GROWTH_LIMIT = 64 * MiB
FLOOD_LIMIT = 512 * MiB
# Not stretched under ASan: a bound that holds stops musicd reading within the first MiBs, and an
# unbounded read (the defects these floods test) grows musicd by far more than the limit in 5 s
# in either build. (Stretched, the pipelined scrapes' flood was 20 s of the exclusive load lane.)
FLOOD_SECONDS = 5


@pytest.fixture(scope="module")
def nginx_static_answer(tmp_path_factory):
    """The status nginx's static module answers the raw request data with (the reference)."""
    root = tmp_path_factory.mktemp("nginx-root")
    (root / "index.html").write_text("index\n")
    nginx = NginxStatic(tmp_path_factory.mktemp("nginx"), root).start()

    def answer(data):
        with httpraw.connect(nginx.port, timeout=TIMEOUT) as s:
            s.sendall(data)
            return httpraw.Reader(s).read_response().status
    yield answer
    nginx.stop()


def answers_then_closed(sock, count, head=False):
    """count answers, then the connection closed: the answers (httpraw.Response)."""
    reader = httpraw.Reader(sock)
    answers = [reader.read_response(head=head) for _ in range(count)]
    rest, how = httpraw.read_until_closed(sock, scaled(3))
    assert reader.buf + rest == b"", f"bytes after the answers: {(reader.buf + rest)[:300]!r}"
    assert how in ("eof", "reset"), "the connection was left open"
    return answers


def refused(port, data, status, head=False):
    """Sends data on a new connection: one status answer (short text/plain), then closed."""
    with httpraw.connect(port, timeout=TIMEOUT) as s:
        s.sendall(data)
        resp = answers_then_closed(s, 1, head=head)[0]
    assert_error(resp, status, head=head)
    return resp


def get(host="h", target="/"):
    return f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def flood(server, sock, seconds, read_bytes, read_every):
    """Sends 1 MiB blocks on sock (non-blocking) for up to `seconds` or FLOOD_LIMIT bytes,
    reading read_bytes every read_every seconds; returns (bytes sent, musicd's peak RSS growth),
    stopping early once the growth passes RSS_GROWTH_LIMIT or the connection ends."""
    baseline = server.rss_bytes()
    junk = b"J" * MiB
    sent, peak, checked = 0, baseline, 0
    sock.setblocking(False)
    start = time.monotonic()
    deadline, next_read = start + seconds, start + read_every
    while sent < FLOOD_LIMIT and time.monotonic() < deadline:
        _, writable, _ = select.select([], [sock], [], 0.01)
        try:
            if time.monotonic() >= next_read:
                next_read = time.monotonic() + read_every
                if sock.recv(read_bytes) == b"":
                    break
            if writable:
                sent += sock.send(junk)
        except BlockingIOError:
            pass
        except ConnectionError:
            break
        if sent - checked >= 8 * MiB or not writable:
            checked = sent
            peak = max(peak, server.rss_bytes())
            if peak - baseline > RSS_GROWTH_LIMIT:
                break
    peak = max(peak, server.rss_bytes())
    return sent, peak - baseline


# -- 1. input bounded whoever writes the answer ---------------------------------------------------

SMALL_SNDBUF_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/socket.h>

/* Every accepted socket with a small send buffer, so that a client that reads slowly fills it
   within a few answers, as it would on a slow link. */
int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags)
{
	static int (*real)(int, struct sockaddr *, socklen_t *, int);
	if (real == NULL)
		real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
	int accepted = real(fd, address, length, flags);
	if (accepted >= 0) {
		int size = 4096;
		setsockopt(accepted, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	}
	return accepted;
}
"""


@pytest.fixture
def small_sndbuf_server(musicd, tmp_path):
    if not os.path.exists("/usr/bin/cc"):
        pytest.skip("no C compiler for the accept4 shim")
    source, shim = tmp_path / "sndbuf.c", tmp_path / "sndbuf.so"
    source.write_text(SMALL_SNDBUF_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"],
                   check=True, capture_output=True, timeout=60)
    env = {"LD_PRELOAD": str(shim)}
    if SANITIZED:  # the ASan runtime must otherwise come first in the library list
        env["ASAN_OPTIONS"] = SANITIZER_ENV["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
    return musicd.start(env=env)


def server_send_queue(client):
    """Bytes the kernel holds on the server's side of client's connection, not yet sent
    (/proc/net/tcp's tx_queue of the socket whose peer is client)."""
    port = client.getsockname()[1]
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].split(":")[1], 16) == port:
            return int(fields[4].split(":")[0], 16)
    return 0


def answers_that_fit_unread(server, one_answer):
    """How many 404s the kernel takes on a connection whose client reads nothing: the ones it
    holds once musicd stops being able to write (client's receive queue + server's send queue)."""
    with httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=4096) as s:
        s.sendall(get(target="/nope") * 300)
        time.sleep(scaled(1))
        held = len(s.recv(1 << 20, socket.MSG_PEEK)) + server_send_queue(s)
    return held // one_answer


@pytest.mark.load
@pytest.mark.parametrize("last", [
    b"GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n",        # a head evhttp cannot parse
    b"BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n",                  # a method it does not know
    b"POST / HTTP/1.1\r\nHost: h\r\nExpect: tea\r\nContent-Length: 5\r\n\r\n",  # an Expect
], ids=["unparsable", "unknown-method", "expect"])
def test_input_stays_bounded_while_the_answer_to_a_refused_request_waits(small_sndbuf_server,
                                                                          last):
    # (fails before the fix: evhttp answered these itself, and while its answer waited for room
    # behind the ones before it, it read on with no read callback and no bound: 2 GiB for 1 GiB.)
    server = small_sndbuf_server
    with httpraw.connect(server.port, timeout=TIMEOUT) as probe:
        probe.sendall(get(target="/nope"))
        one_404 = len(httpraw.Reader(probe).read_response().raw_head) + len(b"404 Not Found\n")
    # Exactly as many 404s as the buffers take unread: then the refused request's answer has
    # no room, and waits, while the client reads nothing and sends all it can.
    fit = answers_that_fit_unread(server, one_404)
    assert fit > 10, f"{fit} answers fit unread"
    with httpraw.connect(server.port, timeout=TIMEOUT, rcvbuf=4096) as s:
        s.sendall(get(target="/nope") * fit + last)
        time.sleep(scaled(0.5))
        sent, growth = flood(server, s, seconds=FLOOD_SECONDS, read_bytes=1, read_every=1e9)
    assert growth <= RSS_GROWTH_LIMIT, \
        f"musicd grew {growth / MiB:.0f} MiB while the client sent {sent / MiB:.0f} MiB"
    assert requests.get(server.url + "/healthz", timeout=TIMEOUT).status_code == 200


# -- 2. the metrics listener has the wire's protections -------------------------------------------

@pytest.mark.shared_server(False)  # its musicd's resident memory is measured
@pytest.mark.load
def test_pipelined_scrapes_never_read_then_junk_do_not_grow_musicd(server):
    # (fails before the fix: the metrics listener was an evhttp of its own, which read on with
    # no bound while its answers waited: 12 -> 528 MiB for 2,000 scrapes and 512 MiB of junk.)
    with httpraw.connect(server.metrics_port, timeout=TIMEOUT, rcvbuf=4096) as s:
        s.sendall(get(target="/metrics") * 2000)
        sent, growth = flood(server, s, seconds=FLOOD_SECONDS, read_bytes=1, read_every=1e9)
    assert growth <= RSS_GROWTH_LIMIT, \
        f"musicd grew {growth / MiB:.0f} MiB while the client sent {sent / MiB:.0f} MiB"


@pytest.mark.timing
def test_a_head_dribbled_to_the_metrics_port_gets_408_at_the_header_timeout(musicd):
    # (fails before the fix: evhttp's timeout restarts at every read, so it never came.)
    server = musicd.start(extra_args=["--header-timeout", "2"])
    with httpraw.connect(server.metrics_port, timeout=TIMEOUT) as s:
        result = drip(s, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert_408_then_closed(*result, timeout=2)


@pytest.mark.load
def test_connections_hoarded_on_the_metrics_port_never_starve_the_track_port(musicd, library):
    # (fails before the fix: slow connections to the metrics listener took every descriptor
    # under the limit, and track requests and /healthz timed out.) The metrics listener keeps
    # at most its own 32 connections, inside its share of the descriptor budget.
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(descriptor_limit=600, extra_args=[
        "--open-file-cache-entries", "16", "--header-timeout", "60"])
    hoard = []
    try:
        for _ in range(700):
            try:
                s = socket.create_connection(("127.0.0.1", server.metrics_port), timeout=2)
                s.sendall(b"G")  # a head begun, never finished
                hoard.append(s)
            except OSError:
                break
        time.sleep(scaled(0.5))
        with requests.Session() as session:
            for _ in range(20):
                resp = session.get(server.url + track.url_path, timeout=TIMEOUT)
                assert resp.status_code == 200 and resp.content == track.data
            assert session.get(server.url + "/healthz", timeout=TIMEOUT).status_code == 200
        open_metrics = [fd for fd, (local, _, state) in server.sockets().items()
                        if local[1] == server.metrics_port and state != "LISTEN"]
        assert len(open_metrics) <= 32, f"{len(open_metrics)} metrics connections held"
    finally:
        for s in hoard:
            s.close()


# -- 3. whitespace before the colon -----------------------------------------------------------------

@pytest.mark.parametrize("field", [b"Content-Length : 29", b"Transfer-Encoding : chunked",
                                   b"Content-Length\t: 29"])
def test_whitespace_before_a_fields_colon_is_400_and_its_body_never_a_request(server, library,
                                                                              field):
    # (fails before the fix: the field was taken as an unknown one, so the "body" below was
    # answered as a second request.)
    track = library.add(library.media.short, "short.mp3")
    inner = get(target=track.url_path)
    refused(server.port, b"POST /x HTTP/1.1\r\nHost: h\r\n" + field + b"\r\n\r\n" + inner, 400)


# -- 4. Connection is a list ----------------------------------------------------------------------

@pytest.mark.parametrize("lines", [
    [b"Connection: keep-alive, close"], [b"Connection: TE, close"], [b"Connection: CLOSE "],
    [b"Connection: keep-alive", b"Connection: close"], [b"Connection: a,,close,b"],
], ids=["keep-alive-close", "te-close", "upper", "two-lines", "empty-elements"])
def test_any_close_among_the_connection_options_closes(server, library, lines):
    # (fails before the fix: only a first Connection line that is exactly "close" closed.)
    track = library.add(library.media.short, "short.mp3")
    head = f"GET {track.url_path} HTTP/1.1\r\nHost: h\r\n".encode() + b"".join(
        line + b"\r\n" for line in lines) + b"\r\n"
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(head + get(target=track.url_path))
        resp = answers_then_closed(s, 1)[0]
    assert resp.status == 200 and resp.body == track.data
    assert resp.header("Connection") == "close"


def test_connection_options_without_close_keep_the_connection(server, library):
    track = library.add(library.media.short, "short.mp3")
    head = f"GET {track.url_path} HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, TE\r\n" \
           "Connection: closed\r\n\r\n".encode()
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(head * 2)
        reader = httpraw.Reader(s)
        for _ in range(2):
            resp = reader.read_response()
            assert resp.status == 200 and resp.body == track.data
            assert resp.header("Connection") is None


# -- 5. what RFC 9112 says must be rejected is rejected, what it says to accept is accepted --------

@pytest.mark.parametrize("data", [
    b"GET / HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\n: empty name\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x00b\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n folded\r\n\r\n",
    b"GET / HTTP/0.0\r\nHost: h\r\n\r\n",
    b"GET / HTTP/0.9\r\nHost: h\r\n\r\n",
    b"GET / HTTP/-1.1\r\nHost: h\r\n\r\n",
    b"GET / HTTP/1.-1\r\nHost: h\r\n\r\n",
    b"GET / HTTP/01.1\r\nHost: h\r\n\r\n",
], ids=["no-host", "two-hosts", "host-space", "empty-name", "nul", "obs-fold", "0.0", "0.9",
        "minus-major", "minus-minor", "leading-zero"])
def test_malformed_requests_are_400_as_nginx_answers(server, nginx_static_answer, data):
    # (fails before the fix: libevent accepted each, and answered most of them 200 or 404.)
    assert nginx_static_answer(data) == 400
    refused(server.port, data, 400)


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/11.1", b"HTTP/9.9"])
def test_an_unsupported_version_is_505_as_nginx_answers(server, nginx_static_answer, version):
    data = b"GET / " + version + b"\r\nHost: h\r\n\r\n"
    assert nginx_static_answer(data) == 505
    refused(server.port, data, 505)


@pytest.mark.parametrize("version", [b"HTTP/1.2", b"HTTP/1.10"])
def test_a_later_http_1_minor_version_is_served(server, library, nginx_static_answer, version):
    track = library.add(library.media.short, "short.mp3")
    assert nginx_static_answer(b"GET / " + version + b"\r\nHost: h\r\n\r\n") == 200
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(f"GET {track.url_path} ".encode() + version + b"\r\nHost: h\r\n\r\n")
        resp = httpraw.Reader(s).read_response()
    assert resp.status == 200 and resp.body == track.data


CHUNKED_HEAD = b"GET %s HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize("body", [
    b"0x5\r\nhello\r\n0\r\n\r\n", b"+5\r\nhello\r\n0\r\n\r\n", b"5\nhello\r\n0\r\n\r\n",
    b"5\r\nhello\n0\r\n\r\n", b"5\r\nhello\r\n0\n\n",
], ids=["0x5", "+5", "bare-lf-size", "bare-lf-data", "bare-lf-last"])
def test_malformed_chunk_lines_are_400_and_close(server, library, body):
    # (fails before the fix: libevent read the sizes with strtoll and accepted bare LF.)
    track = library.add(library.media.short, "short.mp3")
    refused(server.port, (CHUNKED_HEAD % track.url_path.encode()) + body
            + get(target=track.url_path), 400)


def test_a_chunk_extension_is_ignored_not_refused(server, library):
    # (fails before the fix: libevent refused "5;a=b" and answered 400 itself.)
    track = library.add(library.media.short, "short.mp3")
    body = b"5;a=b\r\nhello\r\n3 ; name=\"quoted\"\r\nabc\r\n0;last\r\nX-Trailer: t\r\n\r\n"
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall((CHUNKED_HEAD % track.url_path.encode()) + body + get(target=track.url_path))
        reader = httpraw.Reader(s)
        for _ in range(2):
            resp = reader.read_response()
            assert resp.status == 200 and resp.body == track.data


# Each 400 the scan answers, and the one line its body says why in: a fixed text, never the bytes
# the client sent.
WHY_400 = [
    ("version", b"GET / HTTP/-1.1\r\nHost: h\r\n\r\n", b"the HTTP version is malformed"),
    ("version-byte", b"GET / HTTP/1.1\x01\r\nHost: h\r\n\r\n", b"the HTTP version is malformed"),
    ("target-byte", b"GET /a\x7fb HTTP/1.1\r\nHost: h\r\n\r\n",
     b"the request target is malformed"),
    ("target-form", b"GET ftp://h/a HTTP/1.1\r\nHost: h\r\n\r\n", b"the request target is malformed"),
    ("method", b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", b"the method is malformed"),
    ("no-host", b"GET / HTTP/1.1\r\n\r\n", b"an HTTP/1.1 request needs exactly one Host field"),
    ("two-hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
     b"an HTTP/1.1 request needs exactly one Host field"),
    ("host", b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", b"the Host field is malformed"),
    ("three-lengths", b"GET / HTTP/1.1\r\nHost: h\r\n" + b"Content-Length: 0\r\n" * 3 + b"\r\n",
     b"too many Content-Length or Transfer-Encoding fields"),
    ("length-and-chunked",
     b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
     b"Content-Length or Transfer-Encoding leaves the body's length unclear"),
    ("length-not-a-number", b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: five\r\n\r\n",
     b"Content-Length or Transfer-Encoding leaves the body's length unclear"),
    ("bare-cr", b"GET / HTTP/1.1\rHost: h\r\n\r\n", b"a CR is not followed by LF"),
    ("bare-cr-field", b"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", b"a CR is not followed by LF"),
    ("obs-fold", b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n folded\r\n\r\n",
     b"a field line is folded (obsolete line folding)"),
    ("empty-name", b"GET / HTTP/1.1\r\nHost: h\r\n: empty name\r\n\r\n",
     b"a field name is malformed"),
    ("space-before-colon", b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length : 5\r\n\r\n",
     b"whitespace between a field name and its colon"),
    ("nul", b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x00b\r\n\r\n", b"a field value holds a NUL"),
    ("chunk-size", CHUNKED_HEAD % b"/" + b"0x5\r\nhello\r\n0\r\n\r\n",
     b"a chunk size is malformed"),
    ("chunk-extension", CHUNKED_HEAD % b"/" + b"5;a\x01\r\nhello\r\n0\r\n\r\n",
     b"a chunk extension is malformed"),
    ("chunk-crlf", CHUNKED_HEAD % b"/" + b"5\r\nhello\n0\r\n\r\n",
     b"a chunk line does not end with CRLF"),
    ("trailer", CHUNKED_HEAD % b"/" + b"0\r\nX\x01: t\r\n\r\n", b"a trailer field is malformed"),
]


@pytest.mark.parametrize("data,why", [(data, why) for _, data, why in WHY_400],
                         ids=[name for name, _, _ in WHY_400])
def test_each_400_says_why_in_one_line(server, data, why):
    # (fails before the change: every body was "400 Bad Request\n".)
    resp = refused(server.port, data, 400)
    assert resp.body == b"400 Bad Request: " + why + b"\n"


def test_a_400_to_head_says_why_in_no_body(server):
    get_answer = refused(server.port, b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400)
    head_answer = refused(server.port, b"HEAD / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, head=True)
    assert head_answer.body == b""
    assert head_answer.header("Content-Length") == str(len(get_answer.body))


def test_a_400_echoes_nothing_the_client_sent(server):
    marker = b"<script>alert(1)</script>"
    for data in (b"GET /" + marker + b"\x01 HTTP/1.1\r\nHost: h\r\n\r\n",
                 b"GET / HTTP/1.1\r\nHost: h\r\nX-" + marker + b" : v\r\n\r\n",
                 b"GET / HTTP/1.1\r\nHost: " + marker + b" x\r\n\r\n"):
        resp = refused(server.port, data, 400)
        answer = resp.raw_head + resp.body
        assert b"script" not in answer and b"alert" not in answer, answer


@pytest.mark.shared_server(False)  # reads the last line of its musicd's access log
def test_an_absolute_form_target_is_served_as_its_origin_form(server, library):
    # (fails before the fix: it was a "proxy request": 404 and the connection closed.)
    track = library.add(library.media.short, "short.mp3")
    absolute = f"http://music.example{track.url_path}?v=2"
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(get(host="music.example", target=absolute) * 2)
        reader = httpraw.Reader(s)
        for _ in range(2):
            resp = reader.read_response()
            assert resp.status == 200 and resp.body == track.data
            assert resp.header("Connection") is None
    line = server.wait_for_access_log(2)[-1]
    assert f'"GET {absolute} HTTP/1.1" 200' in line


@pytest.mark.shared_server(False)  # counts its musicd's answers
def test_refused_requests_are_logged_and_counted(server):
    refused(server.port, b"BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n", 501)
    line = server.wait_for_access_log(1)[-1]
    assert '"BREW /pot HTTP/1.1" 501' in line
    wait_until(lambda: scrape(server).requests().get(("501", "other")) == 1, scaled(5),
               message="the 501 counted")


def test_answers_before_a_refused_request_go_out_first(server, library):
    track = library.add(library.media.short, "short.mp3")
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        s.sendall(get(target=track.url_path) * 3 + b"GET / HTTP/1.1\r\nX\r\n\r\n"
                  + get(target=track.url_path))
        answers = answers_then_closed(s, 4)
    assert [a.status for a in answers] == [200, 200, 200, 400]
    assert all(a.body == track.data for a in answers[:3])
    assert_error(answers[3], 400)
