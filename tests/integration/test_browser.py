"""Headless Chromium plays a musicd URL in an <audio> element, seeks to 80% and plays on.

The page comes from a loopback PageServer; the <audio> src is musicd's URL of a real mp3 of 400 s
at 320 kbit/s (16 MB, made once per module in ~4 s): large enough that Chromium cannot have read
the 80% point (12.8 MB) through its first request and the socket buffers (~10 MB measured), so the
seek needs a range request of its own. Chromium is driven with chromedriver's WebDriver HTTP API
(webdriver.py). The test asserts what a listener would notice: playback starts, `duration` is the
file's (ffprobe, within 0.5 s), the seek lands and time keeps advancing past it, no media error;
and, from musicd's access log, that the browser's requests (at least the first and the seek's) were
all answered 206.
"""

import json
import re
import subprocess
import time

import pytest

from media import generated
from support import scaled, wait_until
from webdriver import PageServer

PLAY_TIMEOUT = scaled(45)
DURATION_TOLERANCE = 0.5
SEEK_FRACTION = 0.8
TRACK_SECONDS = 400
TRACK_KBPS = 320
GEN_TIMEOUT = 120

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>musicd player</title>
<audio id="player" preload="auto" src="{src}"></audio>
<script>
window.events = [];
window.playError = null;
const player = document.getElementById("player");
for (const name of ["loadedmetadata", "canplay", "playing", "seeking", "seeked", "waiting",
                    "stalled", "error", "ended"]) {{
  player.addEventListener(name, () => window.events.push([name, player.currentTime]));
}}
</script>
"""

STATE = """
const a = document.getElementById("player");
return {currentTime: a.currentTime, duration: a.duration, paused: a.paused,
        readyState: a.readyState, networkState: a.networkState, ended: a.ended,
        error: a.error ? {code: a.error.code, message: a.error.message} : null,
        playError: window.playError, events: window.events};
"""


def ffprobe_duration(path):
    p = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration",
                        "-of", "default=noprint_wrappers=1:nokey=1", str(path)],
                       capture_output=True, timeout=60, check=True)
    return float(p.stdout)


@pytest.fixture(scope="module")
def long_mp3(tmp_path_factory):
    """A 400 s, 320 kbit/s CBR mono mp3 of a sine (ID3 title "Long Sine")."""
    def make(path):
        sox = subprocess.Popen(["sox", "-n", "-r", "44100", "-c", "1", "-b", "16", "-e", "signed",
                                "-t", "raw", "-", "synth", str(TRACK_SECONDS), "sine", "330"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        try:
            lame = subprocess.run(["lame", "--quiet", "-r", "-s", "44.1", "--bitwidth", "16",
                                   "--signed", "--little-endian", "-m", "m", "-q", "9",
                                   "-b", str(TRACK_KBPS), "--tt", "Long Sine",
                                   "--ta", "musicd tests", "-", str(path)],
                                  stdin=sox.stdout, capture_output=True, timeout=GEN_TIMEOUT)
        finally:
            sox.stdout.close()
            sox.wait(GEN_TIMEOUT)
        assert lame.returncode == 0 and sox.returncode == 0, lame.stderr
    return generated(tmp_path_factory.mktemp("browser-media") / "long.mp3", make,
                     "browser-long.mp3")


def test_chromium_plays_seeks_to_80_percent_and_plays_on(server, library, browser, long_mp3):
    track = library.add(long_mp3, "long.mp3")
    expected_duration = ffprobe_duration(track.path)
    assert abs(expected_duration - TRACK_SECONDS) < 1, expected_duration
    assert track.size > TRACK_SECONDS * TRACK_KBPS * 1000 // 8 - 10_000, track.size

    def state():
        return browser.run(STATE)

    def no_error(s):
        assert s["error"] is None and s["playError"] is None, json.dumps(s)
        return s

    with PageServer({"/player.html": PAGE.format(src=server.url + track.url_path)}) as pages:
        browser.open(pages.url + "/player.html")
        wait_until(lambda: no_error(state())["readyState"] >= 1, PLAY_TIMEOUT,
                   message="the audio element's metadata")

        browser.run('document.getElementById("player").play()'
                    '.catch(e => { window.playError = String(e); });')
        wait_until(lambda: (lambda s: not s["paused"] and s["currentTime"] > 0.5)(
            no_error(state())), PLAY_TIMEOUT, message="playback to start")

        s = state()
        assert abs(s["duration"] - expected_duration) <= DURATION_TOLERANCE, \
            f"duration {s['duration']} s, ffprobe says {expected_duration} s"

        target = SEEK_FRACTION * s["duration"]
        browser.run('document.getElementById("player").currentTime = arguments[0];', target)
        after = wait_until(lambda: (lambda s: s["currentTime"] > target + 0.5 and s)(
            no_error(state())), PLAY_TIMEOUT, message=f"playback past {target:.1f} s")

        # and it keeps advancing (bounded: a few samples over a few seconds)
        later = wait_until(
            lambda: (lambda s: s["currentTime"] > after["currentTime"] + 1.0 and s)(
                no_error(state())), PLAY_TIMEOUT, message="playback to go on after the seek")
        assert not later["paused"] and not later["ended"], json.dumps(later)
        assert later["currentTime"] < s["duration"]
        names = [name for name, _ in later["events"]]
        assert "seeked" in names and "error" not in names, names
        seeked_at = [t for name, t in later["events"] if name == "seeked"][-1]
        assert abs(seeked_at - target) < 1.0, (seeked_at, target)

    server.wait_for_access_log(1)
    time.sleep(0.2)  # lines of requests that ended with the seek
    browser_lines = [line for line in server.access_log_lines()
                     if f'"GET {track.url_path} HTTP/1.1"' in line and "Chrome" in line]
    answers = [re.search(r'" (\d{3}) (\d+) ', line).groups() for line in browser_lines]
    assert len(answers) >= 2, f"the seek asked for no range of its own: {browser_lines}"
    assert {status for status, _ in answers} == {"206"}, browser_lines
    # the seek's range starts past 70% of the file: it sent at most the last 30%
    assert any(0 < int(sent) <= 0.3 * track.size for _, sent in answers), browser_lines
