"""Conditional requests (RFC 9110 section 13) from musicd alone: 304 and 412 from If-None-Match,
If-Modified-Since, If-Match and If-Unmodified-Since in RFC 9110's order, before ranges;
Cache-Control on 200, 206 and 304. Raw sockets, so a 304 or HEAD that sent body bytes is seen."""

import os

import pytest

import httpraw
from assertions import http_date
from support import scaled

# The tests only read: one musicd serves the module (conftest.py), but for those marked
# shared_server(False).
pytestmark = pytest.mark.shared_server

TIMEOUT = scaled(20)
DEFAULT_CACHE_CONTROL = "public, max-age=86400"
MTIME = 1_700_000_000  # Tue, 14 Nov 2023 22:13:20 GMT
LAST_MODIFIED = "Tue, 14 Nov 2023 22:13:20 GMT"
BEFORE = http_date(MTIME - 1)
AFTER = http_date(MTIME + 1)
OTHER_ETAG = '"0-0"'


def fetch(server, track, method="GET", **headers):
    """One request (Connection: close); the response, after checking nothing follows its body."""
    headers = {k.replace("_", "-"): v for k, v in headers.items()}
    resp, rest = httpraw.exchange(server.port, method, track.url_path, headers=headers,
                                  timeout=TIMEOUT)
    assert rest == b"", f"{len(rest)} bytes after the response: {rest[:100]!r}"
    return resp


@pytest.fixture
def track(library):
    """The short mp3 (a copy with a known mtime)."""
    t = library.add(library.media.short, "short.mp3", copy=True)
    os.utime(t.path, (MTIME, MTIME))
    return t


@pytest.fixture
def etag(server, track):
    resp = fetch(server, track, "HEAD")
    assert resp.status == 200
    assert resp.header("Last-Modified") == LAST_MODIFIED
    return resp.header("ETag")


def assert_ok(resp, track, cache_control=DEFAULT_CACHE_CONTROL):
    assert resp.status == 200, f"status {resp.status}: {resp.body[:200]!r}"
    assert resp.header("Content-Length") == str(track.size)
    assert resp.header("Last-Modified") == LAST_MODIFIED
    assert resp.header("Cache-Control") == cache_control
    assert resp.body == track.data


def assert_not_modified(resp, etag, cache_control=DEFAULT_CACHE_CONTROL):
    """304: no body, the validators and Cache-Control repeated, nothing about a body."""
    assert resp.status == 304, f"status {resp.status}: {resp.body[:200]!r}"
    assert resp.reason == "Not Modified"
    assert resp.body == b""
    assert resp.header("ETag") == etag
    assert resp.header("Last-Modified") == LAST_MODIFIED
    assert resp.header("Cache-Control") == cache_control
    names = {name.lower() for name, _ in resp.headers}
    expected = {"server", "etag", "last-modified", "date", "connection"}
    if cache_control is not None:
        expected.add("cache-control")
    assert names == expected, f"304 headers {resp.headers}"


def assert_precondition_failed(resp, head=False):
    assert resp.status == 412, f"status {resp.status}"
    assert resp.reason == "Precondition Failed"
    assert resp.header("Content-Type") == "text/plain; charset=utf-8"
    assert resp.header("Cache-Control") == "no-store"
    assert resp.header("Content-Range") is None
    expected = b"412 Precondition Failed\n"
    assert resp.header("Content-Length") == str(len(expected))
    assert resp.body == (b"" if head else expected)


# -- If-None-Match ---------------------------------------------------------------------------

def test_if_none_match_with_the_etag_is_304(server, track, etag):
    assert_not_modified(fetch(server, track, If_None_Match=etag), etag)


def test_if_none_match_weak_comparison_is_304(server, track, etag):
    assert_not_modified(fetch(server, track, If_None_Match="W/" + etag), etag)


def test_if_none_match_list_with_spaces_is_304(server, track, etag):
    value = f'"a", {OTHER_ETAG} ,\tW/"b", {etag}'
    assert_not_modified(fetch(server, track, If_None_Match=value), etag)


def test_if_none_match_star_is_304(server, track, etag):
    assert_not_modified(fetch(server, track, If_None_Match="*"), etag)


def test_if_none_match_other_etag_is_200(server, track, etag):
    assert_ok(fetch(server, track, If_None_Match=OTHER_ETAG), track)


def test_if_none_match_malformed_list_is_200(server, track, etag):
    """cond.h: a malformed list matches nothing (nginx would skip to the well-formed tag)."""
    assert_ok(fetch(server, track, If_None_Match=f"garbage, {etag}"), track)


