"""The shipped deployment: Varnish -> nginx -> musicd, from config/, with real processes.

nginx and Varnish run the files in config/ with only addresses, ports, the media root and the
probe interval substituted (frontends.py). Each test starts its own musicd, nginx and varnishd
on free loopback ports and stops them at teardown.
"""

import hashlib
import http.client
import os
import pwd
import re
import shlex
import shutil
import subprocess
import time
import urllib.parse

import pytest
import requests

from assertions import assert_error
from frontends import (DEPLOYMENT_GUIDE, INCLUDE_LINE, NGINX_CLUSTER_SITE, NGINX_OFFLOAD_SITE,
                       NGINX_SITE, SHIPPED_ACCEL_PREFIX, VARNISH_CLUSTER_VCL, VARNISH_VCL, Nginx,
                       block_on, documented_block_lines, parse_content_range, vcl_compiles,
                       vcl_files)
from media import Library, sha256_file
from musicd_process import MUSICD_BIN
from support import REPO, free_port, scaled, wait_until

pytestmark = pytest.mark.skipif(
    not (shutil.which("nginx") or shutil.which("/usr/sbin/nginx")) or
    not (shutil.which("varnishd") or shutil.which("/usr/sbin/varnishd")),
    reason="nginx and varnishd are needed (scripts/setup/install-deps)")

TIMEOUT = scaled(20)
SICK_TIMEOUT = scaled(15)      # probe every 200 ms, window 5, threshold 3: ~1 s expected
HEALTHY_TIMEOUT = scaled(30)   # includes the driver finding the restarted database again
LOOKUP_TIMEOUT_MS = 500
DEFAULT_CACHE_CONTROL = "public, max-age=86400"
SYSTEMD_UNIT = REPO / "config" / "musicd.service"
SHIPPED_BINARY = "/usr/sbin/musicd"
SHIPPED_CONFIG = "/etc/musicd/musicd.conf"


def get(base, track_or_path, **kw):
    path = track_or_path if isinstance(track_or_path, str) else track_or_path.url_path
    return requests.get(base.url + path, timeout=TIMEOUT, **kw)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def varnish_ids(resp):
    """The X-Varnish header's ids: one on a miss or pass, two (this, the object's) on a hit."""
    return resp.headers["X-Varnish"].split()


def track_requests(server):
    """musicd's access log lines for /musicdb/ (the health probes left out), as
    (client, request line, status, bytes)."""
    result = []
    for line in server.access_log_lines():
        m = re.match(r'^(\S+) \S+ \S+ \[[^]]+\] "([^"]*)" (\d{3}) (\d+|-)', line)
        assert m, f"not a combined log line: {line!r}"
        if " /musicdb/" in m.group(2):
            result.append((m.group(1), m.group(2), int(m.group(3)), m.group(4)))
    return result


def wait_track_requests(server, count):
    """Wait until musicd logged count /musicdb/ requests (it logs after the response)."""
    return wait_until(lambda: len(track_requests(server)) >= count and track_requests(server),
                      scaled(5), message=f"{count} /musicdb/ lines in musicd's access log")


def stack(musicd, frontends, offload=False, media_root=None, extra_args=()):
    """musicd, nginx (the shipped site) and Varnish (the shipped VCL), backend healthy."""
    server = musicd.start(extra_args=list(extra_args))
    nginx = frontends.nginx(server.port, offload=offload, media_root=media_root)
    varnish = frontends.varnish(nginx.port)
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    return server, nginx, varnish


# -- the shipped files are valid ----------------------------------------------------------------

SHIPPED_VCLS = [VARNISH_VCL, VARNISH_CLUSTER_VCL]


@pytest.mark.no_c_binary
@pytest.mark.parametrize("vcl", SHIPPED_VCLS, ids=lambda p: p.name)
def test_shipped_vcl_compiles(vcl):
    status, errors = vcl_compiles(vcl)
    assert status == 0, errors


@pytest.mark.no_c_binary
@pytest.mark.parametrize("vcl", SHIPPED_VCLS, ids=lambda p: p.name)
@pytest.mark.parametrize("blocks", ["request-limit", "url-signing", "cors", "all"])
def test_shipped_vcl_compiles_with_its_opt_in_blocks_on(tmp_path, vcl, blocks):
    names = list(documented_block_lines()) if blocks == "all" else [blocks]
    assert names, "docs/deployment.md's table of opt-in blocks is empty"
    files = vcl_files(vcl, [block_on(name) for name in names])
    status, errors = vcl_compiles(tmp_path / vcl.name, files)
    assert status == 0, errors
    assert sum(1 for name in files if f'\ninclude "./{name}";\n' in files[vcl.name]) == len(names)


