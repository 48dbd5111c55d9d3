"""Streaming a track: GET and HEAD on /musicdb/:mid/:param, exact bytes and headers."""

import hashlib
import os

import pytest
import requests

import httpraw
from assertions import assert_file_headers, assert_file_response
from media import sha256_file
from support import scaled

# The tests only read: one musicd serves the module (conftest.py); those that start their own
# start it with the options they test.
pytestmark = pytest.mark.shared_server

TIMEOUT = scaled(10)


def get(server, track, **kw):
    return requests.get(server.url + track.url_path, timeout=TIMEOUT, **kw)


def test_get_returns_the_exact_bytes_of_a_short_mp3(server, library):
    track = library.add(library.media.short, "artist/album/short.mp3")
    resp = get(server, track)
    assert_file_response(resp, track.path)
    assert hashlib.sha256(resp.content).hexdigest() == sha256_file(track.path)


def test_get_returns_the_exact_bytes_of_a_4mb_mp3(server, library):
    track = library.add(library.media.big, "big.mp3")
    resp = get(server, track)
    assert_file_headers(resp, track.path)
    assert len(resp.content) == track.size > 3_900_000
    assert hashlib.sha256(resp.content).hexdigest() == sha256_file(track.path)


def test_response_headers_describe_the_file(server, library):
    track = library.add(library.media.short, "short.mp3")
    os.utime(track.path, (1_700_000_000, 1_700_000_000))  # Tue, 14 Nov 2023 22:13:20 GMT
    resp = get(server, track)
    assert resp.status_code == 200
    assert resp.headers["Content-Length"] == str(track.size)
    assert resp.headers["Content-Type"] == "audio/mpeg"
    assert resp.headers["Accept-Ranges"] == "bytes"
    assert resp.headers["Last-Modified"] == "Tue, 14 Nov 2023 22:13:20 GMT"
    etag = resp.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 2, etag
    assert not etag.startswith("W/")


def test_etag_is_stable_while_the_file_is_unchanged(server, library):
    track = library.add(library.media.short, "short.mp3")
    first = get(server, track)
    second = get(server, track)
    assert first.status_code == second.status_code == 200
    assert first.headers["ETag"] == second.headers["ETag"]
    assert first.headers["Last-Modified"] == second.headers["Last-Modified"]


def test_etag_changes_when_the_mtime_changes(musicd, library):
    track = library.add(library.media.short, "short.mp3", copy=True)
    server = musicd.start(caches=False)
    os.utime(track.path, (1_700_000_000, 1_700_000_000))
    before = get(server, track)
    os.utime(track.path, (1_700_000_100, 1_700_000_100))
    after = get(server, track)
    assert before.status_code == after.status_code == 200
    assert before.headers["ETag"] != after.headers["ETag"]
    assert after.headers["Last-Modified"] == "Tue, 14 Nov 2023 22:15:00 GMT"
    assert after.content == track.data


def test_etag_changes_when_the_size_changes(musicd, library):
    track = library.add(library.media.short, "short.mp3", copy=True)
    server = musicd.start(caches=False)
    os.utime(track.path, (1_700_000_000, 1_700_000_000))
    before = get(server, track)
    with open(track.path, "ab") as f:
        f.write(b"\0" * 417)
    os.utime(track.path, (1_700_000_000, 1_700_000_000))  # same mtime: only the size differs
    after = get(server, track)
    assert before.status_code == after.status_code == 200
    assert before.headers["ETag"] != after.headers["ETag"]
    assert after.headers["Content-Length"] == str(track.size)
    assert after.content == track.data


def test_head_sends_the_get_headers_and_no_body(server, library):
    track = library.add(library.media.short, "short.mp3")
    got, rest = httpraw.exchange(server.port, "GET", track.url_path)
    head, head_rest = httpraw.exchange(server.port, "HEAD", track.url_path)
    assert rest == b""
    assert_file_headers(head, track.path)
    assert head_rest == b"", f"HEAD answered with {len(head_rest)} body bytes"
    for name in ("Content-Length", "Content-Type", "Accept-Ranges", "Last-Modified", "ETag"):
        assert head.header(name) == got.header(name), name


def test_param_is_only_the_name_the_player_sees(server, library):
    track = library.add(library.media.short, "short.mp3")
    for param in ("short.mp3", "Another Name.mp3", "x"):
        resp = requests.get(f"{server.url}/musicdb/{track.id}/{param}", timeout=TIMEOUT)
        assert resp.status_code == 200, param
        assert resp.content == track.data, param


def test_uppercase_hex_id_finds_the_document(server, library):
    track = library.add(library.media.short, "short.mp3")
    resp = requests.get(f"{server.url}/musicdb/{track.id.upper()}/short.mp3", timeout=TIMEOUT)
    assert_file_response(resp, track.path)


def test_content_type_follows_the_file_extension(server, library):
    expected = {
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "mp4": "audio/mp4", "aac": "audio/aac",
        "ogg": "audio/ogg", "oga": "audio/ogg", "opus": "audio/ogg", "flac": "audio/flac",
        "wav": "audio/wav", "webm": "audio/webm", "txt": "application/octet-stream",
        "bin": "application/octet-stream",
    }
    tracks = {ext: library.add(library.media.short, f"types/track.{ext}") for ext in expected}
    noext = library.add(library.media.short, "types/no_extension")
    got = {ext: get(server, t).headers.get("Content-Type") for ext, t in tracks.items()}
    assert got == expected
    resp = get(server, noext)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "application/octet-stream"


def test_symlink_to_a_file_inside_the_media_root_is_served(server, library):
    target = library.place(library.media.short, "real/short.mp3")
    link = library.root / "links" / "alias.mp3"
    link.parent.mkdir()
    link.symlink_to(target)
    track = library.add_document(link, "alias.mp3")
    resp = get(server, track)
    assert_file_response(resp, target)


def test_files_from_every_media_root_are_served(musicd, library, tmp_path):
    second_root = tmp_path / "second-root"
    first = library.add(library.media.short, "one.mp3")
    second = library.add(library.media.big, "two.mp3", root=second_root)
    server = musicd.start(media_roots=[library.root, second_root])
    assert_file_response(get(server, first), first.path)
    resp = get(server, second)
    assert_file_headers(resp, second.path)
    assert hashlib.sha256(resp.content).hexdigest() == sha256_file(second.path)


def test_database_collection_and_path_field_are_configurable(musicd, library, db):
    path = library.place(library.media.short, "custom.mp3")
    oid = db.insert_track(str(path), collection="songs", path_field="file", path="/nonexistent")
    server = musicd.start(extra_args=["--collection", "songs", "--path-field", "file"])
    resp = requests.get(f"{server.url}/musicdb/{oid}/custom.mp3", timeout=TIMEOUT)
    assert_file_response(resp, path)


def test_non_canonical_path_inside_the_root_is_served(server, library):
    real = library.place(library.media.short, "sub/short.mp3")
    track = library.add_document(f"{library.root}//sub/./short.mp3", "short.mp3")
    assert_file_response(get(server, track), real)


def test_media_root_given_through_a_symlink_serves_paths_under_either_name(musicd, library,
                                                                           tmp_path):
    link_root = tmp_path / "music-link"
    link_root.symlink_to(library.root, target_is_directory=True)
    real = library.place(library.media.short, "sub/short.mp3")
    by_real = library.add_document(real, "a.mp3")
    by_link = library.add_document(link_root / "sub" / "short.mp3", "b.mp3")
    server = musicd.start(media_roots=[link_root])
    assert_file_response(get(server, by_real), real)
    assert_file_response(get(server, by_link), real)
