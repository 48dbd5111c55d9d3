"""Signed URLs behind the shipped frontends (issue 18, docs/signed-urls-and-limits.md): through
either nginx site (proxy, offload) tokens reach musicd untouched; the shipped VCLs as shipped pass
a URL with a token to musicd uncached; with their url-signing block turned on (docs/deployment.md:
its one include line uncommented) Varnish checks the same tokens as musicd, with the same verdict
for every token, refuses bad ones itself (403, no-store, the reason in its log), shares one cached
copy among every listener's token and never serves it without a valid one, and refuses to load a
key it cannot match (a 00 byte); the cluster VCL sends every token of a track to the track's one
origin.
"""

import re
import shutil
import subprocess

import pytest
import requests
import httpraw

from edgeauth import NpmEdgeAuth, new_key, python_token, track_acl, write_key_file
from frontends import SHIPPED_ACCEL_PREFIX, Varnish, url_signing_on, varnish_vcl_files
from support import free_port, scaled, wait_until
from test_cluster import ORIGIN_ARGS, ORIGINS, served_urls
from test_deployment import HEALTHY_TIMEOUT, track_requests, wait_track_requests
from test_signed_urls import get, now, signed

pytestmark = pytest.mark.skipif(
    not (shutil.which("nginx") or shutil.which("/usr/sbin/nginx")) or
    not (shutil.which("varnishd") or shutil.which("/usr/sbin/varnishd")),
    reason="nginx and varnishd are needed (scripts/setup/install-deps)")

TIMEOUT = scaled(20)
HOUR = 3600
VARNISHLOG = shutil.which("varnishlog") or "/usr/bin/varnishlog"


@pytest.fixture(scope="module")
def npm():
    """The real akamai-edgeauth package (installed into var/npm on first use)."""
    return NpmEdgeAuth().install()


def token_for(key, track, seconds=HOUR, **kw):
    return python_token(key, track_acl(track.id), now() + seconds, **kw)


def keyed_musicd(musicd, keys, *extra):
    return musicd.start(extra_args=["--url-signing-key-file", keys, *extra])


def assert_forbidden(resp):
    assert resp.status_code == 403, (resp.status_code, resp.content[:200])
    assert resp.headers["Cache-Control"] == "no-store"
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert resp.content == b"403 Forbidden\n"


