import type { RedisServerOptions } from '../support/redis-server.js';
import { flowTests } from './flows.js';
import { conformanceSuite } from './suite.js';

// As an old server (or one whose operator removed it) would be: no ZPOPMIN family at all.
const NO_ZPOPMIN: RedisServerOptions = {
  args: [
    '--rename-command',
    'ZPOPMIN',
    '',
    '--rename-command',
    'BZPOPMIN',
    '',
    '--rename-command',
    'ZPOPMAX',
    '',
  ],
};

conformanceSuite('range', NO_ZPOPMIN);
flowTests('range', NO_ZPOPMIN);
