"""musicd-import against the real binary and the test database: the fields read from real files
(ID3v2 with non-ASCII text, ID3v1 only, Ogg Vorbis, FLAC), idempotence, --hash, --prune and its
limits, --dry-run, symbolic links, every kind of bad input (reported once, escaped, counted,
skipped), the exit statuses, progress only on a terminal, the summary and --json, the config file,
and that musicd serves every track imported, byte for byte.

The binary, its output and the audio files made for these tests: import_support.py.
"""

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
import urllib.parse

import bson
import pymongo
import pytest
import requests

from edgeauth import new_key, python_token, track_acl, write_key_file
from import_support import (IMPORT_BIN, NO_DAC_OVERRIDE, RUN_TIMEOUT, Sources,
                            assert_skipped_once, id3v24_tag, import_env, mtime_ms, place,
                            run_import)
from media import sha256_file
from support import REPO, free_port, scaled

OPTIONS = ["--config", "--mongodb-uri", "--database", "--collection", "--path-field", "--hash",
           "--prune", "--dry-run", "--jobs", "--json", "--print-urls", "--url-signing-key-file",
           "--url-signing-parameter", "--url-lifetime", "--help", "--version"]


# -- options, help, man page ----------------------------------------------------------------------

def test_help_lists_every_option():
    result = run_import(["--help"])
    assert result.returncode == 0, result
    for option in OPTIONS:
        assert option in result.stdout, f"{option} missing from --help"


