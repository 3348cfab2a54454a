import { conformanceSuite } from './suite.js';

conformanceSuite('zpopmin');
