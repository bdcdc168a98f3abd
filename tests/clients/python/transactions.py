"""redis-py against Cellar: pipeline(transaction=True) and the WATCH retry
recipe under contention. Run by tests/transaction_clients_test.go with
Debian's /usr/bin/python3 (python3-redis); argument: the server's port.
Prints "ok ..." and exits 0, or fails with a traceback."""
import sys
import threading

import redis

port = int(sys.argv[1])
r = redis.Redis(port=port)
r.flushall()

# A transaction pipeline: MULTI ... EXEC, replies in order; an error raised
# while running is raised by execute() unless raise_on_error is False.
p = r.pipeline(transaction=True)
p.set("a", "1").incr("a").lpush("a", "x").get("a")
res = p.execute(raise_on_error=False)
assert res[0] is True and res[1] == 2 and res[3] == b"2", res
assert isinstance(res[2], redis.ResponseError) and str(res[2]).startswith("WRONGTYPE"), res

# An error while queuing aborts the whole transaction.
p = r.pipeline(transaction=True)
p.set("b", "1").execute_command("NO-SUCH-COMMAND").set("c", "1")
try:
    p.execute()
    raise AssertionError("EXEC should have been aborted")
except redis.ResponseError as e:
    assert "EXECABORT" in str(e) or "unknown command" in str(e), e
assert r.exists("b", "c") == 0

# A changed watched key makes EXEC fail: WatchError.
with r.pipeline() as p:
    p.watch("w")
    r.set("w", "changed")  # another connection
    p.multi()
    p.set("w", "mine")
    try:
        p.execute()
        raise AssertionError("EXEC should have failed")
    except redis.WatchError:
        pass
assert r.get("w") == b"changed"

# The recipe: N threads add one to a counter, retrying on WatchError.
THREADS, EACH = 8, 25
ok = [0] * THREADS
lost = [0] * THREADS


def worker(i):
    c = redis.Redis(port=port)
    while ok[i] < EACH:
        with c.pipeline() as p:
            try:
                p.watch("counter")
                n = int(p.get("counter") or 0)
                p.multi()
                p.set("counter", n + 1)
                p.execute()
                ok[i] += 1
            except redis.WatchError:
                lost[i] += 1


threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
final = int(r.get("counter"))
assert final == sum(ok) == THREADS * EACH, (final, ok)
print("ok transactions: %d successful EXECs, %d retries" % (sum(ok), sum(lost)))