def test_man_page_renders_without_warnings_and_documents_every_option():
    page = REPO / "import" / "musicd-import.1"
    proc = subprocess.run(["groff", "-man", "-ww", "-Tutf8", str(page)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=30, env=dict(os.environ, LC_ALL="C.UTF-8"))
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    text = re.sub(r".\x08", "", proc.stdout.decode("utf-8"))  # overstrike bold/underline
    text = text.replace("\u2010", "-").replace("\u2212", "-")
    listed = re.findall(r"^\s+(--[a-z-]+)", run_import(["--help"]).stdout, re.M)
    assert len(listed) == len(OPTIONS)
    for option in listed:
        assert option in text, f"{option} is in --help but not in the man page"


def test_version_prints_the_version():
    result = run_import(["--version"])
    assert result.returncode == 0
    assert result.stdout.strip() == "musicd-import " + (REPO / "VERSION").read_text().strip()


@pytest.mark.parametrize("args,named", [
    (["--frobnicate", "DIR"], "--frobnicate"),
    (["--jobs", "0", "DIR"], "jobs"),
    (["--jobs", "many", "DIR"], "jobs"),
    (["--jobs"], "jobs"),
    (["--hash=yes", "DIR"], "hash"),
    ([], "no directory"),
    (["--path-field", "title", "DIR"], "path-field"),
    (["--mongodb-uri", "http://nowhere", "DIR"], "mongodb-uri"),
])
def test_usage_errors_exit_2_with_one_message(tmp_path, args, named):
    args = [str(tmp_path) if a == "DIR" else a for a in args]
    result = run_import(args)
    assert result.returncode == 2, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and named in lines[0], result
    assert result.stdout == ""


def test_a_directory_that_does_not_exist_is_a_usage_error(importer, tmp_path):
    result = importer.run(str(tmp_path / "missing"))
    assert result.returncode == 2, result
    assert "missing: No such file or directory" in result.stderr
    assert importer.docs() == {}


def test_an_unreachable_database_exits_2(tmp_path, sources):
    place(sources.plain, tmp_path / "lib" / "a.mp3")
    uri = f"mongodb://127.0.0.1:{free_port()}/?serverSelectionTimeoutMS=300"
    result = run_import(["--mongodb-uri", uri, str(tmp_path / "lib")])
    assert result.returncode == 2, result
    assert "database" in result.stderr


# -- what is stored -------------------------------------------------------------------------------

def test_id3v2_fields_with_non_ascii_text(importer, library, sources):
    path = place(sources.id3v2, library.root / "Ünïcode dir" / "tïtle.mp3")
    result = importer.run(str(library.root))
    assert result.returncode == 0, result
    doc = importer.docs()[str(path)]
    t = Sources.ID3V2
    for field in ("title", "artist", "album", "album_artist", "genre", "year", "disc", "comment"):
        assert doc[field] == t[field], field
    assert doc["track"] == t["track"]
    assert doc["duration"] == 3
    assert abs(doc["bitrate"] - 128) <= 2  # TagLib averages over the file, tags included
    assert doc["sample_rate"] == 44100
    assert doc["channels"] == 2
    assert doc["size"] == path.stat().st_size
    assert doc["mtime"] == mtime_ms(path)
    assert "sha256" not in doc
    assert isinstance(doc["_id"], bson.ObjectId)


def test_id3v1_only_file(importer, library, sources):
    path = place(sources.id3v1, library.root / "old.mp3")
    assert importer.run(str(library.root)).returncode == 0
    doc = importer.docs()[str(path)]
    assert (doc["title"], doc["artist"], doc["album"], doc["year"], doc["track"], doc["genre"]) == \
        ("Version One", "Old Artist", "Old Album", 1987, 9, "Rock")
    assert "album_artist" not in doc and "disc" not in doc and "comment" not in doc


def test_untagged_mp3_has_only_file_and_audio_fields(importer, library, sources):
    path = place(sources.plain, library.root / "plain.mp3")
    assert importer.run(str(library.root)).returncode == 0
    doc = importer.docs()[str(path)]
    assert set(doc) == {"_id", "path", "duration", "bitrate", "sample_rate", "channels", "size",
                        "mtime"}


@pytest.mark.parametrize("kind", ["ogg", "flac"])
def test_vorbis_comment_fields(importer, library, sources, kind):
    path = place(getattr(sources, kind), library.root / f"track.{kind}")
    assert importer.run(str(library.root)).returncode == 0
    doc = importer.docs()[str(path)]
    for field, value in Sources.VORBIS.items():
        assert doc[field] == value, field
    assert doc["sample_rate"] == 44100 and doc["channels"] == 2 and doc["duration"] == 3


def test_only_audio_extensions_are_imported(importer, library, sources):
    place(sources.plain, library.root / "a.mp3")
    place(sources.plain, library.root / "A.MP3")
    place(sources.plain, library.root / "cover.jpg")
    place(sources.plain, library.root / "notes.txt")
    place(sources.plain, library.root / "noextension")
    result = importer.run(str(library.root))
    assert result.returncode == 0, result
    assert sorted(importer.docs()) == [str(library.root / "A.MP3"), str(library.root / "a.mp3")]


def test_paths_are_canonical_and_absolute(importer, library, sources, tmp_path):
    place(sources.plain, library.root / "sub" / "a.mp3")
    relative = os.path.relpath(library.root / "sub" / ".." / "sub", tmp_path)
    assert importer.run(relative + "/", cwd=tmp_path).returncode == 0
    assert list(importer.docs()) == [str(library.root / "sub" / "a.mp3")]


def test_unique_index_on_the_path_field(importer, library, sources):
    place(sources.plain, library.root / "a.mp3")
    assert importer.run(str(library.root)).returncode == 0
    indexes = {i["name"]: i for i in importer.db.collection.list_indexes()}
    assert dict(indexes["path_1"]["key"]) == {"path": 1} and indexes["path_1"]["unique"] is True
    with pytest.raises(pymongo.errors.DuplicateKeyError):
        importer.db.collection.insert_one({"path": str(library.root / "a.mp3")})


def test_path_field_collection_and_config_file(importer, library, sources, tmp_path, mongo, db):
    place(sources.plain, library.root / "a.mp3")
    conf = tmp_path / "musicd.conf"
    conf.write_text(f"# musicd's own settings are accepted and ignored\nlisten = 127.0.0.1:1\n"
                    f"media-root = {library.root}\nmongodb-uri = {mongo.uri}\n"
                    f"database = {db.name}\ncollection = from_file\npath-field = file.path\n")
    result = run_import(["--config", str(conf), "--collection", "from_flag", str(library.root)])
    assert result.returncode == 0, result
    docs = list(db.client[db.name]["from_flag"].find({}))
    assert len(docs) == 1 and docs[0]["file"] == {"path": str(library.root / "a.mp3")}
    assert "from_file" not in db.client[db.name].list_collection_names()


def test_mongodb_uri_from_the_environment(library, sources, mongo, db):
    place(sources.plain, library.root / "a.mp3")
    result = run_import(["--database", db.name, str(library.root)], env={"MONGODB_URI": mongo.uri})
    assert result.returncode == 0, result
    assert db.collection.count_documents({}) == 1


def test_jobs_do_not_change_what_is_stored(mongo, db, library, sources):
    for i in range(24):
        place([sources.id3v2, sources.id3v1, sources.ogg][i % 3], library.root / f"d{i % 4}" /
              f"t{i:02}.{'ogg' if i % 3 == 2 else 'mp3'}")
    stored = []
    for jobs, collection in (("1", "one"), ("4", "four")):
        result = run_import(["--mongodb-uri", mongo.uri, "--database", db.name, "--collection",
                             collection, "--jobs", jobs, "--hash", str(library.root)])
        assert result.returncode == 0 and result.summary["added"] == 24, result
        stored.append(sorted((sorted((k, v) for k, v in d.items() if k != "_id"))
                             for d in db.client[db.name][collection].find({})))
    assert stored[0] == stored[1]


# -- idempotence, changes, --hash ----------------------------------------------------------------

def test_second_run_over_an_unchanged_tree_changes_nothing(importer, library, sources):
    for i, src in enumerate([sources.id3v2, sources.id3v1, sources.ogg, sources.flac]):
        place(src, library.root / f"album{i % 2}" / f"{i}{src.suffix}")
    first = importer.run("--hash", str(library.root))
    assert first.returncode == 0 and first.summary["added"] == 4, first
    before = importer.raw_docs()
    second = importer.run("--hash", str(library.root))
    assert second.returncode == 0, second
    assert second.lines[-1].startswith("0 added, 0 updated, 4 unchanged, 0 pruned, 0 skipped in ")
    assert importer.raw_docs() == before


def test_a_changed_file_is_updated_in_place(importer, library, sources):
    path = place(sources.id3v2, library.root / "a.mp3")
    assert importer.run(str(library.root)).returncode == 0
    before = importer.docs()[str(path)]
    importer.db.collection.update_one({"_id": before["_id"]}, {"$set": {"plays": 7}})
    shutil.copyfile(sources.plain, path)  # same name, no tags now
    os.utime(path, (time.time() + 5,) * 2)
    result = importer.run(str(library.root))
    assert result.summary == dict(added=0, updated=1, unchanged=0, pruned=0, skipped=0,
                                  dry_run=False), result
    after = importer.docs()[str(path)]
    assert after["_id"] == before["_id"] and after["plays"] == 7  # other fields are kept
    assert "title" not in after and "album_artist" not in after  # tags removed from the file
    assert after["size"] == path.stat().st_size and after["mtime"] == mtime_ms(path)


def test_only_a_touched_file_is_read_again(importer, library, sources):
    paths = [place(sources.id3v2, library.root / f"{i}.mp3") for i in range(3)]
    assert importer.run(str(library.root)).returncode == 0
    os.utime(paths[1], (time.time() + 10,) * 2)
    result = importer.run(str(library.root))
    assert result.summary["updated"] == 1 and result.summary["unchanged"] == 2, result


def test_many_changed_files_in_one_run(importer, library, sources):
    """More updates than one bulk write holds (FerretDB v1.24.2 hangs on 100 in one command)."""
    paths = [place(sources.plain, library.root / f"d{i // 50}" / f"{i:03}.mp3") for i in range(160)]
    assert importer.run(str(library.root)).summary["added"] == 160
    later = time.time() + 10
    for path in paths:
        os.utime(path, (later, later))
    result = importer.run(str(library.root))
    assert result.summary["updated"] == 160 and result.returncode == 0, result
    docs = importer.docs()
    assert all(docs[str(p)]["mtime"] == mtime_ms(p) for p in paths)


def test_hash_is_the_files_sha256(importer, library, sources):
    paths = [place(s, library.root / f"x{s.suffix}") for s in (sources.id3v2, sources.flac)]
    assert importer.run("--hash", str(library.root)).returncode == 0
    docs = importer.docs()
    for path in paths:
        assert docs[str(path)]["sha256"] == sha256_file(path)


def test_hash_is_added_to_documents_made_without_it(importer, library, sources):
    path = place(sources.plain, library.root / "a.mp3")
    assert importer.run(str(library.root)).returncode == 0
    result = importer.run("--hash", str(library.root))
    assert result.summary["updated"] == 1, result
    assert importer.docs()[str(path)]["sha256"] == sha256_file(path)
    assert importer.run("--hash", str(library.root)).summary["unchanged"] == 1


def test_documents_made_by_others_are_completed_and_keep_their_id(importer, library, sources):
    path = place(sources.id3v2, library.root / "a.mp3")
    oid = importer.db.insert_track(str(path), title="old title")
    result = importer.run(str(library.root))
    assert result.summary["updated"] == 1 and result.summary["added"] == 0, result
    doc = importer.docs()[str(path)]
    assert str(doc["_id"]) == oid and doc["title"] == Sources.ID3V2["title"]


# -- --prune and --dry-run ----------------------------------------------------------------------

def test_prune_deletes_only_documents_of_gone_files_under_the_directories(importer, library,
                                                                          sources, tmp_path):
    root = library.root / "music"
    keep = place(sources.plain, root / "keep.mp3")
    gone = place(sources.plain, root / "sub" / "gone.mp3")
    sibling = place(sources.plain, library.root / "music2" / "other.mp3")
    assert importer.run(str(root), str(library.root / "music2")).returncode == 0
    outside = importer.db.insert_track(str(tmp_path / "elsewhere" / "missing.mp3"))
    sibling_gone = importer.db.insert_track(str(library.root / "music2" / "missing.mp3"))
    not_audio = place(sources.plain, root / "cover.jpg")  # a document for a file that is not audio
    importer.db.insert_track(str(not_audio))
    shutil.rmtree(gone.parent)
    sibling.unlink()

    without = importer.run(str(root))
    assert without.summary["pruned"] == 0 and str(gone) in importer.docs(), without

    result = importer.run("--prune", str(root))
    assert result.returncode == 0, result
    assert result.summary == dict(added=0, updated=0, unchanged=1, pruned=1, skipped=0,
                                  dry_run=False)
    docs = importer.docs()
    assert str(gone) not in docs
    assert {str(keep), str(sibling), str(not_audio)} <= set(docs)  # music2 was not given
    ids = {str(d["_id"]) for d in docs.values()}
    assert outside in ids and sibling_gone in ids


def test_prune_keeps_documents_of_files_it_cannot_read(importer, library, sources):
    locked = library.root / "locked"
    path = place(sources.plain, locked / "a.mp3")
    assert importer.run(str(library.root)).returncode == 0
    locked.chmod(0o000)
    try:
        result = run_import(importer.args("--prune", str(library.root)), prefix=NO_DAC_OVERRIDE)
    finally:
        locked.chmod(0o755)
    assert result.returncode == 1, result
    assert result.summary["pruned"] == 0 and result.summary["skipped"] == 1
    assert str(path) in importer.docs()


def test_dry_run_writes_nothing_and_says_what_would_change(importer, library, sources):
    old = place(sources.plain, library.root / "old.mp3")
    changed = place(sources.plain, library.root / "changed.mp3")
    assert importer.run(str(library.root)).returncode == 0
    before = importer.raw_docs()
    indexes = list(importer.db.collection.list_indexes())
    new = place(sources.id3v2, library.root / "new.mp3")
    os.utime(changed, (time.time() + 10,) * 2)
    old.unlink()
    result = importer.run("--dry-run", "--prune", "--hash", str(library.root))
    assert result.returncode == 0, result
    assert result.lines[:-1] == [f"would update {changed}", f"would add {new}",
                                 f"would prune {old}"]
    assert result.summary == dict(added=1, updated=1, unchanged=0, pruned=1, skipped=0,
                                  dry_run=True)
    assert importer.raw_docs() == before
    assert list(importer.db.collection.list_indexes()) == indexes


# Readers run at most 2 x 4,000 files (two bulk writes) ahead of what the writer has released.
BEYOND_THE_READERS_WINDOW = 8200


def hard_links(source, directory, count, suffix):
    """count names (hard links, 100 a directory) of one copy of source under directory."""
    first = place(source, directory / "d0" / f"0{suffix}")
    paths = [first]
    for i in range(1, count):
        path = directory / f"d{i // 100}" / f"{i}{suffix}"
        path.parent.mkdir(exist_ok=True)
        os.link(first, path)
        paths.append(path)
    return paths


def test_dry_run_of_more_new_files_than_the_readers_hold_finishes(importer, library, sources):
    """A dry run queues no write: its readers once stopped at the window and it never ended."""
    hard_links(sources.plain, library.root, BEYOND_THE_READERS_WINDOW, ".mp3")
    result = importer.run("--dry-run", str(library.root))
    assert result.returncode == 0, result
    assert result.summary == dict(added=BEYOND_THE_READERS_WINDOW, updated=0, unchanged=0,
                                  pruned=0, skipped=0, dry_run=True)
    assert importer.raw_docs() == []


def test_more_unreadable_files_than_the_readers_hold_are_all_reported(importer, library,
                                                                      sources):
    """Skipped files fill no bulk write: they once stopped the readers for good, as above."""
    corrupt = library.root.parent / f"{library.root.name}-corrupt.mp3"
    corrupt.write_bytes(b"\xff\xfb" + b"\0" * 4000)
    hard_links(corrupt, library.root / "bad", BEYOND_THE_READERS_WINDOW, ".mp3")
    good = place(sources.plain, library.root / "zz" / "good.mp3")
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert result.summary == dict(added=1, updated=0, unchanged=0, pruned=0,
                                  skipped=BEYOND_THE_READERS_WINDOW, dry_run=False)
    assert list(importer.docs()) == [str(good)]


def test_dry_run_creates_no_index_on_a_new_collection(importer, library, sources):
    place(sources.plain, library.root / "a.mp3")
    result = importer.run("--dry-run", str(library.root))
    assert result.summary["added"] == 1, result
    assert "tracks" not in importer.db.client[importer.db.name].list_collection_names()


# -- symbolic links ----------------------------------------------------------------------------

def test_symlinks(importer, library, sources, tmp_path):
    root = library.root
    target = place(sources.plain, root / "real" / "a.mp3")
    outside = place(sources.plain, tmp_path / "outside" / "b.mp3")
    place(sources.plain, tmp_path / "outside-dir" / "c.mp3")
    (root / "link-inside.mp3").symlink_to(target)
    (root / "link-outside.mp3").symlink_to(outside)
    (root / "dir-link").symlink_to(tmp_path / "outside-dir")
    (root / "dangling.mp3").symlink_to(tmp_path / "nothing.mp3")
    result = importer.run(str(root))
    assert result.returncode == 0, result
    assert list(importer.docs()) == [str(target)]  # the inside link is its target, once
    assert result.summary["added"] == 1


def test_a_link_into_another_given_directory_counts(importer, library, sources, tmp_path):
    other = tmp_path / "other"
    target = place(sources.plain, other / "b.mp3")
    (library.root / "to-other.mp3").symlink_to(target)
    assert importer.run(str(library.root), str(other)).returncode == 0
    assert list(importer.docs()) == [str(target)]


# -- bad input ---------------------------------------------------------------------------------



def test_unreadable_file_is_reported_counted_and_skipped(importer, library, sources):
    good = place(sources.plain, library.root / "good.mp3")
    bad = place(sources.plain, library.root / "secret.mp3")
    bad.chmod(0o000)
    result = run_import(importer.args(str(library.root)), prefix=NO_DAC_OVERRIDE)
    assert result.returncode == 1, result
    assert_skipped_once(result, str(bad), "Permission denied")
    assert result.summary["skipped"] == 1 and result.summary["added"] == 1
    assert list(importer.docs()) == [str(good)]


@pytest.mark.parametrize("cut,reason", [
    (0, "no audio found"),              # the tag alone
    (2000, "truncated: 2000 of the"),   # the first frames
    (-1000, "truncated"),               # all but the last second's end
])
def test_truncated_mp3_is_skipped(importer, library, sources, cut, reason):
    data = sources.id3v2.read_bytes()
    bad = library.root / "cut.mp3"
    place(sources.plain, library.root / "good.mp3")
    tag_size = 10 + ((data[6] << 21) | (data[7] << 14) | (data[8] << 7) | data[9])
    bad.write_bytes(data[:tag_size + cut] if cut >= 0 else data[:cut - 128])  # 128: ID3v1
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, str(bad), reason)
    assert result.summary["skipped"] == 1 and result.summary["added"] == 1


