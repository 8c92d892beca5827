// The clients of a simulated cluster, built on our own client (src/client/) over the
// simulated network: an idempotent acks=all producer, the Fetch the consumer group's members
// read with (consumer.ts), and the reader that takes each partition's final log at the end
// of a run.
//
// The producer keeps one batch in flight per partition and resends it, same producer id and
// sequence, after any failure (a reset connection, a timeout, a leader change): a request
// whose answer was lost arrives twice, and the broker must store it once. A record counts
// as acknowledged only when a produce answered NONE for it.

import { Errors } from '../../protocol/errors.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../protocol/messages/fetch.ts';
import { makeInitProducerIdRequest, type InitProducerIdResponse } from '../../protocol/messages/init-producer-id.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../protocol/messages/produce.ts';
import { toSafeNumber } from '../../protocol/primitives.ts';
import { RecordBatch, buildUncompressedRecordBatch, readRecords, validateBatchAt } from '../../protocol/records/index.ts';
import { KafkaCluster } from '../../src/client/cluster.ts';
import type { Clock } from '../../src/runtime/clock.ts';
import type { Network } from '../../src/runtime/network.ts';
import type { AckedRecord } from './invariants.ts';
import type { Prng } from './random.ts';
import type { Trace } from './trace.ts';

export interface ClientContext {
  name: string;
  clock: Clock;
  network: Network;
  prng: Prng;
  trace: Trace;
  bootstrap: string[];
  /** False once the run stops making new work (the clients then finish what is in flight). */
  active: () => boolean;
  /** False once the run is over: every loop ends. */
  running: () => boolean;
}

const PRODUCE_MAX_VERSION = 11;
const FETCH_MAX_VERSION = 12;

export function clusterOf(ctx: ClientContext): KafkaCluster {
  return new KafkaCluster(ctx.bootstrap, {
    clientId: ctx.name,
    network: ctx.network,
    clock: ctx.clock,
    connectTimeoutMs: 3000,
    requestTimeoutMs: 4000,
  });
}

export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

export function note(ctx: ClientContext, what: string): void {
  ctx.trace.add(ctx.clock.monotonicMs(), ctx.name, what);
}

export function errorName(code: number): string {
  return Object.values(Errors).find((e) => e.code === code)?.name ?? `error ${code}`;
}

/** Creates the topic, retrying until the cluster answers (or says it exists). */
export async function createTopic(ctx: ClientContext, topic: string, partitions: number, replicationFactor: number): Promise<void> {
  const cluster = clusterOf(ctx);
  try {
    while (ctx.running()) {
      try {
        const conn = await cluster.anyConnection();
        const res = await conn.send<CreateTopicsResponse>(
          ApiKey.CreateTopics,
          makeCreateTopicsRequest({
            timeoutMs: 5000,
            topics: [makeCreateTopicsRequestCreatableTopic({ name: topic, numPartitions: partitions, replicationFactor })],
          }),
        );
        const code = res.topics[0]?.errorCode ?? -1;
        note(ctx, `create topic ${topic}: ${errorName(code)}`);
        if (code === Errors.NONE.code || code === Errors.TOPIC_ALREADY_EXISTS.code) return;
      } catch (err) {
        note(ctx, `create topic ${topic} failed: ${(err as Error).message}`);
      }
      await sleep(ctx.clock, 200);
    }
  } finally {
    await cluster.close();
  }
}

export class SimProducer {
  readonly acked: AckedRecord[] = [];
  /** Values sent but never acknowledged: in the log or not, either is allowed. */
  inDoubt = 0;
  private producerId = -1n;
  private producerEpoch = 0;
  private readonly sequences = new Map<number, number>();
  private readonly busy = new Set<number>();
  private readonly cluster: KafkaCluster;
  private written = 0;

  constructor(
    private readonly ctx: ClientContext,
    private readonly topic: string,
    private readonly partitions: number,
  ) {
    this.cluster = clusterOf(ctx);
  }

  async run(): Promise<void> {
    const { ctx } = this;
    while (ctx.active()) {
      if (this.producerId < 0n) await this.initProducerId();
      const p = ctx.prng.int(this.partitions);
      if (this.producerId >= 0n && !this.busy.has(p)) void this.send(p);
      await sleep(ctx.clock, ctx.prng.range(5, 60));
    }
    while (this.busy.size > 0 && ctx.running()) await sleep(ctx.clock, 100);
    await this.cluster.close();
  }

  private async initProducerId(): Promise<void> {
    try {
      const conn = await this.cluster.anyConnection();
      const res = await conn.send<InitProducerIdResponse>(
        ApiKey.InitProducerId,
        makeInitProducerIdRequest({ transactionalId: null, transactionTimeoutMs: 60_000 }),
      );
      if (res.errorCode === Errors.NONE.code) {
        this.producerId = res.producerId;
        this.producerEpoch = res.producerEpoch;
        this.sequences.clear();
        note(this.ctx, `producer id ${res.producerId} epoch ${res.producerEpoch}`);
      } else {
        note(this.ctx, `InitProducerId: ${errorName(res.errorCode)}`);
      }
    } catch (err) {
      note(this.ctx, `InitProducerId failed: ${(err as Error).message}`);
    }
    if (this.producerId < 0n) await sleep(this.ctx.clock, 200);
  }

