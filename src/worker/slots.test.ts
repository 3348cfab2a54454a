import { describe, expect, it } from 'vitest';
import { Slots } from './slots.js';

describe('Slots', () => {
  it('counts held slots; a release frees its slot once, however often it is called', () => {
    const slots = new Slots(2);
    const a = slots.take();
    slots.take();
    expect(slots.free()).toBe(0);
    expect(slots.full()).toBe(true);
    a();
    a();
    expect(slots.free()).toBe(1);
    expect(slots.full()).toBe(false);
  });

  it('wakes one waiter per freed slot, in order', async () => {
    const slots = new Slots(1);
    const release = slots.take();
    const woken: string[] = [];
    void slots.waitForSlot().then(() => woken.push('first'));
    void slots.waitForSlot().then(() => woken.push('second'));
    release();
    await Promise.resolve();
    expect(woken).toEqual(['first']);
    slots.take()();
    await Promise.resolve();
    expect(woken).toEqual(['first', 'second']);
  });
});
