/**
 * Incremental fetch sessions (KIP-227, Kafka's FetchManager/FetchSessionCache). A client
 * opens a session with a full fetch (epoch 0), then sends only the partitions that changed
 * (epoch 1, 2, ...) and gets back only the partitions whose data, high watermark, log start
 * offset or error changed. Epoch -1 closes the session (or asks for none).
 */
import { Errors } from '../../protocol/errors.ts';
import { DEFAULT_BROKER_CONFIG } from '../config/broker-config.ts';
import { systemClock, type Clock } from '../runtime/clock.ts';
import { systemRandom, type Random } from '../runtime/random.ts';

export const INVALID_SESSION_ID = 0;
export const INITIAL_EPOCH = 0;
export const FINAL_EPOCH = -1;
/** Idle time after which a session may be evicted for a new one (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS). */
export const MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000;

/** One partition of a fetch, identified by topic id (v13+) or name. */
export interface SessionPartition {
  readonly topic: string;
  readonly topicId: string;
  readonly partition: number;
  readonly fetchOffset: number;
  readonly partitionMaxBytes: number;
  readonly currentLeaderEpoch: number;
  readonly logStartOffset: number;
  /** A follower's last fetched epoch (Fetch v12+), -1 or absent when not sent. */
  readonly lastFetchedEpoch?: number;
}

/** The fields of a partition's response a session compares with what it sent last. */
export interface SessionResponseData {
  readonly errorCode: number;
  readonly highWatermark: number;
  readonly logStartOffset: number;
  readonly recordsSizeBytes: number;
  /** The answer carries a divergingEpoch (the follower must truncate). */
  readonly divergingEpoch?: boolean;
}

interface CachedPartition {
  request: SessionPartition;
  highWatermark: number;
  logStartOffset: number;
}

export class FetchSession {
  epoch = INITIAL_EPOCH + 1;
  lastUsedMs: number;
  /** Insertion order is the order partitions are fetched in. */
  readonly partitions = new Map<string, CachedPartition>();

  constructor(
    readonly id: number,
    readonly privileged: boolean,
    readonly usesTopicIds: boolean,
    nowMs: number,
  ) {
    this.lastUsedMs = nowMs;
  }

  get size(): number {
    return this.partitions.size;
  }
}

export type FetchContext =
  /** No session: answer every partition, session id 0. */
  | { readonly kind: 'sessionless'; readonly partitions: readonly SessionPartition[] }
  /** A new session opens when the response is built (if the cache has room). */
  | { readonly kind: 'full'; readonly partitions: readonly SessionPartition[] }
  | { readonly kind: 'incremental'; readonly session: FetchSession; readonly partitions: readonly SessionPartition[] }
  | { readonly kind: 'error'; readonly errorCode: number };

export interface FetchSessionCacheOptions {
  /** max.incremental.fetch.session.cache.slots (its default when absent) */
  readonly maxSlots?: number;
  /** Sessions idle longer than this may be evicted for a new one (MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS). */
  readonly evictionMs?: number;
  readonly clock?: Clock;
  /** Draws session ids; defaults to the system's randomness. */
  readonly random?: Random;
}

export function sessionPartitionKey(usesTopicIds: boolean, topic: string, topicId: string, partition: number): string {
  return `${usesTopicIds ? topicId : topic}:${partition}`;
}

export class FetchSessionCache {
  private readonly sessions = new Map<number, FetchSession>();
  private readonly maxSlots: number;
  private readonly evictionMs: number;
  private readonly clock: Clock;
  private readonly random: Random;

  constructor(options: FetchSessionCacheOptions = {}) {
    this.maxSlots = options.maxSlots ?? DEFAULT_BROKER_CONFIG.getInt('max.incremental.fetch.session.cache.slots');
    this.evictionMs = options.evictionMs ?? MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? systemRandom;
  }

  get size(): number {
    return this.sessions.size;
  }

  get(id: number): FetchSession | undefined {
    return this.sessions.get(id);
  }

