// More of BullMQ against a server: flows (a parent job and its children),
// progress and job logs, pause and resume, a rate-limited worker,
// deduplication, removeOnComplete, retrying failed jobs, cleaning, the
// workers a queue sees (CLIENT SETNAME / CLIENT LIST), waiting jobs
// reshaped (priority, delay, promote, drain), a stalled job whose lock
// expired rescued by another worker, and worker metrics. Run by
// tests/bullmq_test.go against Cellar and against a real redis-server;
// argument: the server's port or unix socket path. Prints "ok ..." and
// exits 0, or exits 1 with the failure.
"use strict";
const assert = require("node:assert/strict");
const Redis = require("ioredis");
const { Queue, Worker, QueueEvents, FlowProducer } = require("bullmq");

const { TIMEOUT, connectionFor, notify, until } = require("./waiting");

const connection = connectionFor(process.argv[2]);

// watch records a queue's completed, failed and progress events.
function watch(events) {
  const seen = { completed: new Map(), failed: new Map(), progress: [] };
  events.on("completed", ({ jobId, returnvalue }) => { seen.completed.set(jobId, returnvalue); notify(); });
  events.on("failed", ({ jobId, failedReason }) => { seen.failed.set(jobId, failedReason); notify(); });
  events.on("progress", ({ jobId, data }) => { seen.progress.push([jobId, data]); notify(); });
  return seen;
}

function worker(name, processor, opts = {}) {
  const w = new Worker(name, processor, { connection, ...opts });
  w.on("error", (err) => { console.error("worker error:", err); process.exitCode = 1; });
  return w;
}

