"""Byte ranges (RFC 9110 section 14) from musicd alone: 206 with the exact slice,
multipart/byteranges, 416, the multi-range limits, other units, If-Range and HEAD. Every request
goes over a raw socket (httpraw) so the exact headers and framing are seen: nothing may follow the
promised body."""

import os

import pytest

import httpraw
from assertions import http_date
from byteranges import parse_content_range, parse_multipart
from support import scaled

# The tests only read: one musicd serves the module (conftest.py), but for those marked
# shared_server(False).
pytestmark = pytest.mark.shared_server

TIMEOUT = scaled(20)
DEFAULT_CACHE_CONTROL = "public, max-age=86400"
ERROR_CACHE_CONTROL = "no-store"
MTIME = 1_700_000_000  # Tue, 14 Nov 2023 22:13:20 GMT


def fetch(server, target, method="GET", **headers):
    """One request (Connection: close); the response, after checking nothing follows its body."""
    headers = {k.replace("_", "-"): v for k, v in headers.items()}
    resp, rest = httpraw.exchange(server.port, method, target, headers=headers, timeout=TIMEOUT)
    assert rest == b"", f"{len(rest)} bytes after the response: {rest[:100]!r}"
    return resp


def get_range(server, track, value, method="GET", **headers):
    return fetch(server, track.url_path, method, Range=value, **headers)


@pytest.fixture
def track(library):
    """The short mp3 (a copy with a known mtime)."""
    t = library.add(library.media.short, "short.mp3", copy=True)
    os.utime(t.path, (MTIME, MTIME))
    return t


def assert_partial(resp, track, first, last, cache_control=DEFAULT_CACHE_CONTROL):
    """206 carrying exactly bytes first..last of the file, with every header of a 206."""
    data = track.data
    assert resp.status == 206, f"status {resp.status}: {resp.body[:200]!r}"
    assert resp.reason == "Partial Content"
    assert resp.header("Content-Range") == f"bytes {first}-{last}/{len(data)}"
    assert resp.header("Content-Length") == str(last - first + 1)
    assert resp.header("Content-Type") == "audio/mpeg"
    assert resp.header("Accept-Ranges") == "bytes"
    assert resp.header("Last-Modified") == http_date(track.path.stat().st_mtime)
    assert resp.header("ETag") is not None and resp.header("ETag").startswith('"')
    assert resp.header("Cache-Control") == cache_control
    assert len(resp.body) == last - first + 1
    assert resp.body == data[first:last + 1], f"body differs from the file's bytes {first}-{last}"


def assert_whole(resp, track, cache_control=DEFAULT_CACHE_CONTROL):
    """200 with the whole file (what a Range that does not apply gets)."""
    assert resp.status == 200, f"status {resp.status}: {resp.body[:200]!r}"
    assert resp.header("Content-Range") is None
    assert resp.header("Content-Length") == str(track.size)
    assert resp.header("Content-Type") == "audio/mpeg"
    assert resp.header("Accept-Ranges") == "bytes"
    assert resp.header("Cache-Control") == cache_control
    assert resp.body == track.data


def assert_unsatisfiable(resp, size, head=False):
    """416 with Content-Range: bytes */size and a short text/plain body."""
    assert resp.status == 416, f"status {resp.status}: {resp.header('Content-Range')}"
    assert resp.reason == "Range Not Satisfiable"
    assert resp.header("Content-Range") == f"bytes */{size}"
    assert resp.header("Content-Type") == "text/plain; charset=utf-8"
    assert resp.header("Cache-Control") == ERROR_CACHE_CONTROL
    expected = b"416 Range Not Satisfiable\n"
    assert resp.header("Content-Length") == str(len(expected))
    assert resp.body == (b"" if head else expected)


def assert_multipart(resp, track, ranges):
    """206 multipart/byteranges whose parts are exactly ranges (request order), each with its
    Content-Type and Content-Range, and whose Content-Length is the body's length."""
    data = track.data
    assert resp.status == 206, f"status {resp.status}"
    assert resp.header("Content-Range") is None, "a multipart answer has no top Content-Range"
    assert resp.header("Content-Length") == str(len(resp.body))
    assert resp.header("Accept-Ranges") == "bytes"
    assert resp.header("Cache-Control") == DEFAULT_CACHE_CONTROL
    parts = parse_multipart(resp.header("Content-Type"), resp.body)
    assert [(p.first, p.last, p.total) for p in parts] == \
        [(first, last, len(data)) for first, last in ranges]
    for p in parts:
        assert p.content_type == "audio/mpeg"
        assert p.data == data[p.first:p.last + 1], f"part {p.first}-{p.last} differs"
    return parts


