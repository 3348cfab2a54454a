"""A delayq producer in Python, written from docs/PROTOCOL.md alone (no delayq code).

Usage: producer.py <redis port> <queue> <path of the expanded add.lua> <jobs> [<user> <password>]

Adds <jobs> jobs with the json codec through add.lua (layout 2: one record per job, header then
payload), in batches, half with a delay and half with an absolute due time, every fifth with 5
attempts and every seventh with priority -3, then adds the first id once more (which must write
nothing). Prints one JSON line per add: {"id", "code", "runAt"}. Needs Debian's python3-redis.
"""

import base64
import datetime
import json
import random
import struct
import sys

import redis

BATCH = 10
# "KEYS = [s, p, r, gq, gw, gr, gc, j, c, x, d, w, n, ev, a, gn]", all with the queue's hash tag.
ROLES = ("s", "p", "r", "gq", "gw", "gr", "gc", "j", "c", "x", "d", "w", "n", "ev", "a", "gn", "lg")
# Flags A of the record header: M (max attempts) and P (priority).
FLAG_MAX_ATTEMPTS = 0x02
FLAG_PRIORITY = 0x08


def keys(queue):
    return [f"dq:{{{queue}}}:{role}" for role in ROLES]


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


def record(i, attempts, priority):
    """The record: format 0x01, flags A, the fields the flags announce in flag order (M, then P),
    then the payload's JSON text alone."""
    flags, fields = 0, b""
    if attempts != 3:  # 3 is the format's default, stored as absence
        flags |= FLAG_MAX_ATTEMPTS
        fields += struct.pack(">H", attempts)
    if priority != 0:  # 0 is the default, stored as absence
        flags |= FLAG_PRIORITY
        fields += struct.pack(">h", priority)
    body = json.dumps(payload(i), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return bytes([0x01, flags]) + fields + body.encode("utf-8")


def main():
    port, queue, add_lua_path, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    user, password = (sys.argv[5], sys.argv[6]) if len(sys.argv) > 6 else (None, None)
    r = redis.Redis(port=int(port), username=user, password=password)
    # "First, learn the queue's shape": the config record says how the workers read the queue.
    # This producer writes format 2, the zset layout, one partition, the json codec.
    config = {k.decode(): v.decode() for k, v in r.hgetall(f"dq:{{{queue}}}:config").items()}
    if not config:
        sys.exit(f"queue {queue} has no config record: start its workers first, or record one")
    if "migrating" in config:
        sys.exit(f"queue {queue} is being migrated ({config['migrating']}): try again later")
    wanted = {"format": "2", "layout": "zset", "partitions": "1", "codec": "json"}
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
        # Mode: d = a delay from now, a = an absolute due time; then k = keep an existing job.
        if i % 2 == 0:
            mode, value = "dk", rng.randint(50, 400)
        else:
            mode, value = "ak", now + rng.randint(50, 400)
        attempts = 5 if i % 5 == 0 else 3
        priority = -3 if i % 7 == 0 else 0
        # The class repeats the header's priority: empty for the default class, else p<prio>.
        klass = f"p{priority}" if priority != 0 else ""
        jobs.append((job_id, mode, str(value), record(i, attempts, priority), klass))
    jobs.append(jobs[0])  # the same id again: nothing is written, its due time comes back
    for start in range(0, len(jobs), BATCH):
        batch = jobs[start : start + BATCH]
        # N, elapsed ms since the add was asked for (0: not measured), the recorded events cap,
        # group concurrency (0: no groups).
        args = [str(len(batch)), "0", config.get("events", "0"), "0"]
        for job in batch:
            args.extend(job)
        reply = add(keys=keys(queue), args=args)
        for n, job in enumerate(batch):
            code = reply[2 * n].decode() if isinstance(reply[2 * n], bytes) else reply[2 * n]
            print(json.dumps({"id": job[0], "code": code, "runAt": reply[2 * n + 1]}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
