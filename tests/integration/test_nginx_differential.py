"""musicd against nginx: the same mp3 served by both, the same Range / If-* requests sent to both.

nginx (Debian's nginx-light, static module, `if_modified_since before`, `max_ranges 16`, see
nginx_static.py) is the reference of issue 3. Each server's conditional headers are built from its
own validators (its own ETag and Last-Modified; both servers read the same inode, so the dates are
equal, the ETag formats are not). For every case of BATTERY both must agree on the status, on
Content-Range and on the body bytes (multipart bodies are parsed and their parts' ranges, types and
bytes compared; boundaries differ). 412/416 bodies are each server's own error page and are not
compared.

Where musicd differs from nginx on purpose, the case is in DOCUMENTED_DIFFERENCES and its test
asserts both answers (musicd's documented one, and nginx's, so that the note stays true):
  - an empty file: musicd 416 to any byte range (RFC 9110), nginx 200 (range.h);
  - If-Unmodified-Since that is not a date: musicd ignores it (RFC 9110), nginx 412 (cond.h);
  - If-Match present: musicd does not evaluate If-Unmodified-Since (RFC 9110 13.2.2), nginx does;
  - If-None-Match present: musicd does not evaluate If-Modified-Since (RFC 9110 13.2.2), nginx
    needs both to say "not modified";
  - a malformed If-None-Match list: musicd matches nothing (cond.h), nginx skips the bad member;
  - a date with trailing garbage in If-Modified-Since or If-Range: not an HTTP-date, so musicd
    ignores it (cond.h); nginx reads the date and ignores what follows;
  - a trailing tab in a Range value: RFC 9110 5.5 excludes trailing whitespace (SP or HTAB) from a
    field value and libevent strips it, so musicd reads "bytes=-999"; nginx keeps the tab and
    answers 416. (Not in range.h: this happens in the HTTP layer, before range_parse.)

test_random_range_headers_answer_as_nginx sends both servers a fixed-seed batch of Range values
built from grammar fragments (numbers below 2^63, no tabs) and requires the same answers.
"""

import collections
import email.utils
import random

import pytest

import httpraw
from byteranges import parse_content_range, parse_multipart
from nginx_static import NginxStatic
from support import scaled

TIMEOUT = scaled(30)
TRACK = "big.mp3"


class Validators:
    """One server's answer to HEAD: what its conditional headers are built from."""

    def __init__(self, resp):
        assert resp.status == 200, resp
        self.etag = resp.header("ETag")
        self.last_modified = resp.header("Last-Modified")
        self.mtime = int(email.utils.parsedate_to_datetime(self.last_modified).timestamp())
        self.size = int(resp.header("Content-Length"))
        assert self.etag and self.etag.startswith('"'), resp

    def date(self, delta=0):
        return email.utils.formatdate(self.mtime + delta, usegmt=True)


class Pair:
    def __init__(self, musicd, nginx, musicd_path, nginx_path, data):
        self.musicd = musicd
        self.nginx = nginx
        self.musicd_path = musicd_path
        self.nginx_path = nginx_path
        self.data = data
        self.musicd_validators = Validators(self.ask_musicd("HEAD", {}))
        self.nginx_validators = Validators(self.ask_nginx("HEAD", {}))
        assert self.musicd_validators.last_modified == self.nginx_validators.last_modified
        assert self.musicd_validators.size == self.nginx_validators.size == len(data)

    def _ask(self, port, path, method, headers):
        resp, rest = httpraw.exchange(port, method, path, headers=headers, timeout=TIMEOUT)
        assert rest == b"", f"{len(rest)} bytes after the response on port {port}"
        return resp

    def ask_musicd(self, method, headers):
        return self._ask(self.musicd.port, self.musicd_path, method, headers)

    def ask_nginx(self, method, headers):
        return self._ask(self.nginx.port, self.nginx_path, method, headers)

    def both(self, case):
        """(musicd's response, nginx's response) to the case, each with its own validators."""
        m = self.ask_musicd(case.method, case.headers(self.musicd_validators))
        n = self.ask_nginx(case.method, case.headers(self.nginx_validators))
        return m, n