@pytest.mark.parametrize("content", [b"\0" * 4096, bytes(range(256)) * 64, b""])
def test_corrupt_mp3_is_skipped(importer, library, sources, content):
    bad = library.root / "corrupt.mp3"
    bad.write_bytes(content)
    place(sources.plain, library.root / "good.mp3")
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, str(bad), "corrupt.mp3: ")
    assert str(bad) not in importer.docs() and len(importer.docs()) == 1


def test_corrupt_flac_and_ogg_are_skipped(importer, library):
    (library.root / "x.flac").write_bytes(b"fLaC" + b"\xff" * 100)
    (library.root / "x.ogg").write_bytes(b"OggS" + b"\x00" * 100)
    result = importer.run(str(library.root))
    assert result.returncode == 1 and result.summary["skipped"] == 2, result
    assert importer.docs() == {}


def deep_path(root, total):
    """Directories of 200-byte names under root until a path of at least total bytes fits
    (made through directory descriptors: the path itself is too long for the kernel)."""
    left = total - len(os.fsencode(root)) - len("/track.mp3")  # for "/name" components
    names = []
    while left > 300:
        names.append("d" * 200)
        left -= 201
    if left > 201:  # two names of 100 bytes or more, so neither is empty
        names.append("d" * (left - 101))
        left = 100
    names.append("e" * (left - 1))
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        return fd, os.path.join(str(root), *names)
    except BaseException:
        os.close(fd)
        raise


