import { flowTests } from './flows.js';
import { conformanceSuite } from './suite.js';

conformanceSuite('zpopmin');
flowTests('zpopmin');
