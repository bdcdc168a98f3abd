"""redis-py's search client (redis.commands.search) against Cellar: create
an index over hashes, add hashes, search with its Query builder, read
FT.INFO, drop the index. Run by tests/search_test.go with Debian's
/usr/bin/python3 (python3-redis); argument: the server's port. Prints
"ok ..." and exits 0, or fails with a traceback."""
import sys
import time

import redis
from redis.commands.search.field import NumericField, TagField, TextField
from redis.commands.search.indexDefinition import IndexDefinition, IndexType
from redis.commands.search.query import NumericFilter, Query

port = int(sys.argv[1])
r = redis.Redis(port=port, decode_responses=True)
r.flushall()

r.hset("movie:1", mapping={"title": "The Matrix", "plot": "a hacker learns the truth", "year": 1999, "genre": "scifi,action"})
r.hset("movie:2", mapping={"title": "Heat", "plot": "a detective hunts a thief", "year": 1995, "genre": "crime,action"})

ft = r.ft("movies")
ft.create_index(
    (TextField("title", weight=5.0, sortable=True), TextField("plot"), NumericField("year", sortable=True), TagField("genre")),
    definition=IndexDefinition(prefix=["movie:"], index_type=IndexType.HASH),
)

# Wait for the back-fill: FT.INFO's indexing falls to 0.
deadline = time.time() + 30
while True:
    info = ft.info()
    if str(info["indexing"]) == "0":
        break
    assert time.time() < deadline, info
    time.sleep(0.01)
assert info["index_name"] == "movies", info
assert int(info["num_docs"]) == 2, info

r.hset("movie:3", mapping={"title": "Thief", "plot": "a safecracker takes one last job", "year": 1981, "genre": "crime"})

res = ft.search(Query("thief").with_scores())
assert res.total == 2, res
assert {d.id for d in res.docs} == {"movie:2", "movie:3"}, res
assert all(d.score > 0 for d in res.docs), res

res = ft.search(Query("@genre:{action}").sort_by("year", asc=True))
assert [d.id for d in res.docs] == ["movie:2", "movie:1"], res
assert res.docs[0].title == "Heat", res.docs[0]

res = ft.search(Query("*").add_filter(NumericFilter("year", 1990, 2000)).return_fields("title").paging(0, 10))
assert res.total == 2 and {d.title for d in res.docs} == {"The Matrix", "Heat"}, res

res = ft.search(Query("@year:[$lo $hi]").dialect(2), query_params={"lo": 1980, "hi": 1990})
assert [d.id for d in res.docs] == ["movie:3"], res

res = ft.search(Query("hack*").no_content())
assert [d.id for d in res.docs] == ["movie:1"], res

r.delete("movie:1")
assert ft.search(Query("matrix")).total == 0

from redis.commands.search import reducers
from redis.commands.search.aggregation import AggregateRequest, Desc

req = AggregateRequest("*").group_by("@genre", reducers.count().alias("n"), reducers.max("@year").alias("latest")).sort_by(Desc("@latest"))
res = ft.aggregate(req)
assert res.rows == [["genre", "crime,action", "n", "1", "latest", "1995"], ["genre", "crime", "n", "1", "latest", "1981"]], res.rows

res = ft.search(Query("detective").highlight(fields=["plot"], tags=["[", "]"]).return_fields("plot"))
assert res.docs[0].plot == "a [detective] hunts a thief", res

req = AggregateRequest("*").load("@year").apply(decade="floor(@year / 10) * 10").filter("@decade < 1990").group_by("@decade", reducers.count().alias("n"))
res = ft.aggregate(req)
assert res.rows == [["decade", "1980", "n", "1"]], res.rows

# Suggestions, spell checking, synonyms, through redis-py's own calls.
from redis.commands.search.suggestion import Suggestion

assert ft.sugadd("ac", Suggestion("heat wave", 2.0), Suggestion("heathrow", 1.0)) == 2
sug = ft.sugget("ac", "hea", with_scores=True)
assert [s.string for s in sug] == ["heat wave", "heathrow"] and sug[0].score == 2.0, sug
assert ft.suglen("ac") == 2 and ft.sugdel("ac", "heathrow") == 1

corrections = ft.spellcheck("thiex")
assert [c["suggestion"] for c in corrections["thiex"]] == ["thief"], corrections

ft.synupdate("g1", False, "thief", "burglar")
assert ft.search(Query("burglar").no_content()).total == 2

ft.aliasadd("films")
assert r.ft("films").search(Query("heat")).total == 1
assert "movies" in r.execute_command("FT._LIST")
ft.dropindex(delete_documents=True)
assert r.exists("movie:2") == 0
print("ok redis-py search: create, back-fill, search, sort, filter, params, aggregate, suggestions, spellcheck, synonyms, alias, drop")