@pytest.mark.parametrize("total,reported", [(4096, "file"), (4300, "directory")])
def test_a_path_of_path_max_bytes_or_more_is_reported(importer, library, sources, total,
                                                      reported):
    """A file whose path is PATH_MAX (4096) bytes or more cannot be opened by name: it is
    reported like any file that cannot be imported; a directory whose path is, once, with its
    contents."""
    place(sources.plain, library.root / "good.mp3")
    fd, directory = deep_path(library.root, total)
    try:
        out = os.open("track.mp3", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, sources.plain.read_bytes())
        os.close(out)
    finally:
        os.close(fd)
    path = directory + "/track.mp3"
    assert len(os.fsencode(path)) == total
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "PATH_MAX" in lines[0], result
    shown = lines[0].removeprefix("musicd-import: ").split(": ")[0]
    assert path.startswith(shown) and len(os.fsencode(shown)) >= 4096, lines[0]
    assert (shown == path) == (reported == "file"), lines[0]
    assert result.summary["skipped"] == 1 and result.summary["added"] == 1, result


def test_file_name_that_is_not_utf8(importer, library, sources):
    name = os.fsencode(library.root) + b"/caf\xe9 \x1b[31m.mp3"
    shutil.copyfile(sources.plain, name)
    place(sources.plain, library.root / "good.mp3")
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, f"{library.root}/caf\\xe9 \\x1b[31m.mp3", "not valid UTF-8")
    assert "\x1b" not in result.stderr  # the escape sequence never reaches the terminal
    assert list(importer.docs()) == [str(library.root / "good.mp3")]


