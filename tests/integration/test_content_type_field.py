"""--content-type-field NAME: a track document's own media type as Content-Type.

A string field of the document, taken when it is a media type (type/subtype, parameters, at most
127 bytes, no control byte: http/content_type.h) and sent instead of the type of the file's
extension: on 200, 206 and HEAD, in the parts of a multipart/byteranges answer, for a file on
disk, an offloaded one (X-Accel-Redirect, and through the shipped nginx offload site) and a GridFS
file; kept with the document in the lookup cache; each document its own even when two share one
file (and one open-file cache entry); passed through by the shipped nginx site and kept per
document by the shipped Varnish VCL. A document without the field, or with a value that is not a
media type, gets the extension's type, as without the option.
"""

import shutil
import subprocess

import pytest
import requests
from bson import ObjectId

from byteranges import parse_multipart
from frontends import SHIPPED_ACCEL_PREFIX
from support import REPO, scaled, wait_until

TIMEOUT = scaled(20)
FIELD = "mime"
OPTION = ["--content-type-field", FIELD]
GRIDFS_PUT = REPO / "scripts" / "setup" / "gridfs-put"


def get(base, track, **kw):
    return requests.get(base.url + track.url_path, timeout=TIMEOUT, **kw)


def test_the_documents_type_is_sent_instead_of_the_extensions(musicd, library):
    track = library.add(library.media.short, "a.mp3", **{FIELD: "audio/flac"})
    server = musicd.start(extra_args=OPTION)
    whole = get(server, track)
    assert whole.status_code == 200
    assert whole.headers["Content-Type"] == "audio/flac"
    assert whole.content == track.data
    head = requests.head(server.url + track.url_path, timeout=TIMEOUT)
    assert head.headers["Content-Type"] == "audio/flac"
    ranged = get(server, track, headers={"Range": "bytes=10-19"})
    assert ranged.status_code == 206
    assert ranged.headers["Content-Type"] == "audio/flac"
    assert ranged.content == track.data[10:20]


def test_the_parts_of_a_multipart_answer_name_the_documents_type(musicd, library):
    track = library.add(library.media.short, "a.mp3", **{FIELD: "audio/ogg; codecs=opus"})
    server = musicd.start(extra_args=OPTION)
    resp = get(server, track, headers={"Range": "bytes=0-9,100-109"})
    assert resp.status_code == 206
    parts = parse_multipart(resp.headers["Content-Type"], resp.content)
    assert [p.content_type for p in parts] == ["audio/ogg; codecs=opus"] * 2
    assert [p.data for p in parts] == [track.data[0:10], track.data[100:110]]


@pytest.mark.parametrize("value", [
    None,                                   # no such field
    42,                                     # not a string
    "audio mpeg",                           # not type/subtype
    "audio/",
    "audio/mpeg\r\nX-Evil: 1",              # a control byte: a header split
    "audio/" + "x" * 200,                   # longer than 127 bytes
], ids=["absent", "number", "no-slash", "no-subtype", "crlf", "overlong"])
def test_a_document_without_a_media_type_gets_the_extensions(musicd, library, value):
    fields = {} if value is None else {FIELD: value}
    track = library.add(library.media.short, "a.mp3", **fields)
    server = musicd.start(extra_args=OPTION)
    resp = get(server, track)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "audio/mpeg"
    assert "X-Evil" not in resp.headers
    assert resp.content == track.data
    if isinstance(value, str):
        wait_until(lambda: f"field '{FIELD}' is not a media type" in server.stderr_text(),
                   scaled(5), message="the warning about the field")


def test_without_the_option_the_field_means_nothing(musicd, library):
    track = library.add(library.media.short, "a.mp3", **{FIELD: "audio/flac"})
    server = musicd.start()
    assert get(server, track).headers["Content-Type"] == "audio/mpeg"


def test_two_documents_of_one_file_each_get_their_own_type(musicd, library):
    flac = library.add(library.media.short, "a.mp3", **{FIELD: "audio/flac"})
    plain = library.add_document(flac.path, name="a.mp3")
    ogg = library.add_document(flac.path, name="a.mp3", **{FIELD: "audio/ogg"})
    server = musicd.start(extra_args=OPTION)
    for _ in range(2):  # the second time from the lookup and open-file caches
        assert get(server, flac).headers["Content-Type"] == "audio/flac"
        assert get(server, plain).headers["Content-Type"] == "audio/mpeg"
        assert get(server, ogg).headers["Content-Type"] == "audio/ogg"


def test_the_type_is_kept_with_the_document_in_the_lookup_cache(musicd, library, db):
    track = library.add(library.media.short, "a.mp3", **{FIELD: "audio/flac"})
    server = musicd.start(extra_args=OPTION + ["--lookup-cache-ttl", "3600"])
    assert get(server, track).headers["Content-Type"] == "audio/flac"
    db.collection.update_one({"_id": ObjectId(track.id)}, {"$set": {FIELD: "audio/ogg"}})
    # Answered from the cache: the document as it was read, its type included.
    assert get(server, track).headers["Content-Type"] == "audio/flac"
    fresh = musicd.start(extra_args=OPTION)
    assert get(fresh, track).headers["Content-Type"] == "audio/ogg"


