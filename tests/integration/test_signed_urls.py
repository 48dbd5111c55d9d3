"""Signed, expiring track URLs (issue 18, docs/signed-urls-and-limits.md): with
--url-signing-key-file every GET and HEAD of a track needs an Akamai EdgeAuth token in
?__token__, checked before any lookup.

Tokens come from the real akamai-edgeauth npm package and from an independent Python
implementation of the published algorithm (edgeauth.py), never from musicd's own code (but for
the tests of its signer). What a token the libraries make gets, and what every change to one
gets: tampered, cut, another track's, expired, not yet valid, absurdly long, given twice,
unsigned; each refusal is 403 with Cache-Control: no-store, one error-log line with its reason
class, one count by reason, and no lookup. The token never reaches the access log, the lookup
cache's key, the ETag or the Content-Disposition. The key file: its format, its mode and key
length checks at start-up and -t, rotation by SIGHUP. The guide's worked example and its Node,
Python and PHP snippets are run. The shipped frontends are in test_signed_urls_frontends.py.
"""

import os
import re
import signal
import subprocess
import time

import pytest
import requests
from bson import ObjectId

import httpraw
from assertions import assert_error, assert_file_response
from edgeauth import (EXAMPLE_KEY, NpmEdgeAuth, new_key, python_token, track_acl,
                      write_key_file)
from musicd_process import CHECK_OK
from support import REPO, scaled, wait_until
from test_metrics import scrape
from test_reload import Reloadable, base_settings

TIMEOUT = scaled(10)
HOUR = 3600
REASONS = ("missing", "malformed", "bad_signature", "expired", "not_yet_valid", "wrong_track")
HMAC_FIELD = re.compile(r"~hmac=([0-9a-fA-F]{64})")


@pytest.fixture(scope="module")
def npm():
    """The real akamai-edgeauth package (installed into var/npm on first use)."""
    return NpmEdgeAuth().install()


@pytest.fixture
def key(tmp_path):
    """A fresh key and its key file (mode 600)."""
    value = new_key()
    write_key_file(tmp_path / "url-signing.keys", [value])
    return value


@pytest.fixture
def signing(musicd, tmp_path, key):
    """musicd with the key file, one worker (so its counters are read in order)."""
    return musicd.start(extra_args=["--url-signing-key-file", tmp_path / "url-signing.keys",
                                    "--workers", "1"])


def now():
    return int(time.time())


def get(server, path, **kw):
    return requests.get(server.url + path, timeout=TIMEOUT, **kw)


def signed(track, token, query=""):
    """The track's URL path with token appended as __token__ (after query, if any)."""
    return f"{track.url_path}?{query}{'&' if query else ''}__token__={token}"


def assert_refused(resp, head=False):
    """musicd's 403 for a token: the short text/plain error, never kept by a cache."""
    assert_error(resp, 403, head=head)
    assert resp.headers["Cache-Control"] == "no-store"


def refusal_lines(server):
    return [line for line in server.stderr_text().splitlines() if "signed-URL token" in line]


def lookups(scraped):
    """Lookups the database was asked for, and the lookup cache's hits and misses."""
    return (scraped.value("musicd_lookup_duration_seconds_count"),
            scraped.value("musicd_lookup_cache_hits_total"),
            scraped.value("musicd_lookup_cache_misses_total"))


# -- tokens the libraries make are accepted --------------------------------------------------

def test_a_token_the_npm_package_signs_serves_the_track(signing, library, key, npm):
    track = library.add()
    token = npm.token(key, track_acl(track.id), now() + HOUR)
    assert_file_response(get(signing, signed(track, token)), track.path)


def test_a_token_the_python_implementation_signs_serves_the_track(signing, library, key):
    track = library.add()
    token = python_token(key, track_acl(track.id), now() + HOUR, start=now())
    assert_file_response(get(signing, signed(track, token)), track.path)


