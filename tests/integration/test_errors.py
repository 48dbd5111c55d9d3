"""Every way a request can fail: 400, 404, 405, with short text/plain bodies and log lines."""

import os
import re
import socket
import time

import pytest
import requests
from bson import ObjectId

import httpraw
from assertions import assert_error
from support import scaled

# The tests only read: one musicd serves the module (conftest.py), but for those marked
# shared_server(False).
pytestmark = pytest.mark.shared_server

TIMEOUT = scaled(10)


def get(server, target, method="GET"):
    return requests.request(method, server.url + target, timeout=TIMEOUT)


def assert_logged(server, oid):
    """musicd's stderr has a line about oid, with a level."""
    lines = server.wait_for_stderr(oid)
    assert any(re.search(r"\b(debug|info|warn|warning|error)\b", line, re.I) for line in lines), \
        f"no level in {lines}"


def assert_nothing_leaked(resp, path):
    """An error answer about path carries neither the path nor any of the file's bytes."""
    body = resp.content
    assert str(path).encode() not in body
    assert os.path.basename(str(path)).encode() not in body
    data = open(path, "rb").read() if os.path.exists(path) else b""
    if data:
        assert data[:16] not in body and data[4096:4160] not in body
    assert resp.headers.get("Content-Length") != str(len(data))


def test_malformed_object_id_is_400(server, library):
    library.add(library.media.short, "short.mp3")
    bad_ids = [
        "123",                              # too short
        "0123456789abcdef0123456",          # 23 digits
        "0123456789abcdef012345678",        # 25 digits
        "0123456789abcdef0123456g",         # 24 characters, one not hex
        "zzzzzzzzzzzzzzzzzzzzzzzz",
        "0123456789abcdef0123456%20",
        "%30123456789abcdef012345",         # percent-encoded digit: not 24 hex digits as sent
    ]
    for bad in bad_ids:
        resp = get(server, f"/musicdb/{bad}/a.mp3")
        assert_error(resp, 400)
        # What is wrong, in one line, and nothing of what was sent.
        assert resp.content == b"400 Bad Request: the track id must be 24 hexadecimal digits\n"


def test_a_malformed_object_id_to_head_is_400_without_a_body(server):
    target = "/musicdb/0123456789abcdef0123456g/a.mp3"
    got, head = get(server, target), get(server, target, method="HEAD")
    assert_error(head, 400, head=True)
    assert head.headers["Content-Length"] == str(len(got.content))


def test_a_400_for_an_id_echoes_nothing_of_it(server):
    resp = get(server, "/musicdb/%3Cscript%3Ealert(1)%3C%2Fscript%3E/a.mp3")
    assert_error(resp, 400)
    assert b"script" not in resp.content and b"alert" not in resp.content


def test_paths_off_the_route_are_404(server, library):
    track = library.add(library.media.short, "short.mp3")
    for target in ["/", "/index.html", "/favicon.ico", "/musicdb", "/musicdb/" + track.id,
                   "/music/" + track.id + "/short.mp3", "/MUSICDB/" + track.id + "/short.mp3",
                   "/x/musicdb/" + track.id + "/short.mp3"]:
        resp = get(server, target)
        assert_error(resp, 404)
        assert track.path.read_bytes()[:16] not in resp.content


def test_other_methods_on_the_route_are_405_with_allow(server, library):
    track = library.add(library.media.short, "short.mp3")
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"]:
        resp = get(server, track.url_path, method=method)
        assert_error(resp, 405)
        assert resp.headers.get("Allow") == "GET, HEAD", method
    # and the track itself is untouched and still served
    assert get(server, track.url_path).content == track.data


def test_head_of_a_missing_document_is_404_without_body(server):
    resp, rest = httpraw.exchange(server.port, "HEAD", f"/musicdb/{ObjectId()}/a.mp3")
    assert_error(resp, 404, head=True)
    assert rest == b""


def test_no_such_document_is_404(server, library):
    library.add(library.media.short, "short.mp3")
    resp = get(server, f"/musicdb/{ObjectId()}/short.mp3")
    assert_error(resp, 404)


def test_document_without_a_string_path_is_404_and_logged(server, library, db):
    ids = {
        "missing": db.insert({"title": "no path at all"}),
        "null": db.insert({"path": None}),
        "number": db.insert({"path": 42}),
        "array": db.insert({"path": [str(library.place(library.media.short, "a.mp3"))]}),
        "object": db.insert({"path": {"file": "a.mp3"}}),
    }
    for kind, oid in ids.items():
        resp = get(server, f"/musicdb/{oid}/a.mp3")
        assert_error(resp, 404)
        assert_logged(server, oid)


def test_path_outside_every_media_root_is_404_and_logged(server, library, tmp_path):
    outside = library.place(library.media.short, "secret.mp3", root=tmp_path / "outside")
    track = library.add_document(outside, "secret.mp3")
    resp = get(server, track.url_path)
    assert_error(resp, 404)
    assert_nothing_leaked(resp, outside)
    assert_logged(server, track.id)


@pytest.mark.shared_server(False)  # the directory beside its musicd's media root
def test_dotdot_path_leaving_the_media_root_is_404(server, library, tmp_path):
    outside = library.place(library.media.short, "secret.mp3", root=tmp_path / "outside")
    sneaky = f"{library.root}/../outside/secret.mp3"
    assert os.path.exists(sneaky)
    track = library.add_document(sneaky, "secret.mp3")
    resp = get(server, track.url_path)
    assert_error(resp, 404)
    assert_nothing_leaked(resp, outside)
    assert_logged(server, track.id)


