import { conformanceSuite } from './suite.js';

// As an old server (or one whose operator removed it) would be: no ZPOPMIN family at all.
conformanceSuite('range', {
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
});