  /** Sends one new record to partition `p` and resends it until it is acknowledged or must be given up. */
  private async send(p: number): Promise<void> {
    const { ctx } = this;
    this.busy.add(p);
    const value = `${ctx.name}-${++this.written}`;
    const producerId = this.producerId;
    const sequence = this.sequences.get(p) ?? 0;
    const batch = buildUncompressedRecordBatch({ producerId, producerEpoch: this.producerEpoch, baseSequence: sequence }, [
      { value: Buffer.from(value), timestamp: ctx.clock.now() },
    ]);
    try {
      for (let attempt = 1; ctx.running(); attempt++) {
        if (producerId !== this.producerId) break;
        let code: number;
        let offset = -1;
        try {
          const conn = await this.cluster.leaderConnection(this.topic, p);
          const res = await conn.send<ProduceResponse>(
            ApiKey.Produce,
            makeProduceRequest({
              acks: -1,
              timeoutMs: 2000,
              topicData: [
                makeProduceRequestTopicProduceData({
                  name: this.topic,
                  partitionData: [makeProduceRequestPartitionProduceData({ index: p, records: batch })],
                }),
              ],
            }),
            conn.version(ApiKey.Produce, PRODUCE_MAX_VERSION),
          );
          const r = res.responses[0]?.partitionResponses[0];
          code = r?.errorCode ?? Errors.UNKNOWN_SERVER_ERROR.code;
          offset = r === undefined ? -1 : toSafeNumber(r.baseOffset);
        } catch (err) {
          note(ctx, `produce ${value} to p${p} (attempt ${attempt}) failed: ${(err as Error).message}`);
          await sleep(ctx.clock, ctx.prng.range(50, 300));
          continue;
        }
        if (code === Errors.NONE.code) {
          this.acked.push({ topic: this.topic, partition: p, offset, value });
          this.sequences.set(p, sequence + 1);
          note(ctx, `acked ${value} at p${p} offset ${offset}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
          return;
        }
        note(ctx, `produce ${value} to p${p} (attempt ${attempt}): ${errorName(code)}`);
        if (
          code === Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code ||
          code === Errors.UNKNOWN_PRODUCER_ID.code ||
          code === Errors.INVALID_PRODUCER_EPOCH.code ||
          code === Errors.DUPLICATE_SEQUENCE_NUMBER.code
        ) {
          // The producer's state on the broker is not what this producer holds: start over
          // with a new producer id; whether this record was written stays unknown.
          this.producerId = -1n;
          break;
        }
        await sleep(ctx.clock, ctx.prng.range(50, 300));
      }
      this.inDoubt++;
    } finally {
      this.busy.delete(p);
    }
  }
}

/** One Fetch from the partition's leader: the data records at or after `offset`, and the high watermark. */
export async function fetchRecords(
  cluster: KafkaCluster,
  topic: string,
  partition: number,
  offset: number,
  maxWaitMs: number,
): Promise<{ records: Map<number, string>; highWatermark: number }> {
  const conn = await cluster.leaderConnection(topic, partition);
  const res = await conn.send<FetchResponse>(
    ApiKey.Fetch,
    makeFetchRequest({
      replicaId: -1,
      maxWaitMs,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        makeFetchRequestFetchTopic({
          topic,
          partitions: [makeFetchRequestFetchPartition({ partition, fetchOffset: BigInt(offset), partitionMaxBytes: 1 << 20 })],
        }),
      ],
    }),
    conn.version(ApiKey.Fetch, FETCH_MAX_VERSION),
  );
  if (res.errorCode !== Errors.NONE.code) throw new Error(`Fetch: ${errorName(res.errorCode)}`);
  const data = res.responses[0]?.partitions.find((x) => x.partitionIndex === partition);
  if (data === undefined) throw new Error('Fetch answered without the partition');
  if (data.errorCode !== Errors.NONE.code) throw new Error(`Fetch ${topic}-${partition}: ${errorName(data.errorCode)}`);
  const out = new Map<number, string>();
  const buf = data.records;
  let at = 0;
  while (buf !== null && at < buf.length) {
    let size: number;
    try {
      size = validateBatchAt(buf, at, buf.length, false);
    } catch {
      // The last batch may be cut short at maxBytes.
      break;
    }
    const batch = new RecordBatch(buf, at);
    at += size;
    if (batch.isControl) continue;
    for (const r of await readRecords(batch)) out.set(r.offset, r.value === null ? '' : r.value.toString());
  }
  return { records: out, highWatermark: toSafeNumber(data.highWatermark) };
}

/**
 * Every record of a partition below its high watermark, read from its leader, once that high
 * watermark reaches `endOffset`; undefined if the leader cannot be read. A new leader may
 * hold acknowledged records above its high watermark until a follower rejoins its ISR (the
 * high watermark does not move under min.insync.replicas): they are committed, and become
 * readable once the cluster has healed.
 */
export async function readFinalLog(
  ctx: ClientContext,
  topic: string,
  partition: number,
  endOffset: number,
): Promise<Map<number, string> | undefined> {
  const cluster = clusterOf(ctx);
  const out = new Map<number, string>();
  let position = 0;
  try {
    for (let failures = 0; failures < 30 && ctx.running(); ) {
      try {
        const got = await fetchRecords(cluster, topic, partition, position, 0);
        for (const [offset, value] of got.records) {
          if (offset < position) continue;
          out.set(offset, value);
          position = offset + 1;
        }
        if (got.records.size === 0 || position >= got.highWatermark) {
          if (position >= got.highWatermark && position >= endOffset) return out;
          if (position >= got.highWatermark) await sleep(ctx.clock, 200);
          else position = got.highWatermark;
        }
      } catch (err) {
        failures++;
        note(ctx, `final read p${partition} at ${position} failed: ${(err as Error).message}`);
        await sleep(ctx.clock, 200);
      }
    }
    return undefined;
  } finally {
    await cluster.close();
  }
}
