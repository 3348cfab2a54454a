/**
 * Timetables (no Redis): cron occurrences agree with croner, daylight-saving days included, and
 * the candidates a scheduler offers the tick script follow its contract.
 */
import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { resolveSpec, timetableOf } from '../../src/schedule/spec.js';
import { candidates } from '../../src/schedule/tick.js';

const at = (iso: string): number => new Date(iso).getTime();

describe('cron timetable', () => {
  const cases: Array<{ cron: string; tz?: string; from: string }> = [
    { cron: '0 9 * * 1-5', tz: 'Europe/Paris', from: '2026-01-02T07:59:59.999Z' },
    { cron: '0 9 * * 1-5', tz: 'Europe/Paris', from: '2026-01-02T08:00:00.000Z' },
    // Paris springs forward on 2026-03-29 (02:00 -> 03:00): 02:30 does not exist that day.
    { cron: '30 2 * * *', tz: 'Europe/Paris', from: '2026-03-28T12:00:00Z' },
    // ... and falls back on 2026-10-25 (03:00 -> 02:00): 02:30 happens twice.
    { cron: '30 2 * * *', tz: 'Europe/Paris', from: '2026-10-24T12:00:00Z' },
    { cron: '*/20 * * * *', tz: 'America/New_York', from: '2026-11-01T05:30:00Z' },
    { cron: '15 */6 * * * *', from: '2026-05-05T10:00:00.500Z' },
    { cron: '0 0 29 2 *', from: '2026-03-01T00:00:00Z' },
  ];

  for (const c of cases) {
    it(`${c.cron} ${c.tz ?? 'UTC'} from ${c.from}: the next occurrences are croner's`, () => {
      const spec = resolveSpec(c.tz === undefined ? { cron: c.cron } : { cron: c.cron, tz: c.tz }, 'test');
      const timetable = timetableOf(spec);
      const cron = new Cron(c.cron, { timezone: c.tz ?? 'UTC' });
      let ours = at(c.from);
      let theirs = new Date(c.from);
      for (let i = 0; i < 6; i++) {
        const next = cron.nextRun(theirs)!;
        ours = timetable.next(ours)!;
        expect(ours).toBe(next.getTime());
        // The latest occurrence at or before an occurrence is itself; a ms before, the previous one.
        expect(timetable.latestAtOrBefore(ours)).toBe(ours);
        if (i > 0)
          expect(timetable.latestAtOrBefore(ours - 1)).toBe(cron.previousRuns(1, next)[0]!.getTime());
        theirs = next;
      }
    });
  }

  it('a spring-forward day runs a fixed-time job once, after the gap', () => {
    const timetable = timetableOf(resolveSpec({ cron: '30 2 * * *', tz: 'Europe/Paris' }, 'test'));
    const first = timetable.next(at('2026-03-28T12:00:00Z'))!;
    expect(new Date(first).toISOString()).toBe('2026-03-29T01:00:00.000Z'); // 03:00 CEST
    expect(new Date(timetable.next(first)!).toISOString()).toBe('2026-03-30T00:30:00.000Z'); // 02:30 CEST
  });
});

describe('every timetable', () => {
  it('fires at the multiples of the period since the epoch', () => {
    const timetable = timetableOf(resolveSpec({ every: '15m' }, 'test'));
    expect(timetable.next(at('2026-01-01T10:07:00Z'))).toBe(at('2026-01-01T10:15:00Z'));
    expect(timetable.next(at('2026-01-01T10:15:00Z'))).toBe(at('2026-01-01T10:30:00Z'));
    expect(timetable.latestAtOrBefore(at('2026-01-01T10:15:00Z'))).toBe(at('2026-01-01T10:15:00Z'));
    expect(timetable.latestAtOrBefore(at('2026-01-01T10:14:59.999Z'))).toBe(at('2026-01-01T10:00:00Z'));
  });
});

describe('candidates', () => {
  const every100 = timetableOf({ every: 100 });

  it('on time: the occurrences up to two ahead of now', () => {
    expect(candidates(every100, 1_000, 1_010, 50)).toEqual([1_100, 1_200]);
  });

  it('late within the grace: every late one, then two ahead', () => {
    expect(candidates(every100, 1_000, 1_250, 500)).toEqual([1_100, 1_200, 1_300, 1_400]);
  });

  it('after an outage: the latest missed one, then the rest from the grace on', () => {
    // Missed: 1100 .. 1700 (older than now - grace = 1750); offered: 1700 only, then 1800 ...
    expect(candidates(every100, 1_000, 2_050, 300)).toEqual([1_700, 1_800, 1_900, 2_000, 2_100, 2_200]);
  });

  it('stays within the chunk size however long the grace', () => {
    const out = candidates(every100, 0, 1_000_000, 900_000);
    expect(out).toHaveLength(40);
    // 99 900 is the latest missed one (older than now - grace); 100 000 is exactly at the grace's edge.
    expect(out.slice(0, 2)).toEqual([99_900, 100_000]);
    expect(out.every((t, i) => i === 0 || t - out[i - 1]! === 100)).toBe(true);
  });
});