def start_pair(musicd, library, tmp_path, source, name):
    track = library.add(source, name)
    server = musicd.start()
    nginx = NginxStatic(tmp_path / "nginx", library.root).start()
    return Pair(server, nginx, track.url_path, f"/{name}", track.data), nginx


@pytest.fixture(scope="module")
def pair(module_musicd, module_library, tmp_path_factory):
    """musicd and nginx serving the same 4 MB mp3 (one inode), one pair for the module's tests
    (they only read); nginx always stopped."""
    nginx = None
    try:
        p, nginx = start_pair(module_musicd, module_library, tmp_path_factory.mktemp("pair"),
                              module_library.media.big, TRACK)
        yield p
    finally:
        if nginx is not None:
            nginx.stop()


# -- the battery -----------------------------------------------------------------------------

Case = collections.namedtuple("Case", "id status method headers")


def case(id, status, headers=lambda v: {}, method="GET"):
    return Case(id, status, method, headers)


def rng(value):
    """A Range header whose value may depend on the file size: value(v) or a fixed string."""
    return lambda v: {"Range": value(v) if callable(value) else value}


def with_range(value, more):
    return lambda v: {"Range": value, **more(v)}


SIXTEEN = ",".join(f"{1000 * i}-{1000 * i + 99}" for i in range(16))
SEVENTEEN = ",".join(f"{1000 * i}-{1000 * i + 99}" for i in range(17))

