/**
 * Binds the GroupCoordinator to the cluster: `__consumer_offsets` is created on first use
 * (as Kafka does on the first FindCoordinator), the coordinator of a group is the leader of
 * its offsets partition, and this broker loads a partition's groups when it becomes that
 * leader and forgets them when it stops being it.
 */
import { Errors } from '../../protocol/errors.ts';
import { OFFSETS_TOPIC } from '../../protocol/internal-topics.ts';
import { Reader } from '../../protocol/primitives.ts';
import { buildRecordBatch, iterateRecords, decompressedRecords, type RecordBatch } from '../../protocol/records/index.ts';
import { decodeConsumerProtocolSubscription } from '../../protocol/messages/consumer-protocol-subscription.ts';
import { GroupCoordinator, type CoordinatorLog, type GroupCoordinatorConfig } from './group-coordinator.ts';
import type { Group } from './group.ts';
import { decodeCoordinatorRecord, encodeCoordinatorRecord } from './offsets-topic-codec.ts';
import type { CoordinatorRecord } from './records.ts';
import type { Clock, TimerHandle } from '../runtime/clock.ts';
import type { Random } from '../runtime/random.ts';
import { guarded } from '../runtime/guard.ts';
import { DEFAULT_BROKER_CONFIG } from '../config/broker-config.ts';

export interface CoordinatorEndpoint {
  errorCode: number;
  errorMessage: string | null;
  nodeId: number;
  host: string;
  port: number;
}

/** What the coordinator needs from the broker around it. */
export interface OffsetsTopicAccess {
  /** Leader and endpoint (on `listenerName`) of an offsets partition; null when the topic does not exist. */
  partitionLeader(partition: number, listenerName: string): { leaderId: number; host: string; port: number } | null | 'no-leader';
  /** Creates `__consumer_offsets`; resolves with a Kafka error code (0 when created or already there). */
  createOffsetsTopic(): Promise<number>;
  partitionExists(topic: string, partition: number): boolean;
  /** Appends one batch as leader with acks=all; throws an error carrying `errorCode` on failure. */
  append(partition: number, batch: Buffer): Promise<void>;
  /** The partition's batches from its log start to its log end (as its leader), in order. */
  readBatches(partition: number): AsyncIterable<RecordBatch>;
  /**
   * Waits (a bounded while) for everything before `offset` to be committed (below the high
   * watermark): true once it is, false when not yet; throws once this broker no longer leads
   * the partition.
   */
  awaitCommitted(partition: number, offset: number): Promise<boolean>;
}

export interface GroupCoordinatorServiceOptions {
  readonly nodeId: number;
  readonly config: GroupCoordinatorConfig & { offsetsTopicPartitions: number };
  readonly clock: Clock;
  /** Member ids; defaults to the system's randomness. */
  readonly random?: Random;
  readonly access: OffsetsTopicAccess;
  /**
   * Failures of background work (timers, loads) and records a load skipped, each with what
   * it concerns: the group, or the partition and offset.
   */
  readonly onError: (err: unknown, what: string) => void;
  /** Backoff between attempts to load a partition whose load failed; default 500 ms doubling to 30 s. */
  readonly loadRetryBackoffMs?: { initialMs: number; maxMs: number };
  /**
   * offsets.load.max.partitions: how many partitions load at once (its default when absent).
   * With the read chunk (offsets.load.buffer.size, the access's) it bounds the memory loads
   * hold beside the groups they build.
   */
  readonly maxConcurrentLoads?: number;
}

/** Where the load of one `__consumer_offsets` partition this broker leads stands. */
export interface PartitionLoadStatus {
  partition: number;
  /** loading: an attempt runs; loaded: its groups are served; failed: waiting to retry. */
  state: 'loading' | 'loaded' | 'failed';
  /** Why the last attempt failed; null unless failed (or loading again after a failure). */
  reason: string | null;
  /** Attempts made since this broker became the partition's leader. */
  attempts: number;
  /** Records of the last completed load that could not be decoded or applied, and were skipped. */
  skippedRecords: number;
  /** When the next attempt starts (failed only). */
  nextAttemptAtMs: number | null;
}