  /**
   * Interprets a fetch's session fields (FetchManager.newContext). `usesTopicIds` is
   * version >= 13; `forgotten` lists (topic or id, partition) pairs to drop from the session.
   */
  newContext(
    sessionId: number,
    sessionEpoch: number,
    partitions: readonly SessionPartition[],
    forgotten: readonly { topic: string; topicId: string; partition: number }[],
    usesTopicIds: boolean,
  ): FetchContext {
    if (sessionEpoch === INITIAL_EPOCH || sessionEpoch === FINAL_EPOCH) {
      // A full fetch closes whatever session it names.
      if (sessionId !== INVALID_SESSION_ID) this.sessions.delete(sessionId);
      return sessionEpoch === FINAL_EPOCH ? { kind: 'sessionless', partitions } : { kind: 'full', partitions };
    }
    const session = this.sessions.get(sessionId);
    if (session === undefined) return { kind: 'error', errorCode: Errors.FETCH_SESSION_ID_NOT_FOUND.code };
    if (session.epoch !== sessionEpoch) return { kind: 'error', errorCode: Errors.INVALID_FETCH_SESSION_EPOCH.code };
    // A session opened with topic names cannot continue with ids, nor the reverse (KIP-516).
    if (session.usesTopicIds !== usesTopicIds) return { kind: 'error', errorCode: Errors.FETCH_SESSION_TOPIC_ID_ERROR.code };
    for (const p of partitions) {
      const key = sessionPartitionKey(usesTopicIds, p.topic, p.topicId, p.partition);
      const cached = session.partitions.get(key);
      if (cached === undefined) session.partitions.set(key, { request: p, highWatermark: -1, logStartOffset: -1 });
      else cached.request = p;
    }
    for (const f of forgotten) session.partitions.delete(sessionPartitionKey(usesTopicIds, f.topic, f.topicId, f.partition));
    if (session.size === 0) {
      this.sessions.delete(session.id);
      return { kind: 'sessionless', partitions };
    }
    session.lastUsedMs = this.clock.now();
    // Refresh recency for LRU eviction.
    this.sessions.delete(session.id);
    this.sessions.set(session.id, session);
    session.epoch = nextEpoch(session.epoch);
    return { kind: 'incremental', session, partitions: [...session.partitions.values()].map((c) => c.request) };
  }

  /**
   * Opens a session for a full fetch once its response is known, caching each partition's
   * response fields. Returns the new session id, or 0 when the cache has no room.
   */
  createSession(
    privileged: boolean,
    usesTopicIds: boolean,
    responses: readonly { request: SessionPartition; data: SessionResponseData }[],
  ): number {
    const nowMs = this.clock.now();
    if (this.sessions.size >= this.maxSlots && !this.evictOneFor(privileged, responses.length, nowMs)) return INVALID_SESSION_ID;
    let id = 0;
    do {
      id = 1 + Math.floor(this.random.next() * 0x7ffffffe);
    } while (this.sessions.has(id));
    const session = new FetchSession(id, privileged, usesTopicIds, nowMs);
    for (const { request, data } of responses) {
      const key = sessionPartitionKey(usesTopicIds, request.topic, request.topicId, request.partition);
      session.partitions.set(key, {
        request,
        highWatermark: data.errorCode === Errors.NONE.code ? data.highWatermark : -1,
        logStartOffset: data.logStartOffset,
      });
    }
    this.sessions.set(id, session);
    return id;
  }

  /**
   * Whether an incremental response must carry this partition (CachedPartition
   * .maybeUpdateResponseData): new records, a moved high watermark or log start, or an error.
   * Updates what the session remembers as sent.
   */
  static mustRespond(session: FetchSession, request: SessionPartition, data: SessionResponseData): boolean {
    const cached = session.partitions.get(sessionPartitionKey(session.usesTopicIds, request.topic, request.topicId, request.partition));
    if (cached === undefined) return true;
    let must = data.recordsSizeBytes > 0;
    if (cached.highWatermark !== data.highWatermark) {
      must = true;
      cached.highWatermark = data.highWatermark;
    }
    if (cached.logStartOffset !== data.logStartOffset) {
      must = true;
      cached.logStartOffset = data.logStartOffset;
    }
    if (data.errorCode !== Errors.NONE.code) {
      // Forget the high watermark so the partition is sent again once the error clears.
      cached.highWatermark = -1;
      must = true;
    }
    // A follower must see a divergence to truncate, whatever else changed.
    if (data.divergingEpoch === true) must = true;
    return must;
  }

  /**
   * Makes room: a session idle past evictionMs goes first (least recently used); otherwise
   * the weakest session (unprivileged before privileged, then fewer partitions) if it is
   * weaker than the one being created.
   */
  private evictOneFor(privileged: boolean, partitionCount: number, nowMs: number): boolean {
    for (const session of this.sessions.values()) {
      if (nowMs - session.lastUsedMs > this.evictionMs) {
        this.sessions.delete(session.id);
        return true;
      }
      break;
    }
    let weakest: FetchSession | undefined;
    for (const session of this.sessions.values()) {
      if (weakest === undefined || weaker(session, weakest)) weakest = session;
    }
    if (weakest === undefined) return false;
    const newIsStronger = (privileged && !weakest.privileged) || (privileged === weakest.privileged && partitionCount > weakest.size);
    if (!newIsStronger) return false;
    this.sessions.delete(weakest.id);
    return true;
  }
}

function weaker(a: FetchSession, b: FetchSession): boolean {
  if (a.privileged !== b.privileged) return !a.privileged;
  if (a.size !== b.size) return a.size < b.size;
  return a.lastUsedMs < b.lastUsedMs;
}

/** FetchMetadata.nextEpoch: epochs wrap from int32 max to 1. */
export function nextEpoch(epoch: number): number {
  if (epoch < 0) return FINAL_EPOCH;
  return epoch === 0x7fffffff ? 1 : epoch + 1;
}
