"""A delayq producer in Python, written from docs/PROTOCOL.md alone (no delayq code).

Usage: producer.py <redis port> <queue> <path of the expanded add.lua> <jobs> [<user> <password>]

Adds <jobs> jobs with the json codec through add.lua, in batches, half with a delay and half
with an absolute due time, then adds the first id once more (which must write nothing). Prints
one JSON line per add: {"id", "created", "runAt"}. Needs Debian's python3-redis.
"""

import base64
import datetime
import json
import random
import sys

import redis

EVENTS_CAP = "1000"
BATCH = 10


def keys(queue):
    # "All keys of queue q share the hash tag {q}"; KEYS = [schedule, jobs, meta, wake, events, done].
    return [f"dq:{{{queue}}}:{k}" for k in ("schedule", "jobs", "meta", "wake", "events", "done")]


def date_tag(dt):
    # Exactly toISOString(): YYYY-MM-DDTHH:mm:ss.sssZ, UTC, three millisecond digits.
    text = dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return {"~t": "Date", "v": text}


def payload(i):
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.timezone.utc)
    return {
        "i": i,
        "name": f"job {i} \u2713",
        "ratio": i / 7,
        "flag": i % 2 == 0,
        "nothing": None,
        "list": [1, "two", 3.5],
        "when": date_tag(when + datetime.timedelta(seconds=i)),
        # Integers beyond 2^53 - 1 must be BigInt tags, never raw JSON numbers.
        "big": {"~t": "BigInt", "v": str(2**64 + i)},
        "bytes": {"~t": "Uint8Array", "v": base64.b64encode(bytes([i % 256, 0, 255])).decode()},
        "map": {"~t": "Map", "v": [[1, "one"], ["k", [True]]]},
        "set": {"~t": "Set", "v": ["a", "b"]},
        # A payload key starting with "~" is written with one more "~".
        "~~tilde": "escaped",
        "nan": {"~t": "number", "v": "NaN"},
        "negZero": {"~t": "number", "v": "-0"},
    }


def envelope(job_id, i, created_at):
    body = {"v": 1, "id": job_id, "version": 1, "createdAt": created_at, "payload": payload(i)}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def main():
    port, queue, add_lua_path, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    user, password = (sys.argv[5], sys.argv[6]) if len(sys.argv) > 6 else (None, None)
    r = redis.Redis(port=int(port), username=user, password=password)
    # "First, learn the queue's shape": the config record says how the workers read the queue.
    # This producer writes format 1, the zset layout, one partition, the json codec.
    config = {k.decode(): v.decode() for k, v in r.hgetall(f"dq:{{{queue}}}:config").items()}
    if not config:
        sys.exit(f"queue {queue} has no config record: start its workers first, or record one")
    wanted = {"format": "1", "layout": "zset", "partitions": "1", "codec": "json"}
    for field, value in wanted.items():
        if config.get(field) != value:
            sys.exit(f"queue {queue} has {field} {config.get(field)!r}; this producer writes only {value!r}")
    with open(add_lua_path, encoding="utf-8") as f:
        add = r.register_script(f.read())  # EVALSHA, falling back to SCRIPT LOAD on NOSCRIPT
    seconds, micros = r.time()
    now = seconds * 1000 + micros // 1000
    rng = random.Random(13)
    jobs = []
    for i in range(count):
        job_id = f"py-{i}"
        if i % 2 == 0:
            kind, value = "d", rng.randint(50, 400)
        else:
            kind, value = "a", now + rng.randint(50, 400)
        jobs.append((job_id, kind, str(value), envelope(job_id, i, now), json.dumps({"a": 0, "m": 3})))
    jobs.append(jobs[0])  # the same id again: nothing is written, its due time comes back
    for start in range(0, len(jobs), BATCH):
        batch = jobs[start : start + BATCH]
        args = [str(len(batch))]
        for job in batch:
            args.extend(job)
        args.append(EVENTS_CAP)
        reply = add(keys=keys(queue), args=args)
        for n, job in enumerate(batch):
            print(json.dumps({"id": job[0], "created": reply[2 * n], "runAt": reply[2 * n + 1]}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
