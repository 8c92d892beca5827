/**
 * Writes a transaction's COMMIT or ABORT markers to the leaders of its partitions (Kafka's
 * TransactionMarkerChannelManager): one WriteTxnMarkers request per leader, this broker
 * included, retried partition by partition until each is written, the partition is gone, or
 * the coordinator no longer owns the transaction. A leader that refuses a marker as fenced
 * (an older producer or coordinator epoch) ends the attempt: a newer owner completes it.
 */
import { Errors } from '../../protocol/errors.ts';
import type { WriteTxnMarkersRequest, WriteTxnMarkersResponse } from '../../protocol/messages/write-txn-markers.ts';
import type { Clock } from '../runtime/clock.ts';
import type { FailureSink } from '../runtime/guard.ts';
import type { TxnMarkerSpec, TxnMarkerWriter } from './transaction-coordinator.ts';
import type { TopicPartitionRef } from './transaction-metadata.ts';

/** What the channel needs of the cluster. */
export interface TxnMarkerTransport {
  /** The partition's leader: its broker id, -1 while it has none, undefined once the partition no longer exists. */
  leaderOf(topic: string, partition: number): number | undefined;
  /** Sends one WriteTxnMarkers request to a broker (this one included) and resolves with its answer. */
  send(brokerId: number, request: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse>;
}

/** replica-side errors a retry can outlast (Kafka's TransactionMarkerRequestCompletionHandler). */
const FENCED = new Set([Errors.INVALID_PRODUCER_EPOCH.code, Errors.TRANSACTION_COORDINATOR_FENCED.code]);
const DEFAULT_RETRY_BACKOFF_MS = 100;

export class TxnMarkerChannel implements TxnMarkerWriter {
  constructor(
    private readonly transport: TxnMarkerTransport,
    private readonly clock: Clock,
    private readonly onError: FailureSink,
    private readonly retryBackoffMs = DEFAULT_RETRY_BACKOFF_MS,
  ) {}

  async write(
    marker: TxnMarkerSpec,
    partitions: readonly TopicPartitionRef[],
    isCurrent: () => boolean,
  ): Promise<'written' | 'fenced' | 'abandoned'> {
    let pending = [...partitions];
    for (let attempt = 1; ; attempt++) {
      if (!isCurrent()) return 'abandoned';
      const byLeader = new Map<number, TopicPartitionRef[]>();
      const next: TopicPartitionRef[] = [];
      for (const tp of pending) {
        const leader = this.transport.leaderOf(tp.topic, tp.partition);
        if (leader === undefined) continue;
        if (leader < 0) next.push(tp);
        else byLeader.set(leader, [...(byLeader.get(leader) ?? []), tp]);
      }
      // A broker down for long is reported on attempts 1, 10, 100, ...: not every 100 ms.
      const report = Number.isInteger(Math.log10(attempt));
      const answers = await Promise.all([...byLeader].map(([brokerId, tps]) => this.sendTo(brokerId, marker, tps, report)));
      for (const answer of answers) {
        for (const { tp, errorCode } of answer) {
          if (errorCode === Errors.NONE.code) continue;
          if (FENCED.has(errorCode)) return 'fenced';
          // A partition deleted meanwhile needs no marker.
          if (errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code && this.transport.leaderOf(tp.topic, tp.partition) === undefined)
            continue;
          next.push(tp);
        }
      }
      if (next.length === 0) return 'written';
      pending = next;
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, this.retryBackoffMs));
    }
  }

  private async sendTo(
    brokerId: number,
    marker: TxnMarkerSpec,
    tps: TopicPartitionRef[],
    report: boolean,
  ): Promise<{ tp: TopicPartitionRef; errorCode: number }[]> {
    const byTopic = new Map<string, number[]>();
    for (const tp of tps) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
    let response: WriteTxnMarkersResponse;
    try {
      response = await this.transport.send(brokerId, {
        markers: [
          {
            producerId: marker.producerId,
            producerEpoch: marker.producerEpoch,
            transactionResult: marker.commit,
            coordinatorEpoch: marker.coordinatorEpoch,
            topics: [...byTopic].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
          },
        ],
      });
    } catch (err) {
      if (report) this.onError(err, `sending transaction markers of producer ${marker.producerId} to broker ${brokerId}`);
      return tps.map((tp) => ({ tp, errorCode: Errors.NETWORK_EXCEPTION.code }));
    }
    const codes = new Map<string, number>();
    for (const topic of response.markers[0]?.topics ?? []) {
      for (const p of topic.partitions) codes.set(`${topic.name}\u0000${p.partitionIndex}`, p.errorCode);
    }
    return tps.map((tp) => ({ tp, errorCode: codes.get(`${tp.topic}\u0000${tp.partition}`) ?? Errors.UNKNOWN_SERVER_ERROR.code }));
  }
}
