// What the Node.js client scripts share: the server they were given and a
// condition wait. until(cond, what) resolves once cond() holds; it checks
// whenever the script calls notify() (after every event it records) and
// fails after TIMEOUT ms naming what it waited for.
"use strict";

const TIMEOUT = 60000;

// connectionFor is ioredis's connection options for a script's argument:
// a port number, or a unix socket's path.
function connectionFor(where) {
  return /^\d+$/.test(where) ? { host: "127.0.0.1", port: Number(where) } : { path: where };
}

const waiters = new Set();
function notify() {
  for (const w of waiters) {
    if (w.cond()) {
      waiters.delete(w);
      clearTimeout(w.timer);
      w.resolve();
    }
  }
}
function until(cond, what) {
  return new Promise((resolve, reject) => {
    if (cond()) return resolve();
    const w = { cond, resolve };
    w.timer = setTimeout(() => {
      waiters.delete(w);
      reject(new Error("timed out waiting for " + what()));
    }, TIMEOUT);
    waiters.add(w);
  });
}

module.exports = { TIMEOUT, connectionFor, notify, until };