def test_the_npm_package_and_the_python_implementation_sign_alike(npm):
    cases = []
    for i in range(40):
        key = new_key(32 + i * 5)
        acl = [track_acl(f"{i:024x}")] + ([track_acl(f"{i + 1:024x}")] if i % 3 == 0 else [])
        cases.append(dict(key=key, acl=acl, expires=1800000000 + i,
                          start=1700000000 + i if i % 2 else None,
                          session_id=f"s{i}" if i % 4 == 1 else None,
                          payload=f"p{i}" if i % 5 == 2 else None))
    assert npm.tokens(cases) == [python_token(c["key"], c["acl"], c["expires"], c["start"],
                                              c["session_id"], c["payload"]) for c in cases]


def test_a_token_with_a_session_id_data_and_several_tracks_serves_each(signing, library, key,
                                                                       npm):
    one, two, three = library.add(), library.add(relpath="two.mp3"), library.add(relpath="3.mp3")
    token = npm.token(key, [track_acl(one.id), track_acl(two.id)], now() + HOUR,
                      session_id="listener-7", payload="free-tier")
    assert "~id=listener-7~data=free-tier~" in token
    assert get(signing, signed(one, token)).status_code == 200
    assert get(signing, signed(two, token)).status_code == 200
    assert_refused(get(signing, signed(three, token)))


def test_a_token_serves_every_name_and_download_of_its_track(signing, library, key):
    track = library.add()
    token = python_token(key, track_acl(track.id), now() + HOUR)
    for path in (f"/musicdb/{track.id}/another-name.mp3?__token__={token}",
                 f"/musicdb/{track.id.upper()}/x.mp3?v=2&__token__={token}&download",
                 signed(track, token, "download")):
        resp = get(signing, path)
        assert resp.status_code == 200, path
        assert resp.content == track.data


