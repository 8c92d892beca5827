// The integration test files that may share the machine: most of their time is spent waiting
// (a broker starting, a rebalance, a client's backoff), so several run at once, each file in a
// worker process of its own. The others run after them, one at a time (mocharc.serial.cjs).
const serial = require('./mocharc.serial.cjs');

module.exports = {
  ...require('../../.mocharc.json'),
  spec: ['test/integration/**/*.test.ts'],
  ignore: serial.spec,
  parallel: true,
  jobs: 2,
};