@pytest.mark.no_c_binary
def test_the_guide_names_each_opt_in_block_by_the_one_line_both_vcls_have_commented_out():
    lines = documented_block_lines()
    assert sorted(lines) == ["cors", "request-limit", "url-signing"], lines
    for vcl in SHIPPED_VCLS:
        text = vcl.read_text()
        assert sorted(INCLUDE_LINE.findall(text)) == \
            sorted(INCLUDE_LINE.match(line).group(1) for line in lines.values()), vcl.name
        for line in lines.values():
            assert text.count(f"\n{line}\n") == 1, (vcl.name, line)
    # each file is shipped, beside the VCLs, and the guide's copy command names each
    guide = DEPLOYMENT_GUIDE.read_text()
    copy = re.search(r"^    cp (config/varnish-musicd-\S+ .*?) /etc/varnish/$", guide.replace(
        "\\\n        ", ""), re.M | re.S)
    assert copy, "docs/deployment.md's copy command for the opt-in files"
    names = [INCLUDE_LINE.match(line).group(1) for line in lines.values()]
    assert sorted(copy.group(1).split()) == sorted(f"config/{name}" for name in names)
    for name in names:
        assert (REPO / "config" / name).is_file(), name
        assert f"#     {lines[name.removeprefix('varnish-musicd-').removesuffix('.vcl')]}\n" in \
            (REPO / "config" / name).read_text(), f"{name} names its line"


@pytest.mark.no_c_binary
@pytest.mark.parametrize("site", [NGINX_SITE, NGINX_OFFLOAD_SITE, NGINX_CLUSTER_SITE],
                         ids=lambda p: p.name)
def test_shipped_nginx_site_passes_nginx_t(tmp_path, site):
    # The file exactly as shipped, included from a Debian-like main nginx.conf.
    nginx = Nginx(tmp_path / "nginx", site.read_text(), port=8080)
    status, output = nginx.config_test()
    assert status == 0, output
    assert "test is successful" in output, output


def unit_exec_start():
    """The ExecStart= command line of the shipped unit, as a list of words."""
    text = SYSTEMD_UNIT.read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    assert len(lines) == 1, lines
    return shlex.split(lines[0][len("ExecStart="):])


@pytest.mark.no_c_binary
@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_shipped_systemd_unit_verifies(tmp_path):
    # verify also checks that ExecStart's binary exists: point it at the one under test
    unit = tmp_path / "musicd.service"
    unit.write_text(SYSTEMD_UNIT.read_text().replace(SHIPPED_BINARY, str(MUSICD_BIN.resolve())))
    # and Documentation='s man:musicd(8): the repository's page, where man finds it
    man8 = tmp_path / "man" / "man8"
    man8.mkdir(parents=True)
    (man8 / "musicd.8").symlink_to(REPO / "man" / "musicd.8")
    p = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, MANPATH=str(man8.parent)))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Unknown" not in p.stderr and "gnoring" not in p.stderr, p.stderr


