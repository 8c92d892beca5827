import { compatSuite } from './suite.ts';

compatSuite('bootstrap');
