// ioredis against Cellar: subscribe and psubscribe on one connection,
// messages from another, unsubscribe, and a subscriber that keeps using
// the connection (ioredis queues its commands). Run by
// tests/transaction_clients_test.go; argument: the server's port. Prints
// "ok ..." and exits 0, or exits 1 with the failure.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");

const port = Number(process.argv[2]);
const opts = { port, maxRetriesPerRequest: 0 };

// until resolves once cond() holds, checking after every message.
function collector(sub) {
  const got = [];
  let waiting = null;
  const check = () => {
    if (waiting && waiting.cond()) {
      const w = waiting;
      waiting = null;
      clearTimeout(w.timer);
      w.resolve();
    }
  };
  sub.on("message", (channel, message) => { got.push(["message", channel, message]); check(); });
  sub.on("pmessage", (pattern, channel, message) => { got.push(["pmessage", pattern, channel, message]); check(); });
  const until = (cond, what) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("timed out waiting for " + what + ": " + JSON.stringify(got))), 20000);
    waiting = { cond, resolve, timer };
    check();
  });
  return { got, until };
}

async function main() {
  const pub = new Redis(opts);
  const sub = new Redis(opts);
  const { got, until } = collector(sub);

  assert.equal(await sub.subscribe("news", "sport"), 2);
  assert.equal(await sub.psubscribe("weather.*"), 3);
  assert.equal(await pub.publish("news", "hello"), 1);
  assert.equal(await pub.publish("weather.oslo", "snow"), 1);
  assert.equal(await pub.publish("nobody", "x"), 0);
  await until(() => got.length >= 2, "two messages");
  assert.deepEqual(got, [["message", "news", "hello"], ["pmessage", "weather.*", "weather.oslo", "snow"]]);

  // Many messages arrive in order.
  for (let i = 0; i < 500; i++) await pub.publish("sport", String(i));
  await until(() => got.length >= 502, "500 messages");
  assert.deepEqual(got.slice(2).map((m) => m[2]), Array.from({ length: 500 }, (_, i) => String(i)));

  assert.equal(await sub.unsubscribe("news"), 2);
  assert.equal(await pub.publish("news", "unheard"), 0);
  assert.deepEqual(await pub.pubsub("NUMSUB", "news", "sport"), ["news", 0, "sport", 1]);
  assert.equal(await pub.pubsub("NUMPAT"), 1);

  assert.equal(await sub.unsubscribe("sport"), 1);
  assert.equal(await sub.punsubscribe("weather.*"), 0);
  assert.equal(await sub.ping(), "PONG"); // out of subscribed mode
  pub.disconnect();
  sub.disconnect();
  console.log("ok ioredis pubsub: subscribe, psubscribe, 502 messages in order, unsubscribe");
}

main().catch((e) => { console.error(e); process.exit(1); });
