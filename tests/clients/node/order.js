// ioredis against Cellar: the order applications see small hashes and
// integer sets in, as from Redis (listpack: insertion order; intset:
// sorted). ioredis builds HGETALL's object in reply order, so a snapshot
// or JSON output of it depends on that order. Run by
// tests/transaction_clients_test.go; argument: the server's port. Prints
// "ok ..." and exits 0, or exits 1 with the failure.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");

async function main() {
  const r = new Redis({ port: Number(process.argv[2]), maxRetriesPerRequest: 0 });
  try {
    await r.del("user", "ids");
    await r.hset("user", "name", "ada", "email", "ada@example.com", "age", "36");
    assert.deepEqual(Object.keys(await r.hgetall("user")), ["name", "email", "age"]);
    await r.hset("user", "name", "Ada"); // an update keeps its place
    await r.hdel("user", "email");
    await r.hset("user", "email", "ada@example.org"); // re-added: last
    assert.equal(JSON.stringify(await r.hgetall("user")), '{"name":"Ada","age":"36","email":"ada@example.org"}');
    assert.deepEqual(await r.hkeys("user"), ["name", "age", "email"]);
    assert.deepEqual(await r.hvals("user"), ["Ada", "36", "ada@example.org"]);
    await r.sadd("ids", 30, 4, -7, 100, 5);
    assert.deepEqual(await r.smembers("ids"), ["-7", "4", "5", "30", "100"]);
    console.log("ok hgetall in insertion order, smembers of integers sorted");
  } finally {
    r.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