BATTERY = [
    case("no-range", 200),
    # single ranges
    case("apple-probe-0-1", 206, rng("bytes=0-1")),
    case("chrome-open-0", 206, rng("bytes=0-")),
    case("first-last", 206, rng("bytes=1000-1999")),
    case("open-ended-near-end", 206, rng(lambda v: f"bytes={v.size - 1000}-")),
    case("suffix", 206, rng("bytes=-1000")),
    case("suffix-longer-than-file", 206, rng(lambda v: f"bytes=-{v.size + 1}")),
    case("end-past-file-clamped", 206, rng(lambda v: f"bytes={v.size - 10}-{v.size + 1000}")),
    case("largest-signed-64-bit-end", 206, rng("bytes=0-9223372036854775807")),
    case("uppercase-unit", 206, rng("BYTES=0-1")),
    # nothing satisfiable
    case("first-byte-at-end", 416, rng(lambda v: f"bytes={v.size}-")),
    case("first-byte-after-end", 416, rng(lambda v: f"bytes={v.size + 100}-{v.size + 200}")),
    case("empty-suffix", 416, rng("bytes=-0")),
    # several ranges
    case("multipart-three", 206, rng("bytes=0-99,1000-1099,-100")),
    case("multipart-request-order", 206, rng("bytes=5000-5099,0-9")),
    case("multipart-overlapping-not-merged", 206, rng("bytes=0-9,5-14")),
    case("multipart-spaces", 206, rng("bytes= 0 - 9 , 20 - 29 ")),
    case("one-satisfiable-among-several", 206, rng(lambda v: f"bytes={v.size}-,0-1")),
    case("sixteen-ranges", 206, rng("bytes=" + SIXTEEN)),
    case("seventeen-ranges-whole-file", 200, rng("bytes=" + SEVENTEEN)),
    case("ranges-exceeding-file-whole-file", 200, rng("bytes=0-,0-")),
    # other units
    case("other-unit", 200, rng("items=0-5")),
    case("unit-alone", 200, rng("bytes=")),
    # malformed: 416 in both
    case("malformed-double-dash", 416, rng("bytes=--5")),
    case("malformed-last-before-first", 416, rng("bytes=5-3")),
    case("malformed-garbage", 416, rng("bytes=abc")),
    case("malformed-three-numbers", 416, rng("bytes=1-2-3")),
    case("malformed-dash-alone", 416, rng("bytes=-")),
    case("malformed-overflow-2^64", 416, rng("bytes=0-18446744073709551616")),
    case("malformed-overflow-huge", 416, rng("bytes=99999999999999999999999-")),
    # nginx reads off_t: a number from 2^63 on is malformed to it
    case("overflow-2^63-last", 416, rng("bytes=0-9223372036854775808")),
    case("overflow-2^63-suffix", 416, rng("bytes=-9223372036854775808")),
    # nginx reads a suffix's digits right after its dash
    case("space-after-suffix-dash", 416, rng("bytes=- 5")),
    # If-Range
    case("if-range-etag", 206, lambda v: {"Range": "bytes=0-1", "If-Range": v.etag}),
    case("if-range-weak-etag", 200, lambda v: {"Range": "bytes=0-1", "If-Range": "W/" + v.etag}),
    case("if-range-other-etag", 200, lambda v: {"Range": "bytes=0-1", "If-Range": '"x-1"'}),
    case("if-range-date", 206, lambda v: {"Range": "bytes=0-1", "If-Range": v.date()}),
    case("if-range-other-date", 200, lambda v: {"Range": "bytes=0-1", "If-Range": v.date(-1)}),
    case("if-range-garbage", 200, lambda v: {"Range": "bytes=0-1", "If-Range": "soon"}),
    case("if-range-etag-multipart", 206,
         lambda v: {"Range": "bytes=0-0,9-9", "If-Range": v.etag}),
    case("if-range-etag-unsatisfiable", 416,
         lambda v: {"Range": f"bytes={v.size}-", "If-Range": v.etag}),
    case("if-range-other-unsatisfiable", 200,
         lambda v: {"Range": f"bytes={v.size}-", "If-Range": '"x-1"'}),
    # HEAD
    case("head-range", 206, rng("bytes=0-99"), method="HEAD"),
    case("head-multipart", 206, rng("bytes=0-9,100-199"), method="HEAD"),
    case("head-unsatisfiable", 416, rng(lambda v: f"bytes={v.size}-"), method="HEAD"),
    case("head-if-none-match", 304, lambda v: {"If-None-Match": v.etag}, method="HEAD"),
    # If-None-Match
    case("if-none-match-etag", 304, lambda v: {"If-None-Match": v.etag}),
    case("if-none-match-weak", 304, lambda v: {"If-None-Match": "W/" + v.etag}),
    case("if-none-match-star", 304, lambda v: {"If-None-Match": "*"}),
    case("if-none-match-list", 304, lambda v: {"If-None-Match": f'"x-1", "y-2" , {v.etag}'}),
    case("if-none-match-other", 200, lambda v: {"If-None-Match": '"x-1"'}),
    # If-Modified-Since
    case("if-modified-since-equal", 304, lambda v: {"If-Modified-Since": v.date()}),
    case("if-modified-since-after", 304, lambda v: {"If-Modified-Since": v.date(3600)}),
    case("if-modified-since-before", 200, lambda v: {"If-Modified-Since": v.date(-1)}),
    case("if-modified-since-invalid", 200, lambda v: {"If-Modified-Since": "yesterday"}),
    case("if-none-match-other-and-if-modified-since-equal", 200,
         lambda v: {"If-None-Match": '"x-1"', "If-Modified-Since": v.date()}),
    case("if-none-match-and-if-modified-since-equal", 304,
         lambda v: {"If-None-Match": v.etag, "If-Modified-Since": v.date()}),
    # If-Match
    case("if-match-etag", 200, lambda v: {"If-Match": v.etag}),
    case("if-match-star", 200, lambda v: {"If-Match": "*"}),
    case("if-match-list", 200, lambda v: {"If-Match": f'"x-1", {v.etag}'}),
    case("if-match-other", 412, lambda v: {"If-Match": '"x-1"'}),
    case("if-match-weak", 412, lambda v: {"If-Match": "W/" + v.etag}),
    # If-Unmodified-Since
    case("if-unmodified-since-before", 412, lambda v: {"If-Unmodified-Since": v.date(-1)}),
    case("if-unmodified-since-equal", 200, lambda v: {"If-Unmodified-Since": v.date()}),
    case("if-unmodified-since-after", 200, lambda v: {"If-Unmodified-Since": v.date(3600)}),
    # order: 412 before 304, both before ranges
    case("if-match-other-and-if-none-match", 412,
         lambda v: {"If-Match": '"x-1"', "If-None-Match": v.etag}),
    case("if-unmodified-since-before-and-if-modified-since", 412,
         lambda v: {"If-Unmodified-Since": v.date(-1), "If-Modified-Since": v.date()}),
    case("if-none-match-with-range", 304, with_range("bytes=0-1", lambda v: {
        "If-None-Match": v.etag})),
    case("if-modified-since-with-bad-range", 304, lambda v: {
        "Range": f"bytes={v.size}-", "If-Modified-Since": v.date()}),
    case("if-match-other-with-range", 412, with_range("bytes=0-1", lambda v: {
        "If-Match": '"x-1"'})),
    case("if-match-etag-with-range", 206, with_range("bytes=10-19", lambda v: {
        "If-Match": v.etag})),
    case("conditions-pass-with-multipart", 206, with_range("bytes=0-9,-10", lambda v: {
        "If-Match": v.etag, "If-None-Match": '"x-1"', "If-Modified-Since": v.date(-1)})),
]

