"""Real mp3 files for the tests, made once per session with sox and lame.

  short: ~5 s, ~80 KB (ID3 title "Short Sine", artist "musicd tests")
  big:   ~250 s at 128 kbit/s CBR, ~4 MB (ID3 title "Big Sine")

Library puts them (hard links, or copies when a test will modify the file) under a test's own
media root and inserts their track documents.

Generated files (these and the long tracks of test_players.py and test_browser.py) are made once
per run of scripts/tests/run-tests, not once per pytest session and xdist worker: it names a
directory in MUSICD_TEST_MEDIA_CACHE that every session of the run shares (generated() makes a
file there once, under a lock, and copies it into the session's own directory, so no test of one
session can touch a file another session uses). Without it each session makes its own.
"""

import fcntl
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile

GEN_TIMEOUT = 60.0
MEDIA_CACHE = os.environ.get("MUSICD_TEST_MEDIA_CACHE")


def generated(path, make, key):
    """path, made by make(target) (which writes target): directly, or, with MUSICD_TEST_MEDIA_CACHE,
    copied from the run's cache entry `key` (a name saying what the file is, unique in the
    suite), which the first session to need it makes (the others wait on its lock, then copy).
    The cache holds a file only once it is whole (made aside, then renamed)."""
    path = pathlib.Path(path)
    if not MEDIA_CACHE:
        make(path)
        return path
    cache = pathlib.Path(MEDIA_CACHE)
    cached = cache / key
    with open(cache / f".{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cached.exists():
            aside = pathlib.Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
            make(aside / path.name)
            os.rename(aside / path.name, cached)
            shutil.rmtree(aside)
    shutil.copyfile(cached, path)
    return path


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _run(cmd):
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=GEN_TIMEOUT)


def make_mp3(path, seconds, title, artist="musicd tests", freq=440, bitrate=None):
    """A real mp3 of a stereo sine, with an ID3 title and artist."""
    path = pathlib.Path(path)
    wav = path.with_suffix(".wav")
    _run(["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", str(wav),
          "synth", str(seconds), "sine", str(freq)])
    cmd = ["lame", "--quiet", "--tt", title, "--ta", artist]
    if bitrate:
        cmd += ["-f", "-b", str(bitrate)]  # -f: fast encoding, CBR
    _run(cmd + [str(wav), str(path)])
    wav.unlink()
    return path


class MediaFiles:
    """The session's generated mp3s (in `directory`), made on first use."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._short = None
        self._big = None

    @property
    def short(self):
        if self._short is None:
            self._short = generated(self.directory / "short.mp3",
                                    lambda path: make_mp3(path, 5, "Short Sine"), "short.mp3")
        return self._short

    @property
    def big(self):
        if self._big is None:
            self._big = generated(self.directory / "big.mp3",
                                  lambda path: make_mp3(path, 250, "Big Sine", freq=330,
                                                        bitrate=128), "big.mp3")
        return self._big


class Track:
    """A file placed in a media root plus its document in the tracks collection."""

    def __init__(self, id, path, name):
        self.id = id            # ObjectId, 24 hex digits
        self.path = path        # pathlib.Path of the file
        self.name = name        # the :param used in URLs
        self.url_path = f"/musicdb/{id}/{name}"

    @property
    def data(self):
        return self.path.read_bytes()

    @property
    def sha256(self):
        return sha256_file(self.path)

    @property
    def size(self):
        return self.path.stat().st_size

    def __repr__(self):
        return f"Track({self.id}, {self.path})"


class Library:
    """A test's media root (`root`) and its tracks collection (`db`, a TestDatabase)."""

    def __init__(self, root, db, media):
        self.root = pathlib.Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.db = db
        self.media = media

    def place(self, source, relpath, copy=False, root=None):
        """Put source at root/relpath (hard link, or a copy when copy=True)."""
        dest = pathlib.Path(root or self.root) / relpath
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not copy:
            try:
                os.link(source, dest)
                return dest
            except OSError:
                pass
        shutil.copyfile(source, dest)
        return dest

    def add(self, source=None, relpath=None, *, copy=False, root=None, name=None, **fields):
        """Place source (default: the short mp3) under the media root and insert its document.
        relpath defaults to the source's file name; name (the URL's :param) to relpath's."""
        source = pathlib.Path(source or self.media.short)
        relpath = relpath or source.name
        path = self.place(source, relpath, copy=copy, root=root)
        oid = self.db.insert_track(str(path), **fields)
        return Track(oid, path, name or pathlib.PurePath(relpath).name)

    def add_document(self, path, name="track.mp3", **fields):
        """Insert a document for an arbitrary path (which may not exist) and return its Track."""
        oid = self.db.insert_track(path if not isinstance(path, os.PathLike) else str(path),
                                   **fields)
        return Track(oid, pathlib.Path(str(path)), name)