def test_head_and_ranges_are_served_with_a_token(signing, library, key):
    track = library.add()
    path = signed(track, python_token(key, track_acl(track.id), now() + HOUR))
    head = requests.head(signing.url + path, timeout=TIMEOUT)
    assert head.status_code == 200 and head.headers["Content-Length"] == str(track.size)
    part = get(signing, path, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206 and part.content == track.data[10:20]


def test_an_absolute_form_target_is_checked_like_its_path(signing, library, key):
    track = library.add()
    token = python_token(key, track_acl(track.id), now() + HOUR)
    good, _ = httpraw.exchange(signing.port, "GET", f"http://music.example{signed(track, token)}",
                               timeout=TIMEOUT)
    assert good.status == 200 and good.body == track.data
    bad, _ = httpraw.exchange(signing.port, "GET", f"http://music.example{track.url_path}",
                              timeout=TIMEOUT)
    assert bad.status == 403


# -- every refusal: 403 no-store, its reason logged and counted, no lookup ---------------------

def refusals(key, track, other):
    """(reason, path) for each kind of bad token for track."""
    good = python_token(key, track_acl(track.id), now() + HOUR)
    mac = HMAC_FIELD.search(good).group(1)
    flipped = good.replace(mac, ("0" if mac[0] != "0" else "1") + mac[1:])
    return [
        ("missing", track.url_path),
        ("missing", f"{track.url_path}?download&token={good}"),
        ("malformed", signed(track, "")),
        ("malformed", signed(track, "hello")),
        ("malformed", signed(track, good[:-1])),                                  # cut
        ("malformed", signed(track, good[: len(good) // 2])),
        ("malformed", signed(track, good + "0")),                                 # longer hmac
        ("malformed", signed(track, good, f"__token__={good}")),                  # given twice
        ("malformed", signed(track, "exp=1~acl=" + "!" * 4000 + "~hmac=" + "0" * 64)),  # too long
        ("malformed", signed(track, "exp=" + "9" * 20 + f"~acl={track_acl(track.id)}~hmac=" +
                             mac)),                                               # absurd time
        ("malformed", signed(track, "ip=127.0.0.1~" + good)),
        ("malformed", signed(track, good.replace("=", "%3D"))),                   # encoded
        ("bad_signature", signed(track, flipped)),
        ("bad_signature", signed(track, good.replace(f"exp={good.split('exp=')[1][:10]}",
                                                     f"exp={now() + 10 * HOUR}"))),
        ("bad_signature", signed(track, python_token(new_key(), track_acl(track.id),
                                                     now() + HOUR))),
        ("bad_signature", signed(track, python_token(key[:-2] + ("01" if key[-2:] != "01" else
                                                                  "02"), track_acl(track.id),
                                                     now() + HOUR))),         # one byte apart
        ("expired", signed(track, python_token(key, track_acl(track.id), now() - 60))),
        ("not_yet_valid", signed(track, python_token(key, track_acl(track.id), now() + HOUR,
                                                     start=now() + 600))),
        ("wrong_track", signed(track, python_token(key, track_acl(other.id), now() + HOUR))),
        ("wrong_track", signed(track, python_token(key, "/musicdb/*", now() + HOUR))),
        ("wrong_track", signed(track, python_token(key, "/*", now() + HOUR))),
    ]


def test_each_bad_token_is_refused_for_its_reason_before_any_lookup(signing, library, key):
    track, other = library.add(), library.add(relpath="other.mp3")
    cases = refusals(key, track, other)
    before = scrape(signing)
    for number, (reason, path) in enumerate(cases, 1):
        resp = get(signing, path)
        assert resp.status_code == 403, (reason, path)
        assert_refused(resp)
        assert resp.content == b"403 Forbidden\n"
        words = reason.replace("_", " ")
        lines = wait_until(lambda: len(refusal_lines(signing)) >= number and
                           refusal_lines(signing), TIMEOUT, message=f"log line {number}")
        assert lines[-1].endswith(f" info: mid={track.id}: 403, signed-URL token {words}"), \
            (path, lines[-1])
    after = scrape(signing)
    for reason in REASONS:
        expected = sum(1 for r, _ in cases if r == reason)
        assert after.value("musicd_url_signing_refusals_total", reason=reason) - \
            before.value("musicd_url_signing_refusals_total", reason=reason) == expected, reason
    assert lookups(after) == lookups(before), "a refused request made a lookup"
    assert after.value("musicd_http_requests_total", code="403", method="GET") - \
        before.value("musicd_http_requests_total", code="403", method="GET") == len(cases)


def test_every_byte_of_a_token_changed_is_refused(signing, library, key):
    track = library.add()
    good = python_token(key, track_acl(track.id), now() + HOUR, start=now() - 60)
    with requests.Session() as session:
        for i, c in enumerate(good):
            changed = good[:i] + ("1" if c != "1" else "2") + good[i + 1:]
            resp = session.get(signing.url + signed(track, changed), timeout=TIMEOUT)
            assert resp.status_code == 403, (i, changed)
        assert session.get(signing.url + signed(track, good), timeout=TIMEOUT).status_code == 200


def test_a_head_without_a_token_is_refused_without_a_body(signing, library):
    track = library.add()
    resp = requests.head(signing.url + track.url_path, timeout=TIMEOUT)
    assert_refused(resp, head=True)


def test_the_403_is_no_store_whatever_error_cache_control_says(musicd, tmp_path, key, library):
    server = musicd.start(extra_args=["--url-signing-key-file", tmp_path / "url-signing.keys",
                                      "--error-cache-control", "public, max-age=600"])
    track = library.add()
    assert_refused(get(server, track.url_path))
    missing = get(server, signed(library.add_document("/nonexistent/x.mp3"),
                                 python_token(key, track_acl("0" * 24), now() + HOUR)))
    assert missing.status_code == 403   # another track's acl: refused before the lookup


def test_the_healthz_probe_metrics_preflights_and_other_methods_need_no_token(musicd, tmp_path,
                                                                              key, library):
    server = musicd.start(extra_args=["--url-signing-key-file", tmp_path / "url-signing.keys",
                                      "--cors-origin", "https://player.example"])
    track = library.add()
    assert get(server, "/healthz").status_code == 200
    resp, _ = httpraw.exchange(server.metrics_port, "GET", "/metrics", timeout=TIMEOUT)
    assert resp.status == 200
    preflight = requests.options(server.url + track.url_path, timeout=TIMEOUT, headers={
        "Origin": "https://player.example", "Access-Control-Request-Method": "GET"})
    assert preflight.status_code == 204
    assert requests.post(server.url + track.url_path, timeout=TIMEOUT).status_code == 405
    assert get(server, "/musicdb/not-an-id/x.mp3").status_code == 400
    refused = get(server, track.url_path, headers={"Origin": "https://player.example"})
    assert_refused(refused)
    assert refused.headers["Access-Control-Allow-Origin"] == "https://player.example"


# -- times ----------------------------------------------------------------------------------

def test_a_token_is_valid_within_the_leeway_of_its_st_and_exp(signing, library, key):
    track = library.add()
    soon = python_token(key, track_acl(track.id), now() + HOUR, start=now() + 2)
    just_past = python_token(key, track_acl(track.id), now() - 2)
    assert get(signing, signed(track, soon)).status_code == 200      # default leeway: 5 s
    assert get(signing, signed(track, just_past)).status_code == 200
    assert_refused(get(signing, signed(track, python_token(key, track_acl(track.id),
                                                           now() - 30))))


def test_without_leeway_a_token_before_its_st_is_not_yet_valid(musicd, tmp_path, key, library):
    server = musicd.start(extra_args=["--url-signing-key-file", tmp_path / "url-signing.keys",
                                      "--url-signing-leeway", "0"])
    track = library.add()
    assert_refused(get(server, signed(track, python_token(key, track_acl(track.id),
                                                          now() + HOUR, start=now() + 3))))
    server.wait_for_stderr("signed-URL token not yet valid")


def test_a_token_stops_serving_once_expired(signing, library, key):
    track = library.add()
    path = signed(track, python_token(key, track_acl(track.id), now() + 1))
    assert get(signing, path).status_code == 200
    wait_until(lambda: get(signing, path).status_code == 403, scaled(15), interval=0.5,
               message="the token to expire (exp + 5 s of leeway)")
    signing.wait_for_stderr("signed-URL token expired")


# -- what the token never touches ---------------------------------------------------------------

def test_the_token_is_not_part_of_the_lookup_cache_key(signing, library, key):
    track = library.add()
    before = scrape(signing)
    for seconds in (HOUR, 2 * HOUR, 3 * HOUR):
        token = python_token(key, track_acl(track.id), now() + seconds)
        assert get(signing, signed(track, token)).status_code == 200
    after = scrape(signing)
    assert after.value("musicd_lookup_cache_misses_total") - \
        before.value("musicd_lookup_cache_misses_total") == 1
    assert after.value("musicd_lookup_cache_hits_total") - \
        before.value("musicd_lookup_cache_hits_total") == 2


def test_the_etag_and_content_disposition_are_those_of_an_unsigned_musicd(musicd, tmp_path,
                                                                          key, library):
    track = library.add(name="Café live.mp3")
    plain = musicd.start()
    keyed = musicd.start(extra_args=["--url-signing-key-file", tmp_path / "url-signing.keys"])
    name = "Caf%C3%A9%20live.mp3"
    expected = get(plain, f"/musicdb/{track.id}/{name}?download")
    for seconds in (HOUR, 2 * HOUR):
        token = python_token(key, track_acl(track.id), now() + seconds)
        got = get(keyed, f"/musicdb/{track.id}/{name}?download&__token__={token}")
        assert got.status_code == 200
        assert got.headers["ETag"] == expected.headers["ETag"]
        assert got.headers["Content-Disposition"] == expected.headers["Content-Disposition"]
        assert got.headers["Last-Modified"] == expected.headers["Last-Modified"]
        assert "__token__" not in got.headers["Content-Disposition"]


def test_the_access_log_never_shows_a_token(musicd, tmp_path, key, library):
    server = musicd.start(extra_args=["--url-signing-key-file", tmp_path / "url-signing.keys",
                                      "--log-level", "debug"])
    track = library.add()
    good = python_token(key, track_acl(track.id), now() + HOUR)
    bad = python_token(new_key(), track_acl(track.id), now() + HOUR)
    macs = [HMAC_FIELD.search(t).group(1) for t in (good, bad)]
    assert get(server, signed(track, good, "download")).status_code == 200
    assert get(server, signed(track, bad)).status_code == 403
    assert get(server, f"{track.url_path}?sig={good}").status_code == 403
    assert get(server, signed(track, good),
               headers={"Referer": f"https://site.example/page?__token__={bad}"}).status_code == 200
    # A request the scan refuses before evhttp sees it (a TRACE with a body): its line too.
    raw = httpraw.request_bytes("TRACE", signed(track, good), headers={"Content-Length": "5"},
                                body=b"hello")
    sock = httpraw.connect(server.port, timeout=TIMEOUT)
    sock.sendall(raw)
    assert httpraw.read_until_closed(sock, TIMEOUT)[0].startswith(b"HTTP/1.1 400 ")
    sock.close()
    lines = server.wait_for_access_log(5)
    text = "\n".join(lines) + server.stderr_text()
    for mac in macs:
        assert mac not in text, f"an hmac reached a log:\n{text}"
    assert "exp=" not in "\n".join(lines)
    assert f'"GET {track.url_path}?download&__token__=REDACTED HTTP/1.1" 200 ' in lines[0]
    assert f'"GET {track.url_path}?__token__=REDACTED HTTP/1.1" 403 ' in lines[1]
    assert f"?sig=REDACTED HTTP/1.1\" 403 " in lines[2]
    assert '"https://site.example/page?__token__=REDACTED"' in lines[3]
    assert f'"TRACE {track.url_path}?__token__=REDACTED HTTP/1.1" 400 ' in lines[4]


def test_another_parameter_name_is_read_and_redacted(musicd, tmp_path, key, library):
    server = musicd.start(extra_args=["--url-signing-key-file", tmp_path / "url-signing.keys",
                                      "--url-signing-parameter", "t"])
    track = library.add()
    token = python_token(key, track_acl(track.id), now() + HOUR)
    assert get(server, f"{track.url_path}?t={token}").status_code == 200
    assert get(server, signed(track, token)).status_code == 403
    lines = server.wait_for_access_log(2)
    assert f"{track.url_path}?t=REDACTED " in lines[0]
    assert HMAC_FIELD.search(token).group(1) not in "\n".join(lines)


# -- the key file --------------------------------------------------------------------------------

def test_every_key_of_the_file_is_tried(musicd, tmp_path, library):
    new, old = new_key(), new_key(64)
    keys = write_key_file(tmp_path / "rotation.keys", [new, "", "# the old one, until Friday",
                                                       f"  {old.upper()}  # uppercase too"])
    server = musicd.start(extra_args=["--url-signing-key-file", keys])
    track = library.add()
    for key in (new, old):
        assert get(server, signed(track, python_token(key, track_acl(track.id),
                                                      now() + HOUR))).status_code == 200
    server.wait_for_stderr("signed URLs: every track request needs a token (2 keys from ")


@pytest.mark.parametrize("mode, words", [
    (0o644, "mode 0644 lets others read or write it"),
    (0o604, "mode 0604 lets others read or write it"),
    (0o602, "mode 0602 lets others read or write it"),
    (0o620, "mode 0620 lets its group write it"),
])
def test_a_key_file_others_may_read_stops_start_up_and_check(musicd, tmp_path, library, mode,
                                                              words):
    keys = write_key_file(tmp_path / "open.keys", [new_key()], mode=mode)
    args = ["--media-root", library.root, "--url-signing-key-file", keys]
    for extra in (["-t"], ["--listen", "127.0.0.1:1", "--mongodb-uri", "mongodb://127.0.0.1:1/"]):
        result = musicd.run(args + extra)
        assert result.returncode == 2, result
        assert result.stderr.strip() == f"musicd: url-signing-key-file {keys}: {words}; a key " \
                                        "file is readable by its owner and group only " \
                                        "(chmod 640 or 600)"


@pytest.mark.parametrize("lines, words", [
    (["6d75736963642d6578616d706c652d6b65792d303132333435363738396162"],
     "line 2: a key of 31 bytes; give 32 to 256 bytes (64 to 512 hex digits)"),
    ([EXAMPLE_KEY, "abc"], "line 3: an odd number of hex digits (3)"),
    ([EXAMPLE_KEY, "musicd-example-key-0123456789abcmusicd-example-key-0123456789abc"],
     "line 3: a key is hex digits only (byte 1 is not one)"),
    (["# no key at all"], "holds no key"),
])
def test_a_bad_key_line_stops_start_up_and_check_naming_the_line(musicd, tmp_path, library,
                                                                 lines, words):
    keys = write_key_file(tmp_path / "bad.keys", lines)
    result = musicd.run(["--media-root", library.root, "--url-signing-key-file", keys, "-t"])
    assert result.returncode == 2, result
    assert result.stderr.strip() == f"musicd: url-signing-key-file {keys}: {words}"
    assert "musicd-example-key" not in result.stderr and EXAMPLE_KEY not in result.stderr


def test_a_missing_key_file_stops_check(musicd, tmp_path, library):
    result = musicd.run(["--media-root", library.root, "--url-signing-key-file",
                         tmp_path / "nothere", "-t"])
    assert result.returncode == 2
    assert result.stderr.strip() == \
        f"musicd: url-signing-key-file {tmp_path / 'nothere'}: No such file or directory"


def test_a_good_key_file_passes_check(musicd, tmp_path, library, key):
    result = musicd.run(["--media-root", library.root, "--url-signing-key-file",
                         tmp_path / "url-signing.keys", "-t"])
    assert result.returncode == 0, result
    assert result.stdout == CHECK_OK


@pytest.mark.skipif(os.geteuid() != 0, reason="checking as --user needs root")
def test_check_refuses_a_key_file_the_user_cannot_read_again(musicd, tmp_path, library):
    keys = write_key_file(tmp_path / "root-only.keys", [new_key()])  # root's, 600
    os.chmod(tmp_path, 0o755)
    os.chmod(library.root, 0o755)
    result = musicd.run(["--media-root", library.root, "--url-signing-key-file", keys,
                         "--user", "nobody", "-t"])
    assert result.returncode == 2, result
    assert result.stderr.strip() == f"musicd: url-signing-key-file {keys}: Permission denied " \
                                    "(as --user nobody, who re-reads it on SIGHUP)"


def test_a_bad_parameter_name_stops_start_up(musicd, library):
    result = musicd.run(["--media-root", library.root, "--url-signing-parameter", "a&b", "-t"])
    assert result.returncode == 2
    assert "url-signing-parameter: 'a&b' is not 1 to 64 letters" in result.stderr


# -- SIGHUP ---------------------------------------------------------------------------------------

def test_sighup_reads_the_key_file_again(musicd, mongo, db, library, tmp_path):
    first, second = new_key(), new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [first])
    r = Reloadable(musicd, tmp_path, base_settings(mongo, db, library, tmp_path,
                                                   url_signing_key_file=str(keys)))
    track = library.add()
    token_one = python_token(first, track_acl(track.id), now() + HOUR)
    token_two = python_token(second, track_acl(track.id), now() + HOUR)
    assert r.get(signed(track, token_one)).status == 200
    assert r.get(signed(track, token_two)).status == 403
    write_key_file(keys, [second, first])          # the config file itself is unchanged
    assert r.hup("SIGHUP: signed URLs: ").endswith(f"2 keys from {keys}")
    assert r.get(signed(track, token_two)).status == 200
    write_key_file(keys, [second])
    r.hup("SIGHUP: signed URLs: ")
    assert r.get(signed(track, token_one)).status == 403
    assert r.get(signed(track, token_two)).status == 200


def test_a_key_file_that_no_longer_passes_keeps_the_running_keys(musicd, mongo, db, library,
                                                                 tmp_path):
    key = new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [key])
    r = Reloadable(musicd, tmp_path, base_settings(mongo, db, library, tmp_path,
                                                   url_signing_key_file=str(keys)))
    track = library.add()
    token = python_token(key, track_acl(track.id), now() + HOUR)
    os.chmod(keys, 0o644)
    line = r.hup("settings unchanged")
    assert "error: SIGHUP: url-signing-key-file " in line and "lets others read" in line
    assert r.get(signed(track, token)).status == 200
    keys.unlink()
    assert "No such file or directory; settings unchanged" in r.hup("settings unchanged")
    assert r.get(signed(track, token)).status == 200


def test_sighup_turns_signing_on_and_off(musicd, mongo, db, library, tmp_path):
    key = new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [key])
    r = Reloadable(musicd, tmp_path, base_settings(mongo, db, library, tmp_path))
    track = library.add()
    assert r.get(track.url_path).status == 200
    r.write(url_signing_key_file=str(keys))
    assert "changed url-signing-key-file" in r.hup()
    assert r.get(track.url_path).status == 403
    assert r.get(signed(track, python_token(key, track_acl(track.id), now() + HOUR))).status == 200
    r.write(url_signing_key_file=None)
    r.hup()
    assert r.get(track.url_path).status == 200


def test_sighup_without_a_config_file_still_reads_the_key_file_again(musicd, tmp_path, library):
    first, second = new_key(), new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [first])
    server = musicd.start(extra_args=["--url-signing-key-file", keys])
    track = library.add()
    token_two = python_token(second, track_acl(track.id), now() + HOUR)
    assert get(server, signed(track, token_two)).status_code == 403
    write_key_file(keys, [second])
    server.send_signal(signal.SIGHUP)
    server.wait_for_stderr(f"signed URLs: 1 key from {keys}")
    assert get(server, signed(track, token_two)).status_code == 200