async function main() {
  const admin = new Redis({ ...connection, maxRetriesPerRequest: 0 });
  await admin.flushall();
  const closers = [];

  // 1. A flow: a parent runs after its three children, with their values.
  const flowEvents = new QueueEvents("parts", { connection });
  await flowEvents.waitUntilReady();
  const flowSeen = watch(flowEvents);
  const flow = new FlowProducer({ connection });
  const tree = await flow.add({
    name: "sum", queueName: "parts", data: {},
    children: [1, 2, 3].map((n) => ({ name: "square", queueName: "parts", data: { n } })),
  });
  assert.equal(await tree.job.getState(), "waiting-children");
  const parts = worker("parts", async (job) => {
    if (job.name === "square") return job.data.n * job.data.n;
    const values = await job.getChildrenValues();
    return Object.values(values).reduce((a, b) => a + b, 0);
  }, { concurrency: 3 });
  closers.push(parts, flowEvents, flow);
  await until(() => flowSeen.completed.has(tree.job.id), () => "the parent job");
  assert.equal(flowSeen.completed.get(tree.job.id), 14);
  for (const child of tree.children) {
    assert.equal(flowSeen.completed.get(child.job.id), child.job.data.n ** 2);
  }
  const partsQueue = new Queue("parts", { connection });
  closers.push(partsQueue);
  const parent = await partsQueue.getJob(tree.job.id);
  assert.equal(parent.returnvalue, 14);
  assert.deepEqual(await parent.getDependenciesCount(), { processed: 3, unprocessed: 0, failed: 0, ignored: 0 });

  // 2. Progress and logs; pause and resume; workers by name.
  const queue = new Queue("more", { connection });
  const events = new QueueEvents("more", { connection });
  await events.waitUntilReady();
  const seen = watch(events);
  closers.push(events);
  let failOnce = true;
  const w1 = worker("more", async (job) => {
    switch (job.name) {
      case "steps":
        for (const p of [25, 50, 100]) await job.updateProgress(p);
        await job.log("first line");
        await job.log("second line");
        return "stepped";
      case "fails":
        if (failOnce) throw new Error("fails until retried");
        return "retried";
      default:
        return job.name + ":" + JSON.stringify(job.data);
    }
  }, { name: "w-one" });
  closers.push(w1);
  await w1.waitUntilReady();
  await until(() => w1.isRunning(), () => "the worker to run");

  const steps = await queue.add("steps", {});
  await until(() => seen.completed.has(steps.id), () => "the steps job");
  assert.equal(seen.completed.get(steps.id), "stepped");
  assert.deepEqual(seen.progress.filter(([id]) => id === steps.id).map(([, p]) => p), [25, 50, 100]);
  assert.deepEqual(await queue.getJobLogs(steps.id), { logs: ["first line", "second line"], count: 2 });

  const workers = await queue.getWorkers();
  assert.equal(workers.length, 1);
  assert.equal(workers[0].rawname, "bull:" + Buffer.from("more").toString("base64") + ":w:w-one");

  await queue.pause();
  assert.equal(await queue.isPaused(), true);
  const held = await queue.add("held", { n: 1 });
  assert.equal(await held.getState(), "waiting");
  assert.equal((await queue.getJobCounts("paused")).paused, 1);
  await queue.resume();
  assert.equal(await queue.isPaused(), false);
  await until(() => seen.completed.has(held.id), () => "the held job after resume");
  assert.equal(seen.completed.get(held.id), 'held:{"n":1}');

  // 3. Deduplication: a second add with the same id is the first job.
  const d1 = await queue.add("dedup", { n: 1 }, { deduplication: { id: "same" }, delay: 3600 * 1000 });
  const d2 = await queue.add("dedup", { n: 2 }, { deduplication: { id: "same" } });
  assert.equal(d2.id, d1.id);
  assert.equal(await queue.getDeduplicationJobId("same"), d1.id);
  assert.equal((await queue.getJobCounts("delayed")).delayed, 1);
  await d1.remove();

  // 4. removeOnComplete: the job is gone once done; a failed job retried
  // by retryJobs completes.
  const gone = await queue.add("gone", {}, { removeOnComplete: true });
  const fails = await queue.add("fails", {});
  await until(() => seen.completed.has(gone.id) && seen.failed.has(fails.id), () => "the gone and fails jobs");
  assert.equal(await queue.getJob(gone.id), undefined);
  assert.equal(seen.failed.get(fails.id), "fails until retried");
  failOnce = false;
  await queue.retryJobs({ state: "failed" });
  await until(() => seen.completed.has(fails.id), () => "the retried job");
  assert.equal(seen.completed.get(fails.id), "retried");

  // 5. A rate-limited worker (2 jobs per 100 ms) still runs every job.
  await w1.close();
  const limited = worker("more", async (job) => "limited " + job.data.n, { limiter: { max: 2, duration: 100 }, concurrency: 4 });
  closers.push(limited);
  const batch = await queue.addBulk(Array.from({ length: 10 }, (_, n) => ({ name: "limited", data: { n } })));
  await until(() => batch.every((j) => seen.completed.has(j.id)), () => "the rate-limited jobs");
  batch.forEach((j, n) => assert.equal(seen.completed.get(j.id), "limited " + n));

  // 6. Counts, then clean removes the completed jobs.
  await limited.close();
  const completedCount = 1 + 1 + 1 + batch.length; // steps, held, fails, batch
  assert.deepEqual(await queue.getJobCounts("waiting", "active", "completed", "failed", "delayed", "prioritized", "paused"),
    { waiting: 0, active: 0, completed: completedCount, failed: 0, delayed: 0, prioritized: 0, paused: 0 });
  const cleaned = await queue.clean(0, 1000, "completed");
  assert.equal(cleaned.length, completedCount);
  assert.equal((await queue.getJobCounts("completed")).completed, 0);

  // 7. Waiting jobs reshaped while no worker runs: priorities changed and
  // counted per priority, a delay changed, delayed jobs promoted, the
  // waiting jobs listed in both orders (the promoted ones by their due
  // time), then drained.
  const a = await queue.add("a", {}, { priority: 3 });
  const b = await queue.add("b", {}, { priority: 3 });
  const c = await queue.add("c", {}, { delay: 3600 * 1000 });
  const d = await queue.add("d", {}, { delay: 3600 * 1000 });
  const e = await queue.add("e", {});
  const f = await queue.add("f", {});
  await b.changePriority({ priority: 7 });
  assert.deepEqual(await queue.getCountsPerPriority([3, 7, 9]), { 3: 1, 7: 1, 9: 0 });
  await c.changeDelay(7200 * 1000);
  assert.equal((await queue.getJob(c.id)).delay, 7200 * 1000);
  await queue.promoteJobs();
  assert.deepEqual(await queue.getJobCounts("waiting", "delayed", "prioritized"), { waiting: 4, paused: 0, delayed: 0, prioritized: 2 });
  assert.deepEqual((await queue.getJobs(["waiting"], 0, -1, true)).map((j) => j.name), ["e", "f", "d", "c"]);
  assert.deepEqual((await queue.getJobs(["waiting"], 0, -1, false)).map((j) => j.name), ["c", "d", "f", "e"]);
  assert.deepEqual((await queue.getJobs(["prioritized"], 0, -1, true)).map((j) => j.name), ["a", "b"]);
  await queue.drain();
  assert.deepEqual(await queue.getJobCounts("waiting", "delayed", "prioritized"), { waiting: 0, paused: 0, delayed: 0, prioritized: 0 });
  for (const j of [a, b, c, d, e, f]) assert.equal(await queue.getJob(j.id), undefined);

  // 8. A stalled job: its worker stops without finishing it and its lock
  // expires; another worker's stalled check moves it back to wait and runs
  // it. Worker metrics count what completed.
  // A queue of its own: a worker's first stalled check holds off the
  // others for its stalledInterval, and the workers above used the
  // default (30 s).
  const stallQueue = new Queue("stall", { connection });
  const stallEvents = new QueueEvents("stall", { connection });
  await stallEvents.waitUntilReady();
  const stallSeen = watch(stallEvents);
  const stalledSeen = [];
  stallEvents.on("stalled", ({ jobId }) => { stalledSeen.push(jobId); notify(); });
  closers.push(stallQueue, stallEvents);
  let stuckActive = false;
  const stuck = worker("stall", () => {
    stuckActive = true;
    notify();
    return new Promise(() => {}); // never settles
  }, { lockDuration: 500, stalledInterval: 200 });
  const victim = await stallQueue.add("victim", {});
  await until(() => stuckActive, () => "the job to become active");
  await stuck.close(true);
  const rescuer = worker("stall", async (job) => "rescued " + job.name,
    { lockDuration: 500, stalledInterval: 200, metrics: { maxDataPoints: 10 } });
  closers.push(rescuer);
  await until(() => stallSeen.completed.has(victim.id), () => "the stalled job to be rescued");
  assert.equal(stallSeen.completed.get(victim.id), "rescued victim");
  assert.deepEqual(stalledSeen, [victim.id]);
  const rescued = await stallQueue.getJob(victim.id);
  assert.equal(rescued.stalledCounter, 1);
  const metrics = await stallQueue.getMetrics("completed");
  assert.equal(metrics.meta.count, 1);

  for (const c of closers) await c.close();
  await queue.close();
  admin.disconnect();
  console.log(`ok bullmq more: a flow of 3 children and a parent, progress and logs, pause/resume, workers by name, ` +
    `deduplication, removeOnComplete, retryJobs, ${batch.length} rate-limited jobs, clean, priorities and delays changed, ` +
    `promoteJobs, drain, a stalled job rescued, metrics`);
}

main().catch((e) => { console.error(e); process.exit(1); });