@pytest.mark.shared_server(False)  # a directory named like its musicd's media root
def test_sibling_directory_sharing_the_root_prefix_is_404(server, library, tmp_path):
    # media root .../media; file in .../media-private: a string prefix check would let it out
    sibling = tmp_path / (library.root.name + "-private")
    outside = library.place(library.media.short, "secret.mp3", root=sibling)
    track = library.add_document(outside, "secret.mp3")
    resp = get(server, track.url_path)
    assert_error(resp, 404)
    assert_nothing_leaked(resp, outside)
    assert_logged(server, track.id)


def test_symlink_inside_the_root_pointing_outside_is_404_and_logged(server, library, tmp_path):
    outside = library.place(library.media.short, "secret.mp3", root=tmp_path / "outside")
    link = library.root / "innocent.mp3"
    link.symlink_to(outside)
    track = library.add_document(link, "innocent.mp3")
    resp = get(server, track.url_path)
    assert_error(resp, 404)
    assert_nothing_leaked(resp, outside)
    assert_logged(server, track.id)


def test_symlinked_directory_inside_the_root_pointing_outside_is_404(server, library, tmp_path):
    outside = library.place(library.media.short, "secret.mp3", root=tmp_path / "outside")
    (library.root / "door").symlink_to(outside.parent, target_is_directory=True)
    track = library.add_document(library.root / "door" / "secret.mp3", "secret.mp3")
    resp = get(server, track.url_path)
    assert_error(resp, 404)
    assert_nothing_leaked(resp, outside)
    assert_logged(server, track.id)


def test_a_directory_is_404(server, library):
    (library.root / "album").mkdir()
    track = library.add_document(library.root / "album", "album.mp3")
    assert_error(get(server, track.url_path), 404)


def test_deleted_file_is_404(musicd, library):
    track = library.add(library.media.short, "gone.mp3")
    server = musicd.start(caches=False)
    assert get(server, track.url_path).status_code == 200
    track.path.unlink()
    resp = get(server, track.url_path)
    assert_error(resp, 404)
    assert_logged(server, track.id)


def test_file_that_never_existed_is_404_and_logged(server, library):
    track = library.add_document(library.root / "never-there.mp3", "never-there.mp3")
    assert_error(get(server, track.url_path), 404)
    assert_logged(server, track.id)


def _raw_exchange_until_close(port, request, timeout=3.0):
    """Send raw request bytes; return (response, bytes after it, whether the server closed the
    connection within timeout seconds, scaled)."""
    timeout = scaled(timeout)
    with httpraw.connect(port, timeout=timeout) as s:
        s.sendall(request)
        reader = httpraw.Reader(s)
        try:
            resp = reader.read_response()
        except socket.timeout:
            raise AssertionError(f"no complete response within {timeout:.0f}s to {request!r}; "
                                 f"got {reader.buf[:300]!r}") from None
        try:
            rest = reader.read_to_eof(limit=1 << 16)
            closed = True
        except socket.timeout:
            rest, closed = reader.buf, False
    return resp, rest, closed


def test_unrecognized_method_gets_a_complete_answer(server, library):
    # RFC 9110 15.6.2: a method the server does not recognize is 501 (libevent 2.1.12 answers
    # those itself, before musicd sees them); 405 with Allow is fine too.
    track = library.add(library.media.short, "short.mp3")
    for method in ["PROPFIND", "BREW"]:
        resp, rest, closed = _raw_exchange_until_close(
            server.port, httpraw.request_bytes(method, track.url_path,
                                               headers={"Connection": "close"}))
        assert resp.status in (405, 501), (method, resp)
        if resp.status == 405:
            assert_error(resp, 405)
            assert resp.header("Allow") == "GET, HEAD", method
        assert resp.header("Content-Length") == str(len(resp.body)), method
        assert rest == b"" and closed, method


def test_connect_on_the_route_is_405_and_the_connection_closes(server, library):
    track = library.add(library.media.short, "short.mp3")
    resp, rest, closed = _raw_exchange_until_close(
        server.port, httpraw.request_bytes("CONNECT", track.url_path,
                                           headers={"Connection": "close"}))
    assert_error(resp, 405)
    assert resp.header("Allow") == "GET, HEAD"
    assert rest == b""
    assert closed, "connection left open after the answer to CONNECT"


def test_connect_elsewhere_gets_a_complete_answer_and_the_connection_closes(server):
    resp, rest, closed = _raw_exchange_until_close(
        server.port, httpraw.request_bytes("CONNECT", "127.0.0.1:80",
                                           headers={"Connection": "close"}))
    assert resp.status in (400, 404, 405, 501), resp
    assert resp.header("Content-Length") == str(len(resp.body)), resp
    assert rest == b""
    assert closed, "connection left open after the answer to CONNECT"


def test_a_fifo_is_404_at_once_and_blocks_nothing(server, library):
    fifo_path = library.root / "fifo.mp3"
    os.mkfifo(fifo_path)  # opening it for reading would wait for a writer forever
    fifo = library.add_document(fifo_path, "fifo.mp3")
    track = library.add(library.media.short, "short.mp3")
    for _ in range(3):
        t0 = time.monotonic()
        assert_error(get(server, fifo.url_path), 404)
        assert time.monotonic() - t0 < scaled(2)
    assert get(server, track.url_path).content == track.data
    assert_logged(server, fifo.id)
