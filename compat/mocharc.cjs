// The compat suite: one file per target broker (compat/against-*.test.ts), two at a time in
// worker processes, since a target's time goes mostly to waiting (a broker starting, a
// rebalance, a long poll, a client's backoff). The longest, the Kafka cluster, starts first,
// the single nodes run beside it and the Sluice cluster last, so that the two clusters' six
// brokers seldom share the two cores. matrix-fixture.ts joins the targets' results at the end.
module.exports = {
  ...require('../.mocharc.json'),
  require: ['compat/matrix-fixture.ts'],
  spec: [
    'compat/against-kafka-cluster.test.ts',
    'compat/against-sluice.test.ts',
    'compat/against-kafka.test.ts',
    'compat/against-sluice-cluster.test.ts',
    'compat/against-bootstrap.test.ts',
    'compat/clients/*.test.ts',
  ],
  parallel: true,
  jobs: 2,
};