# -- signing from the command line -----------------------------------------------------------

def test_sign_url_prints_a_url_musicd_serves(musicd, tmp_path, key, library, signing):
    track = library.add()
    before = now()
    result = musicd.run(["--url-signing-key-file", tmp_path / "url-signing.keys",
                         "--sign-url", f"{signing.url}{track.url_path}?download",
                         "--url-lifetime", "600"])
    assert result.returncode == 0, result
    url = result.stdout.strip()
    prefix = f"{signing.url}{track.url_path}?download&__token__=exp="
    assert url.startswith(prefix), url
    expires = int(url[len(prefix):].split("~")[0])
    assert before + 600 <= expires <= now() + 600
    assert url.endswith(python_token(key, track_acl(track.id), expires).split("~", 1)[1])
    resp = requests.get(url, timeout=TIMEOUT)
    assert resp.status_code == 200 and "attachment" in resp.headers["Content-Disposition"]


def test_sign_url_of_an_id_prints_the_token_alone(musicd, tmp_path, key):
    result = musicd.run(["--url-signing-key-file", tmp_path / "url-signing.keys",
                         "--sign-url", "65A1B2C3D4E5F60718293A4B"])
    assert result.returncode == 0, result
    token = result.stdout.strip()
    expires = int(token.split("~")[0][len("exp="):])
    assert abs(expires - (now() + HOUR)) <= 5
    assert token == python_token(key, "/musicdb/65a1b2c3d4e5f60718293a4b/*", expires)


