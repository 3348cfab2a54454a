"""A delayq client in Python: producer and worker for queues of the json codec, zset layout, one
partition. Written from docs/PROTOCOL.md; needs only redis-py (Debian's python3-redis).

    import redis, delayq_client as dq
    queue = dq.Queue(redis.Redis(port=6379), "emails", scripts="node_modules/delayq/dist/scripts")
    queue.add("welcome:42", {"to": "ada@example.com"}, delay_ms=600_000)
    worker = dq.Worker(queue, worker_id="py-1", lease_ms=30_000)
    for job in worker.claim(10): ...; worker.ack(job)  # acks go with the next claim

See README.md next to this file: it is also the guide for porting delayq to another language.
"""

import base64
import datetime
import json
import math
import random
import struct

FORMAT = 0x01
# Flags A and B of the record header (docs/PROTOCOL.md, "The record").
A_CLAIM, A_MAX, A_BACKOFF, A_PRIO, A_GROUP, A_TIMEOUT, A_CREATED, A_MORE = 1, 2, 4, 8, 0x10, 0x20, 0x40, 0x80
B_VERSION, B_TRACE, B_ERROR, B_COMPLETED, B_CANCELLED, B_RESULT = 1, 2, 4, 8, 0x10, 0x20
MAX_SAFE = 2**53 - 1
NO_MAX = 0xFFFFFFFF
DEFAULT_EVENTS = "-10000"  # delayq's default: failures only, about 10,000 kept


class DelayqError(Exception):
    """A script's error reply (DELAYQ_<NAME> detail) or a refusal of this client."""


class LeaseLost(DelayqError):
    """The lease this worker presented is gone (cancelled, expired, not held): nothing was written."""


# ---------------------------------------------------------------------------------------------
# Payloads: the json codec (docs/PROTOCOL.md, "Payload encoding (codec json)").


