// One transactional id's state at its coordinator, as Kafka's TransactionMetadata keeps it:
// the producer id and epoch it hands out, the transaction's state and partitions, and the
// state an append to `__transaction_state` is moving it to (`pendingState`: while set, other
// requests for the id answer CONCURRENT_TRANSACTIONS).

/** Kafka's TransactionState, with its ids as `__transaction_state` stores them. */
export enum TransactionState {
  Empty = 0,
  Ongoing = 1,
  PrepareCommit = 2,
  PrepareAbort = 3,
  CompleteCommit = 4,
  CompleteAbort = 5,
  Dead = 6,
  PrepareEpochFence = 7,
}

/** The names DescribeTransactions and ListTransactions use (TransactionState.stateName). */
export const TRANSACTION_STATE_NAMES: Readonly<Record<TransactionState, string>> = {
  [TransactionState.Empty]: 'Empty',
  [TransactionState.Ongoing]: 'Ongoing',
  [TransactionState.PrepareCommit]: 'PrepareCommit',
  [TransactionState.PrepareAbort]: 'PrepareAbort',
  [TransactionState.CompleteCommit]: 'CompleteCommit',
  [TransactionState.CompleteAbort]: 'CompleteAbort',
  [TransactionState.Dead]: 'Dead',
  [TransactionState.PrepareEpochFence]: 'PrepareEpochFence',
};

export const NO_PRODUCER_EPOCH = -1;
const MAX_PRODUCER_EPOCH = 32767;

export interface TopicPartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** What `__transaction_state` keeps of a transactional id (TransactionLogValue). */
export interface TxnSnapshot {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly txnTimeoutMs: number;
  readonly state: TransactionState;
  readonly partitions: readonly TopicPartitionRef[];
  readonly txnLastUpdateTimestampMs: number;
  readonly txnStartTimestampMs: number;
}

/** A record of `__transaction_state`; a null value is a tombstone (the id expired). */
export interface TxnLogRecord {
  readonly transactionalId: string;
  readonly value: TxnSnapshot | null;
}

function partitionKey(tp: TopicPartitionRef): string {
  return `${tp.topic}\u0000${tp.partition}`;
}

export class TransactionMetadata {
  producerId: bigint;
  producerEpoch: number;
  /** The epoch before the last bump, to answer a retried InitProducerId whose answer was lost (KIP-360). */
  lastProducerEpoch = NO_PRODUCER_EPOCH;
  txnTimeoutMs: number;
  state: TransactionState;
  readonly partitions = new Map<string, TopicPartitionRef>();
  txnStartTimestampMs: number;
  txnLastUpdateTimestampMs: number;
  /** The state an append in flight moves to; null when none is. */
  pendingState: TransactionState | null = null;

  constructor(
    readonly transactionalId: string,
    snapshot: TxnSnapshot,
  ) {
    this.producerId = snapshot.producerId;
    this.producerEpoch = snapshot.producerEpoch;
    this.txnTimeoutMs = snapshot.txnTimeoutMs;
    this.state = snapshot.state;
    for (const tp of snapshot.partitions) this.partitions.set(partitionKey(tp), tp);
    this.txnStartTimestampMs = snapshot.txnStartTimestampMs;
    this.txnLastUpdateTimestampMs = snapshot.txnLastUpdateTimestampMs;
  }

  snapshot(): TxnSnapshot {
    return {
      producerId: this.producerId,
      producerEpoch: this.producerEpoch,
      txnTimeoutMs: this.txnTimeoutMs,
      state: this.state,
      partitions: [...this.partitions.values()],
      txnLastUpdateTimestampMs: this.txnLastUpdateTimestampMs,
      txnStartTimestampMs: this.txnStartTimestampMs,
    };
  }

  /** Takes the state a loaded record holds. */
  apply(snapshot: TxnSnapshot): void {
    this.producerId = snapshot.producerId;
    this.producerEpoch = snapshot.producerEpoch;
    this.txnTimeoutMs = snapshot.txnTimeoutMs;
    this.state = snapshot.state;
    this.partitions.clear();
    for (const tp of snapshot.partitions) this.partitions.set(partitionKey(tp), tp);
    this.txnStartTimestampMs = snapshot.txnStartTimestampMs;
    this.txnLastUpdateTimestampMs = snapshot.txnLastUpdateTimestampMs;
  }

  hasPartitions(partitions: readonly TopicPartitionRef[]): boolean {
    return partitions.every((tp) => this.partitions.has(partitionKey(tp)));
  }

  /** Kafka's isProducerEpochExhausted: the next bump would overflow, so a new producer id is due. */
  get isProducerEpochExhausted(): boolean {
    return this.producerEpoch >= MAX_PRODUCER_EPOCH - 1;
  }

  /** The snapshot of this id in `state` with `changes` applied: what an append will store. */
  transitTo(state: TransactionState, nowMs: number, changes: Partial<Omit<TxnSnapshot, 'state'>> = {}): TxnSnapshot {
    return { ...this.snapshot(), ...changes, state, txnLastUpdateTimestampMs: nowMs };
  }

  withPartitionsAdded(partitions: readonly TopicPartitionRef[]): TopicPartitionRef[] {
    const all = new Map(this.partitions);
    for (const tp of partitions) all.set(partitionKey(tp), tp);
    return [...all.values()];
  }
}

/** Kafka's epoch bump for a fenced producer: the epoch goes up by one, unless it cannot. */
export function fencedEpoch(epoch: number): number {
  return epoch >= MAX_PRODUCER_EPOCH ? epoch : epoch + 1;
}
