"""The embedded default database answers musicd's queries from its indexes (issue 16).

FerretDB v1.24.2 on SQLite, as scripts/setup/ferretdb builds it (var/bin/ferretdb, or
MUSICD_FERRETDB), with scripts/setup/ferretdb-patches applied. Its explain shows SQLite's own
plan: `SCAN <table>` reads every document, `SEARCH <table> USING INDEX <index>` reads only the
matching ones. Unpatched,
musicd's findById and GridFS's chunk query are both SCANs, and their cost grows with the
collection. Each test runs a private FerretDB (not the session's database, which may be a mongod
or the user's server) and asks it exactly what musicd asks (server/lookup.c, server/gridfs_store.c).
The pushdown must never change what a find returns: documents the index range does not hold
(arrays containing the value) still match.
"""

import io

import gridfs
import pymongo
import pytest
from bson import ObjectId

import dbservers

TRACKS = 500       # enough rows that SQLite would rather use an index than scan
GRIDFS_FILES = 20
CHUNK = 1000


@pytest.fixture
def ferretdb(tmp_path):
    with dbservers.FerretDB(tmp_path / "ferretdb") as server:
        client = pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=10000)
        try:
            yield client["indexes"]
        finally:
            client.close()


def sqlite_plan(database, command):
    """The lines of SQLite's query plan for a find command, as FerretDB's explain gives them."""
    answer = database.command("explain", command)
    return answer["queryPlanner"]["Plan"]


def assert_searches_index(plan, index_suffix):
    details = [line.partition("detail=")[2] for line in plan]
    assert not any(d.startswith("SCAN") for d in details), plan
    assert any(d.startswith("SEARCH") and "USING INDEX " in d
               and d.split(" USING INDEX ")[1].split(" ")[0].endswith(index_suffix)
               for d in details), plan


def test_find_by_id_as_musicd_asks_it_searches_the_id_index(ferretdb):
    ids = ferretdb.tracks.insert_many(
        [{"path": f"artist/album/{i:04}.mp3", "etag": f"e{i}"} for i in range(TRACKS)]).inserted_ids
    plan = sqlite_plan(ferretdb, {"find": "tracks", "filter": {"_id": ids[TRACKS // 2]},
                                  "projection": {"path": 1, "etag": 1}, "limit": 1,
                                  "singleBatch": True})
    assert_searches_index(plan, "__id_")


def test_find_by_id_answers_the_document_it_searches_for(ferretdb):
    ids = ferretdb.tracks.insert_many(
        [{"path": f"{i:04}.mp3"} for i in range(TRACKS)]).inserted_ids
    assert ferretdb.tracks.find_one({"_id": ids[123]}, {"path": 1}) == \
        {"_id": ids[123], "path": "0123.mp3"}
    assert ferretdb.tracks.find_one({"_id": ObjectId()}) is None


def test_find_by_string_id_searches_the_id_index(ferretdb):
    ferretdb.tracks.insert_many([{"_id": f"track-{i}", "path": f"{i}.mp3"} for i in range(TRACKS)])
    assert ferretdb.tracks.find_one({"_id": "track-7"}) == {"_id": "track-7", "path": "7.mp3"}
    assert_searches_index(sqlite_plan(ferretdb, {"find": "tracks", "filter": {"_id": "track-7"}}),
                          "__id_")


def test_gridfs_chunk_range_as_musicd_asks_it_searches_the_files_id_n_index(ferretdb):
    bucket = gridfs.GridFSBucket(ferretdb, chunk_size_bytes=CHUNK)
    files = [bucket.upload_from_stream(f"f{i}.mp3", io.BytesIO(bytes([i]) * (5 * CHUNK)))
             for i in range(GRIDFS_FILES)]
    command = {"find": "fs.chunks",
               "filter": {"files_id": files[7], "n": {"$gte": 1, "$lte": 3}},
               "sort": {"n": 1}, "projection": {"n": 1, "data": 1}}
    assert_searches_index(sqlite_plan(ferretdb, command), "_files_id_1_n_1")
    chunks = list(ferretdb["fs.chunks"].find(command["filter"], command["projection"]).sort("n", 1))
    assert [(c["n"], bytes(c["data"])) for c in chunks] == [(n, bytes([7]) * CHUNK)
                                                          for n in (1, 2, 3)]


def test_objectid_equality_still_matches_an_array_holding_the_value(ferretdb):
    wanted, other = ObjectId(), ObjectId()
    ferretdb.things.create_index("a")
    ferretdb.things.insert_many([{"k": "value", "a": wanted}, {"k": "array", "a": [other, wanted]},
                                 {"k": "hex string", "a": str(wanted)}, {"k": "other", "a": other},
                                 {"k": "other array", "a": [other]}, {"k": "missing"}])
    found = sorted(d["k"] for d in ferretdb.things.find({"a": wanted}))
    assert found == ["array", "value"]


def test_objectid_equality_without_an_index_still_finds_its_documents(ferretdb):
    wanted = ObjectId()
    ferretdb.things.insert_many([{"k": i, "b": wanted if i % 10 == 0 else ObjectId()}
                                 for i in range(100)])
    assert sorted(d["k"] for d in ferretdb.things.find({"b": wanted})) == list(range(0, 100, 10))


def test_field_names_that_need_quoting_are_matched_by_the_handler(ferretdb):
    wanted = ObjectId()
    ferretdb.things.insert_many([{"k": 1, "a-b c": wanted, "c": {"d": wanted}},
                                 {"k": 2, "a-b c": ObjectId(), "c": {"d": ObjectId()}}])
    assert [d["k"] for d in ferretdb.things.find({"a-b c": wanted})] == [1]
    assert [d["k"] for d in ferretdb.things.find({"c.d": wanted})] == [1]


def test_number_bounds_match_every_numeric_type_and_arrays_holding_one(ferretdb):
    ferretdb.things.insert_many([{"k": "int", "n": 2}, {"k": "long", "n": 2 ** 40},
                                 {"k": "double", "n": 2.5}, {"k": "low", "n": 0},
                                 {"k": "array", "n": [0, 3]}, {"k": "string", "n": "2"},
                                 {"k": "missing"}])
    found = sorted(d["k"] for d in ferretdb.things.find({"n": {"$gte": 1, "$lte": 2 ** 41}}))
    assert found == ["array", "double", "int", "long"]
    found = sorted(d["k"] for d in ferretdb.things.find({"n": {"$gt": 2, "$lt": 3.0}}))
    assert found == ["array", "double"]