Difference = collections.namedtuple("Difference", "id musicd nginx method headers why")

DOCUMENTED_DIFFERENCES = [
    Difference("if-unmodified-since-invalid-ignored", 200, 412, "GET",
               lambda v: {"If-Unmodified-Since": "not a date"},
               "cond.h / RFC 9110 13.1.4: an invalid date is ignored; nginx fails it"),
    Difference("if-match-wins-over-if-unmodified-since", 200, 412, "GET",
               lambda v: {"If-Match": v.etag, "If-Unmodified-Since": v.date(-1)},
               "cond.h / RFC 9110 13.2.2: If-Unmodified-Since is evaluated only without If-Match"),
    Difference("if-none-match-wins-over-if-modified-since", 304, 200, "GET",
               lambda v: {"If-None-Match": v.etag, "If-Modified-Since": v.date(-1)},
               "cond.h / RFC 9110 13.2.2: If-Modified-Since is evaluated only without "
               "If-None-Match; nginx wants both to say not modified"),
    Difference("if-none-match-wins-over-invalid-if-modified-since", 304, 200, "GET",
               lambda v: {"If-None-Match": v.etag, "If-Modified-Since": "yesterday"},
               "cond.h / RFC 9110 13.2.2, as above"),
    Difference("if-none-match-malformed-list-matches-nothing", 200, 304, "GET",
               lambda v: {"If-None-Match": f"garbage, {v.etag}"},
               "cond.h: a malformed entity-tag list matches nothing; nginx skips the bad member"),
    Difference("if-match-quote-comma-is-malformed", 412, 200, "GET",
               lambda v: {"If-Match": '",' + v.etag},
               "cond.c: RFC 9110's #entity-tag grammar, where a comma inside quotes belongs to "
               "the tag; nginx splits at every comma"),
    Difference("if-modified-since-with-trailing-garbage-ignored", 200, 304, "GET",
               lambda v: {"If-Modified-Since": v.date() + " garbage"},
               "cond.h: a value that is not an HTTP-date is ignored; nginx reads the date prefix"),
    Difference("if-range-date-with-trailing-comma-gets-the-whole-file", 200, 206, "GET",
               lambda v: {"Range": "bytes=0-1", "If-Range": v.date() + ","},
               "cond.h: an If-Range that is neither the ETag nor an HTTP-date equal to "
               "Last-Modified gets the whole file; nginx reads the date prefix"),
    Difference("range-empty-list-element-is-ignored", 206, 416, "GET",
               lambda v: {"Range": "bytes=0-1,,2-3"},
               "range.h / RFC 9110 5.6.1.2: a recipient accepts and ignores empty list "
               "elements; nginx finds the set malformed"),
    Difference("range-set-with-a-reversed-item-is-malformed", 416, 206, "GET",
               lambda v: {"Range": "bytes=5-3,0-1"},
               "range.h / RFC 9110 14.1.1: one invalid range-spec makes the ranges-specifier "
               "invalid (416, as Go's net/http answers); nginx serves the valid items"),
    Difference("range-trailing-comma-is-an-empty-element", 206, 416, "GET",
               lambda v: {"Range": "bytes=0-1,"},
               "range.h / RFC 9110 5.6.1.2, as above"),
    Difference("range-trailing-tab-is-not-part-of-the-value", 206, 416, "GET",
               lambda v: {"Range": "bytes=-999\t"},
               "RFC 9110 5.5: trailing HTAB is not part of a field value; libevent strips it, "
               "nginx keeps it and finds the range malformed"),
]


