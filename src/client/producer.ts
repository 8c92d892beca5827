/**
 * A producer of one topic over the wire, for tools: records go to their partitions as Kafka's
 * default partitioner places them (a record's own partition, else murmur2 of its key, else one
 * sticky partition per send for keyless records), one batch per partition, acks all or 1.
 * No idempotence: a Produce retried after a lost answer may write twice, as with
 * enable.idempotence=false.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors } from '../../protocol/errors.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../protocol/messages/produce.ts';
import { buildRecordBatch } from '../../protocol/records/builder.ts';
import type { RecordHeader } from '../../protocol/records/record.ts';
import type { KafkaCluster } from './cluster.ts';
import { UnknownTopicError, brokerError, sleep } from './errors.ts';
import { partitionForKey } from './partitioner.ts';

const RETRY_BACKOFF_MS = 100;

/** A record to produce; partition and timestamp null when the producer chooses them. */
export interface ProducerRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  partition: number | null;
  timestamp: number | null;
}

/** Produce errors after which nothing was written and a retry at the (new) leader can succeed. */
const RETRIABLE_PRODUCE_ERRORS: ReadonlySet<number> = new Set([
  Errors.NOT_LEADER_OR_FOLLOWER.code,
  Errors.LEADER_NOT_AVAILABLE.code,
  Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
  Errors.NOT_ENOUGH_REPLICAS.code,
  Errors.REQUEST_TIMED_OUT.code,
]);

interface PartitionFailure {
  errorCode: number;
  errorMessage: string | null;
}

export interface ProducerOptions {
  /** -1 (all) or 1. */
  acks: number;
  /** Produce request timeout, and how long retriable errors are retried. */
  timeoutMs: number;
}

/** Writes records to one topic's partition leaders. */
export class TopicProducer {
  private partitionCount = 0;
  private stickyPartition = -1;
  private acknowledged = 0;

  constructor(
    private readonly cluster: KafkaCluster,
    readonly topic: string,
    private readonly options: ProducerOptions,
  ) {}

  /** Records acknowledged so far. */
  get written(): number {
    return this.acknowledged;
  }

  /** Reads the topic's partition count; an unknown topic throws UnknownTopicError. */
  async open(): Promise<void> {
    const res = await this.cluster.metadata([this.topic]);
    const t = res.topics.find((x) => x.name === this.topic);
    if (t === undefined || t.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) throw new UnknownTopicError(this.topic);
    if (t.errorCode !== Errors.NONE.code) throw brokerError(t.errorCode, null, `topic '${this.topic}'`);
    this.partitionCount = t.partitions.length;
    this.stickyPartition = Math.floor(Math.random() * this.partitionCount);
  }

  private partitionOf(r: ProducerRecord): number {
    if (r.partition !== null) {
      if (r.partition >= this.partitionCount) {
        throw new Error(`partition ${r.partition} of topic '${this.topic}' does not exist (${this.partitionCount} partitions)`);
      }
      return r.partition;
    }
    return r.key === null ? this.stickyPartition : partitionForKey(r.key, this.partitionCount);
  }

  /**
   * Sends the records (one batch per partition) and waits for every acknowledgement; resolves
   * with the base offset each partition's batch was written at.
   */
  async send(records: readonly ProducerRecord[]): Promise<Map<number, number>> {
    const written = new Map<number, number>();
    if (records.length === 0) return written;
    const byPartition = new Map<number, ProducerRecord[]>();
    for (const r of records) {
      const p = this.partitionOf(r);
      byPartition.set(p, [...(byPartition.get(p) ?? []), r]);
    }
    this.stickyPartition = (this.stickyPartition + 1) % this.partitionCount;
    const nowMs = Date.now();
    const pending = new Map<number, Buffer>();
    for (const [p, rs] of byPartition) {
      pending.set(
        p,
        await buildRecordBatch(
          {},
          rs.map((r) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp ?? nowMs })),
        ),
      );
    }
    const deadline = Date.now() + this.options.timeoutMs;
    for (;;) {
      const failed = await this.sendToLeaders(pending, written);
      for (const p of pending.keys()) {
        if (!failed.has(p)) {
          this.acknowledged += byPartition.get(p)!.length;
          pending.delete(p);
        }
      }
      if (pending.size === 0) return written;
      if (Date.now() >= deadline) {
        const [p, e] = [...failed][0]!;
        throw brokerError(e.errorCode, e.errorMessage, `Produce ${this.topic}-${p}`);
      }
      await sleep(RETRY_BACKOFF_MS);
    }
  }

  /**
   * One Produce per leader; notes the base offset of each partition written in `written` and
   * returns the partitions that failed with a retriable error (throws on any other).
   */
  private async sendToLeaders(batches: ReadonlyMap<number, Buffer>, written: Map<number, number>): Promise<Map<number, PartitionFailure>> {
    const leaders = (await this.cluster.leaders([this.topic])).get(this.topic) ?? new Map<number, number>();
    const byLeader = new Map<number, number[]>();
    const failed = new Map<number, PartitionFailure>();
    for (const p of batches.keys()) {
      const leader = leaders.get(p) ?? -1;
      if (leader < 0) {
        failed.set(p, { errorCode: Errors.LEADER_NOT_AVAILABLE.code, errorMessage: null });
        continue;
      }
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), p]);
    }
    await Promise.all(
      [...byLeader].map(async ([leader, partitions]) => {
        const conn = await this.cluster.brokerConnection(leader);
        const res = await conn.send<ProduceResponse>(
          ApiKey.Produce,
          makeProduceRequest({
            acks: this.options.acks,
            timeoutMs: this.options.timeoutMs,
            topicData: [
              makeProduceRequestTopicProduceData({
                name: this.topic,
                partitionData: partitions.map((index) => makeProduceRequestPartitionProduceData({ index, records: batches.get(index)! })),
              }),
            ],
          }),
        );
        const answers = res.responses.flatMap((t) => t.partitionResponses);
        for (const p of partitions) {
          const a = answers.find((x) => x.index === p);
          if (a === undefined) throw new Error(`Produce answered without partition ${this.topic}-${p}`);
          if (a.errorCode === Errors.NONE.code) {
            written.set(p, Number(a.baseOffset));
            continue;
          }
          if (!RETRIABLE_PRODUCE_ERRORS.has(a.errorCode)) {
            const detail = a.recordErrors.map((e) => e.batchIndexErrorMessage).find((m) => m) ?? a.errorMessage;
            throw brokerError(a.errorCode, detail, `Produce ${this.topic}-${p}`);
          }
          failed.set(p, a);
        }
      }),
    );
    return failed;
  }
}
