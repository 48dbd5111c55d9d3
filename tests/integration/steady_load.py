"""Steady load on musicd while a test changes the database under it, with every answer counted.

A few client threads ask for tracks back to back (keep-alive, each its own connection), each
request the first KiB of a track (Range: bytes=0-1023) checked against the file's bytes, until
stop() or a bounded time; every answer is recorded with when it was sent and when it came back.
"""

import collections
import threading
import time

import requests

from support import scaled

RANGE_BYTES = 1024
REQUEST_TIMEOUT = 15.0
MAX_SECONDS = 120.0          # a load nobody stops ends by itself


class Answer:
    __slots__ = ("sent", "done", "status", "retry_after", "correct", "track", "error")

    def __init__(self, sent, done, status, retry_after, correct, track, error=None):
        self.sent = sent
        self.done = done
        self.status = status          # None: no HTTP answer (error says what happened)
        self.retry_after = retry_after
        self.correct = correct        # a 206 with the track's bytes
        self.track = track
        self.error = error


class SteadyLoad:
    """threads clients asking base_url for random tracks of `tracks` ((url_path, first bytes))
    as fast as they are answered, or one every `interval` seconds each."""

    def __init__(self, base_url, tracks, threads=3, interval=0.0, max_seconds=MAX_SECONDS):
        self.base_url = base_url
        self.tracks = list(tracks)
        self.threads = threads
        self.interval = interval
        self.max_seconds = max_seconds
        self.answers = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._workers = []

    def _run(self, index):
        session = requests.Session()
        deadline = time.monotonic() + self.max_seconds
        n = index
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                url_path, head = self.tracks[n % len(self.tracks)]
                n += self.threads
                sent = time.monotonic()
                try:
                    r = session.get(self.base_url + url_path, timeout=scaled(REQUEST_TIMEOUT),
                                    headers={"Range": f"bytes=0-{RANGE_BYTES - 1}"})
                    answer = Answer(sent, time.monotonic(), r.status_code,
                                    r.headers.get("Retry-After"),
                                    r.status_code == 206 and r.content == head, url_path)
                except requests.RequestException as e:
                    session.close()
                    session = requests.Session()
                    answer = Answer(sent, time.monotonic(), None, None, False, url_path,
                                    repr(e))
                with self.lock:
                    self.answers.append(answer)
                if self.interval:
                    self._stop.wait(self.interval)
        finally:
            session.close()

    def start(self):
        for i in range(self.threads):
            t = threading.Thread(target=self._run, args=(i,), daemon=True)
            t.start()
            self._workers.append(t)
        return self

    def stop(self):
        self._stop.set()
        for t in self._workers:
            t.join(scaled(REQUEST_TIMEOUT) + 5)
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def snapshot(self):
        with self.lock:
            return list(self.answers)

    def wait_for_answers(self, count, timeout=30.0):
        """Until `count` more answers than now have come (the load is flowing)."""
        start = len(self.snapshot())
        deadline = time.monotonic() + scaled(timeout)
        while len(self.snapshot()) < start + count:
            if time.monotonic() > deadline:
                raise AssertionError(f"the load got {len(self.snapshot()) - start} answers of "
                                     f"{count} in {timeout} s")
            time.sleep(0.02)

    def counts(self, since=None, until=None):
        """Counter of statuses (None: no answer; 'wrong': a 206 with other bytes) of the
        requests sent in [since, until)."""
        c = collections.Counter()
        for a in self.snapshot():
            if (since is None or a.sent >= since) and (until is None or a.sent < until):
                c["wrong" if a.status == 206 and not a.correct else a.status] += 1
        return c


def summary(answers):
    return dict(collections.Counter(a.status for a in answers))
