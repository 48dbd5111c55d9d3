"""Command-line players as musicd's clients: ffprobe reads the duration from the URL, mpg123
decodes the stream from the URL (test mode, and to raw samples compared with the local file's),
curl resumes cut downloads with `-C -`. Every tool runs with a timeout; a killed download's curl is
always reaped."""

import re
import subprocess

import pytest

from media import sha256_file
from support import scaled, wait_until
from tcp_proxy import TcpProxy

TOOL_TIMEOUT = scaled(60)


def run(cmd, timeout=TOOL_TIMEOUT):
    return subprocess.run([str(c) for c in cmd], stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=timeout)


def ffprobe_duration(source):
    p = run(["ffprobe", "-v", "error", "-show_entries", "format=duration",
             "-of", "default=noprint_wrappers=1:nokey=1", source])
    assert p.returncode == 0 and p.stderr == b"", f"ffprobe {source}: {p.stderr[-2000:]!r}"
    return p.stdout.decode().strip()


@pytest.fixture
def big(library):
    """The ~250 s, ~4 MB mp3."""
    return library.add(library.media.big, "big.mp3")


def url(server, track):
    return server.url + track.url_path


def access_statuses(server, count):
    lines = server.wait_for_access_log(count)
    return [re.search(r'" (\d{3}) ', line).group(1) for line in lines]


# -- ffprobe ---------------------------------------------------------------------------------

def test_ffprobe_reads_the_duration_from_the_url(server, big):
    local = ffprobe_duration(big.path)
    assert 249 < float(local) < 251, local
    assert ffprobe_duration(url(server, big)) == local


def test_ffprobe_reads_the_tags_from_the_url(server, big):
    entries = "format_tags=title,artist:stream=codec_name,sample_rate,channels,bit_rate"
    p = run(["ffprobe", "-v", "error", "-show_entries", entries,
             "-of", "default=noprint_wrappers=1", url(server, big)])
    assert p.returncode == 0, p.stderr
    fields = dict(line.split("=", 1) for line in p.stdout.decode().splitlines())
    assert fields == {"codec_name": "mp3", "sample_rate": "44100", "channels": "2",
                      "bit_rate": "128000", "TAG:title": "Big Sine",
                      "TAG:artist": "musicd tests"}


# -- mpg123 ----------------------------------------------------------------------------------

def test_mpg123_test_mode_decodes_the_stream_without_error(server, big):
    p = run(["mpg123", "-t", "-q", url(server, big)])
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert p.stderr == b"", p.stderr.decode(errors="replace")  # mpg123 reports errors but exits 0
    assert access_statuses(server, 1) == ["200"]


def test_mpg123_decodes_the_same_samples_from_the_url_as_from_the_file(server, big):
    from_url = run(["mpg123", "-s", "-q", url(server, big)])
    from_file = run(["mpg123", "-s", "-q", big.path])
    assert from_url.returncode == from_file.returncode == 0, from_url.stderr
    assert from_url.stderr == b"", from_url.stderr.decode(errors="replace")
    # ~250 s of 44.1 kHz, 16-bit stereo
    assert 249 * 44100 * 4 < len(from_file.stdout) < 251 * 44100 * 4
    assert from_url.stdout == from_file.stdout


def test_mpg123_reads_a_short_track_verbosely(server, library):
    short = library.add(library.media.short, "short.mp3")
    p = run(["mpg123", "-t", "-v", url(server, short)])
    text = p.stderr.decode(errors="replace")
    assert p.returncode == 0, text
    assert "Title:   Short Sine" in text
    assert "MPEG 1.0 L III" in text
    assert "error" not in text.lower(), text


# -- curl -C - -------------------------------------------------------------------------------

def test_curl_resumes_a_download_cut_by_a_range(server, big, tmp_path):
    out = tmp_path / "download.mp3"
    first = run(["curl", "-sS", "-r", "0-999999", "-o", out, url(server, big)])
    assert first.returncode == 0, first.stderr
    assert out.stat().st_size == 1_000_000
    resumed = run(["curl", "-sS", "-f", "-C", "-", "-o", out, url(server, big)])
    assert resumed.returncode == 0, resumed.stderr
    assert out.stat().st_size == big.size
    assert sha256_file(out) == big.sha256
    assert access_statuses(server, 2) == ["206", "206"]
    assert f"206 {big.size - 1_000_000} " in server.access_log_lines()[1]


def test_curl_resumes_a_download_it_was_killed_in(server, big, tmp_path):
    """curl is killed mid-transfer (a TcpProxy paces musicd's answer at ~320 KB/s, as curl's
    own --limit-rate does not hold back a loopback transfer), then resumes with -C -."""
    out = tmp_path / "download.mp3"
    slow = TcpProxy(("127.0.0.1", server.port), chunk_size=16384, delay_to_client=0.05).start()
    try:
        proc = subprocess.Popen(["curl", "-sS", "-o", str(out), f"http://127.0.0.1:{slow.port}"
                                 f"{big.url_path}"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: out.exists() and out.stat().st_size >= 300_000, scaled(30),
                       message="curl to write 300 KB")
        finally:
            proc.kill()
            proc.wait(10)
    finally:
        slow.stop()
    cut = out.stat().st_size
    assert 300_000 <= cut < big.size // 2, cut
    resumed = run(["curl", "-sS", "-f", "-C", "-", "-o", out, url(server, big)])
    assert resumed.returncode == 0, resumed.stderr
    assert sha256_file(out) == big.sha256
    resume_line = f'"GET {big.url_path} HTTP/1.1" 206 {big.size - cut} '
    lines = server.wait_for_access_log(2)  # the cut download's line may come last
    assert any(resume_line in line for line in lines), lines


def test_curl_resume_of_a_complete_file_is_a_no_op(server, big, tmp_path):
    """The 416 with Content-Range: bytes */size tells curl the file is already complete."""
    out = tmp_path / "download.mp3"
    assert run(["curl", "-sS", "-f", "-o", out, url(server, big)]).returncode == 0
    again = run(["curl", "-sS", "-C", "-", "-o", out, url(server, big)])
    assert again.returncode == 0, again.stderr
    assert sha256_file(out) == big.sha256
    assert access_statuses(server, 2) == ["200", "416"]
