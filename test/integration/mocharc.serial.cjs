// The integration test files that run one at a time, after the others have run side by side
// (mocharc.parallel.cjs): each would disturb, or be disturbed by, a file running beside it.
const serial = [
  // `npm pack` runs the package's prepare step, the build, which rewrites dist/ under any
  // broker starting from it then; the container image is built from `npm pack` too.
  'test/integration/package/*.test.ts',
  'test/integration/testcontainers/*.test.ts',
  // One Kafka oracle (a JVM) serves every oracle file and a root-level hook closes it after
  // the last; a worker per file would start one each and close it after the first.
  'test/integration/oracle/*.test.ts',
  // Bounds on the broker's speed, which hold only on cores it does not share with other
  // brokers under test: how long it takes to answer, how many frames the fuzzer gets through
  // in its time, how close a producer comes to its quota.
  'test/integration/broker/topic-storm.test.ts',
  'test/integration/broker/log-backpressure.test.ts',
  'test/integration/fuzz/fuzz.test.ts',
  'test/integration/security/quotas.test.ts',
  // Timed against the Kafka reference's Java brokers and tools, which a loaded machine slows
  // past these files' bounds: a quota config's effect within its wait, a retry schedule's
  // count of invocations, a coordinator found within the client's retries.
  'test/integration/security/quota-configs.test.ts',
  'test/integration/tools/retry.test.ts',
  'test/integration/security/acls.test.ts',
  'test/integration/cli/groups-admin.test.ts',
];

module.exports = { ...require('../../.mocharc.json'), spec: serial };