def to_tagged(value):
    """A Python value as the json codec's tagged JSON value."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -MAX_SAFE <= value <= MAX_SAFE else {"~t": "BigInt", "v": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            return {"~t": "number", "v": "NaN"}
        if math.isinf(value):
            return {"~t": "number", "v": "Infinity" if value > 0 else "-Infinity"}
        if value == 0 and math.copysign(1, value) < 0:
            return {"~t": "number", "v": "-0"}
        return value  # json writes a float with a fraction or exponent: read as a double
    if isinstance(value, (bytes, bytearray)):
        return {"~t": "Uint8Array", "v": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime.datetime):
        utc = value.astimezone(datetime.timezone.utc)
        text = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
        return {"~t": "Date", "v": text}
    if isinstance(value, (set, frozenset)):
        return {"~t": "Set", "v": [to_tagged(v) for v in value]}
    if isinstance(value, (list, tuple)):
        return [to_tagged(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise DelayqError(f"payload key {k!r} is not a string (write a Map as dq.Map([...]))")
            if k == "__proto__":
                raise DelayqError("payload key __proto__ is refused by every delayq reader")
            out["~" + k if k.startswith("~") else k] = to_tagged(v)
        return out
    if isinstance(value, Map):
        return {"~t": "Map", "v": [[to_tagged(k), to_tagged(v)] for k, v in value.entries]}
    raise DelayqError(f"cannot encode {type(value).__name__} in a json payload")


class Map:
    """A JavaScript Map: entries in order, keys of any type (a dict when all keys are strings is
    an object, not a Map)."""

    def __init__(self, entries):
        self.entries = list(entries)

    def __eq__(self, other):
        return isinstance(other, Map) and self.entries == other.entries

    def __repr__(self):
        return f"Map({self.entries!r})"


def _refuse_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise DelayqError("payload object repeats a key")
    return dict(pairs)


def from_tagged(value):
    """A tagged JSON value (as json.loads returned it) as a Python value."""
    if isinstance(value, list):
        return [from_tagged(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get("~t")
    if tag is None:
        out = {}
        for k, v in value.items():
            if k.startswith("~") and not k.startswith("~~"):
                raise DelayqError(f"payload key {k!r} is reserved")
            out[k[1:] if k.startswith("~~") else k] = from_tagged(v)
        return out
    v = value.get("v")
    if tag == "undefined":
        return None
    if tag == "number":
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}
        if v in special:
            return special[v]
        n = float(int(v))
        if int(n) != int(v):
            raise DelayqError(f"number tag {v} is not the exact integer of a double")
        return n
    if tag == "BigInt":
        return int(v)
    if tag == "Date":
        return datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    if tag in ("Uint8Array", "Buffer"):
        return base64.b64decode(v, validate=True)
    if tag == "Set":
        return [from_tagged(x) for x in v]
    if tag == "Map":
        return Map((from_tagged(k), from_tagged(x)) for k, x in v)
    raise DelayqError(f"unknown payload tag {tag!r}")


def encode_payload(value):
    text = json.dumps(to_tagged(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


def decode_payload(data):
    return from_tagged(json.loads(data.decode("utf-8"), object_pairs_hook=_refuse_duplicates))


# ---------------------------------------------------------------------------------------------
# Records (docs/PROTOCOL.md, "The record").


def _u48(data, at):
    return int.from_bytes(data[at : at + 6], "big")


def make_record(payload_bytes, attempts=3, priority=0, backoff=None, timeout_ms=None):
    """A new job's record: header with the fields a producer writes, then the payload bytes.
    backoff: None, or (kind, delay ms, max ms or None, jitter) with kind 'fixed'/'exponential'."""
    flags, fields = 0, b""
    if attempts != 3:
        if not 1 <= attempts <= 65535:
            raise DelayqError("attempts must be 1..65535")
        flags |= A_MAX
        fields += struct.pack(">H", attempts)
    if backoff is not None:
        kind, delay, cap, jitter = backoff
        code = {"fixed": 1, "exponential": 2}[kind] | (0x80 if jitter else 0)
        flags |= A_BACKOFF
        fields += struct.pack(">BII", code, delay, NO_MAX if cap is None else cap)
    if priority != 0:
        if not -1024 <= priority <= 1023:
            raise DelayqError("priority must be -1024..1023")
        flags |= A_PRIO
        fields += struct.pack(">h", priority)
    if timeout_ms is not None:
        if timeout_ms < 1:
            raise DelayqError("timeout must be >= 1 ms")
        flags |= A_TIMEOUT
        fields += struct.pack(">I", timeout_ms)
    return bytes([FORMAT, flags]) + fields + payload_bytes


def parse_record(rec):
    """The header fields and the payload of a record, as a dict."""
    if len(rec) < 2 or rec[0] != FORMAT:
        raise DelayqError("record format is unknown")
    fa, at, fb = rec[1], 2, 0
    if fa & A_MORE:
        fb, at = rec[2], 3
        if fb & 0xC0:
            raise DelayqError("record flags B has reserved bits set")
    h = {"attempts": 0, "claims": 0, "max": 3, "backoff": None, "priority": 0, "group": None,
         "timeout": None, "version": 1, "has_error": bool(fb & B_ERROR)}
    if fa & A_CLAIM:
        h["attempts"], h["claims"] = struct.unpack_from(">HH", rec, at)
        h["claimed_at"], h["run_due"] = _u48(rec, at + 4), _u48(rec, at + 10)
        h["holder"] = struct.unpack_from(">I", rec, at + 16)[0]
        at += 20
    if fa & A_MAX:
        h["max"] = struct.unpack_from(">H", rec, at)[0]
        at += 2
    if fa & A_BACKOFF:
        code, delay, cap = struct.unpack_from(">BII", rec, at)
        h["backoff"] = ({1: "fixed", 2: "exponential"}[code & 0x7F], delay, None if cap == NO_MAX else cap, bool(code & 0x80))
        at += 9
    if fa & A_PRIO:
        h["priority"] = struct.unpack_from(">h", rec, at)[0]
        at += 2
    if fa & A_GROUP:
        n = rec[at]
        h["group"] = rec[at + 1 : at + 1 + n].decode("utf-8")
        at += 1 + n + 6
    if fa & A_TIMEOUT:
        h["timeout"] = struct.unpack_from(">I", rec, at)[0]
        at += 4
    if fa & A_CREATED:
        at += 6
    if fb & B_VERSION:
        h["version"] = struct.unpack_from(">H", rec, at)[0]
        at += 2
    if fb & B_TRACE:
        at += 1 + rec[at]
    h["completed"], h["cancelled"] = bool(fb & B_COMPLETED), bool(fb & B_CANCELLED)
    h["payload"] = rec[at:]
    return h


def backoff_delay(backoff, attempt):
    """The retry delay after failed attempt `attempt` (1 = the first): docs/PROTOCOL.md step 7."""
    kind, delay, cap, jitter = backoff
    ms = delay if kind == "fixed" else delay * 2 ** max(0, attempt - 1)
    if kind == "exponential" and cap is not None:
        ms = min(ms, cap)
    if jitter:
        ms = ms / 2 + random.random() * ms / 2
    return int(math.floor(ms + 0.5))  # JavaScript's Math.round: halves up (Python's round() goes to even)


# ---------------------------------------------------------------------------------------------
# The queue: config, then the producer's calls.

WAITING = ("s", "p", "r", "gq", "gw", "gr", "gc")


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _script_error(e):
    message = str(e)
    if message.startswith("DELAYQ_LEASE_LOST"):
        return LeaseLost(message)
    return DelayqError(message)


def fnv1a32(data):
    """FNV-1a, 32 bit: the partition of a job is fnv1a32(utf8(id)) mod P (docs/PROTOCOL.md, Keys)."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