def test_an_offloaded_answer_carries_the_documents_type(musicd, library):
    track = library.add(library.media.short, "a.mp3", **{FIELD: "audio/flac"})
    server = musicd.start(extra_args=OPTION + ["--x-accel-redirect", SHIPPED_ACCEL_PREFIX])
    resp = get(server, track)
    assert resp.status_code == 200 and resp.content == b""
    assert resp.headers["X-Accel-Redirect"] == "/protected/music/a.mp3"
    assert resp.headers["Content-Type"] == "audio/flac"


def test_a_gridfs_tracks_document_type_comes_before_its_files(musicd, mongo, db, tmp_path):
    upload = tmp_path / "upload" / "song.mp3"
    upload.parent.mkdir()
    data = bytes(range(256)) * 400
    upload.write_bytes(data)
    out = subprocess.run(
        ["/usr/bin/python3", str(GRIDFS_PUT), "--mongodb-uri", mongo.uri, "--database", db.name,
         "--chunk-size", "4096", "--content-type", "audio/mpeg", "--tracks", "tracks",
         str(upload)], check=True, capture_output=True, text=True, timeout=scaled(60)).stdout
    track_id = out.split()[1]
    db.collection.update_one({"_id": ObjectId(track_id)}, {"$set": {FIELD: "audio/flac"}})
    url = f"/musicdb/{track_id}/song.mp3"
    server = musicd.start(extra_args=OPTION)
    for _ in range(2):  # the second time from the lookup cache
        whole = requests.get(server.url + url, timeout=TIMEOUT)
        assert whole.status_code == 200
        assert whole.headers["Content-Type"] == "audio/flac"
        assert whole.content == data
        ranged = requests.get(server.url + url, headers={"Range": "bytes=5000-5099"},
                              timeout=TIMEOUT)
        assert ranged.status_code == 206
        assert ranged.headers["Content-Type"] == "audio/flac"
        assert ranged.content == data[5000:5100]
    # Without the option the file's own contentType is sent, as before.
    plain = musicd.start()
    assert requests.get(plain.url + url, timeout=TIMEOUT).headers["Content-Type"] == "audio/mpeg"


# -- through the shipped nginx and Varnish ------------------------------------------------------

needs_frontends = pytest.mark.skipif(
    not (shutil.which("nginx") or shutil.which("/usr/sbin/nginx")) or
    not (shutil.which("varnishd") or shutil.which("/usr/sbin/varnishd")),
    reason="nginx and varnishd are needed (scripts/install-deps)")


@needs_frontends
def test_nginx_and_varnish_pass_each_documents_type_and_varnish_keeps_it(musicd, library,
                                                                         frontends):
    flac = library.add(library.media.short, "a.mp3", **{FIELD: "audio/flac"})
    ogg = library.add_document(flac.path, name="a.mp3", **{FIELD: "audio/ogg"})
    plain = library.add_document(flac.path, name="a.mp3")
    server = musicd.start(extra_args=OPTION)
    nginx = frontends.nginx(server.port)
    varnish = frontends.varnish(nginx.port)
    varnish.wait_backend("healthy", timeout=scaled(30))
    want = [(flac, "audio/flac"), (ogg, "audio/ogg"), (plain, "audio/mpeg")]
    for track, content_type in want:
        assert get(nginx, track).headers["Content-Type"] == content_type
        miss = get(varnish, track)
        assert miss.headers["X-Cache"] == "miss"
        assert miss.headers["Content-Type"] == content_type
    for track, content_type in want:
        hit = get(varnish, track)
        assert hit.headers["X-Cache"] == "hit"
        assert hit.headers["Content-Type"] == content_type
        assert hit.content == track.data
        ranged = get(varnish, track, headers={"Range": "bytes=0-9"})
        assert ranged.status_code == 206
        assert ranged.headers["Content-Type"] == content_type


@needs_frontends
def test_the_nginx_offload_site_keeps_the_documents_type(musicd, library, frontends):
    track = library.add(library.media.short, "a.mp3", **{FIELD: "audio/flac"})
    plain = library.add_document(track.path, name="a.mp3")
    server = musicd.start(extra_args=OPTION + ["--x-accel-redirect", SHIPPED_ACCEL_PREFIX])
    nginx = frontends.nginx(server.port, offload=True, media_root=library.root)
    served = get(nginx, track)
    assert served.status_code == 200
    assert served.headers["Content-Type"] == "audio/flac"
    assert served.content == track.data
    ranged = get(nginx, track, headers={"Range": "bytes=10-19"})
    assert ranged.status_code == 206
    assert ranged.headers["Content-Type"] == "audio/flac"
    assert get(nginx, plain).headers["Content-Type"] == "audio/mpeg"