def assert_same_answer(m, n, pair, case):
    """Status, Content-Range and bytes agree between musicd (m) and nginx (n)."""
    assert (m.status, n.status) == (case.status, case.status), \
        f"{case.id}: musicd {m.status}, nginx {n.status}, expected {case.status} from both"
    assert m.header("Content-Range") == n.header("Content-Range"), case.id
    head = case.method == "HEAD"
    if head or m.status == 304:
        assert m.body == n.body == b"", case.id
    if m.status == 304:
        assert m.header("ETag") == pair.musicd_validators.etag
        assert n.header("ETag") == pair.nginx_validators.etag
        return
    if m.status in (412, 416):
        return  # each server's own error page
    content_type = m.header("Content-Type")
    if content_type.startswith("multipart/byteranges"):
        assert n.header("Content-Type").startswith("multipart/byteranges; boundary="), case.id
        if head:
            return  # the lengths differ by the boundaries' lengths
        assert m.header("Content-Length") == str(len(m.body))
        mine = parse_multipart(m.header("Content-Type"), m.body)
        theirs = parse_multipart(n.header("Content-Type"), n.body)
        assert [p.key() for p in mine] == [p.key() for p in theirs], case.id
        for p in mine:
            assert p.data == pair.data[p.first:p.last + 1]
        return
    assert content_type == n.header("Content-Type") == "audio/mpeg", case.id
    assert m.header("Content-Length") == n.header("Content-Length"), case.id
    if m.status == 206:
        first, last, total = parse_content_range(m.header("Content-Range"))
        expected = pair.data[first:last + 1]
        assert total == len(pair.data)
    else:
        expected = pair.data
    assert m.header("Content-Length") == str(len(expected)), case.id
    if not head:
        assert m.body == n.body, f"{case.id}: bodies differ"
        assert m.body == expected, f"{case.id}: bodies are not the file's bytes"


@pytest.mark.no_c_binary
def test_battery_is_big_enough():
    """Issue 3 asks for at least 25 Range / If-* combinations."""
    assert len(BATTERY) + len(DOCUMENTED_DIFFERENCES) >= 25
    assert len({c.id for c in BATTERY} | {d.id for d in DOCUMENTED_DIFFERENCES}) == \
        len(BATTERY) + len(DOCUMENTED_DIFFERENCES)


@pytest.mark.parametrize("case", BATTERY, ids=[c.id for c in BATTERY])
def test_musicd_answers_as_nginx(pair, case):
    m, n = pair.both(case)
    assert_same_answer(m, n, pair, case)


@pytest.mark.parametrize("diff", DOCUMENTED_DIFFERENCES, ids=[d.id for d in DOCUMENTED_DIFFERENCES])
def test_documented_difference_from_nginx(pair, diff):
    """musicd's documented answer, and nginx's different one (so the note stays true)."""
    m, n = pair.both(diff)
    assert m.status == diff.musicd, f"musicd answered {m.status}; documented: {diff.why}"
    assert n.status == diff.nginx, f"nginx answered {n.status}: is this still a difference?"
    if m.status == 200:
        assert m.body == pair.data
    elif m.status == 304:
        assert m.body == b"" and m.header("ETag") == pair.musicd_validators.etag


