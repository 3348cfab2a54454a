/**
 * Waiting until a worker is asleep, seen from Redis (CLIENT LIST) rather than guessed with a sleep:
 * a wake-up test that adds its job before the worker's first claim tests nothing (the claim finds
 * the job itself), and a fixed sleep cannot tell on a loaded machine.
 */
import { Cluster, type Redis } from 'ioredis';
import { waitFor } from './fixtures.js';

interface ClientEntry {
  id: string;
  flags: string;
  cmd: string;
  subscriptions: number;
}

async function clients(r: Redis | Cluster): Promise<ClientEntry[]> {
  // Every node: a Cluster client may subscribe on a replica.
  const nodes = r instanceof Cluster ? r.nodes('all') : [r];
  const lists = await Promise.all(nodes.map((node) => node.client('LIST') as Promise<string>));
  return lists.flatMap((list, n) =>
    list
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => {
        const field = (name: string): string => new RegExp(`(?:^| )${name}=(\\S*)`).exec(line)?.[1] ?? '';
        return {
          // Ids are per server: qualify them with the node's place in the list.
          id: `${n}:${field('id')}`,
          flags: field('flags'),
          cmd: field('cmd'),
          subscriptions: Number(field('sub') || 0) + Number(field('psub') || 0) + Number(field('ssub') || 0),
        };
      }),
  );
}

/** The connections open now; pass them to waitForSleepingWorker to tell a new worker's apart. */
export async function connectionsBefore(r: Redis | Cluster): Promise<Set<string>> {
  return new Set((await clients(r)).map((c) => c.id));
}

/**
 * Wait (bounded) until connections opened since `before` show a worker asleep: one subscribed to
 * wake-ups, one whose last command was a script (its claim, answered: nothing is queued on it) and,
 * with `blocking` (the wheel), one blocked in BLMOVE or BRPOPLPUSH on the ready list.
 */
export async function waitForSleepingWorker(
  r: Redis | Cluster,
  before: Set<string>,
  { blocking = false, timeoutMs = 10_000 }: { blocking?: boolean; timeoutMs?: number } = {},
): Promise<void> {
  await waitFor(
    async () => {
      const fresh = (await clients(r)).filter((c) => !before.has(c.id));
      const subscribed = fresh.some((c) => c.subscriptions > 0);
      const claimed = fresh.some(
        (c) => ['evalsha', 'eval', 'fcall'].includes(c.cmd) && !c.flags.includes('b'),
      );
      const blocked = fresh.some(
        (c) => c.flags.includes('b') && (c.cmd === 'blmove' || c.cmd === 'brpoplpush'),
      );
      return subscribed && claimed && (!blocking || blocked);
    },
    { timeoutMs, what: 'the worker to be asleep (subscribed, claim answered, blocked when a wheel)' },
  );
}
