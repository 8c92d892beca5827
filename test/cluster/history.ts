/**
 * What the fault suite observed, and the checker that judges it. Pure: the runner fills a
 * History while the nemesis runs (acknowledgements, consumed records, commits, high watermark
 * samples, node exits) and after healing (the log read back, the ISRs, how each group caught
 * up); checkHistory() returns every violation and the figures of the summary.
 *
 * A record's value names its producer and its position in that producer's sends,
 * `<producer>-<seq>`, unique in the run: that is how a record read back is traced to the
 * send it came from, and how a copy stored twice is told from two records.
 */

/** A record a producer saw acknowledged (acks=all). */
export interface Ack {
  readonly producer: string;
  readonly seq: number;
  readonly partition: number;
  /**
   * null: acknowledged without an offset. librdkafka's idempotent producer does that for a
   * message whose request timed out once a later message of the same producer is acknowledged
   * (the broker must then have stored it, in order). It must be in the log exactly once.
   */
  readonly offset: number | null;
  readonly value: string;
}

/** A record of the log, read back from the healed cluster. */
export interface LogRecord {
  readonly partition: number;
  readonly offset: number;
  readonly value: string;
  /** The producer id and epoch of the batch it was stored in, where the reader saw them. */
  readonly producerId?: string;
  readonly producerEpoch?: number;
}

/** A record a group member consumed. */
export interface Consumed {
  readonly group: string;
  readonly partition: number;
  readonly offset: number;
  readonly value: string;
}

/**
 * An observed value that must never decrease (a high watermark, a committed offset). A sampler's
 * observation held at some instant between asking (`atMs`) and the answer (`untilMs`); a
 * client's report of its own commit is a floor from `atMs` on (`floor`): later observations
 * must not be below it, but it is not judged against earlier ones, as when the commit took
 * effect within its round trip is not known.
 */
export interface Sample {
  readonly atMs: number;
  readonly untilMs?: number;
  readonly floor?: boolean;
  readonly partition: number;
  readonly value: number;
  /** Who saw it: 'sampler', or the client that reported a commit. */
  readonly source: string;
}

export interface NodeExit {
  readonly nodeId: number;
  readonly atMs: number;
  readonly code: number | null;
  readonly signal: string | null;
  /** True when the nemesis (or the final stop) caused it. */
  readonly caused: boolean;
  /** The end of the node's output, for the report. */
  readonly tail?: string;
}

