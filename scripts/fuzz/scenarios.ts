// Targeted requests: valid encodings that carry the hostile content generic generation
// reaches only rarely (duplicate names, 2^60 retention, corrupt batches behind a valid
// CRC, decompression bombs, request storms).
import { ApiKey } from '../../protocol/messages/index.ts';
import { CompressionType } from '../../protocol/records/index.ts';
import {
  CODECS,
  LEDGER_PARTITIONS,
  LEDGER_TOPICS,
  SCRATCH_TOPICS,
  type Generator,
  type GenRequest,
  type ProducedBatch,
} from './generator.ts';
import { bombs, corruptBatchInPlace, resealCrc, TRANSACTIONAL_BIT } from './mutator.ts';
import type { Prng } from './prng.ts';

export type Scenario = (gen: Generator, rng: Prng) => Promise<GenRequest | null>;

function versionIn(gen: Generator, apiKey: number, lo: number, hi: number, rng: Prng): number | null {
  const adv = gen.advertised.get(apiKey);
  if (!adv) return null;
  const a = Math.max(lo, adv[0]);
  const b = Math.min(hi, adv[1]);
  return a <= b ? rng.range(a, b) : null;
}

const joinGroupDuplicateProtocols: Scenario = async (gen, rng) => {
  const v = versionIn(gen, ApiKey.JoinGroup, 0, 99, rng);
  if (v === null) return null;
  const req = await gen.request(ApiKey.JoinGroup, v);
  const msg = req.msg as { protocols: { name: string; metadata: Buffer }[]; groupId: string };
  const first = msg.protocols[0] ?? { name: 'range', metadata: Buffer.alloc(0) };
  msg.protocols = [first, { ...first }];
  msg.groupId = `fz-dup-${rng.int(4)}`;
  req.label += ' duplicate protocol names';
  return req;
};

const offsetCommitHugeRetention: Scenario = async (gen, rng) => {
  const v = versionIn(gen, ApiKey.OffsetCommit, 2, 4, rng);
  if (v === null) return null;
  const req = await gen.request(ApiKey.OffsetCommit, v);
  const msg = req.msg as { retentionTimeMs: bigint; generationIdOrMemberEpoch: number; memberId: string };
  msg.retentionTimeMs = rng.pick([2n ** 60n, 2n ** 63n - 1n, -(2n ** 62n)]);
  msg.generationIdOrMemberEpoch = -1;
  msg.memberId = '';
  req.label += ` retentionTimeMs=${msg.retentionTimeMs}`;
  return req;
};

