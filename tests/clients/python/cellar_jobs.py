"""Jobs for rq_jobs.py (the worker imports them by name)."""


def add(a, b):
    return a + b


def fail():
    raise RuntimeError("job failed on purpose")
