"""CORS (--cors-origin): every answer on the track route carries the CORS headers, a preflight is
answered 204 from the route alone, and a page on another origin reads ranges and feeds Web Audio.

Without --cors-origin nothing changes: no Access-Control-* header, OPTIONS is 405. With
`--cors-origin '*'` every track answer says `Access-Control-Allow-Origin: *`; with a list, the
request's Origin is echoed only when it is exactly listed, and `Vary: Origin` is on every answer.
Access-Control-Allow-Credentials is never sent. Through the shipped Varnish -> nginx -> musicd
stack, a cached track keeps its CORS headers per Origin (Varnish honours Vary) and a preflight is
passed to musicd, never served as (or stored as) the track. Headless Chromium, with the page served
from another port, reads a 206 with fetch() and hears an <audio crossorigin> through an
AnalyserNode; the same page against a musicd without --cors-origin gets neither.
"""

import json
import time

import pytest
import requests

from assertions import assert_error
from support import free_port, scaled, wait_until
from frontends import SHIPPED_ACCEL_PREFIX, cors_origins_on
from test_deployment import HEALTHY_TIMEOUT, stack, track_requests, wait_track_requests
from webdriver import PageServer

TIMEOUT = scaled(10)
PAGE = "http://127.0.0.1:8000"            # a configured origin (no page is served there)
OTHER = "https://player.example.com"      # another configured origin
STRANGER = "http://127.0.0.1:8001"        # not configured: same host, another port
EXPOSED = ["Content-Range", "Accept-Ranges", "Content-Length", "ETag", "Last-Modified"]
MISSING_ID = "0123456789abcdef01234567"
CORS_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Expose-Headers",
                "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
                "Access-Control-Max-Age", "Access-Control-Allow-Credentials")


def request(base, method, path, origin=None, **headers):
    if origin is not None:
        headers["Origin"] = origin
    return requests.request(method, base.url + path, headers=headers, timeout=TIMEOUT)