/** Sluice: Kafka retries a failed load only on the next leadership change; we retry on a backoff. */
const DEFAULT_LOAD_RETRY_BACKOFF_MS = { initialMs: 500, maxMs: 30_000 };

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class GroupCoordinatorService {
  readonly coordinator: GroupCoordinator;
  private readonly led = new Set<number>();
  private creating: Promise<number> | null = null;
  /** The last step (load or unload) of each partition: a partition's steps run in order. */
  private readonly partitionSteps = new Map<number, Promise<void>>();
  /** Every step not finished yet, for whenLoaded. */
  private readonly runningSteps = new Set<Promise<void>>();
  private readonly loads: LoadSlots;
  /** Bumped each time this broker becomes a partition's leader: a stale retry sees it changed. */
  private readonly leadEpochs = new Map<number, number>();
  /** The partition's leader epoch each led partition was loaded for. */
  private readonly ledLeaderEpochs = new Map<number, number>();
  private stopped = false;
  private readonly loadStatuses = new Map<number, PartitionLoadStatus>();
  private readonly retryTimers = new Map<number, TimerHandle>();

  constructor(private readonly options: GroupCoordinatorServiceOptions) {
    const log: CoordinatorLog = { append: (partition, records) => this.appendRecords(partition, records) };
    this.coordinator = new GroupCoordinator(options.config, options.clock, log, options.onError, options.random);
    this.loads = new LoadSlots(options.maxConcurrentLoads ?? DEFAULT_BROKER_CONFIG.getInt('offsets.load.max.partitions'));
  }

  /** The clock of the coordinator's timers: commit timestamps come from it too. */
  get clock(): Clock {
    return this.options.clock;
  }

  get offsetsRetentionMs(): number {
    return this.options.config.offsetsRetentionMs;
  }

  start(): void {
    this.coordinator.start();
  }

  shutdown(): void {
    this.stopped = true;
    for (const timer of this.retryTimers.values()) this.options.clock.clearTimeout(timer);
    this.retryTimers.clear();
    this.coordinator.shutdown();
  }

  /** The load state of every offsets partition this broker leads, for metrics and tools. */
  partitionLoadStatuses(): PartitionLoadStatus[] {
    return [...this.loadStatuses.values()].map((s) => ({ ...s })).sort((a, b) => a.partition - b.partition);
  }

  /** The load state of one offsets partition; undefined when this broker does not lead it. */
  partitionLoadStatus(partition: number): PartitionLoadStatus | undefined {
    const status = this.loadStatuses.get(partition);
    return status === undefined ? undefined : { ...status };
  }

  partitionExists(topic: string, partition: number): boolean {
    return this.options.access.partitionExists(topic, partition);
  }

  /**
   * Leadership of offsets partitions changed: load the ones this broker now leads, unload
   * the ones it no longer leads. A partition's loads and unloads run in the order changes
   * arrive; at most maxConcurrentLoads partitions load at once, in that order too. A load
   * that fails is retried with a backoff while the partition's groups answer
   * COORDINATOR_LOAD_IN_PROGRESS. A newer `leaderEpoch` while leading means another broker may
   * have led (and taken commits) in between: the partition is unloaded and loaded again, as
   * Kafka's onElection loads again for a newer coordinator epoch.
   */
  onOffsetsPartitionLeadership(partition: number, isLeader: boolean, leaderEpoch = -1): void {
    const loadedFor = this.ledLeaderEpochs.get(partition);
    if (isLeader && this.led.has(partition) && loadedFor !== undefined && leaderEpoch > loadedFor) {
      this.onOffsetsPartitionLeadership(partition, false);
    }
    if (isLeader && !this.led.has(partition)) {
      this.led.add(partition);
      this.ledLeaderEpochs.set(partition, leaderEpoch);
      const epoch = (this.leadEpochs.get(partition) ?? 0) + 1;
      this.leadEpochs.set(partition, epoch);
      this.loadStatuses.set(partition, {
        partition,
        state: 'loading',
        reason: null,
        attempts: 0,
        skippedRecords: 0,
        nextAttemptAtMs: null,
      });
      this.coordinator.beginLoading(partition);
      this.enqueue(partition, `loading ${OFFSETS_TOPIC}-${partition}`, () => this.load(partition, epoch));
    } else if (!isLeader && this.led.has(partition)) {
      this.led.delete(partition);
      this.ledLeaderEpochs.delete(partition);
      this.loadStatuses.delete(partition);
      this.cancelRetry(partition);
      this.enqueue(partition, `unloading ${OFFSETS_TOPIC}-${partition}`, () => this.coordinator.unload(partition));
    }
  }

  /** Resolves once every load requested so far has finished (an attempt, failed or not). */
  async whenLoaded(): Promise<void> {
    await Promise.all([...this.runningSteps]);
  }

  /** Chains a step of loading or unloading of a partition; a step that fails is reported and the chain goes on. */
  private enqueue(partition: number, what: string, step: () => void | Promise<void>): void {
    const previous = this.partitionSteps.get(partition) ?? Promise.resolve();
    const next = previous.then(step).catch((err) => this.options.onError(err, what));
    this.partitionSteps.set(partition, next);
    this.runningSteps.add(next);
    void next.then(() => {
      this.runningSteps.delete(next);
      if (this.partitionSteps.get(partition) === next) this.partitionSteps.delete(partition);
    });
  }

  private isCurrent(partition: number, epoch: number): boolean {
    return !this.stopped && this.led.has(partition) && this.leadEpochs.get(partition) === epoch;
  }

  /**
   * Reads the partition back and applies it, batch by batch: memory holds one read chunk and
   * one batch's records, never the partition's history. A record that cannot be decoded (or
   * a batch whose records cannot be read) is logged with its partition and offset, counted
   * and skipped: it never keeps the other groups of the partition from loading. A failure of
   * the read itself (storage) fails the attempt, which is retried with a backoff.
   */
  private async load(partition: number, epoch: number): Promise<void> {
    if (!this.isCurrent(partition, epoch)) return;
    await this.loads.acquire();
    let replayedTo: number | null;
    try {
      replayedTo = await this.replayPartition(partition, epoch);
    } finally {
      this.loads.release();
    }
    if (replayedTo !== null) await this.completeOnceCommitted(partition, epoch, replayedTo);
  }

  /**
   * Reads the partition to its log end and replays it; returns the offset it replayed up to,
   * null when the attempt failed or was overtaken.
   */
  private async replayPartition(partition: number, epoch: number): Promise<number | null> {
    const status = this.loadStatuses.get(partition);
    if (status === undefined || !this.isCurrent(partition, epoch)) return null;
    status.state = 'loading';
    status.nextAttemptAtMs = null;
    status.attempts++;
    const where = `${OFFSETS_TOPIC}-${partition}`;
    let skipped = 0;
    const skip = (offset: number | string, err: unknown): void => {
      skipped++;
      this.options.onError(err, `decoding the record at offset ${offset} of ${where} (skipped)`);
    };
    let replayedTo = 0;
    try {
      for await (const batch of this.options.access.readBatches(partition)) {
        // No longer the leader: stop reading. The unload queued behind forgets what was replayed.
        if (!this.isCurrent(partition, epoch)) return null;
        replayedTo = batch.nextOffset;
        if (batch.isControl) continue;
        const { records, offsets, unreadable } = await decodeBatch(batch, skip);
        skipped += unreadable;
        skipped += this.coordinator.replayLoading(partition, records, (index, err) => {
          this.options.onError(err, `replaying the record at offset ${offsets[index]} of ${where} (skipped)`);
        });
      }
    } catch (err) {
      this.loadFailed(partition, epoch, err);
      return null;
    }
    status.skippedRecords = skipped;
    if (skipped > 0) {
      this.options.onError(new Error(`${skipped} record(s) could not be loaded and were skipped`), `loading ${where} (completed)`);
    }
    return replayedTo;
  }

  /**
   * Serves the partition's groups once what the load replayed is committed. The log end a
   * new leader loads to may hold a previous leader's uncommitted tail, which the next
   * election can take away again: served before, a committed offset could be answered and
   * then go back (Kafka's coordinator runtime reads only what is below the high watermark).
   * Until then the groups answer COORDINATOR_LOAD_IN_PROGRESS, without holding a load slot.
   */
  private async completeOnceCommitted(partition: number, epoch: number, replayedTo: number): Promise<void> {
    try {
      while (!(await this.options.access.awaitCommitted(partition, replayedTo))) {
        if (!this.isCurrent(partition, epoch)) return;
      }
    } catch (err) {
      if (this.isCurrent(partition, epoch)) this.loadFailed(partition, epoch, err);
      return;
    }
    const status = this.loadStatuses.get(partition);
    if (status === undefined || !this.isCurrent(partition, epoch)) return;
    this.coordinator.completeLoading(partition, []);
    status.state = 'loaded';
    status.reason = null;
  }

  private loadFailed(partition: number, epoch: number, err: unknown): void {
    const where = `${OFFSETS_TOPIC}-${partition}`;
    this.options.onError(err, `loading ${where}`);
    if (!this.isCurrent(partition, epoch)) return;
    this.coordinator.abandonLoading(partition);
    const status = this.loadStatuses.get(partition);
    if (status === undefined) return;
    const backoff = this.options.loadRetryBackoffMs ?? DEFAULT_LOAD_RETRY_BACKOFF_MS;
    const delayMs = Math.min(backoff.initialMs * 2 ** Math.min(status.attempts - 1, 30), backoff.maxMs);
    status.state = 'failed';
    status.reason = reasonOf(err);
    status.nextAttemptAtMs = this.options.clock.now() + delayMs;
    this.cancelRetry(partition);
    this.retryTimers.set(
      partition,
      this.options.clock.setTimeout(
        guarded(this.options.onError, `retrying the load of ${where}`, () => {
          this.retryTimers.delete(partition);
          if (this.isCurrent(partition, epoch)) this.enqueue(partition, `loading ${where}`, () => this.load(partition, epoch));
        }),
        delayMs,
      ),
    );
  }

  private cancelRetry(partition: number): void {
    const timer = this.retryTimers.get(partition);
    if (timer !== undefined) this.options.clock.clearTimeout(timer);
    this.retryTimers.delete(partition);
  }

  private async appendRecords(partition: number, records: CoordinatorRecord[]): Promise<void> {
    const nowMs = this.options.clock.now();
    const batch = await buildRecordBatch(
      {},
      records.map((r) => ({ ...encodeCoordinatorRecord(r), timestamp: nowMs })),
    );
    await this.options.access.append(partition, batch);
  }

  /**
   * FindCoordinator for a group: the leader of its offsets partition. As in Kafka, the
   * request that finds `__consumer_offsets` missing creates it and answers
   * COORDINATOR_NOT_AVAILABLE; so does this broker for a partition it leads but has not
   * started to load, and the client asks again.
   */
  async findCoordinator(groupId: string, listenerName: string): Promise<CoordinatorEndpoint> {
    const partition = this.coordinator.partitionFor(groupId);
    const leader = this.options.access.partitionLeader(partition, listenerName);
    if (leader === null) {
      this.creating ??= this.options.access.createOffsetsTopic().finally(() => {
        this.creating = null;
      });
      await this.creating;
      return this.unavailable();
    }
    if (leader === 'no-leader') return this.unavailable();
    if (leader.leaderId === this.options.nodeId && !this.led.has(partition)) return this.unavailable();
    return { errorCode: 0, errorMessage: null, nodeId: leader.leaderId, host: leader.host, port: leader.port };
  }

  private unavailable(): CoordinatorEndpoint {
    const e = Errors.COORDINATOR_NOT_AVAILABLE;
    return { errorCode: e.code, errorMessage: e.message, nodeId: -1, host: '', port: -1 };
  }

  /**
   * Topics a consumer group's members subscribe to (from their ConsumerProtocolSubscription);
   * null when the group does not use the consumer protocol, so it cannot be known.
   */
  subscribedTopics(group: Group): Set<string> | null {
    if (group.protocolType !== 'consumer' || group.protocolName === null) return null;
    const topics = new Set<string>();
    for (const member of group.allMembers()) {
      try {
        const reader = new Reader(member.metadataFor(group.protocolName));
        const version = reader.int16();
        for (const topic of decodeConsumerProtocolSubscription(reader, Math.min(version, 3)).topics) topics.add(topic);
      } catch {
        return null;
      }
    }
    return topics;
  }
}

