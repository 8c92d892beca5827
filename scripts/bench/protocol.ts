// Protocol codec throughput against a ceiling measured in the same run: copying the same
// bytes with Buffer.copy. The bytes are those of the whole encoded message, records
// included. Records stay slices, so decoding a ProduceRequest or FetchResponse, or encoding
// a FetchResponse (whose records go to the socket by reference, as chunks for writev),
// should cost a fraction of one copy of the message (targets: decode >= 0.6, encode >= 0.5).
// Responses are encoded as the broker encodes them: into memory from a pool, given back once
// the response is sent (here, right after encoding).
//
// What a response costs the broker is its encoding and its sending together: every chunk
// of the writev is a Buffer view and a socket write of its own, which is why batches below
// ZERO_COPY_BYTES are copied into the response. The last figures measure that whole path,
// encode, corked writes to a loopback socket read by another process, until written, as
// broker CPU time against the CPU time of writing the same bytes as one buffer.
// Run: node --import tsx scripts/bench/protocol.ts
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { Reader, Writer } from '../../protocol/primitives.ts';
import { crc32c } from '../../protocol/crc.ts';
import { decodeProduceRequest, encodeProduceRequest, encodeProduceResponse } from '../../protocol/messages/produce.ts';
import type { ProduceRequest, ProduceResponse } from '../../protocol/messages/produce.ts';
import { decodeFetchResponse, encodeFetchResponse } from '../../protocol/messages/fetch.ts';
import type { FetchResponse } from '../../protocol/messages/fetch.ts';
import { ReadBufferPool } from '../../storage/read-buffers.ts';

const MIB = 1024 * 1024;
const responseMemory = new ReadBufferPool(64 * MIB);

/** Encodes a response as the broker does, into pooled memory given back once it is sent. */
function encodeResponse(encode: (w: Writer) => void): void {
  const lease = responseMemory.lease();
  const w = new Writer(256, lease);
  encode(w);
  w.toChunks();
  lease.release();
}
const RUN_MS = 200;
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

interface Measured {
  ratio: number;
  ratioMin: number;
  ratioMax: number;
  bps: number;
  copyBps: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * The ratio of fn's throughput to Buffer.copy of the same number of bytes, each measured
 * right after the other and repeated, so load on the machine affects both alike. Returns
 * the median ratio with its spread, and the median absolute throughputs.
 */
function versusCopy(bytes: number, fn: () => void): Measured {
  const src = Buffer.allocUnsafe(bytes).fill(1);
  const dst = Buffer.allocUnsafe(bytes);
  const runs = [];
  for (let i = 0; i < ROUNDS; i++) {
    const copyBps = throughput(bytes, () => {
      src.copy(dst);
    });
    const bps = throughput(bytes, fn);
    runs.push({ ratio: bps / copyBps, bps, copyBps });
  }
  const ratios = runs.map((r) => r.ratio);
  return {
    ratio: median(ratios),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    bps: median(runs.map((r) => r.bps)),
    copyBps: median(runs.map((r) => r.copyBps)),
  };
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

type Layout = ReturnType<typeof layout>;

function byTopic<T>(parts: Layout, partition: (p: Layout[number]) => T): [string, T[]][] {
  const topics = new Map<string, T[]>();
  for (const p of parts) {
    const list = topics.get(p.topic) ?? [];
    list.push(partition(p));
    topics.set(p.topic, list);
  }
  return [...topics];
}

function produceRequest(parts: Layout): ProduceRequest {
  return {
    transactionalId: null,
    acks: -1,
    timeoutMs: 30000,
    topicData: byTopic(parts, (p) => ({ index: p.partition, records: p.records })).map(([name, partitionData]) => ({
      name,
      partitionData,
    })),
  };
}

function produceResponse(parts: Layout): ProduceResponse {
  return {
    throttleTimeMs: 0,
    nodeEndpoints: [],
    responses: byTopic(parts, (p) => ({
      index: p.partition,
      errorCode: 0,
      baseOffset: 1_000_000n,
      logAppendTimeMs: -1n,
      logStartOffset: 0n,
      recordErrors: [],
      errorMessage: null,
      currentLeader: { leaderId: -1, leaderEpoch: -1 },
    })).map(([name, partitionResponses]) => ({ name, partitionResponses })),
  };
}

function fetchResponse(parts: Layout): FetchResponse {
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    nodeEndpoints: [],
    responses: byTopic(parts, (p) => ({
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
    })).map(([topic, partitions]) => ({ topic, topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions })),
  };
}

/** The encoded bytes of a message, records included, as one Buffer. */
function encoded(encode: (w: Writer) => void): Buffer {
  const w = new Writer();
  encode(w);
  return w.toBuffer();
}

const mb = (bps: number) => (bps / 1e6).toFixed(0);
const report = (label: string, bytes: number, m: Measured) =>
  console.log(
    `${label}: ratio ${m.ratio.toFixed(2)} (${m.ratioMin.toFixed(2)}-${m.ratioMax.toFixed(2)}) vs Buffer.copy of the ${bytes} bytes ` +
      `(${mb(m.bps)} MB/s; copy ${mb(m.copyBps)} MB/s)`,
  );

function measure(label: string, bytes: number, fn: () => void): void {
  report(label, bytes, versusCopy(bytes, fn));
}

for (const [label, partitions, topics] of [
  ['16 partitions x 64 KiB', 16, 4],
  ['1024 partitions x 1 KiB', 1024, 32],
  // Batches this small are copied into the response rather than sent by reference.
  ['2048 partitions x 512 B', 2048, 64],
] as const) {
  const parts = layout(partitions, topics);
  const many = partitions === 1024;

  const produce = produceRequest(parts);
  for (const version of [7, 9]) {
    const frame = encoded((w) => encodeProduceRequest(w, produce, version));
    measure(`decode ProduceRequest v${version}, ${label}`, frame.length, () => {
      decodeProduceRequest(new Reader(frame), version);
    });
  }

  const fetch = fetchResponse(parts);
  for (const version of [11, 12]) {
    const bytes = encoded((w) => encodeFetchResponse(w, fetch, version)).length;
    measure(`encode FetchResponse v${version}, ${label}`, bytes, () => {
      encodeResponse((w) => encodeFetchResponse(w, fetch, version));
    });
  }
  if (!many) continue;

  for (const version of [11, 12]) {
    const frame = encoded((w) => encodeFetchResponse(w, fetch, version));
    measure(`decode FetchResponse v${version}, ${label}`, frame.length, () => {
      decodeFetchResponse(new Reader(frame), version);
    });
  }

  const response = produceResponse(parts);
  for (const version of [7, 9]) {
    const bytes = encoded((w) => encodeProduceResponse(w, response, version)).length;
    measure(`encode ProduceResponse v${version}, ${partitions} partitions`, bytes, () => {
      encodeResponse((w) => encodeProduceResponse(w, response, version));
    });
  }
}

const crcInput = Buffer.allocUnsafe(MIB).fill(7);
measure('CRC-32C of 1 MiB', MIB, () => {
  crc32c(crcInput);
});

/** A process on loopback that reads and drops everything sent to it, and a socket to it. */
async function sink(): Promise<{ socket: Socket; close: () => void }> {
  const child = spawn(
    process.execPath,
    ['-e', "const s = require('net').createServer((c) => c.resume()).listen(0, '127.0.0.1', () => console.log(s.address().port))"],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve) => child.stdout!.once('data', (d) => resolve(Number(String(d).trim()))));
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  return {
    socket,
    close: () => {
      socket.destroy();
      child.kill();
    },
  };
}

