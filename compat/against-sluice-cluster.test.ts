import { compatSuite } from './suite.ts';

compatSuite('sluice-cluster');