export interface PartitionState {
  readonly partition: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

export interface GroupOutcome {
  readonly group: string;
  /** Milliseconds from the healed cluster until the group was Stable with all its members; null if it never was. */
  readonly stableMs: number | null;
  /** The group's session timeout: it must be Stable within that. */
  readonly limitMs: number;
  /** Milliseconds from the end of producing until it had consumed every acknowledged record (for the report); null if it never did. */
  readonly caughtUpMs: number | null;
}

export interface History {
  readonly topic: string;
  readonly acks: readonly Ack[];
  /** Records a producer gave up on (not acknowledged): they may or may not be in the log, but at most once. */
  readonly unacknowledged: number;
  readonly log: readonly LogRecord[];
  readonly consumed: readonly Consumed[];
  readonly highWatermarks: readonly Sample[];
  /**
   * Windows (ms from the start, like samples) in which a node was paused or cut off, and for a
   * session timeout after: a committed offset read then may come from a deposed coordinator
   * that does not know it yet, which Kafka allows (OffsetFetch carries no epoch to fence it),
   * so the never-backwards check of commits skips those reads. High watermarks are sampled
   * with the newest leader epoch (ListOffsets v4+), which no deposed leader answers, so they
   * have no such allowance; nor has a lost or misplaced record.
   */
  readonly staleReadWindows?: readonly { readonly fromMs: number; readonly untilMs: number }[];
  /** Committed offsets per group. */
  readonly commits: ReadonlyMap<string, readonly Sample[]>;
  /** Every partition of every topic after healing (the topic's and the internal ones). */
  readonly finalPartitions: readonly (PartitionState & { readonly topic: string })[];
  readonly groups: readonly GroupOutcome[];
  readonly exits: readonly NodeExit[];
}

export type ViolationKind =
  | 'lost'
  | 'misplaced'
  | 'duplicated'
  | 'reordered'
  | 'offset-acknowledged-twice'
  | 'high-watermark-backwards'
  | 'commit-backwards'
  | 'commit-beyond-log'
  | 'consumed-differs-from-log'
  | 'isr-not-full'
  | 'group-not-converged'
  | 'node-died';

export interface Violation {
  readonly kind: ViolationKind;
  readonly detail: string;
}

export interface CheckResult {
  readonly violations: readonly Violation[];
  readonly acknowledged: number;
  readonly lost: number;
  readonly duplicated: number;
  /**
   * Copies a producer sent again under a bumped epoch of its producer id (not violations).
   * Idempotence deduplicates within one epoch (Kafka's ProducerStateManager: a new epoch
   * starts again at sequence 0), so no broker can tell such a copy from a new record. An
   * idempotent producer bumps its epoch after errors it cannot otherwise recover from, and
   * librdkafka up to at least 2.10 does so too on the OUT_OF_ORDER_SEQUENCE_NUMBER that
   * follows a failed request in flight (confluentinc/librdkafka#4953), re-sending records the
   * broker may already have stored.
   */
  readonly resentUnderNewEpoch: number;
  readonly reordered: number;
  /** Records in the log (acknowledged or not). */
  readonly stored: number;
}

const VALUE = /^(.+)-(\d+)$/;

/** The producer and sequence number a value names, or null for a value of no producer of the run. */
export function parseValue(value: string): { producer: string; seq: number } | null {
  const m = VALUE.exec(value);
  return m === null ? null : { producer: m[1]!, seq: Number(m[2]) };
}

export function recordValue(producer: string, seq: number): string {
  return `${producer}-${seq}`;
}

const key = (partition: number, offset: number): string => `${partition}@${offset}`;

/** At most this many violations of one kind are spelled out; the rest are counted. */
const DETAILS_PER_KIND = 10;

class Violations {
  readonly list: Violation[] = [];
  private readonly perKind = new Map<ViolationKind, number>();

  add(kind: ViolationKind, detail: string): void {
    const n = (this.perKind.get(kind) ?? 0) + 1;
    this.perKind.set(kind, n);
    if (n <= DETAILS_PER_KIND) this.list.push({ kind, detail });
    else if (n === DETAILS_PER_KIND + 1) this.list.push({ kind, detail: `... more ${kind} violations (counted in the summary)` });
  }