# -- single ranges ---------------------------------------------------------------------------

def test_first_last_range_is_206_with_the_exact_slice(server, track):
    assert_partial(get_range(server, track, "bytes=100-199"), track, 100, 199)


def test_partial_answer_carries_the_validators_of_the_whole_file(server, track):
    whole = fetch(server, track.url_path)
    part = get_range(server, track, "bytes=0-99")
    assert part.header("ETag") == whole.header("ETag")
    assert part.header("Last-Modified") == whole.header("Last-Modified") == \
        "Tue, 14 Nov 2023 22:13:20 GMT"


def test_apple_probe_bytes_0_1_gets_exactly_two_bytes(server, track):
    resp = get_range(server, track, "bytes=0-1")
    assert_partial(resp, track, 0, 1)
    assert resp.body == track.data[:2]


def test_chrome_open_range_from_0_is_206_with_the_whole_file(server, track):
    assert_partial(get_range(server, track, "bytes=0-"), track, 0, track.size - 1)


def test_open_ended_range_runs_to_the_last_byte(server, track):
    assert_partial(get_range(server, track, "bytes=1000-"), track, 1000, track.size - 1)


def test_last_byte_alone(server, track):
    n = track.size
    assert_partial(get_range(server, track, f"bytes={n - 1}-{n - 1}"), track, n - 1, n - 1)


def test_suffix_range_is_the_last_n_bytes(server, track):
    n = track.size
    assert_partial(get_range(server, track, "bytes=-500"), track, n - 500, n - 1)


def test_suffix_longer_than_the_file_is_the_whole_file_as_206(server, track):
    n = track.size
    assert_partial(get_range(server, track, f"bytes=-{n + 1000}"), track, 0, n - 1)


def test_end_past_the_file_is_clamped(server, track):
    n = track.size
    assert_partial(get_range(server, track, f"bytes={n - 10}-{n + 10000}"), track, n - 10, n - 1)


def test_spaces_around_numbers_and_dashes_are_allowed(server, track):
    assert_partial(get_range(server, track, "bytes= 10 - 19 "), track, 10, 19)


def test_uppercase_unit_is_a_byte_range(server, track):
    assert_partial(get_range(server, track, "BYTES=0-1"), track, 0, 1)


def test_range_deep_in_a_4mb_file(server, library):
    big = library.add(library.media.big, "big.mp3")
    first, last = 3_000_001, 3_999_999
    assert_partial(get_range(server, big, f"bytes={first}-{last}"), big, first, last)


def test_range_past_4gib_of_a_sparse_file(server, library, tmp_path):
    """64-bit offsets end to end: a 5 GB sparse file with marked bytes past 2^32."""
    path = library.root / "sparse.bin"
    size = 5_000_000_000
    marker = bytes(range(256)) * 4
    with open(path, "wb") as f:
        f.truncate(size)
        f.seek(4_500_000_000)
        f.write(marker)
    track = library.add_document(path, "sparse.bin")
    resp = get_range(server, track, "bytes=4500000000-4500001023")
    assert resp.status == 206
    assert resp.header("Content-Range") == f"bytes 4500000000-4500001023/{size}"
    assert resp.header("Content-Length") == "1024"
    assert resp.header("Content-Type") == "application/octet-stream"
    assert resp.body == marker
    tail = get_range(server, track, "bytes=-3")
    assert tail.header("Content-Range") == f"bytes {size - 3}-{size - 1}/{size}"
    assert tail.body == b"\0\0\0"


# -- 416 -------------------------------------------------------------------------------------

def test_first_byte_at_the_end_is_416(server, track):
    assert_unsatisfiable(get_range(server, track, f"bytes={track.size}-"), track.size)


def test_first_byte_after_the_end_is_416(server, track):
    n = track.size
    assert_unsatisfiable(get_range(server, track, f"bytes={n + 5}-{n + 10}"), n)


def test_empty_suffix_is_416(server, track):
    assert_unsatisfiable(get_range(server, track, "bytes=-0"), track.size)


def test_several_unsatisfiable_ranges_are_416(server, track):
    n = track.size
    assert_unsatisfiable(get_range(server, track, f"bytes={n}-,{n + 1}-{n + 2},-0"), n)


