"""musicd in front of a replica set and a sharded cluster, tested as the drivers test theirs
(issue 16): a three-member replica set (or a mongos) simulated with python3-mockupdb
(replset.py), finds forwarded to the session's real database, musicd under steady load
(steady_load.py) while the test steps the primary down, makes members lag, cuts connections
mid-reply, answers errors or takes every member away; every answer is counted.

What a player sees, asserted here: a 200/206 with the track's bytes, a 404 for a track that does
not exist, or a 503 with Retry-After while the set has no primary or no member answers; never a
500 for a retryable error (a stepdown's "not primary", a broken connection), never a wrong or
truncated body, and musicd never restarted. The stepdown window is printed (run with -s).
"""

import io
import time

import gridfs
import pytest
import requests
from bson import ObjectId

import replset
from assertions import assert_error
from replset import HEARTBEAT_MS, Fault, Mongos, ReplicaSet
from steady_load import RANGE_BYTES, SteadyLoad, summary
from support import scaled, wait_until

LOOKUP_TIMEOUT_MS = 1500
DEFAULT_HEARTBEAT_MS = 10000  # libmongoc's heartbeatFrequencyMS when the URI does not set it
# Both secondaries within the driver's latency window however slow the machine makes one of
# them (15 ms by default), so only maxStalenessSeconds tells them apart.
LATENCY_WINDOW_MS = 10000
TRACKS = 12
ELECTION_SECONDS = 3.0       # no primary: longer than the lookup deadline, so lookups see it
SLACK = 1.0                  # scheduling on a shared machine (scaled)
TIMEOUT = 15


@pytest.fixture
def replica_set(mongo):
    with ReplicaSet(mongo.uri) as rs:
        yield rs


@pytest.fixture
def tagged_set(mongo):
    with ReplicaSet(mongo.uri, tags={"a": {"dc": "north"}, "b": {"dc": "east"},
                                     "c": {"dc": "west"}}) as rs:
        yield rs


@pytest.fixture
def mongos(mongo):
    with Mongos(mongo.uri) as router:
        yield router


@pytest.fixture
def tracks(library, media):
    return [library.add(media.short, f"t{i}.mp3") for i in range(TRACKS)]


def load_of(server, tracks, threads=3):
    return SteadyLoad(server.url, [(t.url_path, t.data[:RANGE_BYTES]) for t in tracks],
                      threads=threads)


def start_musicd(musicd, uri, caches=False, extra=()):
    return musicd.start(mongodb_uri=uri, caches=caches,
                        extra_args=["--lookup-timeout", str(LOOKUP_TIMEOUT_MS)] + list(extra))


def assert_answers_sound(answers):
    """No 500, no wrong body, no request left unanswered; every 503 says when to come back."""
    assert answers, "the load got no answers"
    statuses = summary(answers)
    assert all(a.status in (206, 503) for a in answers), statuses
    assert all(a.correct for a in answers if a.status == 206), "a 206 with the wrong bytes"
    assert all(a.retry_after for a in answers if a.status == 503), "a 503 without Retry-After"


def assert_all_served(answers):
    assert answers, "the load got no answers"
    assert summary(answers) == {206: len(answers)}
    assert all(a.correct for a in answers)


def get(server, path, **headers):
    return requests.get(server.url + path, headers=headers, timeout=TIMEOUT)


# -- stepdown and election ----------------------------------------------------------------------

@pytest.mark.parametrize("heartbeat_ms", [HEARTBEAT_MS, None], ids=["heartbeat-500ms",
                                                                     "heartbeat-default"])
def test_stepdown_is_503_with_retry_after_for_the_election_window_then_200_without_restart(
        musicd, tracks, replica_set, heartbeat_ms):
    options = {"readPreference": "primary"}
    if heartbeat_ms is None:
        options["heartbeatFrequencyMS"] = DEFAULT_HEARTBEAT_MS
    server = start_musicd(musicd, replica_set.uri(**options))
    pid = server.pid
    heartbeat = (heartbeat_ms or DEFAULT_HEARTBEAT_MS) / 1000
    with load_of(server, tracks) as load:
        load.wait_for_answers(30)
        stepped_down = time.monotonic()
        replica_set.step_down()
        time.sleep(ELECTION_SECONDS)
        replica_set.elect("b")
        elected = time.monotonic()
        time.sleep(heartbeat + scaled(SLACK) + 1.0)
    answers = load.snapshot()
    assert_answers_sound(answers)
    failed = [a for a in answers if a.status == 503]
    assert failed, f"no lookup saw the set without a primary: {summary(answers)}"
    recovered_by = elected + heartbeat + scaled(SLACK)
    late = [a for a in answers if a.sent >= recovered_by]
    assert late
    assert_all_served(late)
    assert all(a.sent >= stepped_down - 0.1 for a in failed)
    first_ok = min(a.done for a in answers if a.status == 206 and a.sent >= elected)
    print(f"\nstepdown: {len(failed)} answers 503 of {len(answers)}; no primary for "
          f"{elected - stepped_down:.2f} s; the first 200 {first_ok - elected:.2f} s after the "
          f"election; the last 503 answered {max(a.done for a in failed) - elected:+.2f} s "
          f"from it (heartbeat {heartbeat:.1f} s, lookup deadline {LOOKUP_TIMEOUT_MS} ms)")
    assert replica_set["b"].finds_of("tracks") > 0
    assert server.running and server.pid == pid


