"""?download: Content-Disposition: attachment with the name the URL gives in :param.

`GET /musicdb/:mid/:param?download` (any value or none) answers as without it, plus
`Content-Disposition: attachment; filename="<ASCII fallback>"` and, when the name is not plain
ASCII, `filename*=UTF-8''<RFC 8187>`; a :param that is not UTF-8 once percent-decoded falls back to
`<mid><.ext>`. Without ?download there is no Content-Disposition, and other query parameters play
no part in the lookup or the answer. Checked on the wire (exact values, and the name a MIME parser
reads back), through the shipped Varnish -> nginx stack (proxy and offload), and in headless
Chromium, whose download lands under the expected name with the file's exact bytes.
"""

import http.client
import re
import time
import urllib.parse

import pytest
import requests

from frontends import SHIPPED_ACCEL_PREFIX
from support import scaled, wait_until
from test_deployment import stack
from webdriver import PageServer

# The tests only read: one musicd serves the module (conftest.py); the stacks start their own.
pytestmark = pytest.mark.shared_server

TIMEOUT = scaled(10)
DOWNLOAD_TIMEOUT = scaled(30)


def get(base, path, method="GET", **headers):
    return requests.request(method, base.url + path, headers=headers, timeout=TIMEOUT)


def raw_get(base, path):
    """GET path exactly as written (requests would re-encode a malformed escape): (status,
    headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", base.port, timeout=TIMEOUT)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


DISPOSITION = re.compile(r'attachment; filename="(?P<fallback>[^"\\]*)"'
                         r"(?:; filename\*=UTF-8''(?P<extended>[A-Za-z0-9!#$&+\-.^_`|~%]+))?")


def client_filename(value):
    """The name an RFC 6266 client takes from value: filename* (RFC 8187) when present, else
    filename; the value must be one of the two forms musicd sends."""
    match = DISPOSITION.fullmatch(value)
    assert match, f"not an attachment with filename[*]: {value!r}"
    if match["extended"] is not None:
        return urllib.parse.unquote(match["extended"], encoding="utf-8", errors="strict")
    return match["fallback"]


# (what, :param as sent, the exact header after "attachment", the name a client gets)
NAMES = [
    ("plain", "song.mp3", '; filename="song.mp3"', "song.mp3"),
    ("spaces", "My%20Song%20Live.mp3", '; filename="My Song Live.mp3"', "My Song Live.mp3"),
    ("semicolon", "a%3Bb%3B%20c.mp3", '; filename="a;b; c.mp3"', "a;b; c.mp3"),
    ("quotes", "say%20%22hi%22.mp3",
     "; filename=\"say _hi_.mp3\"; filename*=UTF-8''say%20%22hi%22.mp3", 'say "hi".mp3'),
    ("japanese", "%E6%97%A5%E6%9C%AC%E8%AA%9E%E3%81%AE%E6%AD%8C.mp3",
     "; filename=\"_____.mp3\"; "
     "filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E%E3%81%AE%E6%AD%8C.mp3", "日本語の歌.mp3"),
    ("accented latin", "Caf%C3%A9%20Na%C3%AFve.mp3",
     "; filename=\"Caf_ Na_ve.mp3\"; filename*=UTF-8''Caf%C3%A9%20Na%C3%AFve.mp3",
     "Café Naïve.mp3"),
    ("encoded slash", "..%2F..%2Fsecret.mp3", '; filename=".._.._secret.mp3"', ".._.._secret.mp3"),
    ("backslash", "a%5Cb.mp3", '; filename="a_b.mp3"', "a_b.mp3"),
    ("control characters", "a%0D%0ASet-Cookie:%20x.mp3", '; filename="a__Set-Cookie: x.mp3"',
     "a__Set-Cookie: x.mp3"),
]
INVALID = [("latin-1", "caf%E9.mp3"), ("not utf-8", "%FF%FE.mp3"), ("overlong", "%C0%AF.mp3"),
           ("malformed escape", "a%zz.mp3")]


@pytest.mark.parametrize("what,param,expected,name", NAMES, ids=[n[0] for n in NAMES])
def test_download_names_the_attachment_after_param(server, library, what, param, expected, name):
    track = library.add()
    resp = get(server, f"/musicdb/{track.id}/{param}?download")
    assert resp.status_code == 200 and resp.content == track.data
    value = resp.headers["Content-Disposition"]
    assert value == "attachment" + expected
    assert client_filename(value) == name


@pytest.mark.parametrize("what,param", INVALID, ids=[n[0] for n in INVALID])
def test_a_name_that_is_not_utf8_falls_back_to_the_id_and_extension(server, library, what,
                                                                    param):
    track = library.add(library.media.short, "Some Album/track.mp3")
    status, headers, body = raw_get(server, f"/musicdb/{track.id}/{param}?download")
    assert status == 200 and body == track.data
    assert headers["Content-Disposition"] == f'attachment; filename="{track.id}.mp3"'


def test_the_fallback_takes_the_files_extension(server, library):
    track = library.add(library.media.short, "track.ogg")   # any bytes: the name is the point
    resp = get(server, f"/musicdb/{track.id}/%FF.mp3?download")
    assert resp.headers["Content-Disposition"] == f'attachment; filename="{track.id}.ogg"'


@pytest.mark.parametrize("query", ["?download", "?download=", "?download=1", "?download=no",
                                   "?t=30&download", "?download&x=%ZZ"])
def test_download_with_any_value_or_none(server, library, query):
    track = library.add()
    resp = get(server, track.url_path + query)
    assert resp.headers["Content-Disposition"] == 'attachment; filename="short.mp3"'


@pytest.mark.parametrize("query", ["", "?", "?downloads", "?x=download", "?dl=1", "#download",
                                   "?t=30&x=%ZZ"])
def test_without_download_there_is_no_content_disposition(server, library, query):
    track = library.add()
    resp = get(server, track.url_path + query)
    assert resp.status_code == 200 and resp.content == track.data
    assert "Content-Disposition" not in resp.headers


def test_other_query_parameters_change_neither_the_lookup_nor_the_answer(server, library):
    track = library.add()
    plain = get(server, track.url_path)
    queried = get(server, track.url_path + "?v=2&cache=no&_=12345")
    assert queried.status_code == 200 and queried.content == track.data
    for name in ("Content-Type", "Content-Length", "ETag", "Last-Modified", "Cache-Control"):
        assert queried.headers[name] == plain.headers[name], name
    missing = get(server, "/musicdb/0123456789abcdef01234567/x.mp3?download")
    assert missing.status_code == 404 and "Content-Disposition" not in missing.headers


def test_head_and_ranges_carry_the_disposition_too(server, library):
    track = library.add()
    path = f"/musicdb/{track.id}/My%20Song.mp3?download"
    expected = 'attachment; filename="My Song.mp3"'
    head = get(server, path, "HEAD")
    assert head.status_code == 200 and head.headers["Content-Disposition"] == expected
    part = get(server, path, Range="bytes=10-19")
    assert part.status_code == 206 and part.content == track.data[10:20]
    assert part.headers["Content-Disposition"] == expected
    several = get(server, path, Range="bytes=0-1,5-6")
    assert several.status_code == 206 and several.headers["Content-Disposition"] == expected


def test_the_shipped_stack_keeps_downloads_and_plain_urls_apart(musicd, library, frontends):
    server, nginx, varnish = stack(musicd, frontends)
    track = library.add()
    name = "%E6%97%A5%E6%9C%AC.mp3"
    expected = "attachment; filename=\"__.mp3\"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.mp3"
    for _ in range(2):   # a miss, then a hit
        resp = get(varnish, f"/musicdb/{track.id}/{name}?download")
        assert resp.status_code == 200 and resp.content == track.data
        assert resp.headers["Content-Disposition"] == expected
    assert resp.headers["X-Cache"] == "hit"
    plain = get(varnish, f"/musicdb/{track.id}/{name}")
    assert plain.status_code == 200 and plain.content == track.data
    assert "Content-Disposition" not in plain.headers


def test_the_shipped_offload_stack_keeps_the_disposition(musicd, library, frontends):
    server, nginx, varnish = stack(musicd, frontends, offload=True, media_root=library.root,
                                   extra_args=["--x-accel-redirect", SHIPPED_ACCEL_PREFIX])
    track = library.add()
    for base in (nginx, varnish):
        resp = get(base, f"/musicdb/{track.id}/Caf%C3%A9.mp3?download", Range="bytes=0-99")
        assert resp.status_code == 206 and resp.content == track.data[:100], base
        assert resp.headers["Content-Disposition"] == \
            "attachment; filename=\"Caf_.mp3\"; filename*=UTF-8''Caf%C3%A9.mp3"


# -- headless Chromium ------------------------------------------------------------------------

LINK_PAGE = '<!doctype html><meta charset="utf-8"><a id="link" href="{href}">download</a>'


@pytest.fixture
def downloads(browser, tmp_path):
    """The empty directory the browser saves its downloads in."""
    directory = tmp_path / "downloads"
    directory.mkdir()
    browser.cdp("Browser.setDownloadBehavior",
                {"behavior": "allow", "downloadPath": str(directory)})
    return directory


def click_the_link(browser, pages):
    browser.open(pages.url + "/page")
    browser.run('document.getElementById("link").click();')


def finished_downloads(directory):
    """The completed downloads in directory (Chromium writes *.crdownload until done)."""
    files = [p for p in directory.iterdir() if p.is_file()]
    if any(p.name.endswith(".crdownload") for p in files):
        return None
    return files


def download_in_chromium(browser, pages, href, directory):
    """Click a link to href on a page and wait for the one file Chromium saves."""
    click_the_link(browser, pages)
    return wait_until(lambda: finished_downloads(directory), DOWNLOAD_TIMEOUT, interval=0.1,
                      message=f"Chromium's download of {href}")


@pytest.mark.parametrize("param,expected_name", [
    ("%E6%97%A5%E6%9C%AC%E8%AA%9E%20Caf%C3%A9%3B%20live.mp3", "日本語 Café; live.mp3"),
    ("caf%E9.mp3", None),   # not UTF-8: the id and the extension
], ids=["utf-8 name", "invalid utf-8"])
def test_chromium_saves_the_download_under_its_name_with_the_exact_bytes(
        server, library, browser, downloads, param, expected_name):
    track = library.add(library.media.big, "big.mp3")   # several MB: not done in one read
    expected_name = expected_name or f"{track.id}.mp3"
    href = f"{server.url}/musicdb/{track.id}/{param}?download"
    with PageServer({"/page": LINK_PAGE.format(href=href)}) as page_server:
        files = download_in_chromium(browser, page_server, href, downloads)
    assert [p.name for p in files] == [expected_name]
    data = files[0].read_bytes()
    assert len(data) == track.size and data == track.data


def test_without_download_chromium_plays_instead_of_saving(server, library, browser, downloads):
    # the same link without ?download: Chromium opens its media viewer and saves nothing
    track = library.add()
    href = f"{server.url}{track.url_path}"
    with PageServer({"/page": LINK_PAGE.format(href=href)}) as page_server:
        click_the_link(browser, page_server)
        wait_until(lambda: browser.run("return location.href;") == href, DOWNLOAD_TIMEOUT,
                   message="Chromium to open the track")
        time.sleep(1.0)   # time for a download to have started, had there been one
    assert list(downloads.iterdir()) == []