def test_sign_url_reads_the_key_file_from_the_config_file(musicd, tmp_path, key):
    conf = tmp_path / "musicd.conf"
    conf.write_text(f"url-signing-key-file = {tmp_path / 'url-signing.keys'}\n"
                    "url-signing-parameter = t\n")
    result = musicd.run(["--config", conf, "--sign-url", "/musicdb/65a1b2c3d4e5f60718293a4b/a"])
    assert result.returncode == 0, result
    assert result.stdout.startswith("/musicdb/65a1b2c3d4e5f60718293a4b/a?t=exp=")


@pytest.mark.parametrize("args, words", [
    (["--sign-url", "/musicdb/65a1b2c3d4e5f60718293a4b/a"],
     "--sign-url needs the keys: give --url-signing-key-file FILE"),
    (["--sign-url", "/healthz", "--url-signing-key-file", "KEYS"],
     "--sign-url: '/healthz' is neither a track's URL or path"),
    (["--sign-url", "x", "--url-lifetime", "0", "--url-signing-key-file", "KEYS"],
     "--url-lifetime: '0' is not a number from 1 to 316224000"),
])
def test_sign_url_without_what_it_needs_exits_2(musicd, tmp_path, key, args, words):
    args = [str(tmp_path / "url-signing.keys") if a == "KEYS" else a for a in args]
    result = musicd.run(args)
    assert result.returncode == 2, result
    assert words in result.stderr and result.stdout == ""