def refusal_reasons(varnish):
    """The reasons Varnish logged for its refusals (VCL_Log records), in the log's order."""
    p = subprocess.run([VARNISHLOG, "-n", str(varnish.workdir), "-d", "-g", "raw", "-i",
                        "VCL_Log"], capture_output=True, text=True, timeout=TIMEOUT,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return re.findall(r"url signing: 403, signed-URL token (.+)$", p.stdout, re.M)


def signing_stack(musicd, frontends, tmp_path, keys_list=None):
    """musicd with the key file, the shipped nginx site, and Varnish with url-signing on."""
    keys_list = keys_list or [new_key()]
    keys = write_key_file(tmp_path / "url-signing.keys", keys_list)
    server = keyed_musicd(musicd, keys)
    nginx = frontends.nginx(server.port)
    varnish = frontends.varnish(nginx.port, adapt=url_signing_on(keys))
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    return keys_list, server, varnish


# -- nginx: tokens pass untouched --------------------------------------------------------------

def tokens_every_character(key, track, npm):
    """Valid tokens that hold every character a token may: '~', '=', '/', '*', '!'."""
    other = "0" * 24
    return [npm.token(key, track_acl(track.id), now() + HOUR),
            npm.token(key, [track_acl(other), track_acl(track.id)], now() + HOUR,
                      start=now() - 10, session_id="s-1.2_3", payload="tier:free")]


def test_tokens_pass_through_the_shipped_proxy_site_untouched(musicd, frontends, library,
                                                              tmp_path, npm):
    key = new_key()
    server = keyed_musicd(musicd, write_key_file(tmp_path / "k", [key]))
    nginx = frontends.nginx(server.port)
    track = library.add()
    for token in tokens_every_character(key, track, npm):
        resp = get(nginx, signed(track, token, "download"))
        assert resp.status_code == 200 and resp.content == track.data, token
    mac = re.search(r"hmac=(\w+)", token).group(1)
    tampered = token.replace(mac, mac[::-1])
    assert_forbidden(get(nginx, signed(track, tampered)))
    assert_forbidden(get(nginx, track.url_path))
    statuses = [status for _, _, status, _ in wait_track_requests(server, 4)]
    assert statuses == [200, 200, 403, 403]    # musicd checked every one itself


def test_tokens_pass_through_the_shipped_offload_site_untouched(musicd, frontends, library,
                                                                tmp_path, npm):
    key = new_key()
    server = keyed_musicd(musicd, write_key_file(tmp_path / "k", [key]),
                          "--x-accel-redirect", SHIPPED_ACCEL_PREFIX)
    nginx = frontends.nginx(server.port, offload=True, media_root=library.root)
    track = library.add()
    for token in tokens_every_character(key, track, npm):
        resp = get(nginx, signed(track, token))
        assert resp.status_code == 200 and resp.content == track.data, token
        ranged = get(nginx, signed(track, token), headers={"Range": "bytes=100-199"})
        assert ranged.status_code == 206 and ranged.content == track.data[100:200]
    assert_forbidden(get(nginx, signed(track, token_for(key, track, -60))))
    assert_forbidden(get(nginx, track.url_path))


# -- Varnish, as shipped: tokened URLs are passed to musicd ------------------------------------

def test_the_shipped_vcl_as_shipped_passes_urls_with_a_token_uncached(musicd, frontends, library,
                                                                      tmp_path):
    key = new_key()
    server = keyed_musicd(musicd, write_key_file(tmp_path / "k", [key]))
    nginx = frontends.nginx(server.port)
    varnish = frontends.varnish(nginx.port)
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    track = library.add()
    path = signed(track, token_for(key, track, seconds=2))
    for _ in range(2):
        resp = get(varnish, path)
        assert resp.status_code == 200 and resp.content == track.data
        assert resp.headers["X-Cache"] == "miss"
    assert_forbidden(get(varnish, track.url_path))
    assert len(wait_track_requests(server, 3)) == 3          # every one reached musicd
    # Past its exp (and the leeway) the same URL is refused: no copy of it was kept.
    wait_until(lambda: get(varnish, path).status_code == 403, scaled(20), interval=0.5,
               message="the token to expire")


# -- Varnish with url-signing on -------------------------------------------------------------

def test_varnish_refuses_bad_tokens_itself_with_their_reason(musicd, frontends, library,
                                                             tmp_path):
    (key,), server, varnish = signing_stack(musicd, frontends, tmp_path)
    track, other = library.add(), library.add(relpath="other.mp3")
    good = token_for(key, track)
    cases = [
        ("missing", track.url_path),
        ("malformed", signed(track, good[:-3])),
        ("malformed", signed(track, good, f"__token__={good}")),
        ("bad signature", signed(track, token_for(new_key(), track))),
        ("expired", signed(track, token_for(key, track, -60))),
        ("not yet valid", signed(track, token_for(key, track, start=now() + 600))),
        ("wrong track", signed(track, token_for(key, other))),
    ]
    for _, path in cases:
        resp = get(varnish, path)
        assert_forbidden(resp)
        assert "X-Varnish" in resp.headers
    # One reason per refusal. Sorted: Varnish's workers put their transactions' records in the
    # shared log as they flush them, so two requests in a row may show in either order.
    assert sorted(wait_until(lambda: len(refusal_reasons(varnish)) >= len(cases) and
                             refusal_reasons(varnish), TIMEOUT, message="VCL_Log lines")) == \
        sorted(reason for reason, _ in cases)
    assert track_requests(server) == [], "a refused request reached musicd"


def test_varnish_serves_every_token_of_a_track_from_one_cached_copy(musicd, frontends, library,
                                                                    tmp_path, npm):
    (key,), server, varnish = signing_stack(musicd, frontends, tmp_path)
    track = library.add()
    first = get(varnish, signed(track, npm.token(key, track_acl(track.id), now() + HOUR)))
    assert first.status_code == 200 and first.headers["X-Cache"] == "miss"
    for token in (token_for(key, track, 2 * HOUR), token_for(key, track, 3 * HOUR,
                                                              start=now())):
        again = get(varnish, signed(track, token))
        assert again.status_code == 200 and again.content == track.data
        assert again.headers["X-Cache"] == "hit"
    download = get(varnish, signed(track, token_for(key, track), "download"))
    assert download.status_code == 200 and download.headers["X-Cache"] == "miss"
    assert "attachment" in download.headers["Content-Disposition"]
    # musicd was asked twice (the track, its ?download), each time with a token it checked.
    lines = wait_track_requests(server, 2)
    assert [status for _, _, status, _ in lines] == [200, 200]
    assert all("__token__=REDACTED" in request for _, request, _, _ in lines), lines


def test_a_cached_copy_is_never_served_without_a_valid_token(musicd, frontends, library,
                                                             tmp_path):
    (key,), server, varnish = signing_stack(musicd, frontends, tmp_path)
    track = library.add()
    assert get(varnish, signed(track, token_for(key, track))).status_code == 200
    assert get(varnish, signed(track, token_for(key, track))).headers["X-Cache"] == "hit"
    for path in (track.url_path, f"{track.url_path}?v=1",
                 signed(track, token_for(key, track, -60)),
                 signed(track, token_for(new_key(), track)),
                 signed(track, token_for(key, track)).replace("__token__", "__Token__")):
        assert_forbidden(get(varnish, path))
    assert requests.head(varnish.url + track.url_path, timeout=TIMEOUT).status_code == 403
    # The absolute form names the same track: Varnish reads its path, and checks it.
    absolute, _ = httpraw.exchange(varnish.port, "GET", f"http://music.example{track.url_path}",
                                   timeout=TIMEOUT)
    assert absolute.status == 403 and absolute.header("Cache-Control") == "no-store"


def verdicts_of_every_kind(keys, track, other, npm):
    """Tokens of every kind, good and bad, for track."""
    key, second = keys
    good = token_for(key, track)
    mac = re.search(r"hmac=(\w+)", good).group(1)
    signed_text = good.split("~hmac=")[0]
    upper_acl = python_token(key, track_acl(track.id.upper()), now() + HOUR)
    tokens = [
        good, npm.token(key, track_acl(track.id), now() + HOUR),
        token_for(second, track),                                        # the file's second key
        token_for(key, track, start=now() - 5),
        npm.token(key, [track_acl(other.id), track_acl(track.id)], now() + HOUR,
                  session_id="a", payload="b"),
        f"{signed_text}~hmac={mac.upper()}", upper_acl,
        python_token(key, track_acl(track.id), f"00{now() + HOUR}"),    # 12 digits
        python_token(key, track_acl(track.id), f"000{now() + HOUR}"),   # 13: too many
        npm.token(key, track_acl(track.id), now() + HOUR, ip="127.0.0.1"),
        f"acl={track_acl(track.id)}~exp={now() + HOUR}~hmac={mac}",
        "", "x", good[:40], good[:-1], good + "a", good.replace("exp=", "exp=1"),
        good.replace("=", "%3D"), good.replace("~", "%7E"),
        f"exp={now() + HOUR}~acl={track_acl(track.id)}" + "!" * 2100 + f"~hmac={mac}",
        token_for(new_key(), track), token_for(key, track, -60),
        token_for(key, track, start=now() + 600), token_for(key, other),
        python_token(key, "/*", now() + HOUR), python_token(key, "/musicdb/*", now() + HOUR),
    ]
    paths = [signed(track, t) for t in tokens]
    paths += [track.url_path, f"{track.url_path}?__token__", signed(track, good, "a=1"),
              signed(track, good, f"__token__={good}"),
              f"{track.url_path}?__token__={good}&download",
              f"/musicdb/{track.id.upper()}/Other%20Name.mp3?__token__={good}"]
    return paths


def test_varnish_and_musicd_give_every_token_the_same_verdict(musicd, frontends, library,
                                                              tmp_path, npm):
    keys, server, varnish = signing_stack(musicd, frontends, tmp_path, [new_key(), new_key(48)])
    track, other = library.add(), library.add(relpath="other.mp3")
    different = []
    paths = verdicts_of_every_kind(keys, track, other, npm)
    for path in paths:
        direct, through = get(server, path).status_code, get(varnish, path).status_code
        if direct != through:
            different.append((path[:200], direct, through))
        assert direct in (200, 403), (path, direct)
    assert different == []
    statuses = [get(server, p).status_code for p in paths]
    assert statuses.count(200) >= 10 and statuses.count(403) >= 15, statuses


def test_a_rotated_key_reaches_varnish_by_a_vcl_naming_a_new_file(musicd, frontends, library,
                                                                   tmp_path):
    (first,), server, varnish = signing_stack(musicd, frontends, tmp_path)
    track = library.add()
    assert get(varnish, signed(track, token_for(first, track))).status_code == 200  # cached
    second = new_key()
    # varnishd reads a std.fileread() path once: the same file rewritten is not seen...
    write_key_file(tmp_path / "url-signing.keys", [second, first])
    varnish.adm("vcl.load", "same-path", str(varnish.vcl_path))
    varnish.adm("vcl.use", "same-path")
    assert_forbidden(get(varnish, signed(track, token_for(second, track))))
    # ... a VCL naming a new file is, as the url-signing file's comment says (the path edited in
    # it, the VCL loaded again: it is compiled with its includes as they are now), and the cache
    # stays.
    rotated = write_key_file(tmp_path / "url-signing.2.keys", [second, first])
    block = varnish.dir / "varnish-musicd-url-signing.vcl"
    block.write_text(block.read_text().replace(str(tmp_path / "url-signing.keys"), str(rotated)))
    varnish.adm("vcl.load", "rotated", str(varnish.vcl_path))
    varnish.adm("vcl.use", "rotated")
    for key in (second, first):
        resp = get(varnish, signed(track, token_for(key, track)))
        assert resp.status_code == 200 and resp.headers["X-Cache"] == "hit", key
    assert len(wait_track_requests(server, 1)) == 1


def vcl_load_failure(tmp_path, key_file):
    """What varnishd says when the shipped VCL, url-signing on with key_file, fails to load."""
    files = varnish_vcl_files(free_port(), adapt=url_signing_on(key_file))
    varnish = Varnish(tmp_path / "varnish", files, free_port())
    try:
        with pytest.raises(AssertionError) as failed:
            varnish.start(timeout=scaled(30))
    finally:
        varnish.stop()
    return str(failed.value)


@pytest.mark.parametrize("keys, words", [
    (["61626300646566676869616263646566676869616263646566676869616263ff"],
     "a key holds a 00 byte"),
    ([new_key(), new_key(), new_key()], "the key file must hold one or two hex keys"),
    (["# none"], "the key file must hold one or two hex keys"),
    (["abcdef"], "the key file must hold one or two hex keys"),
])
def test_the_vcl_refuses_to_load_with_keys_it_cannot_match(tmp_path, keys, words):
    key_file = write_key_file(tmp_path / "url-signing.keys", keys)
    assert f"url signing: {words}" in vcl_load_failure(tmp_path, key_file)


def test_the_vcl_refuses_to_load_without_its_key_file(tmp_path):
    assert "url signing: the key file must hold one or two hex keys" in \
        vcl_load_failure(tmp_path, tmp_path / "no-such-file")


# -- the cluster VCL -------------------------------------------------------------------------

def tokened_fetches(origins, front, track, keys, count=5, headers=None):
    """count requests for track, each with a token of its own; the origins that served them."""
    before = [len(served_urls(o)) for o in origins]
    for i in range(count):
        resp = get(front, signed(track, token_for(keys, track, HOUR + i)), headers=headers)
        assert resp.status_code == 200 and resp.content == track.data
    wait_until(lambda: sum(len(served_urls(o)) for o in origins) - sum(before) >= count,
               TIMEOUT, message=f"{count} requests at the origins")
    return [i for i, o in enumerate(origins) if len(served_urls(o)) > before[i]]


def test_the_cluster_vcl_sends_every_token_of_a_track_to_its_one_origin(musicd, frontends,
                                                                        library, tmp_path):
    key = new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [key])
    origins = [musicd.start(extra_args=ORIGIN_ARGS + ["--url-signing-key-file", keys])
               for _ in range(ORIGINS)]
    varnish = frontends.varnish_cluster([o.port for o in origins])
    varnish.wait_backends({f"origin{i + 1}": "healthy" for i in range(ORIGINS)}, TIMEOUT)
    owners = set()
    # Ids are random: 6 tracks all land on one of the 3 origins 1 run in 243; tracks are added
    # until a second origin owns one, at most 24 (then ~1 in 10^11 by chance alone).
    for i in range(24):   # as shipped: each tokened URL passed, all to the track's origin
        track = library.add(relpath=f"c{i}.mp3")
        served_by = tokened_fetches(origins, varnish, track, key)
        assert len(served_by) == 1, (track, served_by)
        owners.update(served_by)
        if len(owners) >= 2 and i >= 5:
            break
    assert len(owners) >= 2, "the ring gave every track to one origin"


