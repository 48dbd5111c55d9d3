"""Reading 206 answers strictly: Content-Range values and multipart/byteranges bodies.

parse_multipart walks a body by the lengths its own Content-Range headers promise (so part bytes
that happen to look like a boundary cannot confuse it) and requires the exact framing RFC 9110
section 14.6 and nginx use:

    CRLF "--" boundary CRLF  headers CRLF CRLF  <last-first+1 bytes>
    ...
    CRLF "--" boundary "--" CRLF
"""

import re

CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")
MULTIPART_TYPE = re.compile(r"^multipart/byteranges; boundary=([0-9A-Za-z'()+_,./:=?-]{1,70})$")


class Part:
    def __init__(self, first, last, total, content_type, data):
        self.first = first
        self.last = last
        self.total = total
        self.content_type = content_type
        self.data = data

    def key(self):
        """What two servers' parts must agree on (boundaries aside)."""
        return (self.first, self.last, self.total, self.content_type, self.data)

    def __repr__(self):
        return f"Part({self.first}-{self.last}/{self.total}, {self.content_type}, " \
               f"{len(self.data)} bytes)"


def parse_content_range(value):
    """(first, last, total) of "bytes first-last/total"; AssertionError otherwise."""
    m = CONTENT_RANGE.match(value or "")
    assert m, f"not a byte Content-Range: {value!r}"
    first, last, total = (int(g) for g in m.groups())
    assert first <= last < total, f"impossible Content-Range {value!r}"
    return first, last, total


def boundary_of(content_type):
    m = MULTIPART_TYPE.match(content_type or "")
    assert m, f"not multipart/byteranges with a boundary: {content_type!r}"
    return m.group(1)


def parse_multipart(content_type, body):
    """The parts of a multipart/byteranges body, in order; AssertionError on any framing fault."""
    delimiter = b"\r\n--" + boundary_of(content_type).encode()
    parts = []
    pos = 0
    while True:
        assert body.startswith(delimiter, pos), \
            f"expected the boundary delimiter at byte {pos}: {body[pos:pos + 80]!r}"
        pos += len(delimiter)
        if body.startswith(b"--\r\n", pos):
            pos += 4
            assert pos == len(body), f"{len(body) - pos} bytes after the closing delimiter"
            return parts
        assert body.startswith(b"\r\n", pos), f"no CRLF after the boundary at byte {pos}"
        pos += 2
        end = body.find(b"\r\n\r\n", pos)
        assert end >= 0, f"part headers at byte {pos} never end"
        headers = {}
        for line in body[pos:end].decode("iso-8859-1").split("\r\n"):
            name, sep, value = line.partition(":")
            assert sep, f"bad part header line {line!r}"
            assert name.lower() not in headers, f"repeated part header {name!r}"
            headers[name.lower()] = value.strip()
        assert set(headers) == {"content-type", "content-range"}, f"part headers {headers}"
        first, last, total = parse_content_range(headers["content-range"])
        pos = end + 4
        data = body[pos:pos + last - first + 1]
        assert len(data) == last - first + 1, \
            f"part {first}-{last} is cut short: {len(data)} bytes"
        parts.append(Part(first, last, total, headers["content-type"], data))
        pos += len(data)
