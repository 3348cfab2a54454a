/**
 * Probes the server once at connect: its version, which commands exist (a managed or old server,
 * or one with commands renamed away), and so which claim strategy can run there.
 */
import { UnsupportedServerError, ValidationError } from '../errors.js';
import type { RedisClient } from './connection.js';

/** How jobs are taken from the schedule; see docs/ARCHITECTURE.md §8 and docs/PROTOCOL.md. */
export type Strategy = 'zpopmin' | 'range' | 'wheel';

/** The `strategy` option: a strategy, or 'auto' to choose by probing. */
export type StrategyOption = Strategy | 'auto';

/** What the probe found. */
export interface Capabilities {
  readonly version: string;
  readonly commands: ReadonlySet<string>;
}

// Commands every strategy needs, from inside scripts or directly.
const REQUIRED = [
  'evalsha',
  'eval',
  'zadd',
  'zrangebyscore',
  'zrem',
  'zrange',
  'zcard',
  'hset',
  'hget',
  'time',
];
// What the wheel needs on top: list commands inside scripts, and a blocking move to wait on.
const WHEEL_LISTS = ['rpush', 'lpop', 'lrem', 'lrange', 'llen'];
const PROBED = [
  ...REQUIRED,
  'zpopmin',
  'zmscore',
  'zcount',
  'publish',
  'subscribe',
  'xadd',
  'xread',
  ...WHEEL_LISTS,
  'blmove',
  'brpoplpush',
];

/**
 * Whether the server has ZMSCORE (Redis >= 6.2): the claim and extend scripts then check a batch
 * of lease members with one command, else with one ZSCORE each.
 */
export function hasZmscore(caps: Capabilities): boolean {
  return caps.commands.has('zmscore');
}

/** Ask the server its version and which of the commands delayq uses it has. */
export async function probeCapabilities(client: RedisClient): Promise<Capabilities> {
  const info = await client.info('server');
  const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  const reply = (await client.call('COMMAND', 'INFO', ...PROBED)) as unknown[];
  const commands = new Set<string>();
  PROBED.forEach((name, i) => {
    if (Array.isArray(reply[i])) commands.add(name);
  });
  return { version, commands };
}

/** Pick the strategy for `requested` on a server with `caps`, or say plainly why none fits. */
export function chooseStrategy(requested: StrategyOption, caps: Capabilities): Strategy {
  const missing = REQUIRED.filter((c) => !caps.commands.has(c));
  if (missing.length > 0) {
    throw new UnsupportedServerError(
      `Redis ${caps.version} lacks ${missing.map((c) => c.toUpperCase()).join(', ')}, which every delayq strategy needs; use Redis >= 2.8 with scripting enabled`,
    );
  }
  const hasZpopmin = caps.commands.has('zpopmin');
  switch (requested) {
    case 'auto':
      return hasZpopmin ? 'zpopmin' : 'range';
    case 'zpopmin':
      if (!hasZpopmin) {
        throw new UnsupportedServerError(
          `strategy 'zpopmin' needs ZPOPMIN, which Redis ${caps.version} here lacks (older than 5.0 or renamed away); use strategy 'range' or 'auto'`,
        );
      }
      return 'zpopmin';
    case 'range':
      return 'range';
    case 'wheel': {
      const lacking = WHEEL_LISTS.filter((c) => !caps.commands.has(c));
      if (blockingMove(caps) === null) lacking.push('blmove or brpoplpush');
      if (lacking.length > 0) {
        throw new UnsupportedServerError(
          `strategy 'wheel' needs ${lacking.map((c) => c.toUpperCase()).join(', ')}, which Redis ${caps.version} here lacks; use strategy 'zpopmin', 'range' or 'auto'`,
        );
      }
      return 'wheel';
    }
    default:
      throw new ValidationError(
        `strategy must be 'auto', 'zpopmin', 'range' or 'wheel', got ${JSON.stringify(requested)}`,
      );
  }
}

/** The blocking list move a wheel worker waits with: BLMOVE (Redis >= 6.2), else BRPOPLPUSH, else null. */
export function blockingMove(caps: Capabilities): 'blmove' | 'brpoplpush' | null {
  if (caps.commands.has('blmove')) return 'blmove';
  if (caps.commands.has('brpoplpush')) return 'brpoplpush';
  return null;
}