@pytest.mark.parametrize("mode", ["secondaryPreferred", "primaryPreferred"])
def test_stepdown_is_not_seen_when_secondaries_may_answer(musicd, tracks, replica_set, mode):
    server = start_musicd(musicd, replica_set.uri(readPreference=mode))
    with load_of(server, tracks) as load:
        load.wait_for_answers(30)
        replica_set.step_down()
        during = len(load.snapshot())
        time.sleep(ELECTION_SECONDS)
        during = len(load.snapshot()) - during
        replica_set.elect("b")
        load.wait_for_answers(30)
    assert during > 0
    assert_all_served(load.snapshot())


# -- lag ------------------------------------------------------------------------------------

def test_a_track_not_yet_on_the_secondaries_is_found_on_the_primary(musicd, library, media,
                                                                     tracks, replica_set):
    server = start_musicd(musicd, replica_set.uri(readPreference="secondaryPreferred"))
    with load_of(server, tracks) as load:
        load.wait_for_answers(20)
        new = library.add(media.short, "new.mp3")
        for name in ("b", "c"):
            replica_set[name].lag(new.id)
        resp = get(server, new.url_path)
        assert resp.status_code == 200 and resp.content == new.data
        load.wait_for_answers(10)
    assert_all_served(load.snapshot())
    assert replica_set["a"].ids[new.id] == 1
    assert replica_set["b"].ids[new.id] + replica_set["c"].ids[new.id] == 1
    assert replica_set["a"].finds_of("tracks") < replica_set["b"].finds_of("tracks") + \
        replica_set["c"].finds_of("tracks")


def test_a_track_that_does_not_exist_stays_404_after_asking_the_primary(musicd, tracks,
                                                                       replica_set):
    server = start_musicd(musicd, replica_set.uri(readPreference="secondaryPreferred"))
    missing = str(ObjectId())
    with load_of(server, tracks) as load:
        load.wait_for_answers(20)
        assert_error(get(server, f"/musicdb/{missing}/x.mp3"), 404)
        load.wait_for_answers(10)
    assert_all_served(load.snapshot())
    assert replica_set["a"].ids[missing] == 1


# -- GridFS on a lagging member -------------------------------------------------------------

GRIDFS_CHUNK = 1000
GRIDFS_LENGTH = 5500         # six chunks
GRIDFS_DATA = bytes(range(256)) * 21 + bytes(GRIDFS_LENGTH - 256 * 21)


def put_gridfs(db, data):
    """(fs.files _id, track _id) of data put into the test database's fs bucket."""
    bucket = gridfs.GridFSBucket(db.client[db.name], chunk_size_bytes=GRIDFS_CHUNK)
    files_id = bucket.upload_from_stream("lagging.mp3", io.BytesIO(data))
    return files_id, db.insert({"gridfs_id": files_id, "title": "lagging"})


@pytest.mark.parametrize("hidden", [range(6), range(3, 5)], ids=["no-chunks", "two-chunks"])
def test_gridfs_chunks_missing_on_the_secondaries_are_read_from_the_primary(
        musicd, db, tracks, replica_set, hidden):
    data = GRIDFS_DATA
    files_id, track = put_gridfs(db, data)
    # A small window: the first span is read before the head, the later ones after it.
    server = start_musicd(musicd, replica_set.uri(readPreference="secondaryPreferred"),
                          extra=["--gridfs-window", "2000"])
    for name in ("b", "c"):
        replica_set[name].lag_chunks(files_id, hidden)
    with load_of(server, tracks) as load:
        load.wait_for_answers(10)
        for _ in range(3):
            resp = get(server, f"/musicdb/{track}/lagging.mp3")
            assert resp.status_code == 200
            assert resp.content == data
            resp = get(server, f"/musicdb/{track}/lagging.mp3", Range="bytes=2500-4999")
            assert resp.status_code == 206 and resp.content == data[2500:5000]
    assert_all_served(load.snapshot())
    assert replica_set["a"].finds_of("fs.chunks") > 0


