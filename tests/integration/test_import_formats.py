"""Every format musicd-import reads, read alike: real files made by sox, lame and ffmpeg (WAV
tagged by mutagen, as tagging tools write its RIFF "id3 " chunk, and by ffmpeg's LIST INFO),
each truncated as `head -c` cuts it and checked against its container's own length facts (FLAC
STREAMINFO's sample count, Ogg's last page, MP4's boxes, WAV's data chunk, MP3's Xing/Info
header), album artist and disc number read from each, and the duration stored, in seconds with
millisecond precision, the one a decoder plays (ffmpeg's decoded samples).
"""

import pathlib
import subprocess

import pytest
from mutagen.id3 import TIT2, TPE1, TPE2, TPOS
from mutagen.wave import WAVE

from import_support import GEN_TIMEOUT, assert_skipped_once, place

TAGS = dict(title="Förmat Title", artist="Förmat Artist", album="Förmat Album",
            album_artist="Förmat Album Artist", disc=2)
FORMATS = ["flac", "ogg", "opus", "m4a", "mp4", "wav", "mp3"]


def _run(cmd):
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=GEN_TIMEOUT)


class Formats:
    """One 2.613 s tagged file per format (2.613 s: a whole-seconds duration would be wrong)."""

    CODECS = {"flac": ["-c:a", "flac"], "ogg": ["-c:a", "libvorbis"],
              "opus": ["-c:a", "libopus"], "m4a": ["-c:a", "aac"], "mp4": ["-c:a", "aac"],
              "wav": ["-c:a", "pcm_s16le"]}

    def __init__(self, directory, wav):
        self.dir = pathlib.Path(directory)
        tone = self.dir / "tone.wav"
        _run(["sox", "-q", "-n", "-r", "44100", "-c", "2", "-b", "16", str(tone), "synth",
              "2.613", "sine", "440"])
        meta = ["-metadata", f"title={TAGS['title']}", "-metadata", f"artist={TAGS['artist']}",
                "-metadata", f"album={TAGS['album']}",
                "-metadata", f"album_artist={TAGS['album_artist']}",
                "-metadata", f"disc={TAGS['disc']}/3"]
        self.files = {}
        for kind, codec in self.CODECS.items():
            path = self.dir / f"tagged.{kind}"
            _run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(tone)] + codec +
                 meta + [str(path)])
            self.files[kind] = path
        # WAV: ffmpeg wrote LIST INFO (title, artist, album: INFO has no album artist or disc);
        # the "id3 " chunk carries them, written by mutagen as tagging tools do.
        wave = WAVE(str(self.files["wav"]))
        wave.add_tags()
        wave.tags.add(TIT2(encoding=3, text=TAGS["title"]))
        wave.tags.add(TPE1(encoding=3, text=TAGS["artist"]))
        wave.tags.add(TPE2(encoding=3, text=TAGS["album_artist"]))
        wave.tags.add(TPOS(encoding=3, text=f"{TAGS['disc']}/3"))
        wave.save()
        mp3 = self.dir / "tagged.mp3"
        _run(["lame", "--quiet", "-b", "128", "--tt", TAGS["title"], "--ta", TAGS["artist"],
              "--tl", TAGS["album"], "--tv", f"TPE2={TAGS['album_artist']}",
              "--tv", f"TPOS={TAGS['disc']}/3", str(tone), str(mp3)])
        self.files["mp3"] = mp3
        # The index (moov) before the audio (mdat), as streaming sites write it: cut in its
        # audio, only the boxes' sizes tell.
        self.faststart = self.dir / "faststart.m4a"
        _run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(tone), "-c:a", "aac",
              "-movflags", "+faststart", str(self.faststart)])
        self.info_only_wav = self.dir / "info.wav"
        _run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(tone)] + meta +
             [str(self.info_only_wav)])


@pytest.fixture(scope="session")
def formats(tmp_path_factory, sources):
    return Formats(tmp_path_factory.mktemp("formats"), sources.wav)


