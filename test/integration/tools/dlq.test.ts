/**
 * `sluice dlq inspect` and `sluice dlq replay` against a Sluice broker and the Apache Kafka
 * reference broker. The dead letters are written here with the contract's headers
 * (src/tools/dead-letters.ts), not by the retry library; what a replay wrote is read back
 * with `sluice consume`, which shares no code with the dlq tools beyond the wire client.
 */
import assert from 'node:assert/strict';
import { runConsumeCommand } from '../../../src/cli/consume.ts';
import { runDlqCommand } from '../../../src/cli/dlq.ts';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { partitionForKey } from '../../../src/client/partitioner.ts';
import { type ProducerRecord, TopicProducer } from '../../../src/client/producer.ts';
import { createTopic } from '../../../src/client/topics.ts';
import { DeadLetterHeaders, deadLetterTopicName } from '../../../src/tools/dead-letters.ts';
import { againstEachBroker, runCaptured, type CommandResult } from '../../helpers/cli-targets.ts';

interface JsonRecord {
  partition: number;
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: Record<string, string | null>;
}

function dlq(...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runDlqCommand(argv, io));
}

async function consumed(bootstrap: string, topic: string): Promise<JsonRecord[]> {
  const r = await runCaptured((io) => runConsumeCommand([topic, '--format', 'json', '--bootstrap-server', bootstrap], io));
  assert.equal(r.code, 0, r.stderr);
  return r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as JsonRecord)
    .sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

/** Dead-letter timestamps: ten minutes ago, so every broker accepts them as they are. */
const T = Math.floor(Date.now() / 1000) * 1000 - 600_000;

function header(key: string, value: string): { key: string; value: Buffer } {
  return { key, value: Buffer.from(value, 'utf8') };
}

interface DeadLetterFields {
  source: string;
  partition: string;
  offset: number;
  timestampMs: number;
  errorClass: string;
  message: string;
}

function deadLetterHeaders(f: DeadLetterFields): { key: string; value: Buffer }[] {
  return [
    header(DeadLetterHeaders.originalTopic, f.source),
    header(DeadLetterHeaders.originalPartition, f.partition),
    header(DeadLetterHeaders.originalOffset, String(f.offset)),
    header(DeadLetterHeaders.originalTimestamp, String(f.timestampMs)),
    header(DeadLetterHeaders.attempts, '3'),
    header(DeadLetterHeaders.errorClass, f.errorClass),
    header(DeadLetterHeaders.errorMessage, f.message),
    header(DeadLetterHeaders.consumerGroup, 'billing'),
  ];
}

const DEAD_LETTER = deadLetterTopicName('orders');
const BINARY = Buffer.from([0xde, 0xad, 0xbe, 0xef]);

/**
 * The dead-letter topic's records, by partition:
 *   0/0 k1    TimeoutError     from orders/0/10, own header trace-id
 *   0/1 k2    ValidationError  from orders/1/11, the oldest original
 *   0/2 stray no sluice headers at all (not a dead letter)
 *   1/0 p7    TimeoutError     from payments (partition header 'x'), binary value, replayed once before; the oldest dead letter
 *   1/1 k3    TimeoutError     from orders/2/12, the newest dead letter and the newest original
 */
const RECORDS: Record<number, ProducerRecord[]> = {
  0: [
    {
      key: Buffer.from('k1'),
      value: Buffer.from('{"order":1}'),
      headers: [
        header('trace-id', 't1'),
        ...deadLetterHeaders({
          source: 'orders',
          partition: '0',
          offset: 10,
          timestampMs: T - 1000,
          errorClass: 'TimeoutError',
          message: 'upstream timed out',
        }),
      ],
      partition: 0,
      timestamp: T + 100,
    },
    {
      key: Buffer.from('k2'),
      value: Buffer.from('{"order":2}'),
      headers: deadLetterHeaders({
        source: 'orders',
        partition: '1',
        offset: 11,
        timestampMs: T - 5000,
        errorClass: 'ValidationError',
        message: 'missing field: amount',
      }),
      partition: 0,
      timestamp: T + 200,
    },
    { key: Buffer.from('stray'), value: Buffer.from('written by hand'), headers: [header('x', '1')], partition: 0, timestamp: T + 300 },
  ],
  1: [
    {
      key: Buffer.from('p7'),
      value: BINARY,
      headers: [
        ...deadLetterHeaders({
          source: 'payments',
          partition: 'x',
          offset: 3,
          timestampMs: T - 2000,
          errorClass: 'TimeoutError',
          message: 'gateway timed out',
        }),
        header(DeadLetterHeaders.replayCount, '1'),
        header(DeadLetterHeaders.replayedFrom, `${DEAD_LETTER}/0/0`),
      ],
      partition: 1,
      timestamp: T + 50,
    },
    {
      key: Buffer.from('k3'),
      value: Buffer.from('{"order":3}'),
      headers: deadLetterHeaders({
        source: 'orders',
        partition: '2',
        offset: 12,
        timestampMs: T - 500,
        errorClass: 'TimeoutError',
        message: 'upstream timed out',
      }),
      partition: 1,
      timestamp: T + 400,
    },
  ],
};

