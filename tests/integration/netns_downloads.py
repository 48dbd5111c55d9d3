"""Run by test_network_namespace.py inside a fresh network namespace (not collected on its own:
its name does not start with test_). Concurrent downloads, each on a connection the response
closes, on one worker: every body arrives whole."""

import threading

from pacing import timed_get

CLIENTS = 3
DOWNLOADS = 60  # per client


def test_concurrent_downloads_on_closing_connections_arrive_whole(musicd, library):
    track = library.add(library.media.big, "big.mp3", copy=True)
    server = musicd.start(extra_args=["--workers", "1"])
    bad = []

    def client():
        for _ in range(DOWNLOADS):
            got = timed_get(server.port, track.url_path, timeout=10)
            if got.response is None or got.response.status != 200 or \
                    got.response.body != track.data:
                bad.append(got)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not bad, f"{len(bad)} of {CLIENTS * DOWNLOADS} downloads not whole: {bad[:2]}"