def test_if_none_match_on_head_is_304(server, track, etag):
    assert_not_modified(fetch(server, track, "HEAD", If_None_Match=etag), etag)


# -- If-Modified-Since -----------------------------------------------------------------------

def test_if_modified_since_equal_is_304(server, track, etag):
    assert_not_modified(fetch(server, track, If_Modified_Since=LAST_MODIFIED), etag)


def test_if_modified_since_after_is_304(server, track, etag):
    assert_not_modified(fetch(server, track, If_Modified_Since=AFTER), etag)


def test_if_modified_since_in_rfc850_form_is_304(server, track, etag):
    resp = fetch(server, track, If_Modified_Since="Tuesday, 14-Nov-23 22:13:20 GMT")
    assert_not_modified(resp, etag)


def test_if_modified_since_before_is_200(server, track, etag):
    assert_ok(fetch(server, track, If_Modified_Since=BEFORE), track)


def test_if_modified_since_invalid_is_ignored(server, track, etag):
    assert_ok(fetch(server, track, If_Modified_Since="yesterday"), track)


def test_if_none_match_wins_over_if_modified_since(server, track, etag):
    """RFC 9110 13.1.3: with If-None-Match, If-Modified-Since is not evaluated."""
    assert_ok(fetch(server, track, If_None_Match=OTHER_ETAG, If_Modified_Since=AFTER), track)
    assert_not_modified(fetch(server, track, If_None_Match=etag, If_Modified_Since=BEFORE), etag)


# -- If-Match --------------------------------------------------------------------------------

def test_if_match_with_the_etag_is_200(server, track, etag):
    assert_ok(fetch(server, track, If_Match=etag), track)


def test_if_match_list_holding_the_etag_is_200(server, track, etag):
    assert_ok(fetch(server, track, If_Match=f"{OTHER_ETAG}, {etag}"), track)


def test_if_match_star_is_200(server, track, etag):
    assert_ok(fetch(server, track, If_Match="*"), track)


def test_if_match_other_etag_is_412(server, track, etag):
    assert_precondition_failed(fetch(server, track, If_Match=OTHER_ETAG))


def test_if_match_weak_etag_is_412(server, track, etag):
    """If-Match uses the strong comparison: a weak tag never matches."""
    assert_precondition_failed(fetch(server, track, If_Match="W/" + etag))


def test_if_match_failing_on_head_is_412_without_body(server, track, etag):
    assert_precondition_failed(fetch(server, track, "HEAD", If_Match=OTHER_ETAG), head=True)


# -- If-Unmodified-Since ---------------------------------------------------------------------

def test_if_unmodified_since_before_is_412(server, track, etag):
    assert_precondition_failed(fetch(server, track, If_Unmodified_Since=BEFORE))


def test_if_unmodified_since_equal_is_200(server, track, etag):
    assert_ok(fetch(server, track, If_Unmodified_Since=LAST_MODIFIED), track)


def test_if_unmodified_since_after_is_200(server, track, etag):
    assert_ok(fetch(server, track, If_Unmodified_Since=AFTER), track)


def test_if_unmodified_since_invalid_is_ignored(server, track, etag):
    """Documented choice (cond.h): RFC 9110 ignores invalid dates; nginx answers 412."""
    assert_ok(fetch(server, track, If_Unmodified_Since="not a date"), track)


def test_if_match_wins_over_if_unmodified_since(server, track, etag):
    """RFC 9110 13.1.4: with If-Match, If-Unmodified-Since is not evaluated."""
    assert_ok(fetch(server, track, If_Match=etag, If_Unmodified_Since=BEFORE), track)
    resp = fetch(server, track, If_Match=OTHER_ETAG, If_Unmodified_Since=AFTER)
    assert_precondition_failed(resp)


# -- order: 412 before 304, both before ranges ----------------------------------------------

def test_412_comes_before_304(server, track, etag):
    assert_precondition_failed(fetch(server, track, If_Match=OTHER_ETAG, If_None_Match=etag))
    resp = fetch(server, track, If_Unmodified_Since=BEFORE, If_Modified_Since=AFTER)
    assert_precondition_failed(resp)


def test_passing_preconditions_then_304(server, track, etag):
    assert_not_modified(fetch(server, track, If_Match=etag, If_None_Match=etag), etag)
    resp = fetch(server, track, If_Unmodified_Since=AFTER, If_Modified_Since=AFTER)
    assert_not_modified(resp, etag)