def test_a_gridfs_entry_missing_on_the_secondaries_is_read_from_the_primary(
        musicd, db, tracks, replica_set):
    data = GRIDFS_DATA
    files_id, track = put_gridfs(db, data)
    server = start_musicd(musicd, replica_set.uri(readPreference="secondaryPreferred"))
    for name in ("b", "c"):
        replica_set[name].lag(files_id)
        replica_set[name].lag_chunks(files_id, range(6))
    with load_of(server, tracks) as load:
        load.wait_for_answers(10)
        resp = get(server, f"/musicdb/{track}/lagging.mp3")
        assert resp.status_code == 200 and resp.content == data
    assert_all_served(load.snapshot())


# -- connections cut mid-reply, retryable and other errors ----------------------------------

# One client for the tests of one failure per track: after each, libmongoc checks the member
# again before it selects it (at most one heartbeat), and failures of several lookups in a row
# would each wait for it, eating the deadline of the lookups behind them.

def test_a_find_cut_off_mid_reply_is_retried_once(musicd, tracks, replica_set):
    server = start_musicd(musicd, replica_set.uri())
    replica_set["a"].set_fault(Fault("cut", first_of_each=True))
    with load_of(server, tracks, threads=1) as load:
        load.wait_for_answers(3 * TRACKS)
    assert_all_served(load.snapshot())
    # Each track's first find was cut, and asked again.
    assert all(replica_set["a"].ids[t.id] >= 2 for t in tracks)


def test_a_member_that_cuts_every_reply_is_503_within_the_deadline_then_200(
        musicd, tracks, replica_set):
    server = start_musicd(musicd, replica_set.uri())
    with load_of(server, tracks) as load:
        load.wait_for_answers(10)
        cut_from = time.monotonic()
        replica_set["a"].set_fault(Fault("cut"))
        time.sleep(3 * LOOKUP_TIMEOUT_MS / 1000)
        replica_set["a"].set_fault(None)
        healed = time.monotonic()
        time.sleep(2 * HEARTBEAT_MS / 1000 + scaled(SLACK) + 1)
    answers = load.snapshot()
    assert_answers_sound(answers)
    failed = [a for a in answers if a.status == 503]
    assert failed
    assert all(a.done - a.sent < LOOKUP_TIMEOUT_MS / 1000 + scaled(SLACK) for a in failed)
    late = [a for a in answers if a.sent >= healed + 2 * HEARTBEAT_MS / 1000 + scaled(SLACK)]
    assert late
    assert_all_served(late)
    assert all(a.sent >= cut_from - 0.1 for a in failed)


@pytest.mark.parametrize("code", replset.RETRYABLE_CODES,
                         ids=[replset.CODE_NAMES[c] for c in replset.RETRYABLE_CODES])
def test_a_retryable_error_is_retried_once_and_answered(musicd, tracks, replica_set, code):
    server = start_musicd(musicd, replica_set.uri())
    replica_set["a"].set_fault(Fault("error", code, first_of_each=True))
    with load_of(server, tracks, threads=1) as load:
        load.wait_for_answers(2 * TRACKS)
    assert_all_served(load.snapshot())
    assert all(replica_set["a"].ids[t.id] >= 2 for t in tracks)


@pytest.mark.parametrize("code", replset.RETRYABLE_CODES,
                         ids=[replset.CODE_NAMES[c] for c in replset.RETRYABLE_CODES])
def test_a_retryable_error_twice_is_503_with_retry_after_never_500(musicd, tracks, replica_set,
                                                                  code):
    server = start_musicd(musicd, replica_set.uri())
    replica_set["a"].set_fault(Fault("error", code))
    with load_of(server, tracks) as load:
        load.wait_for_answers(2 * TRACKS)
    answers = load.snapshot()
    assert_answers_sound(answers)
    assert summary(answers) == {503: len(answers)}


def test_a_non_retryable_error_is_500_and_logged(musicd, tracks, replica_set):
    server = start_musicd(musicd, replica_set.uri())
    replica_set["a"].set_fault(Fault("error", replset.BAD_VALUE))
    with load_of(server, tracks) as load:
        load.wait_for_answers(2 * TRACKS)
    answers = load.snapshot()
    assert summary(answers) == {500: len(answers)}
    # not retried: one find per answer
    assert sum(replica_set["a"].ids[t.id] for t in tracks) == len(answers)
    wait_until(lambda: "database error: BadValue" in server.stderr_text(), scaled(5),
               message="the database error in the log")


def test_a_retryable_error_on_a_gridfs_chunk_read_is_retried(musicd, db, tracks, replica_set):
    data = GRIDFS_DATA
    files_id, track = put_gridfs(db, data)
    server = start_musicd(musicd, replica_set.uri(), extra=["--gridfs-window", "2000"])
    replica_set["a"].set_fault(Fault("error", replset.INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
                                     first_of_each=True, collections={"fs.chunks"}))
    with load_of(server, tracks) as load:
        load.wait_for_answers(10)
        resp = get(server, f"/musicdb/{track}/lagging.mp3")
        assert resp.status_code == 200 and resp.content == data
    assert_all_served(load.snapshot())


