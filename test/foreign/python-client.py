"""Drives clients/python/delayq_client.py for test/integration/python-client.test.ts.

    python-client.py produce <port> <queue> <scripts dir> <jobs>
    python-client.py cancel  <port> <queue> <scripts dir> <id>
    python-client.py work    <port> <queue> <scripts dir> <jobs to complete> <timeout s>
    python-client.py open    <port> <queue> <scripts dir>
    python-client.py backoff '<JSON list of [kind, delay ms, max ms or null, jitter, attempt]>'

Prints one JSON line per event. `produce` adds py-0 .. py-<jobs-1> (payload(i) below: the test
builds the same values on its own), every third with a delay, every fifth with 5 attempts, every
seventh with priority -3, in bulk calls of 10, then py-0 again (kept) and reads py-1 back. `work`
runs jobs until <jobs to complete> acks were accepted: a payload's "mode" asks for a first attempt
that fails ("fail-once"), outlives its lease without extending it ("stale"), runs past its lease
extending it ("long"), or waits until the job is cancelled and then acks anyway ("cancel-me").
`open` opens the queue and a worker on it, printing what each answered (a queue it cannot serve is
refused). `backoff` prints the client's retry delay for each spec and attempt (with jitter: the
least and most of 500 draws).
"""

import datetime
import json
import math
import os
import sys
import time

import redis

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
import delayq_client as dq  # noqa: E402


def payload(i):
    return {
        "i": i,
        "name": f"job {i} \u2713",
        "ratio": i / 7,
        "big": 2**64 + i,
        "huge": float(2**60),
        "when": datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.timezone.utc)
        + datetime.timedelta(seconds=i),
        "bytes": bytes([i % 256, 0, 255]),
        "nan": math.nan,
        "negZero": -0.0,
        "map": dq.Map([(1, "one"), ("k", [True])]),
        "~tilde": "escaped",
        "nested": {"list": [1, "two", None]},
    }


def out(**fields):
    print(json.dumps(fields), flush=True)


def server_ms(r):
    s, us = r.time()
    return s * 1000 + us // 1000


def produce(queue, count):
    jobs = []
    for i in range(count):
        jobs.append(
            {
                "id": f"py-{i}",
                "payload": payload(i),
                "delay_ms": 300 if i % 3 == 0 else 0,
                "attempts": 5 if i % 5 == 0 else 3,
                "priority": -3 if i % 7 == 0 else 0,
            }
        )
    for start in range(0, len(jobs), 10):
        batch = jobs[start : start + 10]
        for job, (code, due) in zip(batch, queue.add_bulk(batch)):
            out(id=job["id"], code=code, due=due)
    code, due = queue.add("py-0", {"ignored": True})
    out(id="py-0", code=code, due=due)
    got = queue.get("py-1")
    # A finished job's record keeps no payload (a worker may already have run it).
    payload_i = got["payload"]["i"] if got["payload"] is not None else None
    out(get="py-1", state=got["state"], i=payload_i, max=got["max"])


def work(queue, r, to_complete, timeout_s):
    worker = dq.Worker(queue, worker_id="py-worker", lease_ms=1500, backoff=("fixed", 50, None, False))
    deadline = time.time() + timeout_s
    completed = 0
    while completed < to_complete and time.time() < deadline:
        # One at a time: this worker runs its handlers in turn, so a batch's later jobs would wait
        # out their leases behind a slow one.
        jobs = worker.claim(1)
        for job in jobs:
            now = server_ms(r)
            data = job.payload
            mode = data.get("mode") if isinstance(data, dict) else None
            out(run=job.id, attempt=job.attempt, due=job.due, started=now,
                payload=dq.encode_payload(data).decode("utf-8"))
            try:
                worker.progress(job, {"pct": 50})
                worker.log(job, f"python attempt {job.attempt}")
            except dq.LeaseLost as e:
                out(lost=job.id, why=str(e))
                continue
            if mode == "fail-once" and job.attempt == 1:
                before = server_ms(r)
                outcome, at = worker.fail(job, "Error", "first attempt fails")
                out(failed=job.id, outcome=outcome, at=at, before=before, after=server_ms(r))
                continue
            if mode == "stale" and job.attempt == 1:
                time.sleep(2.0)  # past its 1.5 s lease, not extended: the ack must be refused
            if mode == "long":
                for _ in range(8):  # 3 s, twice the lease, extended every 375 ms
                    time.sleep(0.375)
                    if worker.extend([job]):
                        out(lost=job.id)
                        break
            if mode == "cancel-me":
                out(waiting_for_cancel=job.id)
                until = time.time() + 15
                while job.member not in worker.cancelled and time.time() < until:
                    worker.poll_messages()
                    time.sleep(0.02)
                out(saw_cancel=job.id, cancelled=job.member in worker.cancelled)
            worker.ack(job, {"done": job.id})
        if not jobs:
            time.sleep(0.02)
        completed = sum(1 for _, letter in worker.ack_outcomes if letter == "O")
    worker.claim(0)
    for job_id, letter in worker.ack_outcomes:
        out(ack=job_id, outcome=letter)
    worker.close()
    out(done=True, completed=sum(1 for _, letter in worker.ack_outcomes if letter == "O"))


def open_both(r, name, scripts):
    try:
        queue = dq.Queue(r, name, scripts)
    except dq.DelayqError as e:
        out(queue=str(e))
        return
    out(queue="opened", partitions=queue.partitions)
    try:
        worker = dq.Worker(queue, worker_id="py-open")
    except dq.DelayqError as e:
        out(worker=str(e))
        return
    out(worker="opened", holder=worker.holder)
    worker.close()


def backoff(specs):
    for kind, delay, cap, jitter, attempt in specs:
        draws = [dq.backoff_delay((kind, delay, cap, jitter), attempt) for _ in range(500 if jitter else 1)]
        out(kind=kind, attempt=attempt, jitter=jitter, least=min(draws), most=max(draws))


def main():
    if sys.argv[1] == "backoff":
        backoff(json.loads(sys.argv[2]))
        return
    command, port, name, scripts = sys.argv[1:5]
    r = redis.Redis(port=int(port))
    if command == "open":
        open_both(r, name, scripts)
        return
    queue = dq.Queue(r, name, scripts)
    if command == "produce":
        produce(queue, int(sys.argv[5]))
    elif command == "cancel":
        try:
            out(cancel=sys.argv[5], result=queue.cancel(sys.argv[5]))
        except dq.DelayqError as e:
            out(cancel=sys.argv[5], error=str(e))
    elif command == "work":
        work(queue, r, int(sys.argv[5]), float(sys.argv[6]))


if __name__ == "__main__":
    main()