class Queue:
    """One queue of the json codec, zset layout. `scripts`: a directory with the expanded scripts
    (the npm package's dist/scripts). A partitioned queue is served by the producer calls (each
    job goes to its id's partition); the Worker serves unpartitioned queues only."""

    def __init__(self, client, name, scripts):
        if any(c in name for c in "{} \t\r\n") or name == "":
            raise DelayqError(f"queue name {name!r} may not be empty or hold braces or white space")
        self.redis, self.name, self._dir, self._scripts = client, name, scripts, {}
        self.config = self._config()
        self.events = self.config.get("events", DEFAULT_EVENTS)
        self.group_concurrency = self.config.get("groups.concurrency", "0")

    def key(self, role, partition=None):
        tag = self.name if partition is None else f"{self.name}#{partition}"
        return f"dq:{{{tag}}}:{role}"

    def keys(self, *roles, partition=None):
        return [self.key(r, partition) for r in roles]

    def partition_of(self, job_id):
        """None for the queue's own keys, else the partition index of `job_id`. Ids here are chosen
        by the caller, so after a re-partition they stay placed by the count before the first one
        (the record's partitions.base; docs/PROTOCOL.md, Keys): an id never exists twice."""
        if self.base == 1:
            return None
        return fnv1a32(job_id.encode("utf-8")) % self.base

    def call(self, script, keys, args):
        if script not in self._scripts:
            with open(f"{self._dir}/{script}.lua", encoding="utf-8") as f:
                self._scripts[script] = self.redis.register_script(f.read())
        try:
            return self._scripts[script](keys=keys, args=args)
        except Exception as e:  # redis.ResponseError; redis-py is not imported here
            if "DELAYQ_" in str(e):
                raise _script_error(e) from None
            raise

    def _config(self):
        """Agree on the queue through config.lua (never HSET): json, zset; adopt partitions and
        events; a queue of another codec or layout is refused, nothing written."""
        keys = [self.key("config")] + self.keys("layout", "partitions", "schedule", "active", "dead")
        reply = self.call("config", keys, ["write", "2", "", "1", "zset", "zset", "json", "json", "", DEFAULT_EVENTS, "", "", ""])
        record = {_text(reply[i]): _text(reply[i + 1]) for i in range(2, len(reply), 2)}
        self.partitions = int(record["partitions"])
        self.base = int(record.get("partitions.base", record["partitions"]))
        return record

    # -- producer ----------------------------------------------------------------------------

    def add(self, job_id, payload, delay_ms=0, at_ms=None, attempts=3, priority=0, backoff=None, timeout_ms=None):
        """Add one job; returns (code, time): 'c' created (due time), 'k' kept, 'A', 'C', 'X', 'D'."""
        return self.add_bulk([dict(id=job_id, payload=payload, delay_ms=delay_ms, at_ms=at_ms, attempts=attempts,
                                   priority=priority, backoff=backoff, timeout_ms=timeout_ms)])[0]

    def add_bulk(self, jobs):
        """Add many jobs, one atomic call per partition; a list of (code, time) in the same order."""
        by_partition = {}
        for index, job in enumerate(jobs):
            by_partition.setdefault(self.partition_of(job["id"]), []).append(index)
        out = [None] * len(jobs)
        for partition, indexes in by_partition.items():
            replies = self._add_call([jobs[i] for i in indexes], partition)
            for i, reply in zip(indexes, replies):
                out[i] = reply
        return out

    def _add_call(self, jobs, partition):
        args = [str(len(jobs)), "0", self.events, self.group_concurrency]
        for job in jobs:
            rec = make_record(encode_payload(job["payload"]), job.get("attempts", 3), job.get("priority", 0),
                              job.get("backoff"), job.get("timeout_ms"))
            at_ms = job.get("at_ms")
            mode, when = ("ak", at_ms) if at_ms is not None else ("dk", job.get("delay_ms", 0))
            prio = job.get("priority", 0)
            args += [job["id"], mode, str(int(when)), rec, f"p{prio}" if prio else ""]
        keys = self.keys(*WAITING, "j", "c", "x", "d", "w", "n", "ev", "a", "gn", "lg", partition=partition)
        reply = self.call("add", keys, args)
        return [(_text(reply[2 * i]), reply[2 * i + 1]) for i in range(len(jobs))]

    def cancel(self, job_id):
        """'waiting' or 'running' when cancelled; None when there was nothing to cancel."""
        keys = self.keys(*WAITING, "gn", "j", "a", "x", "e", "w", "n", "ev", "pg", "d", "f", "fw", partition=self.partition_of(job_id))
        reply = self.call("cancel", keys, [job_id, self.group_concurrency, self.events])
        if isinstance(reply, list):
            # A flow's parent with children in other queues (one Redis only): cancel.lua answers
            # `needs` with those queues and writes nothing. This client passes no other queue's
            # keys, so it refuses; the TypeScript Queue cancels such a parent.
            queues = ", ".join(_text(q) for q in reply[1:])
            raise DelayqError(
                f"cancel {job_id}: a flow's parent with children in queue(s) {queues}, which this "
                "client does not cancel; use the TypeScript Queue (nothing was written)"
            )
        return None if reply == 0 else _text(reply)

    def get(self, job_id):
        """None, or a dict: state, score, payload (decoded), attempts, max, error, member."""
        keys = self.keys("j", "s", "p", "r", "gq", "a", "c", "x", "d", "e", "wk", "pg", "f", "fw", partition=self.partition_of(job_id))
        reply = self.call("get", keys, [job_id])
        if reply is None:
            return None
        state, rec, score, error, _holder, progress, member = reply[:7]
        h = parse_record(rec)
        finished = h["completed"] or h["cancelled"]
        return {
            "state": _text(state),
            "score": int(score),
            "payload": None if finished else decode_payload(h["payload"]),
            "attempts": h["attempts"],
            "max": h["max"],
            "error": json.loads(error) if error else None,
            "progress": json.loads(progress) if progress else None,
            "member": _text(member) if member else None,
        }