/**
 * The records of one batch of `__consumer_offsets` the coordinator keeps, with their
 * offsets. A record that does not decode goes to `skip`; a batch whose records cannot be
 * read (corrupt compression or framing) skips all of them from the first unread one, and
 * `unreadable` counts those beyond the one reported to `skip`.
 */
async function decodeBatch(
  batch: RecordBatch,
  skip: (offset: number | string, err: unknown) => void,
): Promise<{ records: CoordinatorRecord[]; offsets: number[]; unreadable: number }> {
  const records: CoordinatorRecord[] = [];
  const offsets: number[] = [];
  let read = 0;
  try {
    const payload = await decompressedRecords(batch);
    for (const record of iterateRecords(batch, payload)) {
      read++;
      if (record.key === null) {
        skip(record.offset, new Error('record without a key'));
        continue;
      }
      let decoded: CoordinatorRecord | null;
      try {
        decoded = decodeCoordinatorRecord(record.key, record.value);
      } catch (err) {
        skip(record.offset, err);
        continue;
      }
      if (decoded === null) continue;
      records.push(decoded);
      offsets.push(record.offset);
    }
  } catch (err) {
    const unread = Math.max(batch.recordCount - read, 1);
    skip(`${batch.baseOffset + read}..${batch.lastOffset}`, err);
    return { records, offsets, unreadable: unread - 1 };
  }
  return { records, offsets, unreadable: 0 };
}

/** A counting semaphore: at most `size` holders, the others served in arrival order. */
class LoadSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = Math.max(1, size);
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot to the next waiter, if any. */
  release(): void {
    const next = this.waiting.shift();
    if (next === undefined) this.free++;
    else next();
  }
}