def test_a_gridfs_chunk_read_failing_twice_is_503_before_the_head(musicd, db, tracks,
                                                                   replica_set):
    files_id, track = put_gridfs(db, GRIDFS_DATA)
    server = start_musicd(musicd, replica_set.uri())
    replica_set["a"].set_fault(Fault("error", replset.PRIMARY_STEPPED_DOWN,
                                     collections={"fs.chunks"}))
    with load_of(server, tracks) as load:
        load.wait_for_answers(10)
        resp = get(server, f"/musicdb/{track}/lagging.mp3")
        assert_error(resp, 503)
        assert resp.headers.get("Retry-After")
    assert_all_served(load.snapshot())


# -- no member reachable --------------------------------------------------------------------

def test_no_member_reachable_is_503_within_the_deadline_while_cached_tracks_play(
        musicd, tracks, replica_set):
    server = start_musicd(musicd, replica_set.uri(), caches=True)
    cached, uncached = tracks[:4], tracks[4:]
    for t in cached:
        assert get(server, t.url_path).status_code == 200
    with load_of(server, cached) as load:
        load.wait_for_answers(10)
        for m in replica_set.members:
            m.down()
        for t in uncached[:3]:
            t0 = time.monotonic()
            resp = get(server, t.url_path)
            assert_error(resp, 503)
            assert resp.headers.get("Retry-After")
            assert time.monotonic() - t0 < LOOKUP_TIMEOUT_MS / 1000 + scaled(SLACK)
        assert_error(get(server, "/healthz"), 503)
        load.wait_for_answers(10)
        for m in replica_set.members:
            m.up()

        def served():
            return get(server, uncached[-1].url_path).status_code == 200

        wait_until(served, scaled(20), interval=0.25, message="200 once the members are back")
        assert get(server, "/healthz").status_code == 200
    assert_all_served(load.snapshot())


# -- mongos, read preference tags, max staleness --------------------------------------------

def test_musicd_works_unchanged_through_a_mongos(musicd, tracks, mongos):
    server = start_musicd(musicd, mongos.uri())
    with load_of(server, tracks) as load:
        load.wait_for_answers(2 * TRACKS)
        assert_error(get(server, f"/musicdb/{ObjectId()}/x.mp3"), 404)
        assert get(server, "/healthz").status_code == 200
    assert_all_served(load.snapshot())
    assert mongos.members[0].finds_of("tracks") >= 2 * TRACKS


def test_read_preference_tags_in_the_uri_choose_the_member_read(musicd, tracks, tagged_set):
    server = start_musicd(musicd, tagged_set.uri(readPreference="secondary",
                                                 readPreferenceTags="dc:west"))
    with load_of(server, tracks) as load:
        load.wait_for_answers(3 * TRACKS)
    assert_all_served(load.snapshot())
    finds = tagged_set.finds("tracks")
    assert finds["c"] >= 3 * TRACKS and finds["a"] == 0 and finds["b"] == 0, finds


def test_max_staleness_in_the_uri_keeps_reads_off_a_stale_secondary(musicd, tracks,
                                                                    replica_set):
    replica_set["c"].lag_seconds = 600
    server = start_musicd(musicd, replica_set.uri(readPreference="secondary",
                                                  maxStalenessSeconds=90,
                                                  localThresholdMS=LATENCY_WINDOW_MS))
    with load_of(server, tracks) as load:
        # While the first scan has heard only from c, c is the freshest secondary known and
        # within maxStalenessSeconds (the SDAM rule without a primary): counted from here on.
        load.wait_for_answers(TRACKS)
        before = replica_set.finds("tracks")
        load.wait_for_answers(3 * TRACKS)
    assert_all_served(load.snapshot())
    finds = {name: count - before[name] for name, count in replica_set.finds("tracks").items()}
    assert finds["b"] >= 3 * TRACKS and finds["a"] == 0 and finds["c"] == 0, finds


def test_without_max_staleness_both_secondaries_are_read(musicd, tracks, replica_set):
    """The control of the test above: the stale member is read when nothing rules it out."""
    replica_set["c"].lag_seconds = 600
    server = start_musicd(musicd, replica_set.uri(readPreference="secondary",
                                                  localThresholdMS=LATENCY_WINDOW_MS))
    with load_of(server, tracks) as load:
        load.wait_for_answers(6 * TRACKS)
    assert_all_served(load.snapshot())
    finds = replica_set.finds("tracks")
    assert finds["b"] > 0 and finds["c"] > 0 and finds["a"] == 0, finds
