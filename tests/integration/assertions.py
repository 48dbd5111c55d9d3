"""Assertions on musicd's responses, for requests' responses and httpraw.Response alike."""

import email.utils
import os
import re

MAX_ERROR_BODY = 256  # "short text/plain" error bodies
STRONG_ETAG = re.compile(r'^"[\x21\x23-\x7e]+"$')  # quoted, no W/ prefix (RFC 9110 entity-tag)


def status_of(resp):
    return resp.status_code if hasattr(resp, "status_code") else resp.status


def header_of(resp, name):
    return resp.headers.get(name) if hasattr(resp, "status_code") else resp.header(name)


def body_of(resp):
    return resp.content if hasattr(resp, "status_code") else resp.body


def http_date(mtime):
    return email.utils.formatdate(int(mtime), usegmt=True)


def assert_file_headers(resp, path, content_type="audio/mpeg"):
    """200 with the headers of the file at path (as it is now)."""
    st = os.stat(path)
    assert status_of(resp) == 200, f"status {status_of(resp)}, body {body_of(resp)[:200]!r}"
    assert header_of(resp, "Content-Length") == str(st.st_size)
    assert header_of(resp, "Content-Type") == content_type
    assert header_of(resp, "Accept-Ranges") == "bytes"
    assert header_of(resp, "Last-Modified") == http_date(st.st_mtime)
    etag = header_of(resp, "ETag")
    assert etag is not None and STRONG_ETAG.match(etag), f"not a strong ETag: {etag!r}"


def assert_file_response(resp, path, content_type="audio/mpeg"):
    """200, the file's headers, and exactly the file's bytes."""
    assert_file_headers(resp, path, content_type)
    body = body_of(resp)
    data = open(path, "rb").read()
    assert len(body) == len(data), f"body is {len(body)} bytes, the file {len(data)}"
    assert body == data, "body differs from the file's bytes"


def assert_error(resp, status, head=False):
    """An error answer: the status, a short text/plain body (none for HEAD), consistent framing."""
    body = body_of(resp)
    assert status_of(resp) == status, f"status {status_of(resp)} (expected {status}), " \
                                      f"body {body[:200]!r}"
    ctype = header_of(resp, "Content-Type") or ""
    assert ctype.split(";")[0].strip() == "text/plain", f"Content-Type {ctype!r}"
    if head:
        assert body == b""
    else:
        assert len(body) <= MAX_ERROR_BODY, f"error body too long: {body[:300]!r}"
        assert header_of(resp, "Content-Length") == str(len(body))
