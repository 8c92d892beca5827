import { compatSuite } from './suite.ts';

compatSuite('kafka');