@pytest.mark.parametrize("value", ["bytes=0-", "bytes=0-0", "bytes=-1"])
def test_empty_file_answers_416_to_any_byte_range(server, library, value):
    """Documented choice (range.h, docs/http.md): RFC 9110's 416 where nginx sends 200."""
    path = library.root / "empty.mp3"
    path.write_bytes(b"")
    track = library.add_document(path, "empty.mp3")
    assert_unsatisfiable(get_range(server, track, value), 0)


def test_empty_file_without_range_is_200_and_empty(server, library):
    path = library.root / "empty.mp3"
    path.write_bytes(b"")
    track = library.add_document(path, "empty.mp3")
    resp = fetch(server, track.url_path)
    assert resp.status == 200
    assert resp.header("Content-Length") == "0"
    assert resp.body == b""


@pytest.mark.parametrize("value", [
    "bytes=5-3",              # last before first
    "bytes=5-3,0-1",          # one reversed item beside a valid one (RFC 9110 14.1.1; Go: 416)
    "bytes=0-1,7-2",
    "bytes=--5",
    "bytes=-",
    "bytes=1-2-3",
    "bytes=abc",
    "bytes=0x10-0x20",
    "bytes=5",                # no dash
    "bytes=0-1;2-3",
    "bytes=\t0-1",            # a tab is not a space
    "bytes=18446744073709551616-",                # 2^64
    "bytes=0-99999999999999999999999999999999",
    "bytes=-18446744073709551616",
])
def test_malformed_range_is_416_as_nginx(server, track, value):
    """Documented (range.h, docs/http.md): malformed byte ranges get 416, as nginx answers."""
    assert_unsatisfiable(get_range(server, track, value), track.size)


@pytest.mark.parametrize("value, parts", [
    ("bytes=0-1,,2-3", [(0, 1), (2, 3)]),
    ("bytes=,0-1", [(0, 1)]),
    ("bytes=0-1,", [(0, 1)]),
    ("bytes=0-1, ,2-3", [(0, 1), (2, 3)]),
])
def test_empty_list_elements_are_ignored(server, track, value, parts):
    """RFC 9110 5.6.1.2: a recipient accepts and ignores empty list elements (nginx: 416)."""
    resp = get_range(server, track, value)
    assert resp.status == 206, (value, resp)
    if len(parts) == 1:
        assert resp.header("Content-Range") == f"bytes {parts[0][0]}-{parts[0][1]}/{track.size}"
        assert resp.body == track.data[parts[0][0]:parts[0][1] + 1]
    else:
        got = parse_multipart(resp.header("Content-Type"), resp.body)
        assert [(p.first, p.last) for p in got] == parts


# -- several ranges --------------------------------------------------------------------------

def test_two_ranges_are_multipart_byteranges(server, track):
    n = track.size
    resp = get_range(server, track, f"bytes=0-99,{n - 100}-")
    assert_multipart(resp, track, [(0, 99), (n - 100, n - 1)])


def test_multipart_keeps_request_order_and_does_not_merge(server, track):
    resp = get_range(server, track, "bytes=500-599,0-9,10-19,5-14")
    assert_multipart(resp, track, [(500, 599), (0, 9), (10, 19), (5, 14)])


def test_multipart_parts_mix_every_range_form(server, track):
    n = track.size
    resp = get_range(server, track, f"bytes=10-19, 2000-, -300,{n + 5}-")
    parts = assert_multipart(resp, track, [(10, 19), (2000, n - 1), (n - 300, n - 1)])
    assert len(parts) == 3


def test_unsatisfiable_items_among_ranges_leave_a_single_range(server, track):
    n = track.size
    resp = get_range(server, track, f"bytes={n + 5}-,0-1,-0")
    assert_partial(resp, track, 0, 1)


def test_sixteen_ranges_are_served(server, track):
    ranges = [(10 * i, 10 * i + 4) for i in range(16)]
    value = "bytes=" + ",".join(f"{a}-{b}" for a, b in ranges)
    assert_multipart(get_range(server, track, value), track, ranges)


def test_seventeen_ranges_get_the_whole_file(server, track):
    value = "bytes=" + ",".join(f"{10 * i}-{10 * i + 4}" for i in range(17))
    assert_whole(get_range(server, track, value), track)