def test_304_comes_before_ranges(server, track, etag):
    assert_not_modified(fetch(server, track, Range="bytes=0-1", If_None_Match=etag), etag)
    resp = fetch(server, track, Range=f"bytes={track.size}-", If_Modified_Since=LAST_MODIFIED)
    assert_not_modified(resp, etag)


def test_412_comes_before_ranges(server, track, etag):
    assert_precondition_failed(fetch(server, track, Range="bytes=0-1", If_Match=OTHER_ETAG))
    resp = fetch(server, track, Range=f"bytes={track.size}-", If_Unmodified_Since=BEFORE)
    assert_precondition_failed(resp)


def test_passing_conditions_let_the_range_apply(server, track, etag):
    resp = fetch(server, track, Range="bytes=10-19", If_Match=etag, If_None_Match=OTHER_ETAG,
                 If_Modified_Since=BEFORE)
    assert resp.status == 206
    assert resp.header("Content-Range") == f"bytes 10-19/{track.size}"
    assert resp.body == track.data[10:20]


# -- after the file changes -----------------------------------------------------------------

def test_validators_from_before_a_change_no_longer_match(musicd, track):
    server = musicd.start(extra_args=["--open-file-cache-valid", "0"])
    old = fetch(server, track, "HEAD")
    old_etag = old.header("ETag")
    with open(track.path, "ab") as f:
        f.write(b"new tail")
    os.utime(track.path, (MTIME + 3600, MTIME + 3600))
    resp = fetch(server, track, If_None_Match=old_etag, If_Modified_Since=LAST_MODIFIED)
    assert resp.status == 200
    assert resp.header("ETag") not in (None, old_etag)
    assert resp.header("Last-Modified") == http_date(MTIME + 3600)
    assert resp.body == track.data and resp.body.endswith(b"new tail")
    assert_precondition_failed(fetch(server, track, If_Match=old_etag))
    assert_precondition_failed(fetch(server, track, If_Unmodified_Since=LAST_MODIFIED))
    again = fetch(server, track, If_None_Match=resp.header("ETag"))
    assert again.status == 304 and again.header("ETag") == resp.header("ETag")


# -- Cache-Control ---------------------------------------------------------------------------

def test_cache_control_default_on_200_206_and_304(server, track, etag):
    ok = fetch(server, track)
    partial = fetch(server, track, Range="bytes=0-1")
    not_modified = fetch(server, track, If_None_Match=etag)
    assert [ok.status, partial.status, not_modified.status] == [200, 206, 304]
    for resp in (ok, partial, not_modified):
        assert resp.header_all("Cache-Control") == [DEFAULT_CACHE_CONTROL], resp.status


def test_cache_control_configured_on_200_206_and_304(musicd, track):
    server = musicd.start(extra_args=["--cache-control", "no-cache"])
    etag = fetch(server, track, "HEAD").header("ETag")
    ok = fetch(server, track)
    partial = fetch(server, track, Range="bytes=0-1")
    not_modified = fetch(server, track, If_None_Match=etag)
    assert [ok.status, partial.status, not_modified.status] == [200, 206, 304]
    for resp in (ok, partial, not_modified):
        assert resp.header_all("Cache-Control") == ["no-cache"], resp.status


def test_cache_control_off_on_200_206_and_304(musicd, track):
    server = musicd.start(extra_args=["--cache-control", "off"])
    etag = fetch(server, track, "HEAD").header("ETag")
    ok = fetch(server, track)
    partial = fetch(server, track, Range="bytes=0-1")
    not_modified = fetch(server, track, If_None_Match=etag)
    assert [ok.status, partial.status, not_modified.status] == [200, 206, 304]
    for resp in (ok, partial, not_modified):
        assert resp.header_all("Cache-Control") == [], resp.status
    assert_not_modified(not_modified, etag, cache_control=None)


@pytest.mark.shared_server(False)  # counts the lines of its musicd's access log
def test_304_in_the_access_log(server, track, etag):
    fetch(server, track, If_None_Match=etag)
    fetch(server, track, If_Match=OTHER_ETAG)
    lines = server.wait_for_access_log(3)  # the HEAD of the etag fixture, then these two
    assert f'"GET {track.url_path} HTTP/1.1" 304 ' in lines[1], lines[1]
    assert f'"GET {track.url_path} HTTP/1.1" 412 ' in lines[2], lines[2]