def preflight(base, path, origin, method="GET", request_headers="range, if-none-match"):
    return request(base, "OPTIONS", path, origin, **{
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": request_headers})


def assert_no_cors(resp):
    found = {name: resp.headers[name] for name in CORS_HEADERS if name in resp.headers}
    assert found == {}, found


def assert_actual_cors(resp, allow_origin, vary):
    """The CORS headers of a GET/HEAD answer: allowed origin, exposed headers, Vary, no
    credentials."""
    assert resp.headers.get("Access-Control-Allow-Origin") == allow_origin, dict(resp.headers)
    exposed = [h.strip() for h in resp.headers["Access-Control-Expose-Headers"].split(",")]
    assert set(EXPOSED) <= set(exposed), exposed
    assert "Access-Control-Allow-Credentials" not in resp.headers
    assert ("Origin" in resp.headers.get("Vary", "")) == vary, dict(resp.headers)


def assert_preflight(resp, allow_origin):
    assert resp.status_code == 204, (resp.status_code, resp.text)
    assert resp.content == b""
    assert "Content-Length" not in resp.headers or resp.headers["Content-Length"] == "0"
    assert resp.headers["Access-Control-Allow-Origin"] == allow_origin
    methods = {m.strip() for m in resp.headers["Access-Control-Allow-Methods"].split(",")}
    assert {"GET", "HEAD", "OPTIONS"} <= methods, methods
    allowed = {h.strip().lower() for h in resp.headers["Access-Control-Allow-Headers"].split(",")}
    assert {"range", "if-range", "if-none-match", "if-modified-since"} <= allowed, allowed
    assert int(resp.headers["Access-Control-Max-Age"]) > 0
    assert "Access-Control-Allow-Credentials" not in resp.headers
    assert {m.strip() for m in resp.headers["Allow"].split(",")} == {"GET", "HEAD", "OPTIONS"}


# -- off by default ---------------------------------------------------------------------------

def test_without_cors_origin_there_is_no_cors_header_and_options_is_405(server, library):
    track = library.add()
    resp = request(server, "GET", track.url_path, PAGE, Range="bytes=0-9")
    assert resp.status_code == 206
    assert_no_cors(resp)
    assert "Vary" not in resp.headers
    resp = preflight(server, track.url_path, PAGE)
    assert_error(resp, 405)
    assert_no_cors(resp)
    assert resp.headers["Allow"] == "GET, HEAD"


def test_cors_origin_off_is_the_same_as_none(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", "off"])
    track = library.add()
    resp = request(server, "GET", track.url_path, PAGE)
    assert resp.status_code == 200
    assert_no_cors(resp)
    assert_error(preflight(server, track.url_path, PAGE), 405)


# -- start-up checks --------------------------------------------------------------------------

@pytest.mark.parametrize("values", [
    ["http://example.com/"], ["example.com"], ["http://Example.com"], ["http://example.com:0"],
    ["http://example.com/player"], ["*", PAGE], [PAGE, "off"], ["null"],
], ids=lambda v: " ".join(v))
def test_a_value_that_is_not_an_origin_is_refused_at_start(musicd, tmp_path, values):
    args = ["--media-root", str(tmp_path), "--listen", f"127.0.0.1:{free_port()}"]
    for value in values:
        args += ["--cors-origin", value]
    result = musicd.run(args)
    assert result.returncode == 2, result
    assert "cors-origin" in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_the_config_file_takes_several_origins(musicd, library, tmp_path):
    conf = tmp_path / "cors.conf"
    conf.write_text(f"cors-origin = {PAGE}\ncors-origin = {OTHER}\n")
    server = musicd.start(extra_args=["--config", conf])
    track = library.add()
    for origin in (PAGE, OTHER):
        assert_actual_cors(request(server, "GET", track.url_path, origin), origin, vary=True)


# -- every answer on the track route ----------------------------------------------------------

def every_track_answer(server, track, origin):
    """(what, response) for each kind of answer the track route gives."""
    etag = request(server, "HEAD", track.url_path).headers["ETag"]
    return [
        ("200", request(server, "GET", track.url_path, origin)),
        ("HEAD", request(server, "HEAD", track.url_path, origin)),
        ("206", request(server, "GET", track.url_path, origin, Range="bytes=0-99")),
        ("multipart 206", request(server, "GET", track.url_path, origin,
                                  Range="bytes=0-9,20-29")),
        ("304", request(server, "GET", track.url_path, origin, **{"If-None-Match": etag})),
        ("412", request(server, "GET", track.url_path, origin, **{"If-Match": '"other"'})),
        ("416", request(server, "GET", track.url_path, origin,
                        Range=f"bytes={track.size + 10}-")),
        ("404", request(server, "GET", f"/musicdb/{MISSING_ID}/x.mp3", origin)),
        ("400", request(server, "GET", "/musicdb/not-an-id/x.mp3", origin)),
        ("405", request(server, "POST", track.url_path, origin)),
    ]


EXPECTED_STATUS = {"200": 200, "HEAD": 200, "206": 206, "multipart 206": 206, "304": 304,
                   "412": 412, "416": 416, "404": 404, "400": 400, "405": 405}


def test_star_puts_allow_origin_star_on_every_track_answer(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", "*"])
    track = library.add()
    for origin in (PAGE, None):
        for what, resp in every_track_answer(server, track, origin):
            assert resp.status_code == EXPECTED_STATUS[what], (what, resp.status_code)
            assert_actual_cors(resp, "*", vary=False)
    assert request(server, "GET", track.url_path, PAGE).content == track.data


def test_a_listed_origin_is_echoed_on_every_track_answer_with_vary_origin(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", PAGE, "--cors-origin", OTHER])
    track = library.add()
    for origin in (PAGE, OTHER):
        for what, resp in every_track_answer(server, track, origin):
            assert resp.status_code == EXPECTED_STATUS[what], (what, resp.status_code)
            assert_actual_cors(resp, origin, vary=True)


def test_an_unlisted_or_absent_origin_gets_vary_and_no_allow_origin(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", PAGE])
    track = library.add()
    for origin in (STRANGER, PAGE + "/", PAGE.upper(), "null", None):
        resp = request(server, "GET", track.url_path, origin)
        assert resp.status_code == 200 and resp.content == track.data
        assert "Access-Control-Allow-Origin" not in resp.headers, (origin, dict(resp.headers))
        assert resp.headers["Vary"] == "Origin"


def test_the_database_being_down_is_503_with_cors_headers(musicd, library):
    dead = f"mongodb://127.0.0.1:{free_port()}"
    server = musicd.start(mongodb_uri=dead,
                          extra_args=["--cors-origin", PAGE, "--lookup-timeout", "300"])
    resp = request(server, "GET", f"/musicdb/{MISSING_ID}/x.mp3", PAGE)
    assert_error(resp, 503)
    assert_actual_cors(resp, PAGE, vary=True)
    # and a preflight does not wait for the database
    assert_preflight(preflight(server, f"/musicdb/{MISSING_ID}/x.mp3", PAGE), PAGE)


def test_other_routes_carry_no_cors_headers(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", "*"])
    for path in ("/healthz", "/elsewhere"):
        resp = request(server, "GET", path, PAGE)
        assert_no_cors(resp)
        assert preflight(server, path, PAGE).status_code in (404, 405)


# -- preflights -------------------------------------------------------------------------------

def test_a_preflight_is_204_with_the_methods_headers_and_max_age(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", PAGE])
    track = library.add()
    resp = preflight(server, track.url_path, PAGE)
    assert_preflight(resp, PAGE)
    assert resp.headers["Vary"] == "Origin"
    assert "Content-Type" not in resp.headers


def test_a_preflight_costs_no_database_lookup(musicd, library):
    # an id with no document: a lookup would have made it 404
    server = musicd.start(extra_args=["--cors-origin", "*"])
    resp = preflight(server, f"/musicdb/{MISSING_ID}/x.mp3", PAGE)
    assert_preflight(resp, "*")
    assert "no such document" not in server.stderr_text()


def test_a_preflight_from_an_unlisted_origin_allows_nothing(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", PAGE])
    track = library.add()
    resp = preflight(server, track.url_path, STRANGER)
    assert resp.status_code == 204
    for name in CORS_HEADERS:
        assert name not in resp.headers, name
    assert resp.headers["Vary"] == "Origin"


def test_with_cors_options_is_accepted_and_listed_in_allow(musicd, library):
    server = musicd.start(extra_args=["--cors-origin", "*"])
    track = library.add()
    plain = request(server, "OPTIONS", track.url_path)   # not a preflight
    assert plain.status_code == 204 and plain.content == b""
    assert plain.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert "Access-Control-Allow-Methods" not in plain.headers
    refused = request(server, "DELETE", track.url_path, PAGE)
    assert_error(refused, 405)
    assert refused.headers["Allow"] == "GET, HEAD, OPTIONS"


# -- through the shipped Varnish -> nginx -> musicd -------------------------------------------

def test_the_shipped_stack_keeps_cors_headers_per_origin_and_passes_preflights(
        musicd, library, frontends):
    server, nginx, varnish = stack(musicd, frontends,
                                   extra_args=["--cors-origin", PAGE, "--cors-origin", OTHER])
    track = library.add()

    first = request(varnish, "GET", track.url_path, PAGE)
    assert first.status_code == 200 and first.content == track.data
    assert_actual_cors(first, PAGE, vary=True)
    # a hit for the same Origin, as a range cut by Varnish from the cached object
    hit = request(varnish, "GET", track.url_path, PAGE, Range="bytes=10-19")
    assert hit.status_code == 206 and hit.content == track.data[10:20]
    assert hit.headers["X-Cache"] == "hit", dict(hit.headers)
    assert_actual_cors(hit, PAGE, vary=True)
    # another Origin is another variant: never PAGE's Allow-Origin
    other = request(varnish, "GET", track.url_path, OTHER)
    assert other.status_code == 200 and other.content == track.data
    assert_actual_cors(other, OTHER, vary=True)
    stranger = request(varnish, "GET", track.url_path, STRANGER)
    assert stranger.status_code == 200 and stranger.content == track.data
    assert "Access-Control-Allow-Origin" not in stranger.headers, dict(stranger.headers)
    again = request(varnish, "GET", track.url_path, OTHER)
    assert again.headers["X-Cache"] == "hit"
    assert_actual_cors(again, OTHER, vary=True)

    # preflights reach musicd every time and are not the track
    for _ in range(2):
        resp = preflight(varnish, track.url_path, PAGE)
        assert_preflight(resp, PAGE)
    after = request(varnish, "GET", track.url_path, PAGE)
    assert after.status_code == 200 and after.content == track.data
    assert after.headers["X-Cache"] == "hit"

    lines = wait_track_requests(server, 5)
    methods = [line[1].split()[0] for line in lines]
    assert methods.count("OPTIONS") == 2, lines
    assert [line[2] for line in lines if line[1].startswith("OPTIONS")] == [204, 204], lines
    # three variants fetched (PAGE, OTHER, no match), each once
    assert methods.count("GET") == 3, lines


def test_the_shipped_stack_with_star_caches_one_object_for_every_origin(
        musicd, library, frontends):
    server, nginx, varnish = stack(musicd, frontends, extra_args=["--cors-origin", "*"])
    track = library.add()
    for origin in (PAGE, OTHER, STRANGER, None):
        resp = request(varnish, "GET", track.url_path, origin, Range="bytes=0-99")
        assert resp.status_code == 206 and resp.content == track.data[:100]
        assert_actual_cors(resp, "*", vary=False)
    lines = wait_track_requests(server, 1)
    assert len([line for line in lines if line[1].startswith("GET")]) == 1, lines


def test_the_vcls_origin_list_keeps_made_up_origins_from_making_variants(
        musicd, library, frontends):
    server = musicd.start(extra_args=["--cors-origin", PAGE])
    nginx = frontends.nginx(server.port)
    varnish = frontends.varnish(nginx.port, adapt=cors_origins_on(PAGE))
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    track = library.add()
    for _ in range(2):
        resp = request(varnish, "GET", track.url_path, PAGE)
        assert resp.status_code == 200 and resp.content == track.data
        assert_actual_cors(resp, PAGE, vary=True)
    assert resp.headers["X-Cache"] == "hit"
    for origin in [f"http://made-up-{i}.example" for i in range(5)] + [None]:
        resp = request(varnish, "GET", track.url_path, origin)
        assert resp.status_code == 200 and resp.content == track.data
        assert "Access-Control-Allow-Origin" not in resp.headers, (origin, dict(resp.headers))
    # one fetch for PAGE's variant, one for every other Origin (sent on as none)
    wait_track_requests(server, 2)
    time.sleep(0.2)
    assert len(track_requests(server)) == 2, track_requests(server)


def test_without_the_vcls_origin_list_each_origin_is_a_variant(musicd, library, frontends):
    # what the cors block is for: the shipped VCL honours Vary: Origin for any value
    server, nginx, varnish = stack(musicd, frontends, extra_args=["--cors-origin", PAGE])
    track = library.add()
    for origin in [f"http://made-up-{i}.example" for i in range(3)]:
        assert request(varnish, "GET", track.url_path, origin).status_code == 200
    assert len(wait_track_requests(server, 3)) == 3


def test_the_shipped_offload_stack_keeps_musicds_cors_headers(musicd, library, frontends):
    # nginx sends the file from its internal location: X-Accel-Redirect alone drops every
    # upstream header but a few (Content-Type, Cache-Control ...), so the site re-adds these.
    server, nginx, varnish = stack(
        musicd, frontends, offload=True, media_root=library.root,
        extra_args=["--x-accel-redirect", SHIPPED_ACCEL_PREFIX, "--cors-origin", PAGE])
    track = library.add()
    for base in (nginx, varnish):
        for origin in (PAGE, OTHER):
            resp = request(base, "GET", track.url_path, origin, Range="bytes=5-14")
            assert resp.status_code == 206 and resp.content == track.data[5:15], base
            if origin == PAGE:
                assert_actual_cors(resp, PAGE, vary=True)
            else:
                assert "Access-Control-Allow-Origin" not in resp.headers
                assert "Origin" in resp.headers["Vary"]
        assert_preflight(preflight(base, track.url_path, PAGE), PAGE)
    missing = request(nginx, "GET", f"/musicdb/{MISSING_ID}/x.mp3", PAGE)
    assert_error(missing, 404)
    assert_actual_cors(missing, PAGE, vary=True)


def test_the_shipped_offload_stacks_own_404_for_a_vanished_file_keeps_musicds_cors_headers(
        musicd, library, frontends):
    # musicd still has the file open (its open-file cache) and hands it to nginx, which finds
    # nothing at the path any more and answers 404 itself (@missing_file): without the CORS
    # headers a page's fetch() would see a network error instead of a readable 404.
    server, nginx, _ = stack(
        musicd, frontends, offload=True, media_root=library.root,
        extra_args=["--x-accel-redirect", SHIPPED_ACCEL_PREFIX, "--cors-origin", PAGE,
                    "--open-file-cache-valid", "3600"])
    track = library.add(copy=True)
    # Straight to musicd, so that only musicd (not nginx's own open_file_cache) holds it open.
    first = request(server, "GET", track.url_path, PAGE)
    assert first.status_code == 200 and "X-Accel-Redirect" in first.headers, first.headers
    track.path.unlink()
    for origin, allowed in ((PAGE, PAGE), (OTHER, None)):
        resp = request(nginx, "GET", track.url_path, origin)
        assert resp.status_code == 404 and resp.content == b"not found\n", resp.content
        assert "no-store" in resp.headers["Cache-Control"]  # beside musicd's own (see below)
        if allowed:
            assert_actual_cors(resp, allowed, vary=True)
        else:
            assert "Access-Control-Allow-Origin" not in resp.headers
            assert "Origin" in resp.headers["Vary"]
    assert len(wait_track_requests(server, 3)) == 3  # each answer came through musicd


# -- headless Chromium, the page on another origin --------------------------------------------

PLAYER_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>cross-origin player</title>
<script>
window.fetched = null;
window.audio = null;
async function readRange(url) {
  try {
    // If-None-Match is not CORS-safelisted: this fetch needs a preflight first.
    const r = await fetch(url, {headers: {"Range": "bytes=100-1123",
                                          "If-None-Match": '"not-this-one"'}});
    const bytes = new Uint8Array(await r.arrayBuffer());
    window.fetched = {status: r.status, contentRange: r.headers.get("Content-Range"),
                      etag: r.headers.get("ETag"), bytes: Array.from(bytes)};
  } catch (e) {
    window.fetched = {error: String(e)};
  }
}
function listen(url) {
  const state = {peak: 0, error: null, playing: false, playError: null};
  window.audio = state;
  const element = document.createElement("audio");
  element.crossOrigin = "anonymous";
  element.src = url;
  element.addEventListener("error", () => { state.error = element.error.code; });
  element.addEventListener("playing", () => { state.playing = true; });
  const context = new AudioContext();
  const analyser = context.createAnalyser();
  context.createMediaElementSource(element).connect(analyser);
  analyser.connect(context.destination);
  const samples = new Float32Array(analyser.fftSize);
  state.sample = () => {
    analyser.getFloatTimeDomainData(samples);
    for (const s of samples) state.peak = Math.max(state.peak, Math.abs(s));
  };
  context.resume().then(() => element.play()).catch(e => { state.playError = String(e); });
}
</script>
"""

AUDIO_STATE = """
const a = window.audio; a.sample();
return {peak: a.peak, error: a.error, playing: a.playing, playError: a.playError};
"""

LISTEN_SECONDS = scaled(6)   # the short track plays 5 s


def read_range_in_page(browser, url):
    browser.run("window.fetched = null; readRange(arguments[0]);", url)
    return wait_until(lambda: browser.run("return window.fetched;"), scaled(20),
                      message="fetch() to settle")


def listen_in_page(browser, url):
    """The loudest sample the AnalyserNode saw while the element played (or failed)."""
    browser.run("listen(arguments[0]);", url)
    deadline_state = {}

    def heard_or_failed():
        s = browser.run(AUDIO_STATE)
        deadline_state.update(s)
        return s if (s["peak"] > 0.05 or s["error"] is not None or s["playError"]) else None

    try:
        wait_until(heard_or_failed, LISTEN_SECONDS, interval=0.1, message="a sound")
    except AssertionError:
        pass
    return deadline_state


def test_chromium_on_another_origin_reads_a_range_and_hears_the_track(musicd, library, browser):
    with PageServer({"/player.html": PLAYER_PAGE}) as pages:
        server = musicd.start(extra_args=["--cors-origin", pages.url])
        track = library.add()
        url = server.url + track.url_path
        assert pages.url != server.url
        browser.open(pages.url + "/player.html")

        fetched = read_range_in_page(browser, url)
        assert "error" not in fetched, fetched
        assert fetched["status"] == 206, json.dumps(fetched)[:500]
        assert fetched["contentRange"] == f"bytes 100-1123/{track.size}"
        assert bytes(fetched["bytes"]) == track.data[100:1124]
        assert fetched["etag"], fetched

        heard = listen_in_page(browser, url)
        assert heard.get("error") is None and not heard.get("playError"), heard
        assert heard["peak"] > 0.05, heard

    lines = [line for line in server.access_log_lines() if "Chrome" in line]
    assert any('"OPTIONS ' in line and '" 204 ' in line for line in lines), lines
    assert any('"GET ' in line and '" 206 ' in line for line in lines), lines


def test_chromium_gets_neither_from_a_musicd_without_cors(musicd, library, browser):
    server = musicd.start()
    track = library.add()
    url = server.url + track.url_path
    with PageServer({"/player.html": PLAYER_PAGE}) as pages:
        browser.open(pages.url + "/player.html")
        fetched = read_range_in_page(browser, url)
        assert "error" in fetched and "Failed to fetch" in fetched["error"], fetched
        heard = listen_in_page(browser, url)
        assert heard["peak"] == 0, heard
        assert heard["error"] is not None, heard