# Fragments of the Range grammar, numbers around the test file's size (4001400 bytes) and 2^63 - 1.
FRAGMENTS = ["0", "1", "5", "10", "99", "100", "999", "1000", "00", "4001399", "4001400", "4001401",
             "9223372036854775807", "-", "-", "-", ",", ",", " ", "bytes=", "a", "=", ";", "--"]
RANDOM_RANGES = 400


def random_range_values(seed=3):
    rnd = random.Random(seed)
    values = []
    for _ in range(RANDOM_RANGES):
        body = "".join(rnd.choice(FRAGMENTS) for _ in range(rnd.randint(1, 9)))
        values.append(body if rnd.random() < 0.1 else "bytes=" + body)
    return values


def answer_summary(resp):
    """(status, Content-Range, multipart parts' ranges) of an answer, for comparing servers."""
    parts = None
    if resp.status == 206 and resp.header("Content-Type", "").startswith("multipart/"):
        parts = [(p.first, p.last) for p in parse_multipart(resp.header("Content-Type"),
                                                            resp.body)]
    return resp.status, resp.header("Content-Range"), parts


def without_empty_elements(value):
    """value with its empty list elements left out (range.h's one difference from nginx's
    grammar), or None when it has none or is no bytes range."""
    if not value.lower().startswith("bytes="):
        return None
    items = value[len("bytes="):].split(",")
    kept = [item for item in items if item.strip(" ")]
    if len(kept) == len(items) or not kept:
        return None
    return value[:len("bytes=")] + ",".join(kept)


def test_random_range_headers_answer_as_nginx(pair):
    values = random_range_values()
    assert len(set(values)) > RANDOM_RANGES // 2
    disagreements = []
    statuses = collections.Counter()
    explained = 0
    for value in values:
        m = answer_summary(pair.ask_musicd("GET", {"Range": value}))
        n = answer_summary(pair.ask_nginx("GET", {"Range": value}))
        statuses[m[0]] += 1
        if m == n:
            continue
        # The documented difference: musicd answers as nginx answers the set without its
        # empty elements.
        plain = without_empty_elements(value)
        if plain is not None and m == answer_summary(pair.ask_nginx("GET", {"Range": plain})):
            explained += 1
            continue
        disagreements.append(f"Range: {value!r}: musicd {m}, nginx {n}")
    assert not disagreements, f"{len(disagreements)} of {len(values)} differ:\n" + \
        "\n".join(disagreements[:20])
    # the batch reaches every outcome, and the documented difference
    assert set(statuses) == {200, 206, 416}, statuses
    assert explained > 0, "no value with an empty list element in the batch"


@pytest.mark.parametrize("value", ["bytes=0-", "bytes=-5", "bytes=0-0"])
def test_documented_difference_empty_file_range_is_416_where_nginx_sends_200(
        musicd, library, tmp_path, value):
    """range.h: an empty file satisfies no byte range (RFC 9110: 416 bytes */0); nginx sends the
    (empty) file with 200."""
    empty = tmp_path / "empty.mp3"
    empty.write_bytes(b"")
    nginx = None
    try:
        pair, nginx = start_pair(musicd, library, tmp_path, empty, "empty.mp3")
        m = pair.ask_musicd("GET", {"Range": value})
        n = pair.ask_nginx("GET", {"Range": value})
        assert (m.status, m.header("Content-Range")) == (416, "bytes */0")
        assert (n.status, n.header("Content-Range"), n.body) == (200, None, b"")
    finally:
        if nginx is not None:
            nginx.stop()


def test_nginx_is_stopped_at_teardown(musicd, library, tmp_path):
    """The helper's own promise: stop() ends the process and frees the port."""
    pair, nginx = start_pair(musicd, library, tmp_path, library.media.short, "short.mp3")
    assert nginx.proc.poll() is None
    assert nginx.stop() is not None
    assert nginx.proc.poll() is not None
    with pytest.raises(OSError):
        httpraw.connect(nginx.port, timeout=1).close()