def test_directory_name_that_is_not_utf8_is_reported_once(importer, library, sources):
    directory = os.fsencode(library.root) + b"/\xff\xfe"
    os.mkdir(directory)
    for i in range(3):
        shutil.copyfile(sources.plain, directory + f"/{i}.mp3".encode())
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, f"{library.root}/\\xff\\xfe", "not valid UTF-8")
    assert result.summary["skipped"] == 1


@pytest.mark.parametrize("frame,reason", [
    (b"\x03Bad \xff\xfe UTF-8", "TIT2"),                    # UTF-8 declared, invalid bytes
    (b"\x01\xff\xfe" + "ok".encode("utf-16-le") + b"\x00\xd8", "TIT2"),  # lone surrogate
    (b"\x07unknown encoding", "TIT2"),
])
def test_tag_that_is_not_valid_text(importer, library, sources, frame, reason):
    bad = library.root / "bad-tag.mp3"
    bad.write_bytes(id3v24_tag([("TIT2", frame), ("TPE1", b"\x03fine")]) + sources.plain.read_bytes())
    place(sources.plain, library.root / "good.mp3")
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, str(bad), reason)
    assert str(bad) not in importer.docs()


def test_latin1_and_utf16_tags_are_converted(importer, library, sources):
    path = library.root / "encodings.mp3"
    path.write_bytes(id3v24_tag([("TIT2", b"\x00caf\xe9"),
                                 ("TPE1", b"\x01\xff\xfe" + "Ärtist 🎵".encode("utf-16-le")),
                                 ("TPE2", b"\x02" + "Bänd".encode("utf-16-be")),
                                 ("TPOS", b"\x035/9")]) + sources.plain.read_bytes())
    assert importer.run(str(library.root)).returncode == 0
    doc = importer.docs()[str(path)]
    assert (doc["title"], doc["artist"], doc["album_artist"], doc["disc"]) == \
        ("café", "Ärtist 🎵", "Bänd", 5)


def test_vorbis_comment_that_is_not_utf8(importer, library, sources):
    data = bytearray(sources.flac.read_bytes())
    i = data.find(b"ogg comment")
    assert i > 0
    data[i:i + 3] = b"\xc3\x28\xa0"
    bad = library.root / "bad.flac"
    bad.write_bytes(bytes(data))
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, str(bad), "comment")