# -- docs/signed-urls-and-limits.md's worked example and snippets -------------------------------

GUIDE = REPO / "docs" / "signed-urls-and-limits.md"


def guide_section():
    """The guide's "Signed URLs" section."""
    return GUIDE.read_text().split("\n## Signed URLs\n", 1)[1].split("\n## ", 1)[0]


def worked_example():
    """The worked example's values, as the guide writes them."""
    block = guide_section().split("**A worked example**", 1)[1]
    values = {}
    for name in ("key file line", "track", "st", "exp", "acl", "signed bytes", "hmac", "token",
                 "URL"):
        match = re.search(rf"^    {re.escape(name)}: +(\S+)", block, re.M)
        assert match, f"the guide's worked example has no {name!r} line"
        values[name] = match.group(1)
    return values


def test_the_guide_s_worked_example_is_what_every_signer_makes(npm):
    ex = worked_example()
    mid = ex["track"].split("/")[2]
    assert ex["acl"] == track_acl(mid)
    expected = python_token(ex["key file line"], ex["acl"], int(ex["exp"]), start=int(ex["st"]))
    assert ex["token"] == expected
    assert ex["token"] == npm.token(ex["key file line"], ex["acl"], int(ex["exp"]),
                                    start=int(ex["st"]))
    assert ex["token"] == f"{ex['signed bytes']}~hmac={ex['hmac']}"
    assert ex["URL"] == f"{ex['track']}?__token__={ex['token']}"
    assert bytes.fromhex(ex["key file line"]) == b"musicd-example-key-0123456789abc"