# ---------------------------------------------------------------------------------------------
# The worker (docs/PROTOCOL.md, "A worker, step by step").


class Job:
    def __init__(self, member, rec, due, deadline):
        self.member = member
        bar = member.index("|")
        rest = member[bar + 1 :]
        self.id, _, group = rest.partition("\0")
        self.group = group or None
        self.header = parse_record(rec)
        self.attempt = self.header["attempts"]
        self.due = int(due)
        self.deadline = deadline  # the last deadline the server reported: sent with the ack
        self.payload_bytes = self.header["payload"]
        self.progressed = False

    @property
    def payload(self):
        return decode_payload(self.payload_bytes)


class Worker:
    def __init__(self, queue, worker_id, lease_ms=30_000, backoff=("exponential", 1000, 3_600_000, True),
                 dead_max_count=100_000, dead_max_age_ms=30 * 86_400_000):
        if queue.partitions != 1:
            # A worker of P partitions claims from each (one claim per partition, its keys in tag
            # {q#i}); this one claims from {q} only, where a partitioned queue keeps no jobs.
            raise DelayqError(
                f"queue {queue.name} has {queue.partitions} partitions; this worker serves unpartitioned queues "
                "only (nothing was written): run a Node worker for it, or port the per-partition claim "
                "(clients/python/README.md, 'Not covered here')")
        self.queue, self.lease_ms, self.backoff = queue, lease_ms, backoff
        self.dead = (str(dead_max_count), str(dead_max_age_ms))
        self.holder = int(queue.call("worker-register", [queue.key("wk")], ["register", worker_id]))
        self._acks = []
        self.ack_outcomes = []  # (job id, letter) of every ack sent: O, A, C, E or N
        self._pubsub = queue.redis.pubsub(ignore_subscribe_messages=True)
        self._pubsub.subscribe(queue.key("w"))
        self.cancelled = set()  # lease members the server said were cancelled (`C <member>`)

    def poll_messages(self):
        """Read wake messages without blocking; `C <member>` marks that running job cancelled."""
        while True:
            message = self._pubsub.get_message(timeout=0)
            if message is None:
                return
            data = _text(message["data"])
            if data.startswith("C "):
                self.cancelled.add(data[2:])

    def claim(self, limit):
        """Send the pending acks and lease up to `limit` due jobs; returns the jobs."""
        acks, self._acks = self._acks, []
        q = self.queue
        keys = q.keys(*WAITING, "j", "a", "c", "x", "e", "d", "z", "lim", "ev", "w", "n", "pg", "gn", "f", "fw")
        gmax = q.group_concurrency if q.group_concurrency != "0" else "1"
        args = [str(limit), str(self.lease_ms), str(self.holder), gmax, "0", "0", "0", "0",
                self.dead[0], self.dead[1], "", q.events, str(len(acks))]
        for job, result in acks:
            flags = ("e" if job.header["has_error"] else "") + ("p" if job.progressed else "")
            if result is not None:
                flags += "u"
            args += [job.member, str(job.deadline), flags, b"" if result is None else encode_payload(result)]
        reply = q.call("claim", keys, args)
        now, letters, n = int(reply[0]), _text(reply[3]), int(reply[4])
        for (job, _), letter in zip(acks, letters):
            self.ack_outcomes.append((job.id, letter))
        jobs = []
        for i in range(n):
            member, rec, due = reply[5 + 3 * i : 8 + 3 * i]
            jobs.append(Job(_text(member), rec, due, now + self.lease_ms))
        return jobs

    def ack(self, job, result=None):
        """Completed: the ack goes with the next claim (claim(0) sends it without claiming)."""
        self._acks.append((job, result))

    def extend(self, jobs):
        """Push the leases of `jobs`; returns the jobs whose lease is lost (stop them)."""
        reply = self.queue.call("extend", [self.queue.key("a")], [str(self.lease_ms), ""] + [j.member for j in jobs])
        lost = []
        for job, deadline in zip(jobs, reply[1:]):
            if int(deadline) == 0:
                lost.append(job)
            else:
                job.deadline = int(deadline)
        return lost

    def progress(self, job, value):
        q = self.queue
        q.call("progress", q.keys("a", "pg", "x"), [job.member, json.dumps(value), "65536"])
        job.progressed = True

    def log(self, job, line):
        """Add a line to the job's log (log.lua, with delayq's caps: 512 bytes a line, 20 lines an
        attempt, 50 a job); LeaseLost when not held, DelayqError DELAYQ_LOG_FULL past 20 lines."""
        q = self.queue
        q.call("log", q.keys("a", "lg", "x"), [job.member, str(job.attempt), line, "512", "20", "50"])

    def fail(self, job, name, message, unrecoverable=False):
        """('RETRY', due) or ('DEAD', died at) or ('ALREADY', -1); LeaseLost when not held."""
        q = self.queue
        backoff = job.header["backoff"] or self.backoff
        delay = backoff_delay(backoff, job.attempt)
        error = json.dumps({"name": name, "message": message})
        keys = q.keys(*WAITING, "gn", "j", "a", "d", "e", "w", "n", "ev", "pg", "x", "f", "fw")
        args = [job.member, str(delay), error, "1" if unrecoverable else "0", self.dead[0], self.dead[1],
                q.group_concurrency, message[:200], q.events]
        outcome, at = q.call("fail", keys, args)
        return _text(outcome), int(at)

    def release(self, job, delay_ms=0):
        q = self.queue
        keys = q.keys(*WAITING, "gn", "j", "a", "w", "ev", "pg", "n")
        return q.call("release", keys, [job.member, str(delay_ms), q.group_concurrency, q.events])

    def close(self):
        self.claim(0) if self._acks else None
        self._pubsub.close()
        self.queue.call("worker-register", [self.queue.key("wk")], ["drop", str(self.holder)])