def _open_paths(pid):
    out = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                pass
    except OSError:
        pass
    return out


def test_directory_vanishing_mid_walk(importer, library, sources):
    """The walk is depth first in name order: while it is inside "a" (thousands of empty
    directories), "z" is removed; the walk then finds it gone, reports it once and goes on."""
    root = library.root
    for attempt in range(3):
        shutil.rmtree(root, ignore_errors=True)
        # A retry starts from an empty collection too: b.mp3 is "added" again, not "updated".
        importer.db.client[importer.db.name]["tracks"].drop()
        for i in range(3000 * (attempt + 1)):
            os.makedirs(root / "a" / f"{i:05}")
        place(sources.plain, root / "b.mp3")
        place(sources.plain, root / "z" / "late.mp3")
        proc = subprocess.Popen([str(IMPORT_BIN)] + importer.args(str(root)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=import_env())
        removed = False
        deadline = time.monotonic() + RUN_TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:
            paths = _open_paths(proc.pid)
            if any(p.startswith(str(root / "a")) for p in paths):
                if not any(p.startswith(str(root / "z")) for p in paths):
                    shutil.rmtree(root / "z")
                    removed = True
                break
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
        if removed:
            break
    assert removed, "the walk was never caught inside directory a"
    err = err.decode()
    assert proc.returncode == 1, err
    assert err.count(str(root / "z")) == 1 and "vanished during the walk" in err, err
    assert out.decode().splitlines()[-1].startswith("1 added, 0 updated, 0 unchanged, 0 pruned, "
                                                    "1 skipped")


# -- output --------------------------------------------------------------------------------------

def test_exit_status_0_when_everything_was_imported(importer, library, sources):
    place(sources.plain, library.root / "a.mp3")
    result = importer.run(str(library.root))
    assert result.returncode == 0 and result.stderr == "", result
    assert len(result.lines) == 1 and result.summary["added"] == 1


def test_empty_directory(importer, library):
    result = importer.run(str(library.root))
    assert result.returncode == 0, result
    assert result.lines[-1].startswith("0 added, 0 updated, 0 unchanged, 0 pruned, 0 skipped")


def test_json_summary(importer, library, sources):
    place(sources.plain, library.root / "a.mp3")
    (library.root / "b.mp3").write_bytes(b"junk")
    result = importer.run("--json", str(library.root))
    assert result.returncode == 1
    assert len(result.lines) == 1
    summary = json.loads(result.lines[0])
    assert set(summary) == {"added", "updated", "unchanged", "pruned", "gone", "skipped",
                            "seconds", "unconfirmed", "dry_run"}
    assert (summary["added"], summary["skipped"], summary["dry_run"]) == (1, 1, False)
    assert 0 <= summary["seconds"] < RUN_TIMEOUT


def test_json_summary_counts_the_files_gone_as_the_note_does(importer, library, sources):
    for name in ("a.mp3", "b.mp3", "c.mp3"):
        place(sources.plain, library.root / name)
    assert importer.run(str(library.root)).returncode == 0
    (library.root / "a.mp3").unlink()
    (library.root / "b.mp3").unlink()

    text = importer.run(str(library.root))
    assert "2 files gone: run with --prune to remove their documents" in text.stderr, text
    left = importer.run("--json", str(library.root))
    assert (left.summary["gone"], left.summary["pruned"]) == (2, 0), left
    dry = importer.run("--json", "--prune", "--dry-run", str(library.root))
    assert (dry.summary["gone"], dry.summary["pruned"]) == (0, 2), dry
    pruned = importer.run("--json", "--prune", str(library.root))
    assert (pruned.summary["gone"], pruned.summary["pruned"]) == (0, 2), pruned
    assert importer.run("--json", str(library.root)).summary["gone"] == 0


# The progress line (import/progress.h): PROGRESS_SETTLE_SECONDS before a stage shows a rate.
SETTLE_SECONDS = 1.0
REDRAW_SECONDS = 0.25  # PROGRESS_INTERVAL in import/console.c
ERASE = b"\r\x1b[K"


def run_on_terminal(args, columns, on_output=None):
    """musicd-import with stderr on a pseudo-terminal of that many columns (stdout piped):
    (everything written to the terminal, stdout, exit status, seconds it ran). on_output(proc,
    seen) is called after each read from the terminal."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    started = time.monotonic()
    try:
        proc = subprocess.Popen([str(IMPORT_BIN)] + args, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=secondary, env=import_env())
        os.close(secondary)
        secondary = None
        seen = b""
        deadline = started + RUN_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(primary, 4096)
                except OSError:  # EIO: the last writer closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
                if on_output is not None:
                    on_output(proc, seen)
            elif proc.poll() is not None:
                break
        out, _ = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        os.close(primary)
        if secondary is not None:
            os.close(secondary)
    return seen, out.decode(), proc.returncode, time.monotonic() - started


def drawn_lines(seen):
    """The progress lines drawn, each after "\r\033[K" (back to the start, erase to the end)."""
    assert seen.startswith(ERASE) and seen.endswith(ERASE), seen
    return [part.decode() for part in seen.split(ERASE)[1:-1]]


def test_progress_line_on_a_terminal_walks_then_reads_redrawn_in_place(importer, library,
                                                                         sources):
    """Redrawn in place at most a few times a second, never wider than the terminal: the
    previous import's documents read, the walk (files found, the directory), then the reading
    (files done of those found, the rate and the time left once the stage has run a second: the
    importer is stopped for longer than that while it reads), and, on the next run, the walk
    against how many files the previous import left."""
    columns, folders, per_folder = 72, 10, 100
    for d in range(folders):
        for f in range(per_folder):
            place(sources.plain, library.root / f"Some Artist/An Album/disc {d:02}" / f"{f:03}.mp3")
    total = folders * per_folder
    stopped = []

    def stop_while_reading(proc, seen):
        if not stopped and re.search(rb"\r\x1b\[K\d+/%d files" % total, seen):
            os.kill(proc.pid, signal.SIGSTOP)
            time.sleep(SETTLE_SECONDS + 0.2)
            os.kill(proc.pid, signal.SIGCONT)
            stopped.append(True)

    seen, out, status, seconds = run_on_terminal(importer.args(str(library.root)), columns,
                                                 stop_while_reading)
    assert status == 0 and out.startswith(f"{total} added, "), (out, seen)
    assert stopped, seen
    lines = drawn_lines(seen)
    assert all(len(line) <= columns - 1 for line in lines), lines
    walking = [line for line in lines if line.startswith("walking: ")]
    reading = [line for line in lines if re.match(rf"\d+/{total} files", line)]
    # First the previous import's documents: none.
    assert lines == ["reading the collection: 0 documents"] + walking + reading, lines
    assert walking and reading
    assert re.fullmatch(r"walking: \d+ files found, \.\.\.[^,]*/disc 00", walking[0]), walking
    done = [int(line.split("/")[0]) for line in reading]
    assert done == sorted(done) and done[-1] == total, reading
    assert re.fullmatch(rf"{total}/{total} files, \d+ files/s, 0:00 left, \.\.\.[^,]*/disc 09",
                        reading[-1]), reading
    # Once a second has gone by in the stage, no sooner.
    assert "files/s" not in reading[0] and "left" not in reading[0], reading
    # At most one redraw a REDRAW_SECONDS, besides the first of each stage and the last.
    assert len(lines) <= seconds / REDRAW_SECONDS + 3, (len(lines), seconds)

    again, out, status, _ = run_on_terminal(importer.args(str(library.root)), columns)
    assert status == 0 and out.startswith(f"0 added, 0 updated, {total} unchanged"), out
    lines = drawn_lines(again)
    loading = [line for line in lines if line.startswith("reading the collection: ")]
    walking = lines[len(loading):]
    assert loading[0] == "reading the collection: 0 documents", lines
    assert all(re.fullmatch(r"reading the collection: \d+ documents", line) for line in loading)
    assert walking and all(re.match(rf"walking: \d+ of about {total} files found", line)
                           for line in walking), lines


def test_progress_line_is_not_drawn_without_a_terminal_or_with_json(importer, library,
                                                                    sources):
    for i in range(3):
        place(sources.plain, library.root / f"{i}.mp3")
    piped = importer.run(str(library.root))
    assert piped.returncode == 0 and piped.stderr == "", piped
    importer.db.collection.delete_many({})

    seen, out, status, _ = run_on_terminal(importer.args("--json", str(library.root)), 80)
    assert status == 0 and seen == b"", seen
    assert json.loads(out)["added"] == 3

    seen, out, status, _ = run_on_terminal(importer.args(str(library.root)), 80)
    assert status == 0 and out.startswith("0 added, 0 updated, 3 unchanged"), out
    assert drawn_lines(seen), seen  # the same run on a terminal draws it


def test_print_urls_and_musicd_serves_every_imported_track(importer, library, sources, musicd):
    files = {"Café Noir.mp3": sources.id3v2, "sub dir/old.mp3": sources.id3v1,
             "x/vorbis.ogg": sources.ogg, "x/y/lossless.flac": sources.flac,
             "100% & more?.mp3": sources.plain}
    paths = [place(src, library.root / rel) for rel, src in files.items()]
    server = musicd.start()
    result = importer.run("--print-urls", server.url + "/", str(library.root))
    assert result.returncode == 0, result
    lines = result.lines[:-1]
    assert len(lines) == len(paths)
    docs = importer.docs()
    for line, path in zip(lines, sorted(paths, key=lambda p: os.fsencode(p))):
        doc = docs[str(path)]
        url = f"{server.url}/musicdb/{doc['_id']}/{urllib.parse.quote(path.name, safe='')}"
        assert line == f"{url}\t{doc.get('artist', '')}\t{doc.get('title', '')}"
        response = requests.get(url, timeout=scaled(10))
        assert response.status_code == 200, url
        assert response.content == path.read_bytes()


# Where the import example is written: each document and the heading it follows.
IMPORT_EXAMPLES = {"README.md": "\n## Your own library\n",
                   "docs/importing.md": "# Importing a library\n"}


def import_example(document):
    """The command lines of the first example after the document's heading, split in words."""
    text = (REPO / document).read_text()
    heading = IMPORT_EXAMPLES[document]
    assert heading in text, f"{document} has no {heading.strip()!r}"
    block = re.search(r"\n\n((?:    .*\n)+)", text.split(heading, 1)[1]).group(1)
    return [line.split() for line in block.replace("\\\n", " ").splitlines()]


@pytest.mark.parametrize("document", IMPORT_EXAMPLES)
def test_the_documented_import_example_prints_the_url_musicd_serves_each_track_at(
        document, importer, library, sources, musicd):
    """Run as the document writes it, but for the test's database, directory and musicd's
    port."""
    importing, serving = import_example(document)
    assert importing[0] == "build/musicd-import" and serving[0] == "build/musicd", importing
    server = musicd.start()
    words = {"mongodb://127.0.0.1:27017": importer.mongo.uri, "/srv/music": str(library.root),
             "http://127.0.0.1:23001": server.url}
    files = {"Artist/one.mp3": sources.id3v2, "two.mp3": sources.plain}
    paths = {rel: place(src, library.root / rel) for rel, src in files.items()}
    result = run_import(["--database", importer.db.name]
                        + [words.get(w, w) for w in importing[1:]])
    assert result.returncode == 0, result
    urls = {line.split("\t")[0] for line in result.lines[:-1]}
    assert len(urls) == len(files), result
    for rel, path in paths.items():
        url = next(u for u in urls if u.endswith("/" + urllib.parse.quote(path.name)))
        assert re.fullmatch(re.escape(server.url) + r"/musicdb/[0-9a-f]{24}/[^/]+", url), url
        answer = requests.get(url, timeout=scaled(10))
        assert answer.status_code == 200 and answer.content == path.read_bytes(), rel


def test_print_urls_signs_every_url_musicd_then_serves(importer, library, sources, musicd,
                                                       tmp_path):
    key = new_key()
    keys = write_key_file(tmp_path / "url-signing.keys", [key, new_key()])
    paths = [place(sources.id3v2, library.root / "Café Noir.mp3"),
             place(sources.ogg, library.root / "x/vorbis.ogg")]
    server = musicd.start(extra_args=["--url-signing-key-file", keys])
    before = int(time.time())
    result = importer.run("--print-urls", server.url, "--url-signing-key-file", str(keys),
                          "--url-lifetime", "120", str(library.root))
    assert result.returncode == 0, result
    docs = importer.docs()
    lines = result.lines[:-1]
    assert len(lines) == len(paths)
    for line, path in zip(lines, sorted(paths, key=lambda p: os.fsencode(p))):
        doc_id = str(docs[str(path)]["_id"])
        url = line.split("\t")[0]
        plain = f"{server.url}/musicdb/{doc_id}/{urllib.parse.quote(path.name, safe='')}"
        prefix = f"{plain}?__token__=exp="
        assert url.startswith(prefix), url
        expires = int(url[len(prefix):].split("~")[0])
        assert before + 120 <= expires <= int(time.time()) + 120
        assert url == f"{plain}?__token__={python_token(key, track_acl(doc_id), expires)}"
        response = requests.get(url, timeout=scaled(10))
        assert response.status_code == 200 and response.content == path.read_bytes(), url
        assert requests.get(plain, timeout=scaled(10)).status_code == 403


def test_print_urls_with_a_key_file_others_may_read_exits_2_before_writing(importer, library,
                                                                          sources, tmp_path):
    keys = write_key_file(tmp_path / "open.keys", [new_key()], mode=0o644)
    place(sources.plain, library.root / "a.mp3")
    result = importer.run("--print-urls", "http://music.example", "--url-signing-key-file",
                          str(keys), str(library.root))
    assert result.returncode == 2, result
    assert f"url-signing-key-file {keys}: mode 0644 lets others read or write it" in result.stderr
    assert importer.docs() == {}


def test_print_urls_lists_every_track_added_or_not(importer, library, sources):
    """A re-run prints every track under the directories again, so a user can find what to
    play; a file added since is among them, a file gone is not."""
    kept = place(sources.id3v2, library.root / "kept.mp3")
    gone = place(sources.id3v1, library.root / "gone.mp3")
    first = importer.run("--print-urls", "http://music.example", str(library.root))
    assert len(first.lines) == 3, first
    gone.unlink()
    new = place(sources.ogg, library.root / "new.ogg")
    again = importer.run("--print-urls", "http://music.example", str(library.root))
    assert again.returncode == 0, again
    docs = importer.docs()
    t, v = Sources.ID3V2, Sources.VORBIS
    assert again.lines[:-1] == [
        f"http://music.example/musicdb/{docs[str(kept)]['_id']}/kept.mp3\t{t['artist']}\t{t['title']}",
        f"http://music.example/musicdb/{docs[str(new)]['_id']}/new.ogg\t{v['artist']}\t{v['title']}",
    ]


def test_a_rerun_says_how_many_files_are_gone(importer, library, sources):
    paths = [place(sources.plain, library.root / f"{i}.mp3") for i in range(4)]
    assert importer.run(str(library.root)).returncode == 0
    for path in paths[:3]:
        path.unlink()
    result = importer.run(str(library.root))
    assert result.returncode == 0, result
    assert result.stderr == "musicd-import: 3 files gone: run with --prune to remove their " \
        "documents\n", result
    assert result.summary["pruned"] == 0 and len(importer.docs()) == 4
    pruned = importer.run("--prune", str(library.root))
    assert pruned.stderr == "" and pruned.summary["pruned"] == 3, pruned