def test_max_ranges_is_configurable(musicd, track):
    server = musicd.start(extra_args=["--max-ranges", "2"])
    assert_multipart(get_range(server, track, "bytes=0-0,5-5"), track, [(0, 0), (5, 5)])
    assert_whole(get_range(server, track, "bytes=0-0,5-5,9-9"), track)


def test_max_ranges_one_allows_only_single_ranges(musicd, track):
    server = musicd.start(extra_args=["--max-ranges", "1"])
    assert_partial(get_range(server, track, "bytes=3-5"), track, 3, 5)
    assert_whole(get_range(server, track, "bytes=0-0,5-5"), track)


def test_ranges_adding_up_to_more_than_the_file_get_the_whole_file(server, track):
    assert_whole(get_range(server, track, "bytes=0-,0-"), track)
    assert_whole(get_range(server, track, f"bytes=0-{track.size - 1},0-0"), track)


def test_ranges_adding_up_to_exactly_the_file_are_served(server, track):
    n = track.size
    assert_multipart(get_range(server, track, f"bytes=0-99,100-"), track, [(0, 99), (100, n - 1)])


def test_thousands_of_ranges_get_the_whole_file(server, track):
    value = "bytes=" + ",".join(["0-0"] * 3000)  # 12 KB: under musicd's 16 KiB header limit
    assert_whole(get_range(server, track, value), track)


# -- units ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["items=0-5", "none", "bytes="])
def test_range_in_another_unit_is_ignored(server, track, value):
    assert_whole(get_range(server, track, value), track)


# -- If-Range --------------------------------------------------------------------------------

def validators(server, track):
    resp = fetch(server, track.url_path, "HEAD")
    return resp.header("ETag"), resp.header("Last-Modified")


def test_if_range_with_the_current_etag_gets_the_range(server, track):
    etag, _ = validators(server, track)
    assert_partial(get_range(server, track, "bytes=5-9", If_Range=etag), track, 5, 9)


def test_if_range_with_the_weak_form_of_the_etag_gets_the_whole_file(server, track):
    etag, _ = validators(server, track)
    assert_whole(get_range(server, track, "bytes=5-9", If_Range="W/" + etag), track)


def test_if_range_with_another_etag_gets_the_whole_file(server, track):
    assert_whole(get_range(server, track, "bytes=5-9", If_Range='"not-the-etag"'), track)


def test_if_range_with_last_modified_gets_the_range(server, track):
    _, last_modified = validators(server, track)
    assert last_modified == http_date(MTIME)
    assert_partial(get_range(server, track, "bytes=5-9", If_Range=last_modified), track, 5, 9)


@pytest.mark.parametrize("delta", [-1, 1, 86400])
def test_if_range_with_another_date_gets_the_whole_file(server, track, delta):
    resp = get_range(server, track, "bytes=5-9", If_Range=http_date(MTIME + delta))
    assert_whole(resp, track)


def test_if_range_garbage_gets_the_whole_file(server, track):
    assert_whole(get_range(server, track, "bytes=5-9", If_Range="yesterday"), track)


def test_if_range_that_matches_still_lets_a_bad_range_be_416(server, track):
    etag, _ = validators(server, track)
    assert_unsatisfiable(get_range(server, track, f"bytes={track.size}-", If_Range=etag),
                         track.size)


def test_if_range_that_does_not_match_turns_a_bad_range_into_200(server, track):
    resp = get_range(server, track, f"bytes={track.size}-", If_Range='"old"')
    assert_whole(resp, track)


def test_if_range_with_the_current_etag_gets_multipart(server, track):
    etag, _ = validators(server, track)
    resp = get_range(server, track, "bytes=0-0,9-9", If_Range=etag)
    assert_multipart(resp, track, [(0, 0), (9, 9)])


def test_if_range_without_range_is_ignored(server, track):
    resp = fetch(server, track.url_path, If_Range='"other"')
    assert_whole(resp, track)


def test_if_range_etag_from_before_a_change_gets_the_new_file(musicd, track):
    server = musicd.start(extra_args=["--open-file-cache-valid", "0"])
    old_etag, _ = validators(server, track)
    with open(track.path, "ab") as f:
        f.write(b"appended")
    os.utime(track.path, (MTIME + 60, MTIME + 60))
    resp = get_range(server, track, "bytes=0-9", If_Range=old_etag)
    assert_whole(resp, track)
    assert resp.header("ETag") != old_etag
    assert resp.body.endswith(b"appended")


