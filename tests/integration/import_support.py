"""What the musicd-import tests share: running the binary (MUSICD_IMPORT_BIN, default
build/musicd-import, or build/asan/musicd-import when MUSICD_SANITIZED=1; a sanitizer report in
its stderr fails the test), its parsed output, the test database's documents, and real audio files
made with sox, lame and ffmpeg.
"""

import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess

from bson.raw_bson import RawBSONDocument

from support import REPO, SANITIZED, SANITIZER_ENV, sanitizer_errors, scaled

_DEFAULT_BIN = REPO / "build" / ("asan" if SANITIZED else "") / "musicd-import"
IMPORT_BIN = pathlib.Path(os.environ.get("MUSICD_IMPORT_BIN", _DEFAULT_BIN)).resolve()
RUN_TIMEOUT = scaled(60)
GEN_TIMEOUT = 60
SUMMARY = re.compile(r"^(\d+) added, (\d+) updated, (\d+) unchanged, (\d+) pruned, (\d+) skipped "
                     r"in \d+\.\d\d s( \(dry run: nothing written\))?$")


# -- running musicd-import --------------------------------------------------------------------

class Result:
    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout.decode("utf-8", "surrogateescape")
        self.stderr = proc.stderr.decode("utf-8", "surrogateescape")
        self.lines = [line for line in self.stdout.splitlines() if line]

    @property
    def summary(self):
        """The last stdout line: the JSON summary as a dict, or the text one parsed to one."""
        last = self.lines[-1]
        if last.startswith("{"):
            return json.loads(last)
        m = SUMMARY.match(last)
        assert m, f"not a summary line: {last!r}"
        names = ["added", "updated", "unchanged", "pruned", "skipped"]
        return dict(zip(names, map(int, m.groups()[:5])), dry_run=m.group(6) is not None)

    def __repr__(self):
        return f"exit {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def import_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    if SANITIZED:
        env.update(SANITIZER_ENV)
    env.update(extra or {})
    return env


def run_import(args, env=None, prefix=(), check_sanitizer=True, cwd=None):
    if not IMPORT_BIN.exists():
        raise FileNotFoundError(f"{IMPORT_BIN} does not exist: run `make` (or set MUSICD_IMPORT_BIN)")
    proc = subprocess.run(list(prefix) + [str(IMPORT_BIN)] + [os.fsdecode(a) for a in args],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=import_env(env), timeout=RUN_TIMEOUT, cwd=cwd)
    result = Result(proc)
    if check_sanitizer:
        assert not sanitizer_errors(result.stderr), result
    return result


class Importer:
    """musicd-import pointed at the test's database."""

    def __init__(self, mongo, db):
        self.mongo = mongo
        self.db = db

    def args(self, *extra):
        # --config off: an installed musicd.conf on the machine is not the test's (musicd's
        # tests pass the same)
        return ["--config", "off", "--mongodb-uri", self.mongo.uri, "--database", self.db.name] + \
            list(extra)

    def run(self, *args, **kw):
        return run_import(self.args(*args), **kw)

    def docs(self, collection=None):
        coll = self.db.client[self.db.name][collection or "tracks"]
        return {d["path"]: d for d in coll.find({}) if "path" in d}

    def raw_docs(self):
        """Every document of the collection as raw BSON bytes, in _id order."""
        coll = self.db.client[self.db.name].get_collection(
            "tracks", codec_options=self.db.client.codec_options.with_options(
                document_class=RawBSONDocument))
        return [d.raw for d in coll.find({}).sort("_id", 1)]


# -- real audio files with known tags -----------------------------------------------------------

def _run(cmd, env=None):
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=GEN_TIMEOUT, env=env)


class Sources:
    """Audio files made once per session: tagged and untagged mp3s, Ogg Vorbis, FLAC."""

    ID3V2 = dict(title="Tïtle ✓ ünïcode", artist="Ärtist Ñame", album="Älbum 日本",
                 album_artist="Álbum Ártist", genre="Jazz", year=2001, track=4, disc=2,
                 comment="Cömment")
    VORBIS = dict(title="Vörbis Title", artist="Ogg Ärtist", album="Ogg Album",
                  album_artist="Ogg Album Artist", genre="Ambient", year=1999, track=7, disc=3,
                  comment="ogg comment")

    def __init__(self, directory):
        self.dir = pathlib.Path(directory)
        self.wav = self.dir / "tone.wav"
        _run(["sox", "-q", "-n", "-r", "44100", "-c", "2", "-b", "16", str(self.wav),
              "synth", "3", "sine", "440"])
        t = self.ID3V2
        utf8 = dict(os.environ, LC_ALL="C.UTF-8")
        self.id3v2 = self._lame("id3v2.mp3", ["--add-id3v2", "--tt", t["title"], "--ta", t["artist"],
                                              "--tl", t["album"], "--ty", str(t["year"]),
                                              "--tn", f"{t['track']}/12", "--tg", t["genre"],
                                              "--tc", t["comment"],
                                              "--tv", f"TPE2={t['album_artist']}",
                                              "--tv", f"TPOS={t['disc']}/3"], utf8)
        self.id3v1 = self._lame("id3v1.mp3", ["--id3v1-only", "--tt", "Version One", "--ta",
                                              "Old Artist", "--tl", "Old Album", "--ty", "1987",
                                              "--tn", "9", "--tg", "Rock"], utf8)
        self.plain = self._lame("plain.mp3", [], utf8)
        v = self.VORBIS
        meta = ["-metadata", f"title={v['title']}", "-metadata", f"artist={v['artist']}",
                "-metadata", f"album={v['album']}", "-metadata", f"album_artist={v['album_artist']}",
                "-metadata", f"genre={v['genre']}", "-metadata", f"date={v['year']}",
                "-metadata", f"track={v['track']}", "-metadata", f"disc={v['disc']}",
                "-metadata", f"comment={v['comment']}"]
        self.ogg = self.dir / "vorbis.ogg"
        _run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(self.wav), "-c:a",
              "libvorbis"] + meta + [str(self.ogg)])
        self.flac = self.dir / "lossless.flac"
        _run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(self.wav)] + meta +
             [str(self.flac)])

    def _lame(self, name, tag_args, env):
        path = self.dir / name
        _run(["lame", "--quiet", "-b", "128"] + tag_args + [str(self.wav), str(path)], env=env)
        return path


def place(source, dest):
    dest = pathlib.Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return dest


def syncsafe(n):
    return bytes([(n >> 21) & 127, (n >> 14) & 127, (n >> 7) & 127, n & 127])


def id3v24_tag(frames):
    """An ID3v2.4 tag of raw (id, payload) frames."""
    body = b"".join(fid.encode() + syncsafe(len(p)) + b"\0\0" + p for fid, p in frames)
    return b"ID3\x04\x00\x00" + syncsafe(len(body)) + body


def mtime_ms(path):
    ns = os.stat(path).st_mtime_ns
    return datetime.datetime.fromtimestamp(ns // 1_000_000 / 1000, tz=datetime.timezone.utc) \
        .replace(tzinfo=None)


def assert_skipped_once(result, path, reason):
    """stderr names path (escaped as musicd-import escapes it) once, with the reason."""
    lines = [line for line in result.stderr.splitlines() if path in line]
    assert len(lines) == 1, f"{path!r} should be reported once:\n{result.stderr}"
    assert reason in lines[0], lines[0]


NO_DAC_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] \
    if os.geteuid() == 0 else []