def test_the_cluster_vcl_with_url_signing_on_checks_tokens_and_caches_one_copy(
        musicd, frontends, library, tmp_path):
    key = new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [key])
    origins = [musicd.start(extra_args=ORIGIN_ARGS + ["--url-signing-key-file", keys])
               for _ in range(ORIGINS)]
    varnish = frontends.varnish_cluster([o.port for o in origins],
                                        adapt=url_signing_on(keys))
    varnish.wait_backends({f"origin{i + 1}": "healthy" for i in range(ORIGINS)}, TIMEOUT)
    track = library.add()
    assert_forbidden(get(varnish, track.url_path))
    assert_forbidden(get(varnish, signed(track, token_for(new_key(), track))))
    first = get(varnish, signed(track, token_for(key, track)))
    assert first.status_code == 200 and first.headers["X-Cache"] == "miss"
    again = get(varnish, signed(track, token_for(key, track, 2 * HOUR)))
    assert again.status_code == 200 and again.headers["X-Cache"] == "hit"
    # Passed (a precondition Varnish leaves to musicd), each token still goes to the track's one
    # origin.
    served_by = tokened_fetches(origins, varnish, track, key,
                                headers={"If-Unmodified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"})
    assert len(served_by) == 1
    assert refusal_reasons(varnish)[:2] == ["missing", "bad signature"]