def test_systemd_unit_command_line_with_the_installed_configuration_serves(musicd, library,
                                                                           tmp_path):
    """The unit's ExecStart reads the configuration make install and the package install; that
    file, with this machine's database, library, logs, pid file and user given as flags (which
    override it), serves a track."""
    assert unit_exec_start() == [SHIPPED_BINARY, "--config", SHIPPED_CONFIG]
    made = subprocess.run(["make", "-s", "-C", str(REPO), "build/install/musicd.conf"],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    logs = tmp_path / "logs"
    logs.mkdir()
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start(extra_args=["--config", REPO / "build" / "install" / "musicd.conf",
                                      "--error-log", logs / "error.log",
                                      "--pid-file", logs / "musicd.pid",
                                      "--user", pwd.getpwuid(os.getuid()).pw_name])
    resp = get(server, track)
    assert resp.status_code == 200 and resp.content == track.data
    assert get(server, "/healthz").status_code == 200


# -- through Varnish ----------------------------------------------------------------------------

def test_varnish_sends_the_exact_bytes_and_answers_the_second_request_from_its_cache(
        musicd, library, frontends):
    track = library.add(library.media.big, "big.mp3")
    server, _, varnish = stack(musicd, frontends)

    first = get(varnish, track)
    assert first.status_code == 200
    assert first.headers["Content-Length"] == str(track.size)
    assert sha256(first.content) == track.sha256
    assert first.headers["X-Cache"] == "miss"
    assert len(varnish_ids(first)) == 1

    time.sleep(1.1)  # so that Age counts at least one second
    second = get(varnish, track)
    assert second.status_code == 200
    assert sha256(second.content) == track.sha256
    assert second.headers["X-Cache"] == "hit"
    # this request's id and the id of the fetch that stored the object
    assert len(varnish_ids(second)) == 2, second.headers["X-Varnish"]
    assert int(second.headers["Age"]) >= 1
    assert second.headers["ETag"] == first.headers["ETag"]
    assert second.headers["Cache-Control"] == DEFAULT_CACHE_CONTROL

    time.sleep(0.5)  # a second request to musicd would be logged by now
    logged = wait_track_requests(server, 1)
    assert [(status, size) for _, _, status, size in logged] == [(200, str(track.size))]


def test_varnish_answers_ranges_on_a_miss_and_on_a_hit(musicd, library, frontends):
    track = library.add(library.media.big, "big.mp3")
    data = track.data
    size = len(data)
    server, _, varnish = stack(musicd, frontends)

    # Miss: the answer is the range, while musicd was asked for the whole file.
    miss = get(varnish, track, headers={"Range": "bytes=4000000-4000099"})
    assert miss.status_code == 206
    assert parse_content_range(miss.headers["Content-Range"]) == (4000000, 4000099, size)
    assert miss.content == data[4000000:4000100]
    assert miss.headers["X-Cache"] == "miss"
    logged = wait_track_requests(server, 1)
    assert [(status, size_) for _, _, status, size_ in logged] == [(200, str(size))]

    # Hits: cut from the cached object.
    hit = get(varnish, track, headers={"Range": "bytes=100-199"})
    assert hit.status_code == 206
    assert parse_content_range(hit.headers["Content-Range"]) == (100, 199, size)
    assert hit.headers["Content-Length"] == "100"
    assert hit.content == data[100:200]
    assert len(varnish_ids(hit)) == 2

    suffix = get(varnish, track, headers={"Range": "bytes=-500"})
    assert suffix.status_code == 206
    assert parse_content_range(suffix.headers["Content-Range"]) == (size - 500, size - 1, size)
    assert suffix.content == data[-500:]

    open_ended = get(varnish, track, headers={"Range": f"bytes={size - 1000}-"})
    assert open_ended.status_code == 206
    assert open_ended.content == data[size - 1000:]

    beyond = get(varnish, track, headers={"Range": f"bytes={size}-"})
    assert beyond.status_code == 416
    assert beyond.headers.get("Content-Range") == f"bytes */{size}"

    time.sleep(0.5)
    assert len(track_requests(server)) == 1, track_requests(server)


def test_varnish_answers_if_none_match_with_304(musicd, library, frontends):
    track = library.add(library.media.big, "big.mp3")
    server, _, varnish = stack(musicd, frontends)
    first = get(varnish, track)
    etag = first.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"')

    not_modified = get(varnish, track, headers={"If-None-Match": etag})
    assert not_modified.status_code == 304
    assert not_modified.content == b""
    assert not_modified.headers["ETag"] == etag
    assert len(varnish_ids(not_modified)) == 2

    other = get(varnish, track, headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200
    assert sha256(other.content) == track.sha256

    # On a miss too: Varnish fetches the whole track and compares the validator itself.
    fresh = library.add(library.media.short, "fresh.mp3")
    fresh_etag = get(server, fresh).headers["ETag"]      # asked of musicd directly
    miss = get(varnish, fresh, headers={"If-None-Match": fresh_etag})
    assert miss.status_code == 304
    assert miss.headers["X-Cache"] == "miss"
    assert miss.content == b""


def test_varnish_ignores_cookies_on_tracks(musicd, library, frontends):
    track = library.add(library.media.short, "short.mp3")
    server, _, varnish = stack(musicd, frontends)
    assert get(varnish, track).headers["X-Cache"] == "miss"
    with_cookie = get(varnish, track, headers={"Cookie": "session=abc; theme=dark"})
    assert with_cookie.status_code == 200
    assert with_cookie.headers["X-Cache"] == "hit"
    assert with_cookie.content == track.data
    time.sleep(0.3)
    assert len(track_requests(server)) == 1


def test_varnish_does_not_keep_error_answers(musicd, library, frontends):
    server, _, varnish = stack(musicd, frontends)
    missing = "/musicdb/0123456789abcdef01234567/missing.mp3"
    for n in (1, 2):
        resp = get(varnish, missing)
        assert_error(resp, 404)
        assert resp.headers["Cache-Control"] == "no-store"
        assert len(varnish_ids(resp)) == 1
        assert len(wait_track_requests(server, n)) == n   # each one reached musicd


def test_varnish_passes_tracks_larger_than_its_size_cap(musicd, library, frontends):
    # The cap as the shipped VCL has it; a file one byte larger (sparse: costs no disk).
    vcl = VARNISH_VCL.read_text()
    cap = int(re.search(r"std\.integer\(beresp\.http\.Content-Length, 0\) > (\d+)", vcl).group(1))
    path = library.root / "long mix.mp3"
    with open(path, "wb") as f:
        f.write(library.media.short.read_bytes())
        f.truncate(cap + 1)
    oid = library.db.insert_track(str(path))
    url = f"/musicdb/{oid}/mix.mp3"
    server, _, varnish = stack(musicd, frontends)

    first = get(varnish, url)
    assert first.status_code == 200
    assert first.headers["Content-Length"] == str(cap + 1)
    assert sha256(first.content) == sha256_file(path)
    del first

    ranged = get(varnish, url, headers={"Range": "bytes=0-99"})
    assert ranged.status_code == 206
    assert ranged.content == library.media.short.read_bytes()[:100]
    assert len(varnish_ids(ranged)) == 1        # a pass, not a hit
    logged = wait_track_requests(server, 2)
    # the range went to musicd, which answered it itself
    assert [(status, size) for _, _, status, size in logged] == [(200, str(cap + 1)), (206, "100")]


@pytest.mark.timing
def test_varnish_serves_a_cached_track_within_grace_after_musicd_stops(musicd, library, frontends):
    track = library.add(library.media.big, "big.mp3")
    # A one-second TTL, so that the object is expired (in grace) when asked for again.
    server, nginx, varnish = stack(musicd, frontends, extra_args=["--cache-control",
                                                                  "public, max-age=1"])
    t0 = time.monotonic()
    first = get(varnish, track)
    assert first.status_code == 200 and sha256(first.content) == track.sha256
    hit = get(varnish, track)
    assert len(varnish_ids(hit)) == 2
    stored_by = varnish_ids(hit)[1]   # the fetch that stored the object

    server.stop()
    assert get(nginx, track).status_code == 502
    varnish.wait_backend("sick", timeout=SICK_TIMEOUT)
    time.sleep(max(0.0, t0 + 2.5 - time.monotonic()))   # well past the 1 s TTL

    stale = get(varnish, track)
    assert stale.status_code == 200
    assert sha256(stale.content) == track.sha256
    assert varnish_ids(stale)[1] == stored_by          # that same object
    assert int(stale.headers["Age"]) >= 2               # older than its max-age: grace
    ranged = get(varnish, track, headers={"Range": "bytes=10-19"})
    assert ranged.status_code == 206 and ranged.content == track.data[10:20]

    # musicd back on the same port: the probe sees /healthz answer 200 again.
    restarted = musicd.start(port=server.port, extra_args=["--cache-control",
                                                           "public, max-age=1"])
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    other = library.add(library.media.short, "other.mp3")
    resp = get(varnish, other)
    assert resp.status_code == 200 and resp.content == other.data
    assert restarted.running


@pytest.mark.timing
def test_varnish_keeps_serving_the_stale_track_when_its_refresh_fails(musicd, restartable_db,
                                                                       media, tmp_path,
                                                                       frontends):
    # The database goes away while the probe still says healthy (held healthy by hand here):
    # the background refresh gets musicd's 503, and the expired copy must survive it.
    library = Library(tmp_path / "media", restartable_db.db, media)
    track = library.add(media.short, "short.mp3")
    server = musicd.start(mongodb_uri=restartable_db.uri, database=restartable_db.db.name,
                          extra_args=["--lookup-timeout", str(LOOKUP_TIMEOUT_MS),
                                      "--lookup-cache-entries", "0",
                                      "--cache-control", "public, max-age=1"])
    nginx = frontends.nginx(server.port)
    varnish = frontends.varnish(nginx.port)
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    varnish.adm("backend.set_health", "nginx", "healthy")
    t0 = time.monotonic()
    assert get(varnish, track).status_code == 200
    stored_by = varnish_ids(get(varnish, track))[1]

    restartable_db.stop()
    time.sleep(max(0.0, t0 + 1.5 - time.monotonic()))   # expired, within the 10 s grace
    stale = get(varnish, track)
    assert stale.status_code == 200 and stale.content == track.data
    assert varnish_ids(stale)[1] == stored_by
    # the refresh reached musicd and failed
    assert [status for _, _, status, _ in wait_track_requests(server, 2)] == [200, 503]

    again = get(varnish, track)
    assert again.status_code == 200 and again.content == track.data
    assert varnish_ids(again)[1] == stored_by


def test_varnish_marks_the_backend_sick_while_the_database_is_down(musicd, restartable_db, media,
                                                                   tmp_path, frontends):
    library = Library(tmp_path / "media", restartable_db.db, media)
    track = library.add(media.short, "short.mp3")
    server = musicd.start(mongodb_uri=restartable_db.uri, database=restartable_db.db.name,
                          extra_args=["--lookup-timeout", str(LOOKUP_TIMEOUT_MS)])
    nginx = frontends.nginx(server.port)
    varnish = frontends.varnish(nginx.port)
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    assert get(nginx, "/healthz").status_code == 200

    restartable_db.stop()
    varnish.wait_backend("sick", timeout=SICK_TIMEOUT)
    health = get(nginx, "/healthz", headers={"Connection": "close"})
    assert health.status_code == 503
    assert health.headers["Cache-Control"] == "no-store"
    # Nothing cached to fall back on: Varnish has no healthy backend to ask.
    assert get(varnish, track).status_code == 503
    assert server.running

    restartable_db.start()
    varnish.wait_backend("healthy", timeout=HEALTHY_TIMEOUT)
    resp = get(varnish, track)
    assert resp.status_code == 200 and resp.content == track.data


# -- through nginx ------------------------------------------------------------------------------

def test_nginx_relays_full_and_ranged_requests(musicd, library, frontends):
    track = library.add(library.media.big, "big.mp3")
    data = track.data
    server = musicd.start()
    nginx = frontends.nginx(server.port)
    direct = get(server, track)

    full = get(nginx, track)
    assert full.status_code == 200
    assert sha256(full.content) == track.sha256
    for name in ("Content-Length", "Content-Type", "ETag", "Last-Modified", "Cache-Control",
                 "Accept-Ranges"):
        assert full.headers[name] == direct.headers[name], name

    ranged = get(nginx, track, headers={"Range": "bytes=1000000-1065535"})
    assert ranged.status_code == 206
    assert parse_content_range(ranged.headers["Content-Range"]) == (1000000, 1065535, len(data))
    assert ranged.content == data[1000000:1065536]

    two = get(nginx, track, headers={"Range": "bytes=0-9,20-29"})
    assert two.status_code == 206
    assert two.headers["Content-Type"].startswith("multipart/byteranges; boundary=")
    assert data[0:10] in two.content and data[20:30] in two.content

    not_modified = get(nginx, track, headers={"If-None-Match": direct.headers["ETag"]})
    assert not_modified.status_code == 304 and not_modified.content == b""

    head = requests.head(nginx.url + track.url_path, timeout=TIMEOUT)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == str(len(data))

    # each one answered by musicd (the first asked directly)
    answered = [(line.split()[0], status) for _, line, status, _ in wait_track_requests(server, 6)]
    assert answered == [("GET", 200), ("GET", 200), ("GET", 206), ("GET", 206), ("GET", 304),
                        ("HEAD", 200)], answered


def test_nginx_offload_sends_the_same_bytes_while_musicd_sends_no_body(musicd, library, frontends):
    track = library.add(library.media.big, "big.mp3")
    data = track.data
    plain = musicd.start()
    offload = musicd.start(extra_args=["--x-accel-redirect", SHIPPED_ACCEL_PREFIX])
    nginx = frontends.nginx(offload.port, offload=True, media_root=library.root)

    own = get(offload, track)
    assert own.status_code == 200
    assert own.content == b""
    assert own.headers["Content-Length"] == "0"
    assert own.headers["X-Accel-Redirect"] == "/protected/music/big.mp3"
    assert own.headers["Content-Type"] == "audio/mpeg"
    assert own.headers["Cache-Control"] == DEFAULT_CACHE_CONTROL

    direct = get(plain, track)
    served = get(nginx, track)
    assert served.status_code == 200
    assert "X-Accel-Redirect" not in served.headers
    assert served.headers["Content-Length"] == str(len(data))
    assert served.headers["Content-Type"] == "audio/mpeg"
    assert served.headers["Cache-Control"] == DEFAULT_CACHE_CONTROL
    assert sha256(served.content) == sha256(direct.content) == track.sha256

    ranged = get(nginx, track, headers={"Range": "bytes=3000000-3000999"})
    assert ranged.status_code == 206
    assert parse_content_range(ranged.headers["Content-Range"]) == (3000000, 3000999, len(data))
    assert ranged.content == data[3000000:3001000] == \
        get(plain, track, headers={"Range": "bytes=3000000-3000999"}).content

    # The internal location is not reachable by clients.
    assert get(nginx, "/protected/music/big.mp3").status_code == 404


def test_nginx_offload_serves_names_with_spaces_percent_and_non_ascii(musicd, library, frontends):
    relpath = "Ünïcode & Co/100% Café Noir ?.mp3"
    track = library.add(library.media.short, relpath,
                        name=urllib.parse.quote("Café Noir ?.mp3"))
    server = musicd.start(extra_args=["--x-accel-redirect", SHIPPED_ACCEL_PREFIX])
    nginx = frontends.nginx(server.port, offload=True, media_root=library.root)

    own = get(server, track)
    assert own.status_code == 200 and own.content == b""
    assert own.headers["X-Accel-Redirect"] == \
        "/protected/music/%C3%9Cn%C3%AFcode%20&%20Co/100%25%20Caf%C3%A9%20Noir%20%3F.mp3"
    served = get(nginx, track)
    assert served.status_code == 200
    assert served.content == track.data
    ranged = get(nginx, track, headers={"Range": "bytes=50-59"})
    assert ranged.status_code == 206 and ranged.content == track.data[50:60]


def test_offload_prefix_follows_the_media_root_order(musicd, library, tmp_path):
    # What the sites' comments document for several roots: the i-th prefix for the i-th root.
    second_root = tmp_path / "archive"
    second_root.mkdir()
    first = library.add(library.media.short, "a/one.mp3")
    second = library.add(library.media.short, "b/two.mp3", root=second_root)
    server = musicd.start(media_roots=[library.root, second_root],
                          extra_args=["--x-accel-redirect", "/protected/music/",
                                      "--x-accel-redirect", "/protected/archive/"])
    assert get(server, first).headers["X-Accel-Redirect"] == "/protected/music/a/one.mp3"
    assert get(server, second).headers["X-Accel-Redirect"] == "/protected/archive/b/two.mp3"


# -- client address and error answers ----------------------------------------------------------

def get_from(source_ip, base, path, headers=None):
    """GET over a connection from source_ip (any 127.0.0.0/8 address is local): (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", base.port, timeout=TIMEOUT,
                                      source_address=(source_ip, 0))
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_trusted_proxy_logs_the_client_that_nginx_names(musicd, library, frontends):
    track = library.add(library.media.short, "short.mp3")
    # nginx connects to musicd from 127.0.0.1; the client connects to nginx from 127.0.0.2.
    server = musicd.start(extra_args=["--trusted-proxy", "127.0.0.1/32"])
    nginx = frontends.nginx(server.port)
    assert get_from("127.0.0.2", nginx, track.url_path) == (200, track.data)
    # A client claiming another address is not believed: nginx appends the one it saw.
    assert get_from("127.0.0.2", nginx, track.url_path,
                    {"X-Forwarded-For": "198.51.100.7"}) == (200, track.data)
    clients = [client for client, _, _, _ in wait_track_requests(server, 2)]
    assert clients == ["127.0.0.2", "127.0.0.2"]

    # With the client's own hop trusted too (a Varnish on this host, say), the address before
    # it is the client; read from the right, the first untrusted one.
    chain = musicd.start(extra_args=["--trusted-proxy", "127.0.0.0/8"])
    nginx_chain = frontends.nginx(chain.port)
    get_from("127.0.0.2", nginx_chain, track.url_path, {"X-Forwarded-For": "198.51.100.7"})
    get_from("127.0.0.2", nginx_chain, track.url_path,
             {"X-Forwarded-For": "203.0.113.9, 198.51.100.23"})
    clients = [client for client, _, _, _ in wait_track_requests(chain, 2)]
    assert clients == ["198.51.100.7", "198.51.100.23"]


def test_without_trusted_proxy_the_log_names_the_peer(musicd, library, frontends):
    track = library.add(library.media.short, "short.mp3")
    server = musicd.start()
    nginx = frontends.nginx(server.port)
    get_from("127.0.0.2", nginx, track.url_path, {"X-Forwarded-For": "198.51.100.7"})
    clients = [client for client, _, _, _ in wait_track_requests(server, 1)]
    assert clients == ["127.0.0.1"]   # nginx


def test_errors_carry_no_store_directly_and_through_nginx(musicd, library, frontends):
    missing = "/musicdb/0123456789abcdef01234567/missing.mp3"
    server = musicd.start()
    nginx = frontends.nginx(server.port)
    # The database unreachable: a closed port.
    down = musicd.start(mongodb_uri=f"mongodb://127.0.0.1:{free_port()}/",
                        extra_args=["--lookup-timeout", str(LOOKUP_TIMEOUT_MS)])
    nginx_down = frontends.nginx(down.port)
    for base, status in ((server, 404), (nginx, 404), (down, 503), (nginx_down, 503)):
        resp = get(base, missing)
        assert_error(resp, status)
        assert resp.headers["Cache-Control"] == "no-store", (base.url, resp.headers)

    # nginx's own answer when musicd is not there at all.
    server.stop()
    gone = get(nginx, missing)
    assert gone.status_code == 502
    assert gone.headers["Cache-Control"] == "no-store"
    assert gone.headers["Content-Type"] == "text/plain"


def test_varnish_gives_if_match_if_unmodified_since_and_if_range_musicds_answers(musicd, library,
                                                                                 frontends):
    # (fails before the fix: on a miss Varnish dropped If-Match and If-Unmodified-Since from
    # its fetch, on a hit it ignored them, so a client musicd answers 412 got 200 from Varnish.)
    # If-Range is Varnish's own to evaluate, from the cache: it must agree with musicd's.
    track = library.add(library.media.short, "short.mp3")
    server, _, varnish = stack(musicd, frontends)
    direct = get(server, track)
    etag, last_modified = direct.headers["ETag"], direct.headers["Last-Modified"]
    before = "Thu, 01 Jan 1998 00:00:00 GMT"
    cases = [
        ({"If-Match": '"another"'}, 412),
        ({"If-Match": etag}, 200),
        ({"If-Unmodified-Since": before}, 412),
        ({"If-Unmodified-Since": last_modified}, 200),
        ({"Range": "bytes=0-99", "If-Range": '"another"'}, 200),
        ({"Range": "bytes=0-99", "If-Range": etag}, 206),
        ({"Range": "bytes=0-99", "If-Range": before}, 200),
        # One strong tag or * is evaluated by Varnish from the cache (VLC's seeks send it);
        # lists and weak tags are passed to musicd.
        ({"If-Match": "*"}, 200),
        ({"Range": "bytes=0-99", "If-Match": etag}, 206),
        ({"Range": "bytes=0-99", "If-Match": '"another"'}, 412),
        ({"Range": "bytes=999999999-", "If-Match": '"another"'}, 412),
        ({"If-Match": f'"another", {etag}'}, 200),
        ({"If-Match": f"W/{etag}"}, 412),
    ]
    for rounds in ("miss", "hit"):
        if rounds == "hit":
            assert get(varnish, track).status_code == 200
            assert get(varnish, track).headers["X-Cache"] == "hit"
        for headers, status in cases:
            musicds = get(server, track, headers=headers)
            through = get(varnish, track, headers=headers)
            assert musicds.status_code == status, (headers, musicds.status_code)
            assert through.status_code == status, (rounds, headers, through.status_code)
            if status == 200:
                assert sha256(through.content) == track.sha256
            if status == 206:
                assert through.content == track.data[:100]
            if status == 412:
                assert through.content == b"412 Precondition Failed\n", through.content
                assert through.headers["Content-Type"] == "text/plain; charset=utf-8"
                assert through.headers["Cache-Control"] == "no-store"
