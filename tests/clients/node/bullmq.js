// BullMQ against a server: its own Queue, Worker and QueueEvents, whose
// logic is Lua scripts and whose events are a stream. Plain jobs (one by
// one and in bulk), delayed jobs, prioritised jobs in priority order,
// repeatable jobs, a job that fails once and succeeds on its retry, a job
// that fails for good; every result, every `completed` event and the
// queue's counts checked, then the queue obliterated. Run by
// tests/bullmq_test.go against Cellar and against a real redis-server;
// argument: the server's port or unix socket path. Prints "ok ..." and
// exits 0, or exits 1 with the failure.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");
const { Queue, Worker, QueueEvents } = require("bullmq");

const { TIMEOUT, connectionFor, notify, until } = require("./waiting");

const connection = connectionFor(process.argv[2]);
const QUEUE = "cellar";

async function main() {
  const admin = new Redis({ ...connection, maxRetriesPerRequest: 0 });
  await admin.flushall();

  const queue = new Queue(QUEUE, { connection });
  const events = new QueueEvents(QUEUE, { connection });
  await events.waitUntilReady();

  // What QueueEvents saw, by job id; what the worker ran, in order.
  const completedEvents = new Map();
  events.on("completed", ({ jobId, returnvalue }) => {
    assert.ok(!completedEvents.has(jobId), "two completed events for job " + jobId);
    completedEvents.set(jobId, returnvalue);
    notify();
  });
  const failedEvents = new Map();
  events.on("failed", ({ jobId, failedReason }) => { failedEvents.set(jobId, failedReason); notify(); });

  const ran = []; // [name, id, attempt] per call of the processor
  const processor = async (job) => {
    ran.push([job.name, job.id, job.attemptsMade]);
    notify();
    switch (job.name) {
      case "double":
      case "prio":
      case "delayed":
        return { n: job.data.n * 2 };
      case "tick":
        return "tick " + job.data.n;
      case "flaky":
        if (job.attemptsMade === 0) throw new Error("flaky: first attempt fails");
        return "second attempt";
      case "doomed":
        throw new Error("doomed: always fails");
      default:
        throw new Error("unexpected job " + job.name);
    }
  };
  const workerFailures = []; // [id, message] per failed attempt
  const newWorker = (concurrency) => {
    const w = new Worker(QUEUE, processor, { connection, concurrency, autorun: false });
    w.on("failed", (job, err) => { workerFailures.push([job.id, err.message]); notify(); });
    w.on("error", (err) => { console.error("worker error:", err); process.exitCode = 1; });
    return w;
  };
  const completedIds = () => [...completedEvents.keys()];
  const counts = () => queue.getJobCounts("waiting", "active", "completed", "failed", "delayed", "prioritized", "paused");
  const zeroCounts = { waiting: 0, active: 0, completed: 0, failed: 0, delayed: 0, prioritized: 0, paused: 0 };

  // 1. Prioritised jobs added while no worker runs wait in the prioritized
  // set; one worker (concurrency 1) runs them lowest number first, jobs
  // of equal priority in the order they were added.
  const prios = [5, 1, 3, 1, 2, 5, 4];
  const prioJobs = [];
  for (const [i, p] of prios.entries()) {
    prioJobs.push(await queue.add("prio", { n: i }, { priority: p }));
  }
  assert.deepEqual(await counts(), { ...zeroCounts, prioritized: prios.length });
  let worker = newWorker(1);
  worker.run();
  await until(() => prioJobs.every((j) => completedEvents.has(j.id)), () => "prioritised jobs: " + JSON.stringify(ran));
  const wantOrder = prios.map((p, i) => [p, i]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => prioJobs[i].id);
  assert.deepEqual(ran.map(([, id]) => id), wantOrder);
  for (const [i, j] of prioJobs.entries()) {
    assert.deepEqual(completedEvents.get(j.id), { n: i * 2 });
    const done = await queue.getJob(j.id);
    assert.deepEqual(done.returnvalue, { n: i * 2 });
    assert.equal(await done.getState(), "completed");
  }
  await worker.close();

  // 2. Plain jobs, one by one and in bulk, with four concurrent workers
  // of concurrency 4 each.
  const workers = [newWorker(4), newWorker(4), newWorker(4), newWorker(4)];
  workers.forEach((w) => w.run());
  const plain = [];
  for (let i = 0; i < 20; i++) plain.push(await queue.add("double", { n: i }));
  plain.push(...(await queue.addBulk(Array.from({ length: 80 }, (_, i) => ({ name: "double", data: { n: 20 + i } })))));
  await until(() => plain.every((j) => completedEvents.has(j.id)), () => `plain jobs: ${completedEvents.size} completed`);
  for (const [i, j] of plain.entries()) {
    assert.deepEqual(completedEvents.get(j.id), { n: i * 2 });
    assert.deepEqual((await queue.getJob(j.id)).returnvalue, { n: i * 2 });
  }
  assert.equal(new Set(plain.map((j) => j.id)).size, plain.length);

  // 3. Delayed jobs: one far in the future stays delayed until promoted;
  // one a little ahead runs by itself, not before its time.
  const far = await queue.add("delayed", { n: 1000 }, { delay: 3600 * 1000 });
  const near = await queue.add("delayed", { n: 1001 }, { delay: 300 });
  assert.equal(await far.getState(), "delayed");
  await until(() => completedEvents.has(near.id), () => "the near delayed job");
  const nearDone = await queue.getJob(near.id);
  assert.deepEqual(nearDone.returnvalue, { n: 2002 });
  assert.ok(nearDone.processedOn >= nearDone.timestamp + 300, `ran at ${nearDone.processedOn}, added at ${nearDone.timestamp} with delay 300`);
  assert.equal(await far.getState(), "delayed");
  assert.equal((await counts()).delayed, 1);
  await far.promote();
  await until(() => completedEvents.has(far.id), () => "the promoted delayed job");
  assert.deepEqual(completedEvents.get(far.id), { n: 2000 });

  // 4. A job that fails once and succeeds on its retry; a job that fails
  // on every attempt ends failed with its reason.
  const flaky = await queue.add("flaky", {}, { attempts: 2 });
  const doomed = await queue.add("doomed", {}, { attempts: 2, backoff: { type: "fixed", delay: 10 } });
  await until(() => completedEvents.has(flaky.id) && failedEvents.has(doomed.id), () => "the flaky and doomed jobs: " + JSON.stringify(workerFailures));
  assert.equal(completedEvents.get(flaky.id), "second attempt");
  const flakyDone = await queue.getJob(flaky.id);
  assert.equal(flakyDone.attemptsMade, 2);
  assert.equal(flakyDone.returnvalue, "second attempt");
  assert.equal(failedEvents.get(doomed.id), "doomed: always fails");
  const doomedDone = await queue.getJob(doomed.id);
  assert.equal(await doomedDone.getState(), "failed");
  assert.equal(doomedDone.attemptsMade, 2);
  assert.equal(doomedDone.failedReason, "doomed: always fails");
  assert.deepEqual(workerFailures.sort(), [
    [doomed.id, "doomed: always fails"],
    [doomed.id, "doomed: always fails"],
    [flaky.id, "flaky: first attempt fails"],
  ].sort());
  assert.deepEqual(ran.filter(([name]) => name === "flaky").map(([, , attempt]) => attempt), [0, 1]);

  // 5. Repeatable jobs: a repeat option with a limit (three runs), and a
  // job scheduler (three runs, then removed).
  const ticks = () => ran.filter(([name]) => name === "tick");
  await queue.add("tick", { n: 1 }, { repeat: { every: 200, limit: 3 } });
  await until(() => ticks().length >= 3, () => "three repeated jobs: " + JSON.stringify(ticks()));
  const repeatables = await queue.getRepeatableJobs();
  assert.equal(repeatables.length, 1);
  assert.equal(repeatables[0].every, "200");
  await queue.removeRepeatableByKey(repeatables[0].key);
  assert.deepEqual(await queue.getRepeatableJobs(), []);
  await queue.upsertJobScheduler("ticker", { every: 200, limit: 3 }, { name: "tick", data: { n: 2 } });
  assert.equal((await queue.getJobSchedulers()).length, 1);
  await until(() => ticks().filter(([, id]) => id.startsWith("repeat:ticker:")).length >= 3,
    () => "three scheduled jobs: " + JSON.stringify(ticks()));
  assert.equal(await queue.removeJobScheduler("ticker"), true);
  assert.deepEqual(await queue.getJobSchedulers(), []);
  const tickIds = ticks().map(([, id]) => id);
  await until(() => tickIds.every((id) => completedEvents.has(id)), () => "completed events of the repeated jobs");
  for (const id of tickIds) {
    const want = id.startsWith("repeat:ticker:") ? "tick 2" : "tick 1";
    assert.equal(completedEvents.get(id), want);
    assert.equal((await queue.getJob(id)).returnvalue, want);
  }

  // Everything is settled: the counts add up, every completed job had
  // exactly one completed event, and nothing else ran.
  await Promise.all(workers.map((w) => w.close()));
  // A repeat job already scheduled when its repeat was removed may still
  // wait as delayed; drop such leftovers before counting.
  for (const j of await queue.getJobs(["delayed"])) {
    assert.equal(j.name, "tick");
    await j.remove();
  }
  const completedJobs = await queue.getJobs(["completed"], 0, -1);
  const wantCompleted = prioJobs.length + plain.length + 2 + 1 + tickIds.length;
  assert.deepEqual(await counts(), { ...zeroCounts, completed: wantCompleted, failed: 1 });
  assert.equal(completedJobs.length, wantCompleted);
  assert.deepEqual(completedJobs.map((j) => j.id).sort(), completedIds().sort());
  assert.equal(ran.filter(([name]) => name !== "doomed" && name !== "flaky").length, wantCompleted - 1);

  // The queue's keys go with obliterate.
  await events.close();
  await queue.obliterate({ force: true });
  assert.deepEqual(await admin.keys(`bull:${QUEUE}:*`), []);
  await queue.close();
  admin.disconnect();
  console.log(`ok bullmq: ${wantCompleted} jobs completed (prioritised in order, plain, delayed, retried, ` +
    `${tickIds.length} repeated), 1 failed, ${completedEvents.size} completed events, queue obliterated`);
}

main().catch((e) => { console.error(e); process.exit(1); });