  count(kind: ViolationKind): number {
    return this.perKind.get(kind) ?? 0;
  }
}

export function checkHistory(history: History): CheckResult {
  const v = new Violations();
  const logAt = new Map<string, string>();
  for (const r of history.log) logAt.set(key(r.partition, r.offset), r.value);

  checkAcks(history, logAt, v);
  const { duplicated, resent } = checkDuplicates(history, v);
  checkLogOrder(history, resent, v);
  // An acknowledged commit (a floor) always counts; only reads can be stale.
  const windows = history.staleReadWindows ?? [];
  const fresh = (samples: readonly Sample[]) =>
    samples.filter((s) => s.floor === true || !windows.some((w) => s.atMs <= w.untilMs && (s.untilMs ?? s.atMs) >= w.fromMs));
  checkMonotonic(history.highWatermarks, 'high-watermark-backwards', `${history.topic} high watermark`, v);
  const logEnd = new Map<number, number>();
  for (const r of history.log) logEnd.set(r.partition, Math.max(logEnd.get(r.partition) ?? 0, r.offset + 1));
  for (const [group, samples] of history.commits) {
    checkMonotonic(fresh(samples), 'commit-backwards', `group ${group} committed offset`, v);
    for (const s of samples) {
      if (s.value > (logEnd.get(s.partition) ?? 0))
        v.add(
          'commit-beyond-log',
          `group ${group} committed ${s.value} on partition ${s.partition} (${s.source}), the log ends at ${logEnd.get(s.partition) ?? 0}`,
        );
    }
  }
  for (const c of history.consumed) {
    const stored = logAt.get(key(c.partition, c.offset));
    if (stored !== c.value)
      v.add(
        'consumed-differs-from-log',
        `group ${c.group} consumed ${c.value} at ${key(c.partition, c.offset)}, the log holds ${stored ?? 'nothing'} there`,
      );
  }
  checkGroups(history, v);
  for (const p of history.finalPartitions) {
    if (p.isr.length < p.replicas.length)
      v.add('isr-not-full', `${p.topic}-${p.partition}: ISR [${p.isr.join(',')}] of replicas [${p.replicas.join(',')}] after healing`);
  }
  for (const e of history.exits) {
    if (!e.caused)
      v.add(
        'node-died',
        `node ${e.nodeId} exited on its own (code ${e.code}, signal ${e.signal}) at +${e.atMs} ms${e.tail ? `\n${e.tail}` : ''}`,
      );
  }
  return {
    violations: v.list,
    acknowledged: history.acks.length,
    lost: v.count('lost') + v.count('misplaced'),
    duplicated,
    resentUnderNewEpoch: resent.size,
    reordered: v.count('reordered'),
    stored: history.log.length,
  };
}

/** Every acknowledged record is in the log at its acknowledged offset, and no offset was acknowledged for two records. */
function checkAcks(history: History, logAt: ReadonlyMap<string, string>, v: Violations): void {
  const where = new Map<string, LogRecord>();
  for (const r of history.log) where.set(r.value, r);
  const ackedAt = new Map<string, Ack>();
  for (const ack of history.acks) {
    if (ack.offset === null) {
      if (!where.has(ack.value)) v.add('lost', `${ack.value} acknowledged without an offset is not in the log`);
      continue;
    }
    const at = key(ack.partition, ack.offset);
    const earlier = ackedAt.get(at);
    if (earlier !== undefined && earlier.value !== ack.value)
      v.add('offset-acknowledged-twice', `${at} acknowledged for ${earlier.value} and for ${ack.value}`);
    ackedAt.set(at, ack);
    const stored = logAt.get(at);
    if (stored === ack.value) continue;
    const found = where.get(ack.value);
    if (found === undefined) v.add('lost', `${ack.value} acknowledged at ${at} is not in the log (${stored ?? 'no record'} there)`);
    else v.add('misplaced', `${ack.value} acknowledged at ${at} is stored at ${key(found.partition, found.offset)}`);
  }
}

/**
 * No value stored twice: the producers are idempotent and never send a value again. A copy
 * stored in a later epoch of the same producer id than the first is the producer's re-send
 * (see CheckResult.resentUnderNewEpoch), returned apart; any other copy is a violation.
 */
function checkDuplicates(history: History, v: Violations): { duplicated: number; resent: Set<LogRecord> } {
  const seen = new Map<string, LogRecord>();
  const resent = new Set<LogRecord>();
  let duplicated = 0;
  for (const r of [...history.log].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const first = seen.get(r.value);
    if (first === undefined) {
      seen.set(r.value, r);
      continue;
    }
    if (resentUnderNewEpoch(first, r)) {
      resent.add(r);
      continue;
    }
    duplicated++;
    v.add(
      'duplicated',
      `${r.value} stored at ${key(first.partition, first.offset)} and at ${key(r.partition, r.offset)}${producerOf(first, r)}`,
    );
  }
  return { duplicated, resent };
}

function resentUnderNewEpoch(first: LogRecord, copy: LogRecord): boolean {
  return (
    first.producerId !== undefined &&
    first.producerId !== '-1' &&
    copy.producerId === first.producerId &&
    first.producerEpoch !== undefined &&
    copy.producerEpoch !== undefined &&
    copy.producerEpoch > first.producerEpoch
  );
}

function producerOf(first: LogRecord, copy: LogRecord): string {
  if (first.producerId === undefined || copy.producerId === undefined) return '';
  return ` (producer ${first.producerId} epoch ${first.producerEpoch}, then producer ${copy.producerId} epoch ${copy.producerEpoch})`;
}

/**
 * One producer's records on one partition are in the order it sent them, both in the log
 * and in the offsets it was acknowledged at. A re-sent copy is judged by its first copy.
 */
function checkLogOrder(history: History, resent: ReadonlySet<LogRecord>, v: Violations): void {
  const inLog = history.log.filter((r) => !resent.has(r)).sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const last = new Map<string, { seq: number; at: string }>();
  for (const r of inLog) {
    const parsed = parseValue(r.value);
    if (parsed === null) continue;
    const stream = `${parsed.producer}/${r.partition}`;
    const prev = last.get(stream);
    if (prev !== undefined && parsed.seq < prev.seq) {
      v.add('reordered', `${r.value} at ${key(r.partition, r.offset)} after ${parsed.producer}-${prev.seq} at ${prev.at}`);
      continue;
    }
    last.set(stream, { seq: parsed.seq, at: key(r.partition, r.offset) });
  }
  const acked = history.acks
    .filter((a): a is Ack & { offset: number } => a.offset !== null)
    .sort((a, b) => a.producer.localeCompare(b.producer) || a.partition - b.partition || a.seq - b.seq);
  for (let i = 1; i < acked.length; i++) {
    const a = acked[i - 1]!;
    const b = acked[i]!;
    if (a.producer !== b.producer || a.partition !== b.partition) continue;
    if (b.offset <= a.offset)
      v.add('reordered', `${b.value} acknowledged at ${key(b.partition, b.offset)}, not after ${a.value} at ${key(a.partition, a.offset)}`);
  }
}

/**
 * Per partition, no observation is below one that was complete before it began: observations
 * that overlap in time may be answered in either order, so they are not compared.
 */
function checkMonotonic(samples: readonly Sample[], kind: ViolationKind, what: string, v: Violations): void {
  const byPartition = new Map<number, Sample[]>();
  for (const s of samples) {
    const list = byPartition.get(s.partition);
    if (list === undefined) byPartition.set(s.partition, [s]);
    else list.push(s);
  }
  for (const list of byPartition.values()) {
    const byStart = list.filter((s) => s.floor !== true).sort((a, b) => a.atMs - b.atMs);
    const byEnd = [...list].sort((a, b) => (a.untilMs ?? a.atMs) - (b.untilMs ?? b.atMs));
    let done = 0;
    let high: Sample | null = null;
    for (const s of byStart) {
      while (done < byEnd.length && (byEnd[done]!.untilMs ?? byEnd[done]!.atMs) < s.atMs) {
        const c = byEnd[done++]!;
        if (high === null || c.value > high.value) high = c;
      }
      if (high !== null && s.value < high.value)
        v.add(
          kind,
          `${what} of partition ${s.partition}: ${s.value} (${s.source}) at +${s.atMs} ms after ${high.value} (${high.source}) at +${high.atMs} ms`,
        );
    }
  }
}

/** Every group was Stable within its session timeout after healing, and consumed every acknowledged record. */
function checkGroups(history: History, v: Violations): void {
  for (const g of history.groups) {
    const seen = new Set(history.consumed.filter((c) => c.group === g.group).map((c) => c.value));
    const missing = history.acks.filter((a) => !seen.has(a.value));
    if (missing.length > 0) {
      const sample = missing
        .slice(0, 5)
        .map((a) => a.value)
        .join(', ');
      v.add(
        'group-not-converged',
        `group ${g.group} never consumed ${missing.length} acknowledged records (${sample}${missing.length > 5 ? ', ...' : ''})`,
      );
    } else if (g.caughtUpMs === null || g.caughtUpMs > g.limitMs) {
      v.add(
        'group-not-converged',
        `group ${g.group} caught up ${g.caughtUpMs === null ? 'never' : `after ${g.caughtUpMs} ms`}, limit ${g.limitMs} ms`,
      );
    }
  }
}
