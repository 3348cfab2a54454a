import { describe, expect, it } from 'vitest';
import { ServerTimeBound } from './server-time-bound.js';

// Local times are performance.now() readings, server times epoch µs; the offset between the two
// clocks here is 1,700,000,000,000 ms.
const OFFSET = 1_700_000_000_000;
const us = (ms: number): number => ms * 1000;

describe('ServerTimeBound', () => {
  it('knows nothing before a reply', () => {
    expect(new ServerTimeBound().atMost(100)).toBeUndefined();
  });

  it('bounds the server clock by the TIME a script read after the send', () => {
    const bound = new ServerTimeBound();
    // Sent at 100, the script read TIME at local 103 (3 ms queued), the reply came back at 104.
    bound.observe(100, us(OFFSET + 103), 104);
    // The offset is at most (OFFSET + 103) - 100: 3 ms too high, never too low.
    expect(bound.atMost(100)).toBe(OFFSET + 103);
    // A call at 150 is bounded by the same offset, loosened by 1 ms per s of age (50 µs here).
    expect(bound.atMost(150)).toBe(Math.floor(OFFSET + 153 + 0.05));
  });

  it('keeps the tightest reading, and loosens it with its age', () => {
    const bound = new ServerTimeBound();
    bound.observe(100, us(OFFSET + 103), 104);
    // A later reply that waited less: its offset (OFFSET + 0.5) replaces the held one.
    bound.observe(1_000, us(OFFSET + 1_000.5), 1_001);
    expect(bound.atMost(1_001)).toBe(Math.floor(OFFSET + 1_001.5 + 0.001));
    // A reply that waited longer teaches nothing: the held bound stays.
    bound.observe(1_100, us(OFFSET + 1_120), 1_121);
    expect(bound.atMost(1_121)).toBe(Math.floor(OFFSET + 1_121.5 + 0.121));
    // After 9 s the held bound is 9 ms looser; a fresher reading with 5 ms queued now wins.
    bound.observe(10_000, us(OFFSET + 10_005), 10_006);
    expect(bound.atMost(10_000)).toBe(OFFSET + 10_005);
  });

  it('starts again when the server clock is seen ahead of the bound (a step, another node)', () => {
    const bound = new ServerTimeBound();
    bound.observe(100, us(OFFSET + 100.5), 101);
    // The clock stepped 2 s forward: the reply's TIME is later than the held bound allows.
    bound.observe(200, us(OFFSET + 2_200.5), 201);
    expect(bound.atMost(201)).toBe(Math.floor(OFFSET + 2_201.5 + 0.001));
  });

  it('a call made before the reading is bounded with drift the other way too', () => {
    const bound = new ServerTimeBound();
    bound.observe(5_000, us(OFFSET + 5_000), 5_001);
    expect(bound.atMost(3_000)).toBe(OFFSET + 3_000 + 2);
  });

  it('says nothing once the reading is over 10 s old', () => {
    const bound = new ServerTimeBound();
    bound.observe(100, us(OFFSET + 100), 101);
    expect(bound.atMost(10_099)).toBeDefined();
    expect(bound.atMost(10_101)).toBeUndefined();
  });
});
