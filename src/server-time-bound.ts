/**
 * An upper bound of the server's clock at a moment of the local monotonic clock, learnt from the
 * TIME that add replies carry. A delay counts from the add() call (docs/DESIGN.md invariant 7): add.lua
 * takes the call as its own TIME less the time from the call to the send (`elapsed`), which leaves
 * out the time the call then spends before the script runs (queued in Redis behind other calls,
 * or waiting for a core): 3 ms at the median and 7 ms at p99 at 6,000 jobs/s in
 * `npm run bench:lateness-breakdown`. Such a wait cannot be measured at the send, but the server's
 * clock at the call can be bounded from above: a script that read TIME `r` was sent at local time
 * `s`, so when that call was sent the server's clock read at most `r`, and the offset between the
 * two clocks is at most `r - s`. The script takes the earlier of its own estimate and this bound,
 * both of which are no earlier than the call, so a job is still never due before call + delay.
 *
 * The clocks may run at slightly different rates (a server's clock slewed by NTP, another host's
 * crystal), so a bound learnt earlier is loosened by DRIFT per ms of its age; the kernel slews a
 * clock by at most 500 ppm, so twice that covers both clocks. A clock stepped forward (or a
 * failover to a node whose clock is ahead) shows as a reply whose TIME is later than the bound
 * allowed by the time it came back: the bound is then learnt again from that reply.
 */

/** How much faster than the local clock the server's may run: 1000 ppm (see above). */
const DRIFT = 1e-3;

/** A bound older than this is not sent: loosened by its drift it would not beat the script's own. */
const MAX_AGE_MS = 10_000;

export class ServerTimeBound {
  /** Upper bound of (server epoch ms - local performance.now()) at local time `learntAt`. */
  private offset = Infinity;
  private learntAt = 0;

  /**
   * A script sent at local time `sentAt` read the server's TIME `serverUs` (epoch µs), and its
   * reply came back at local time `receivedAt` (all local times are performance.now()).
   */
  observe(sentAt: number, serverUs: number, receivedAt: number): void {
    const server = serverUs / 1000;
    // The TIME was read after the send and before the reply came back.
    const upper = server - sentAt;
    const lower = server - receivedAt;
    const held = this.offsetAt(receivedAt);
    // A held bound below what the server's clock has been seen to read was wrong (its clock
    // stepped forward, or another node answers now): start again from this reply alone.
    if (lower > held || upper + DRIFT * (receivedAt - sentAt) <= held) {
      this.offset = upper;
      this.learntAt = sentAt;
    }
  }

  /**
   * The server's clock at local time `at` (performance.now(), not later than now) is at most this
   * (epoch ms, rounded down: the script compares whole ms, as its own TIME is rounded down);
   * undefined when nothing recent is known.
   */
  atMost(at: number): number | undefined {
    if (this.offset === Infinity || at - this.learntAt > MAX_AGE_MS) return undefined;
    return Math.floor(at + this.offsetAt(at));
  }

  private offsetAt(at: number): number {
    // Either way from the reading: a call may be made before the reply it is measured by came back.
    return this.offset + DRIFT * Math.abs(at - this.learntAt);
  }
}