def probe(path, entry):
    return subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                           entry, "-of", "csv=p=0", str(path)], check=True, capture_output=True,
                          timeout=GEN_TIMEOUT).stdout.decode().strip().split(",")[0]


def playing_seconds(path):
    """How long the file plays: the samples ffmpeg decodes (mono, at its own rate), gapless
    for mp3 (the LAME tag's delay and padding left out). For MP4, ffmpeg's decoder keeps the
    AAC encoder's padding at the end, which the edit list leaves out: there, the presentation's
    duration that ffprobe reads (what players that honour edit lists play)."""
    if path.suffix in (".m4a", ".mp4"):
        return float(probe(path, "format=duration"))
    rate = probe(path, "stream=sample_rate")
    pcm = subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(path), "-ac",
                          "1", "-f", "s16le", "-"], check=True, capture_output=True,
                         timeout=GEN_TIMEOUT).stdout
    return len(pcm) / 2 / int(rate)


@pytest.mark.parametrize("kind", FORMATS)
def test_a_truncated_file_is_skipped(importer, library, formats, kind, sources):
    """`head -c` of half the file: decoders stop at the cut, so the file is not imported."""
    data = formats.files[kind].read_bytes()
    cut = library.root / f"cut.{kind}"
    cut.write_bytes(data[:len(data) // 2])
    place(sources.plain, library.root / "good.mp3")
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, str(cut), "truncated")
    assert result.summary["skipped"] == 1 and result.summary["added"] == 1, result


def test_an_m4a_with_its_index_first_cut_in_its_audio_is_skipped(importer, library, formats):
    data = formats.faststart.read_bytes()
    assert data.find(b"moov") < data.find(b"mdat")
    cut = library.root / "cut.m4a"
    cut.write_bytes(data[:len(data) * 3 // 4])
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, str(cut), "truncated: its mdat box ends at byte")


def test_flac_cut_to_20000_bytes_is_skipped(importer, library, formats):
    cut = library.root / "cut.flac"
    cut.write_bytes(formats.files["flac"].read_bytes()[:20000])
    result = importer.run(str(library.root))
    assert result.returncode == 1, result
    assert_skipped_once(result, str(cut), "truncated")
    assert importer.docs() == {}


@pytest.mark.parametrize("kind", FORMATS)
def test_a_whole_file_is_imported(importer, library, formats, kind):
    path = place(formats.files[kind], library.root / f"whole.{kind}")
    result = importer.run(str(library.root))
    assert result.returncode == 0, result
    assert str(path) in importer.docs()


@pytest.mark.parametrize("kind", FORMATS)
def test_album_artist_and_disc_are_read_from_every_format(importer, library, formats, kind):
    path = place(formats.files[kind], library.root / f"tagged.{kind}")
    assert importer.run(str(library.root)).returncode == 0
    doc = importer.docs()[str(path)]
    for field in ("title", "artist", "album_artist", "disc"):
        assert doc.get(field) == TAGS[field], (field, doc)


def test_wav_with_list_info_only(importer, library, formats):
    """LIST INFO has title, artist and album, and nothing for album artist or disc."""
    path = place(formats.info_only_wav, library.root / "info.wav")
    assert importer.run(str(library.root)).returncode == 0
    doc = importer.docs()[str(path)]
    assert (doc["title"], doc["artist"], doc["album"]) == \
        (TAGS["title"], TAGS["artist"], TAGS["album"])
    assert "album_artist" not in doc and "disc" not in doc


@pytest.mark.parametrize("kind", FORMATS)
def test_the_duration_is_what_decodes_in_milliseconds(importer, library, formats, kind):
    path = place(formats.files[kind], library.root / f"timed.{kind}")
    assert importer.run(str(library.root)).returncode == 0
    stored = importer.docs()[str(path)]["duration"]
    assert isinstance(stored, float), stored
    assert abs(stored - playing_seconds(path)) <= 0.0015, (stored, playing_seconds(path))