const metadataNullTopicName: Scenario = async (gen, rng) => {
  const v = versionIn(gen, ApiKey.Metadata, 10, 99, rng);
  if (v === null) return null;
  const req = await gen.request(ApiKey.Metadata, v);
  const msg = req.msg as { topics: { name: string | null; topicId: string }[] | null };
  msg.topics = [{ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAA' }];
  req.label += ' null topic name';
  return req;
};

/** A Produce to one ledger partition whose batch the caller replaces. */
async function produceWith(
  gen: Generator,
  rng: Prng,
  label: string,
  edit: (b: ProducedBatch) => Promise<void> | void,
): Promise<GenRequest | null> {
  const v = versionIn(gen, ApiKey.Produce, 3, 99, rng);
  if (v === null) return null;
  const req = await gen.request(ApiKey.Produce, v);
  const msg = req.msg as { acks: number; topicData: { name: string; partitionData: { index: number; records: Buffer | null }[] }[] };
  msg.acks = rng.pick([1, -1]);
  req.expectResponse = true;
  const topic = rng.pick(LEDGER_TOPICS);
  const partition = rng.int(LEDGER_PARTITIONS);
  const b = await gen.batches.batch(topic, partition, rng.pick(CODECS));
  await edit(b);
  msg.topicData = [{ name: topic, partitionData: [{ index: partition, records: b.batch }] }];
  req.produced = [b];
  req.label = `Produce v${v} ${topic}/${partition} ${label}`;
  return req;
}

const corruptCompressedBatch: Scenario = (gen, rng) =>
  produceWith(gen, rng, 'corrupt batch', async (b) => {
    // Rebuild with a real codec so the damage lands in compressed bytes.
    const codec = rng.pick(CODECS.filter((c) => c !== CompressionType.None));
    b.batch = await gen.batches.build(codec, b.records);
    const n = rng.range(1, 3);
    const whats: string[] = [];
    for (let i = 0; i < n; i++) whats.push(corruptBatchInPlace(rng, b.batch));
    resealCrc(b.batch);
    b.tampered = `codec ${CompressionType[codec]}: ${whats.join(',')}`;
  });

const transactionalWithoutProducerId: Scenario = (gen, rng) =>
  produceWith(gen, rng, 'transactional, producer id -1', (b) => {
    b.batch.writeInt16BE(b.batch.readInt16BE(21) | TRANSACTIONAL_BIT, 21);
    resealCrc(b.batch);
    b.knownInvalid = 'transactional batch with producer id -1';
    b.tampered = 'transactional bit set';
  });

const decompressionBomb: Scenario = async (gen, rng) => {
  const all = await bombs();
  const bomb = rng.pick(all);
  return produceWith(gen, rng, `${CompressionType[bomb.codec]} bomb ${bomb.batch.length} B -> ${bomb.inflatedBytes >> 20} MiB`, (b) => {
    b.batch = Buffer.from(bomb.batch);
    b.knownInvalid = `decompression bomb (${bomb.inflatedBytes} bytes of zeros)`;
    b.tampered = 'bomb';
  });
};

const createTopicsStorm: Scenario = async (gen, rng) => {
  const v = versionIn(gen, ApiKey.CreateTopics, 2, 99, rng);
  if (v === null) return null;
  const req = await gen.request(ApiKey.CreateTopics, v);
  const msg = req.msg as { topics: Record<string, unknown>[]; timeoutMs: number; validateOnly: boolean };
  const base = msg.topics[0]!;
  const run = rng.u32().toString(36);
  msg.topics = Array.from({ length: 1000 }, (_, i) => ({
    ...base,
    name: `fz-storm-${run}-${i}`,
    numPartitions: i % 100 === 0 ? 1000 : rng.range(1, 8),
    replicationFactor: -1,
    assignments: [],
    configs: [],
  }));
  msg.timeoutMs = 30000;
  msg.validateOnly = false;
  req.label = `CreateTopics v${v} storm: 1000 topics`;
  return req;
};

const hugeCounts: Scenario = async (gen, rng) => {
  const pick = rng.int(3);
  if (pick === 0) {
    const v = versionIn(gen, ApiKey.CreateTopics, 0, 99, rng);
    if (v === null) return null;
    const req = await gen.request(ApiKey.CreateTopics, v);
    const msg = req.msg as { topics: { name: string; numPartitions: number; replicationFactor: number; assignments: unknown[] }[] };
    for (const t of msg.topics) {
      t.name = `fz-huge-${rng.int(1000)}`;
      t.numPartitions = rng.pick([2147483647, 100000, -5]);
      t.replicationFactor = rng.pick([-1, 32767, 0]);
      t.assignments = [];
    }
    req.label += ' huge partition count';
    return req;
  }
  if (pick === 1) {
    const v = versionIn(gen, ApiKey.ListOffsets, 1, 99, rng);
    if (v === null) return null;
    const req = await gen.request(ApiKey.ListOffsets, v);
    const msg = req.msg as { topics: { partitions: { timestamp: bigint }[] }[] };
    for (const t of msg.topics) for (const p of t.partitions) p.timestamp = rng.pick([-3n, -(2n ** 63n), 2n ** 62n]);
    req.label += ' extreme timestamps';
    return req;
  }
  const v = versionIn(gen, ApiKey.DeleteRecords, 0, 99, rng);
  if (v === null) return null;
  const req = await gen.request(ApiKey.DeleteRecords, v);
  const msg = req.msg as { topics: { name: string; partitions: { partitionIndex: number; offset: bigint }[] }[] };
  for (const t of msg.topics) {
    t.name = rng.pick(SCRATCH_TOPICS);
    for (const p of t.partitions) p.offset = rng.pick([2n ** 60n, -5n, -(2n ** 63n)]);
  }
  req.label += ' extreme offsets';
  return req;
};

/** Frequent scenarios, picked at random among the valid requests. */
export const SCENARIOS: readonly { name: string; weight: number; run: Scenario }[] = [
  { name: 'join-group-duplicate-protocols', weight: 1, run: joinGroupDuplicateProtocols },
  { name: 'offset-commit-huge-retention', weight: 1, run: offsetCommitHugeRetention },
  { name: 'metadata-null-topic-name', weight: 1, run: metadataNullTopicName },
  { name: 'corrupt-compressed-batch', weight: 3, run: corruptCompressedBatch },
  { name: 'transactional-without-producer-id', weight: 1, run: transactionalWithoutProducerId },
  { name: 'huge-counts', weight: 2, run: hugeCounts },
];

/** Expensive scenarios: a few per run. */
export const HEAVY_SCENARIOS: readonly { name: string; run: Scenario }[] = [
  { name: 'decompression-bomb', run: decompressionBomb },
  { name: 'create-topics-storm', run: createTopicsStorm },
];

export function pickScenario(rng: Prng): { name: string; run: Scenario } {
  const total = SCENARIOS.reduce((s, x) => s + x.weight, 0);
  let r = rng.float() * total;
  for (const s of SCENARIOS) {
    r -= s.weight;
    if (r < 0) return s;
  }
  return SCENARIOS[0]!;
}