const iso = (ms: number): string => new Date(ms).toISOString();

describe('sluice dlq: usage and connection errors', () => {
  it('answers usage errors with exit code 2 and the usage', async () => {
    for (const argv of [
      [],
      ['inspect'],
      ['inspect', 'a', 'b'],
      ['purge', 't'],
      ['inspect', 't', '--to', 'x'],
      ['inspect', 't', '--samples=-1'],
      ['inspect', 't', '--samples', 'all'],
      ['inspect', 't', '--output', 'xml'],
      ['replay', 't', '--samples', '2'],
      ['replay', 't', '--filter', 'colour=red'],
      ['replay', 't', '--filter', 'partition~=1'],
      ['replay', 't', '--from-offset', '3'],
      ['replay', 't', '--partition', '0', '--from-offset', '5', '--to-offset', '4'],
      ['replay', 't', '--to', ''],
    ]) {
      const r = await dlq(...argv);
      assert.equal(r.code, 2, `dlq ${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^sluice dlq: .*\nusage:\n/, argv.join(' '));
    }
  });

  it('prints the usage for --help, saying that a replay re-publishes', async () => {
    const r = await dlq('--help');
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Dead letters are neither deleted nor marked: replaying again publishes them again/);
  });

  it('exits 1 naming the address when no broker answers', async () => {
    const r = await dlq('inspect', 't', '--bootstrap-server', '127.0.0.1:1');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: cannot reach the cluster at 127\.0\.0\.1:1: /);
  });
});

againstEachBroker('sluice dlq', (bootstrap) => {
  const b = (): string[] => ['--bootstrap-server', bootstrap()];
  let startedMs = 0;

  before(async () => {
    startedMs = Date.now();
    const cluster = new KafkaCluster([bootstrap()]);
    try {
      for (const [name, numPartitions] of [
        ['orders', 3],
        ['payments', 1],
        ['orders.redirect', 1],
        [DEAD_LETTER, 2],
      ] as const) {
        await createTopic(cluster, { name, numPartitions, replicationFactor: 1, configs: [] }, false);
      }
      const producer = new TopicProducer(cluster, DEAD_LETTER, { acks: -1, timeoutMs: 10_000 });
      await producer.open();
      for (const records of Object.values(RECORDS)) await producer.send(records);
    } finally {
      await cluster.close();
    }
  });

  it('inspect counts dead letters by error class and source, with the oldest, newest and samples', async () => {
    const r = await dlq('inspect', DEAD_LETTER, ...b());
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(
      r.stdout,
      [
        `Topic ${DEAD_LETTER}: 5 records in 2 partitions`,
        'Dead letters: 4',
        'Not a dead letter (no sluice.original.topic header): 1, the first at partition 0 offset 2',
        '',
        'ERROR-CLASS      COUNT',
        'TimeoutError     3',
        'ValidationError  1',
        '',
        'SOURCE-TOPIC  COUNT',
        'orders        3',
        'payments      1',
        '',
        `Oldest: partition 1 offset 0, dead-lettered ${iso(T + 50)}`,
        `Newest: partition 1 offset 1, dead-lettered ${iso(T + 400)}`,
        `Oldest original: partition 0 offset 1, first written ${iso(T - 5000)}`,
        `Newest original: partition 1 offset 1, first written ${iso(T - 500)}`,
        '',
        'Samples (3 of 4):',
        `partition 0 offset 0, ${iso(T + 100)}`,
        '  key: "k1"',
        '  value: "{\\"order\\":1}"',
        '  sluice.original.topic: orders',
        '  sluice.original.partition: 0',
        '  sluice.original.offset: 10',
        `  sluice.original.timestamp: ${T - 1000}`,
        '  sluice.attempts: 3',
        '  sluice.error.class: TimeoutError',
        '  sluice.error.message: upstream timed out',
        '  sluice.consumer.group: billing',
        `partition 0 offset 1, ${iso(T + 200)}`,
        '  key: "k2"',
        '  value: "{\\"order\\":2}"',
        '  sluice.original.topic: orders',
        '  sluice.original.partition: 1',
        '  sluice.original.offset: 11',
        `  sluice.original.timestamp: ${T - 5000}`,
        '  sluice.attempts: 3',
        '  sluice.error.class: ValidationError',
        '  sluice.error.message: missing field: amount',
        '  sluice.consumer.group: billing',
        `partition 1 offset 0, ${iso(T + 50)}`,
        '  key: "p7"',
        '  value: hex:deadbeef',
        '  sluice.original.topic: payments',
        '  sluice.original.partition: x',
        '  sluice.original.offset: 3',
        `  sluice.original.timestamp: ${T - 2000}`,
        '  sluice.attempts: 3',
        '  sluice.error.class: TimeoutError',
        '  sluice.error.message: gateway timed out',
        '  sluice.consumer.group: billing',
        '  sluice.replay.count: 1',
        `  sluice.replayed.from: ${DEAD_LETTER}/0/0`,
        '',
      ].join('\n'),
    );
  });

  it('inspect --output json carries the same report, --samples choosing how many', async () => {
    const r = await dlq('inspect', DEAD_LETTER, '--output', 'json', '--samples', '1', ...b());
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.deepEqual(report.partitions, [
      { partition: 0, start: 0, end: 3 },
      { partition: 1, start: 0, end: 2 },
    ]);
    assert.equal(report.records, 5);
    assert.equal(report.deadLetters, 4);
    assert.deepEqual(report.notDeadLetters, { count: 1, first: { partition: 0, offset: 2 } });
    assert.deepEqual(report.byErrorClass, [
      { name: 'TimeoutError', count: 3 },
      { name: 'ValidationError', count: 1 },
    ]);
    assert.deepEqual(report.bySourceTopic, [
      { name: 'orders', count: 3 },
      { name: 'payments', count: 1 },
    ]);
    assert.deepEqual(report.oldest, { partition: 1, offset: 0, timestampMs: T + 50 });
    assert.deepEqual(report.newest, { partition: 1, offset: 1, timestampMs: T + 400 });
    assert.deepEqual(report.oldestOriginal, { partition: 0, offset: 1, timestampMs: T - 5000 });
    assert.deepEqual(report.newestOriginal, { partition: 1, offset: 1, timestampMs: T - 500 });
    assert.equal(report.samples.length, 1);
    const [s] = report.samples;
    assert.equal(s.partition, 0);
    assert.equal(s.offset, 0);
    assert.deepEqual(s.key, { encoding: 'text', text: 'k1', bytes: 2, truncated: false });
    assert.deepEqual(s.value, { encoding: 'text', text: '{"order":1}', bytes: 11, truncated: false });
    assert.equal(s.headers['sluice.error.class'], 'TimeoutError');
    assert.equal(s.headers['trace-id'], undefined);
  });

  it('inspect of an unknown topic says so on one line and exits 1', async () => {
    const r = await dlq('inspect', 'nowhere.dlq', ...b());
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, "Error: Topic 'nowhere.dlq' does not exist.\n");
  });

  it('replay --dry-run lists what it would replay and writes nothing', async () => {
    const r = await dlq('replay', DEAD_LETTER, '--filter', 'error=TimeoutError', '--dry-run', ...b());
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      [
        `would replay ${DEAD_LETTER}/0/0 to orders: key "k1", TimeoutError`,
        `would replay ${DEAD_LETTER}/1/0 to payments: key "p7", TimeoutError`,
        `would replay ${DEAD_LETTER}/1/1 to orders: key "k3", TimeoutError`,
        'would replay 3 of 5 dead letters to orders (2), payments (1) (dry run: nothing was written)',
        '',
      ].join('\n'),
    );
    assert.deepEqual(await consumed(bootstrap(), 'orders'), []);
    assert.deepEqual(await consumed(bootstrap(), 'payments'), []);
  });

  it('replay re-publishes exactly the matching dead letters to their original topic, keyed, with their own headers', async () => {
    const r = await dlq(
      'replay',
      DEAD_LETTER,
      '--filter',
      'error=TimeoutError',
      '--filter',
      'error=ValidationError',
      '--filter',
      'source=orders',
      ...b(),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, 'replayed 3 of 5 dead letters to orders\n');
    const orders = await consumed(bootstrap(), 'orders');
    const expected = [
      {
        key: 'k1',
        value: '{"order":1}',
        headers: { 'trace-id': 't1', 'sluice.replay.count': '1', 'sluice.replayed.from': `${DEAD_LETTER}/0/0` },
      },
      { key: 'k2', value: '{"order":2}', headers: { 'sluice.replay.count': '1', 'sluice.replayed.from': `${DEAD_LETTER}/0/1` } },
      { key: 'k3', value: '{"order":3}', headers: { 'sluice.replay.count': '1', 'sluice.replayed.from': `${DEAD_LETTER}/1/1` } },
    ];
    assert.deepEqual(
      orders.map(({ key, value, headers }) => ({ key, value, headers })).sort((a, b) => a.key!.localeCompare(b.key!)),
      expected,
    );
    for (const x of orders) {
      assert.equal(x.partition, partitionForKey(Buffer.from(x.key!), 3), `partition of ${x.key}`);
      assert.ok(x.timestamp >= startedMs, `a replayed record is stamped when it is replayed: ${x.timestamp}`);
    }
    assert.deepEqual(await consumed(bootstrap(), 'payments'), []);
  });

  it('replay skips a record without sluice.original.topic, reporting it, and exits 1', async () => {
    const r = await dlq('replay', DEAD_LETTER, '--filter', 'key=stray', ...b());
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `skipped ${DEAD_LETTER}/0/2: not a dead letter (no sluice.original.topic header); --to TOPIC replays it\n`);
    assert.equal(r.stdout, 'replayed 0 of 5 dead letters; 1 skipped\n');
  });

  it('replay --to redirects dead letters, those without sluice headers included, in partition/offset order', async () => {
    const r = await dlq('replay', DEAD_LETTER, '--to', 'orders.redirect', '--filter', 'key=stray', '--filter', 'key=p7', ...b());
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'replayed 2 of 5 dead letters to orders.redirect\n');
    const redirected = await consumed(bootstrap(), 'orders.redirect');
    assert.deepEqual(
      redirected.map(({ key, headers }) => ({ key, headers })),
      [
        { key: 'stray', headers: { x: '1', 'sluice.replay.count': '1', 'sluice.replayed.from': `${DEAD_LETTER}/0/2` } },
        { key: 'p7', headers: { 'sluice.replay.count': '2', 'sluice.replayed.from': `${DEAD_LETTER}/1/0` } },
      ],
    );
    const hex = await runCaptured((io) => runConsumeCommand(['orders.redirect', '--format', 'hex', '--offset', 'earliest', ...b()], io));
    assert.equal(hex.stdout, `${Buffer.from('written by hand').toString('hex')}\n${BINARY.toString('hex')}\n`);
    assert.deepEqual(await consumed(bootstrap(), 'payments'), []);
  });

  it('replay --partition with an offset range reads only that range, and replaying again publishes again', async () => {
    const r = await dlq('replay', DEAD_LETTER, '--partition', '1', '--from-offset', '1', '--to-offset', '1', '--output', 'json', ...b());
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      topic: DEAD_LETTER,
      dryRun: false,
      read: 1,
      matched: 1,
      replayed: 1,
      skipped: 0,
      targets: [{ name: 'orders', count: 1 }],
      skippedRecords: [],
    });
    const k3 = (await consumed(bootstrap(), 'orders')).filter((x) => x.key === 'k3');
    assert.equal(k3.length, 2);
    assert.deepEqual(k3[1]!.headers, { 'sluice.replay.count': '1', 'sluice.replayed.from': `${DEAD_LETTER}/1/1` });
  });

  it('replay --dry-run --output json lists the records, and a missing target topic fails before writing', async () => {
    const dry = await dlq('replay', DEAD_LETTER, '--filter', 'message~=gateway', '--dry-run', '--output', 'json', ...b());
    assert.equal(dry.code, 0, dry.stderr);
    const plan = JSON.parse(dry.stdout);
    assert.equal(plan.dryRun, true);
    assert.equal(plan.replayed, 0);
    assert.deepEqual(plan.records, [
      {
        partition: 1,
        offset: 0,
        key: { encoding: 'text', text: 'p7', bytes: 2, truncated: false },
        errorClass: 'TimeoutError',
        to: 'payments',
      },
    ]);
    const missing = await dlq('replay', DEAD_LETTER, '--to', 'nowhere', ...b());
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, "Error: Topic 'nowhere' does not exist.\n");
    assert.deepEqual(await consumed(bootstrap(), 'payments'), []);
  });
});
