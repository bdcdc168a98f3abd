// ioredis against Cellar: multi() in its forms, an error while queuing,
// and the WATCH retry loop under contention. Run by
// tests/transaction_clients_test.go; argument: the server's port. Prints
// "ok ..." and exits 0, or exits 1 with the failure.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");

const port = Number(process.argv[2]);
const opts = { port, maxRetriesPerRequest: 0, enableOfflineQueue: true };

async function main() {
  const r = new Redis(opts);
  await r.flushall();

  // multi() chained: [err, result] per command; a run-time error is that
  // command's alone.
  let res = await r.multi().set("a", "1").incr("a").lpush("a", "x").get("a").exec();
  assert.deepEqual(res[0], [null, "OK"]);
  assert.deepEqual(res[1], [null, 2]);
  assert.match(String(res[2][0]), /^ReplyError: WRONGTYPE/);
  assert.deepEqual(res[3], [null, "2"]);

  // multi() with an array of commands.
  res = await r.multi([["set", "b", "1"], ["incrby", "b", "41"]]).exec();
  assert.deepEqual(res, [[null, "OK"], [null, 42]]);

  // An error while queuing: EXEC is aborted, nothing runs.
  await assert.rejects(
    r.multi().set("c", "1").call("NO-SUCH-COMMAND").set("d", "1").exec(),
    /EXECABORT Transaction discarded because of previous errors/,
  );
  assert.equal(await r.exists("c", "d"), 0);

  // pipeline-less MULTI: the commands answer QUEUED one by one.
  await r.multi({ pipeline: false });
  assert.equal(await r.set("e", "1"), "QUEUED");
  assert.deepEqual(await r.exec(), [[null, "OK"]]);

  // WATCH: a change by another connection makes exec() give null.
  const w = new Redis(opts);
  await w.watch("w");
  await r.set("w", "changed");
  assert.equal(await w.multi().set("w", "mine").exec(), null);
  assert.equal(await r.get("w"), "changed");

  // N connections add one to a counter, retrying when EXEC fails.
  const CLIENTS = 8, EACH = 25;
  let ok = 0, retries = 0;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    const c = new Redis(opts);
    for (let done = 0; done < EACH;) {
      await c.watch("counter");
      const n = Number((await c.get("counter")) ?? 0);
      const out = await c.multi().set("counter", n + 1).exec();
      if (out === null) {
        retries++;
      } else {
        assert.deepEqual(out, [[null, "OK"]]);
        done++;
        ok++;
      }
    }
    c.disconnect();
  }));
  assert.equal(Number(await r.get("counter")), ok);
  assert.equal(ok, CLIENTS * EACH);
  console.log(`ok ioredis: ${ok} successful EXECs, ${retries} retries`);
  w.disconnect();
  r.disconnect();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