# -- HEAD ------------------------------------------------------------------------------------

def test_head_with_range_sends_the_206_headers_and_no_body(server, track):
    got = get_range(server, track, "bytes=100-199")
    head = get_range(server, track, "bytes=100-199", method="HEAD")
    assert head.status == 206
    assert head.body == b""
    for name in ("Content-Range", "Content-Length", "Content-Type", "Accept-Ranges", "ETag",
                 "Last-Modified", "Cache-Control"):
        assert head.header(name) == got.header(name), name
    assert head.header("Content-Length") == "100"


def test_head_with_several_ranges_sends_the_multipart_length(server, track):
    got = get_range(server, track, "bytes=0-9,100-199")
    head = get_range(server, track, "bytes=0-9,100-199", method="HEAD")
    assert head.status == 206
    assert head.header("Content-Type").startswith("multipart/byteranges; boundary=")
    assert head.header("Content-Length") == got.header("Content-Length") == str(len(got.body))
    assert head.header("Content-Range") is None


def test_head_with_unsatisfiable_range_is_416_without_body(server, track):
    head = get_range(server, track, f"bytes={track.size}-", method="HEAD")
    assert_unsatisfiable(head, track.size, head=True)


# -- framing on one connection ---------------------------------------------------------------

def test_range_answers_keep_the_connection_framed(server, track):
    """Pipelined 206, multipart 206, 416, HEAD 206 and 200 on one connection: each answer ends
    exactly where its Content-Length says."""
    n = track.size
    requests = [("GET", "bytes=0-1"), ("GET", "bytes=5-9,-5"), ("GET", f"bytes={n}-"),
                ("HEAD", "bytes=0-99"), ("GET", None)]
    with httpraw.connect(server.port, timeout=TIMEOUT) as s:
        payload = b""
        for method, value in requests:
            headers = {"Range": value} if value else {}
            payload += httpraw.request_bytes(method, track.url_path, headers=headers)
        s.sendall(payload)
        reader = httpraw.Reader(s)
        answers = [reader.read_response(head=(m == "HEAD")) for m, _ in requests]
        s.shutdown(1)
        assert reader.read_to_eof() == b""
    assert [a.status for a in answers] == [206, 206, 416, 206, 200]
    assert answers[0].body == track.data[:2]
    parts = parse_multipart(answers[1].header("Content-Type"), answers[1].body)
    assert [(p.first, p.last) for p in parts] == [(5, 9), (n - 5, n - 1)]
    assert answers[2].header("Content-Range") == f"bytes */{n}"
    assert answers[3].body == b"" and answers[3].header("Content-Range") == f"bytes 0-99/{n}"
    assert answers[4].body == track.data


# -- Cache-Control ---------------------------------------------------------------------------

def test_cache_control_value_is_configurable_on_206(musicd, track):
    server = musicd.start(extra_args=["--cache-control", "private, max-age=60"])
    resp = get_range(server, track, "bytes=0-9")
    assert_partial(resp, track, 0, 9, cache_control="private, max-age=60")
    multi = get_range(server, track, "bytes=0-0,2-2")
    assert multi.header("Cache-Control") == "private, max-age=60"


def test_cache_control_off_leaves_206_without_it(musicd, track):
    server = musicd.start(extra_args=["--cache-control", "off"])
    resp = get_range(server, track, "bytes=0-9")
    assert_partial(resp, track, 0, 9, cache_control=None)
    assert resp.header_all("Cache-Control") == []


@pytest.mark.shared_server(False)  # counts the lines of its musicd's access log
def test_range_bytes_in_the_access_log(server, track):
    get_range(server, track, "bytes=0-1")
    get_range(server, track, f"bytes={track.size}-")
    lines = server.wait_for_access_log(2)
    assert f'"GET {track.url_path} HTTP/1.1" 206 2 ' in lines[0], lines[0]
    assert f'"GET {track.url_path} HTTP/1.1" 416 ' in lines[1], lines[1]


@pytest.mark.no_c_binary
def test_content_range_helper_rejects_impossible_values():
    """The checker used above must itself fail on bad values."""
    with pytest.raises(AssertionError):
        parse_content_range("bytes 5-3/10")
    with pytest.raises(AssertionError):
        parse_content_range("bytes */10")
    assert parse_content_range("bytes 0-9/10") == (0, 9, 10)
