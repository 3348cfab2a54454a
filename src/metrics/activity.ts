/**
 * A small in-memory record of what workers in this process did, per queue and per second, for the
 * dashboard's throughput and lateness charts. Prometheus keeps the long history; this keeps minutes.
 */

/** One second of one queue's activity. */
export interface ActivitySecond {
  /** Start of the second, epoch ms (local clock). */
  t: number;
  completed: number;
  failed: number;
  dead: number;
  /** Lateness (claimedAt - runAt, Redis clock) of the attempts that ended in this second. */
  latenessSumMs: number;
  latenessCount: number;
  latenessMaxMs: number;
}

/** Per-second activity of the last `windowSeconds`, per queue. */
export class Activity {
  private readonly queues = new Map<string, ActivitySecond[]>();

  constructor(
    readonly windowSeconds = 600,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record one finished attempt of a job of `queue`. */
  record(queue: string, outcome: 'completed' | 'failed' | 'dead', latenessMs: number | null): void {
    const second = this.current(queue);
    second[outcome] += 1;
    if (latenessMs !== null && Number.isFinite(latenessMs)) {
      const late = Math.max(0, latenessMs);
      second.latenessSumMs += late;
      second.latenessCount += 1;
      second.latenessMaxMs = Math.max(second.latenessMaxMs, late);
    }
  }

  /** True once anything was recorded for `queue`. */
  knows(queue: string): boolean {
    return this.queues.has(queue);
  }

  /** The last `seconds` seconds of `queue`, oldest first, one entry per second (zeros where idle). */
  series(queue: string, seconds = this.windowSeconds): ActivitySecond[] {
    const end = Math.floor(this.now() / 1000) * 1000;
    const start = end - (seconds - 1) * 1000;
    const byTime = new Map((this.queues.get(queue) ?? []).map((s) => [s.t, s]));
    const out: ActivitySecond[] = [];
    for (let t = start; t <= end; t += 1000) out.push(byTime.get(t) ?? empty(t));
    return out;
  }

  private current(queue: string): ActivitySecond {
    const t = Math.floor(this.now() / 1000) * 1000;
    let seconds = this.queues.get(queue);
    if (!seconds) this.queues.set(queue, (seconds = []));
    const last = seconds.at(-1);
    if (last && last.t === t) return last;
    const fresh = empty(t);
    seconds.push(fresh);
    const oldest = t - this.windowSeconds * 1000;
    while (seconds.length > 0 && seconds[0]!.t <= oldest) seconds.shift();
    return fresh;
  }
}

function empty(t: number): ActivitySecond {
  return { t, completed: 0, failed: 0, dead: 0, latenessSumMs: 0, latenessCount: 0, latenessMaxMs: 0 };
}
