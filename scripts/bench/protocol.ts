// Protocol codec throughput against a ceiling measured in the same run: copying the same
// bytes with Buffer.copy. Records stay slices, so decoding a ProduceRequest or encoding a
// FetchResponse should cost a fraction of one copy of the payload (target ratio >= 0.5).
// Run: node --import tsx scripts/bench/protocol.ts
import { Reader, Writer } from '../../protocol/primitives.ts';
import { crc32c } from '../../protocol/crc.ts';
import { decodeProduceRequest, encodeProduceRequest } from '../../protocol/messages/produce.ts';
import type { ProduceRequest } from '../../protocol/messages/produce.ts';
import { encodeFetchResponse } from '../../protocol/messages/fetch.ts';
import type { FetchResponse } from '../../protocol/messages/fetch.ts';

const MIB = 1024 * 1024;
const RUN_MS = 300;
const ROUNDS = 5;

/** Runs fn repeatedly for about RUN_MS and returns bytes per second, `bytes` per call. */
function throughput(bytes: number, fn: () => void): number {
  for (let i = 0; i < 20; i++) fn();
  let calls = 0;
  const start = process.hrtime.bigint();
  let elapsedNs = 0n;
  do {
    for (let i = 0; i < 10; i++) fn();
    calls += 10;
    elapsedNs = process.hrtime.bigint() - start;
  } while (elapsedNs < BigInt(RUN_MS) * 1_000_000n);
  return (bytes * calls) / (Number(elapsedNs) / 1e9);
}

const copySrc = Buffer.allocUnsafe(MIB).fill(1);
const copyDst = Buffer.allocUnsafe(MIB);

/**
 * The ratio of fn's throughput to Buffer.copy of the same number of bytes, each measured
 * right after the other and repeated, so load on the machine affects both alike. Returns
 * the median ratio and the median absolute throughputs.
 */
function versusCopy(bytes: number, fn: () => void): { ratio: number; bps: number; copyBps: number } {
  const src = bytes === MIB ? copySrc : Buffer.allocUnsafe(bytes).fill(1);
  const dst = bytes === MIB ? copyDst : Buffer.allocUnsafe(bytes);
  const runs = [];
  for (let i = 0; i < ROUNDS; i++) {
    const copyBps = throughput(bytes, () => {
      src.copy(dst);
    });
    const bps = throughput(bytes, fn);
    runs.push({ ratio: bps / copyBps, bps, copyBps });
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { ratio: median(runs.map((r) => r.ratio)), bps: median(runs.map((r) => r.bps)), copyBps: median(runs.map((r) => r.copyBps)) };
}

/** 1 MiB of record-batch bytes split over `partitions` partitions of `topics` topics. */
function layout(partitions: number, topics: number): { topic: string; partition: number; records: Buffer }[] {
  const per = Math.floor(MIB / partitions);
  const out = [];
  for (let p = 0; p < partitions; p++) {
    out.push({ topic: `topic-${p % topics}`, partition: Math.floor(p / topics), records: Buffer.allocUnsafe(per).fill(p & 0xff) });
  }
  return out;
}

function produceRequest(parts: ReturnType<typeof layout>): ProduceRequest {
  const byTopic = new Map<string, { index: number; records: Buffer }[]>();
  for (const p of parts) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), { index: p.partition, records: p.records }]);
  return {
    transactionalId: null,
    acks: -1,
    timeoutMs: 30000,
    topicData: [...byTopic].map(([name, partitionData]) => ({ name, partitionData })),
  };
}

function fetchResponse(parts: ReturnType<typeof layout>): FetchResponse {
  const byTopic = new Map<string, FetchResponse['responses'][number]['partitions']>();
  for (const p of parts) {
    byTopic.set(p.topic, [
      ...(byTopic.get(p.topic) ?? []),
      {
        partitionIndex: p.partition,
        errorCode: 0,
        highWatermark: 1_000_000n,
        lastStableOffset: 1_000_000n,
        logStartOffset: 0n,
        divergingEpoch: { epoch: -1, endOffset: -1n },
        currentLeader: { leaderId: -1, leaderEpoch: -1 },
        snapshotId: { endOffset: -1n, epoch: -1 },
        abortedTransactions: null,
        preferredReadReplica: -1,
        records: p.records,
      },
    ]);
  }
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    nodeEndpoints: [],
    responses: [...byTopic].map(([topic, partitions]) => ({ topic, topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions })),
  };
}

const mb = (bps: number) => (bps / 1e6).toFixed(0);
const report = (label: string, m: ReturnType<typeof versusCopy>) =>
  console.log(`${label}: ratio ${m.ratio.toFixed(2)} vs Buffer.copy (${mb(m.bps)} MB/s; copy ${mb(m.copyBps)} MB/s)`);

for (const [label, partitions, topics] of [
  ['16 partitions x 64 KiB', 16, 4],
  ['1024 partitions x 1 KiB', 1024, 32],
] as const) {
  const parts = layout(partitions, topics);
  const payload = parts.reduce((n, p) => n + p.records.length, 0);

  for (const version of [7, 9]) {
    const w = new Writer();
    encodeProduceRequest(w, produceRequest(parts), version);
    const frame = w.toBuffer();
    report(
      `decode ProduceRequest v${version}, ${label}`,
      versusCopy(payload, () => {
        decodeProduceRequest(new Reader(frame), version);
      }),
    );
  }

  const fetch = fetchResponse(parts);
  for (const version of [11, 12]) {
    report(
      `encode FetchResponse v${version}, ${label}`,
      versusCopy(payload, () => {
        const w = new Writer();
        encodeFetchResponse(w, fetch, version);
        w.toChunks();
      }),
    );
  }
}

const crcInput = Buffer.allocUnsafe(MIB).fill(7);
report(
  'CRC-32C of 1 MiB',
  versusCopy(MIB, () => {
    crc32c(crcInput);
  }),
);