/** Corked writes of `chunks`, one writev, resolved once the socket has taken the last. */
function send(socket: Socket, chunks: Buffer[]): Promise<void> {
  socket.cork();
  for (let i = 0; i < chunks.length - 1; i++) socket.write(chunks[i]!);
  const written = new Promise<void>((resolve) => socket.write(chunks.at(-1)!, () => resolve()));
  socket.uncork();
  return written;
}

/** CPU microseconds of this process per call of `fn`, and bytes per second of wall time. */
async function cpuPerCall(bytes: number, fn: () => Promise<void>): Promise<{ cpuUs: number; bps: number }> {
  const calls = 40;
  for (let i = 0; i < 10; i++) await fn();
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await fn();
  const used = process.cpuUsage(cpu);
  const wallNs = Number(process.hrtime.bigint() - start);
  return { cpuUs: (used.user + used.system) / calls, bps: (bytes * calls) / (wallNs / 1e9) };
}

const { socket, close } = await sink();
for (const [label, partitions, topics] of [
  ['1024 partitions x 1 KiB', 1024, 32],
  ['2048 partitions x 512 B', 2048, 64],
] as const) {
  const fetch = fetchResponse(layout(partitions, topics));
  const version = 11;
  const whole = encoded((w) => encodeFetchResponse(w, fetch, version));
  const runs = [];
  for (let round = 0; round < ROUNDS; round++) {
    const ceiling = await cpuPerCall(whole.length, () => send(socket, [whole]));
    const ours = await cpuPerCall(whole.length, async () => {
      const lease = responseMemory.lease();
      const w = new Writer(256, lease);
      encodeFetchResponse(w, fetch, version);
      await send(socket, w.toChunks());
      lease.release();
    });
    runs.push({ ratio: ceiling.cpuUs / ours.cpuUs, ours, ceiling });
  }
  const ratios = runs.map((r) => r.ratio);
  const mid = runs.find((r) => r.ratio === median(ratios))!;
  console.log(
    `encode and send FetchResponse v${version}, ${label}: ratio ${mid.ratio.toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}) ` +
      `vs sending its ${whole.length} bytes as one buffer, in CPU time (${mid.ours.cpuUs.toFixed(0)} us, ${mb(mid.ours.bps)} MB/s; ` +
      `one buffer ${mid.ceiling.cpuUs.toFixed(0)} us, ${mb(mid.ceiling.bps)} MB/s)`,
  );
}
close();