def test_musicd_serves_the_guide_s_worked_example(musicd, tmp_path, db, library):
    ex = worked_example()
    mid = ex["track"].split("/")[2]
    path = library.place(library.media.short, "example.mp3")
    db.insert({"_id": ObjectId(mid), "path": str(path)})
    keys = write_key_file(tmp_path / "example.keys", [ex["key file line"]])
    server = musicd.start(extra_args=["--url-signing-key-file", keys])
    assert_file_response(get(server, ex["URL"]), path)
    assert_refused(get(server, ex["track"]))


def snippet(language):
    match = re.search(rf"```{language}\n(.*?)```", guide_section(), re.S)
    assert match, f"no {language} snippet in the guide's Signed URLs"
    code = match.group(1)
    assert len(code.strip().splitlines()) == 3, code
    return code


def test_the_guide_s_node_snippet_signs_a_url_musicd_serves(signing, library, key, npm):
    track = library.add(name="song.mp3")
    program = f"const mid = {track.id!r};\n" + snippet("js") + "\nconsole.log(url);\n"
    p = subprocess.run([npm.node, "-e", program], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=npm.prefix,
                       env=dict(os.environ, MUSICD_KEY=key, NODE_NO_WARNINGS="1",
                                NODE_PATH=str(npm.prefix / "node_modules")))
    assert p.returncode == 0, p.stderr
    url = p.stdout.strip().replace("https://music.example.com", signing.url)
    assert_file_response(requests.get(url, timeout=TIMEOUT), track.path)


def test_the_guide_s_python_snippet_signs_a_url_musicd_serves(signing, library, key):
    track = library.add(name="song.mp3")
    scope = {"mid": track.id}
    os.environ["MUSICD_KEY"] = key
    try:
        exec(snippet("python"), scope)
    finally:
        del os.environ["MUSICD_KEY"]
    url = scope["url"].replace("https://music.example.com", signing.url)
    assert_file_response(requests.get(url, timeout=TIMEOUT), track.path)


def test_the_guide_s_php_snippet_signs_a_url_musicd_serves(signing, library, key):
    php = subprocess.run(["which", "php"], capture_output=True, text=True).stdout.strip()
    assert php, "php is needed (scripts/setup/install-deps installs php-cli)"
    track = library.add(name="song.mp3")
    program = f"$mid = '{track.id}';\n" + snippet("php") + "\necho $url;\n"
    p = subprocess.run([php, "-r", program], capture_output=True, text=True, timeout=TIMEOUT,
                       env=dict(os.environ, MUSICD_KEY=key))
    assert p.returncode == 0, p.stderr
    url = p.stdout.strip().replace("https://music.example.com", signing.url)
    assert_file_response(requests.get(url, timeout=TIMEOUT), track.path)
