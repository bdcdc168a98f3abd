"""Python RQ against Cellar: jobs enqueued, run by a burst worker, results
checked. Run by tests/transaction_clients_test.go with Debian's
/usr/bin/python3 (python3-rq); argument: the server's port."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis
from rq import Queue, Worker
from rq.job import JobStatus

import cellar_jobs

port = int(sys.argv[1])
r = redis.Redis(port=port)
r.flushall()
# RQ keeps results in a Redis stream (XADD) on a 5.0-or-later server, as
# Cellar says it is; its worker also listens on Pub/Sub for commands.
q = Queue("cellar", connection=r)
jobs = [q.enqueue(cellar_jobs.add, i, 1000) for i in range(20)]
failing = q.enqueue(cellar_jobs.fail)
assert q.count == 21, q.count

w = Worker([q], connection=r)
w.work(burst=True)

for i, j in enumerate(jobs):
    j.refresh()
    assert j.get_status() == JobStatus.FINISHED, (i, j.get_status())
    assert j.result == i + 1000, (i, j.result)
failing.refresh()
assert failing.get_status() == JobStatus.FAILED, failing.get_status()
assert "job failed on purpose" in (failing.exc_info or ""), failing.exc_info
assert q.count == 0, q.count
assert q.finished_job_registry.count == 20, q.finished_job_registry.count
assert q.failed_job_registry.count == 1, q.failed_job_registry.count
print("ok rq: 20 jobs finished, 1 failed as expected")
