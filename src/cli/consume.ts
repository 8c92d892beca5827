/**
 * `sluice consume TOPIC`: kafka-console-consumer over the wire. Fetch from each partition's
 * leader, from a position chosen by --offset (earliest, the default; latest; a number, with
 * --partition), by --from-timestamp (ListOffsets), or by --group (the group's committed
 * offsets, the others from --offset). Records print one a line (record-format.ts).
 *
 * Where it stops: at the high watermark each partition had when it was assigned, so `sluice
 * consume T` prints what the topic holds and exits. With --follow it keeps fetching new
 * records until --max-messages, --timeout-ms without a record, or SIGINT.
 *
 * Without --group it reads every partition (or --partition) by assignment. With --group G it
 * is a member of consumer group G (src/client/group-member.ts): it reads the partitions the
 * group assigns it, shares them with the group's other members, commits what it printed
 * when a rebalance takes them away and when it stops, and leaves the group.
 */
import { parseArgs } from 'node:util';
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../protocol/messages/fetch.ts';
import type { KafkaCluster } from '../client/cluster.ts';
import { GroupMember } from '../client/group-member.ts';
import { commitOffsets, fetchCommittedOffsets } from '../client/groups.ts';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, listOffsets, tpKey } from '../client/offsets.ts';
import { UsageError, clusterTarget, parseIntFlag, parseOrUsage, stdio, withCluster, type Output } from './output.ts';
import { brokerError, sleep, withRetries } from '../client/errors.ts';
import { topicPartitions } from '../client/topics.ts';
import { formatRecord, parseRecordFormat, type PrintOptions } from './record-format.ts';
import { FETCH_MAX_VERSION, recordsIn } from '../client/records.ts';

export const CONSUME_USAGE = `usage:
  sluice consume TOPIC [--bootstrap-server HOST:PORT,...] [--command-config FILE] [--partition P]
                       [--offset earliest|latest|N | --from-timestamp MS|ISO-8601] [--group G]
                       [--max-messages N] [--follow] [--timeout-ms T]
                       [--format text|json|hex] [--print-key] [--key-separator SEP]
  Without --follow, stops at the end of the partitions as they were at start. With --group G,
  a member of consumer group G: it reads the partitions the group assigns it.`;

const FETCH_MAX_BYTES = 4 * 1024 * 1024;
const PARTITION_MAX_BYTES = 1024 * 1024;
/** How long a Fetch waits for new records when following. */
const FOLLOW_MAX_WAIT_MS = 500;
/** How long group coordinator and leader look-ups retry retriable errors. */
const RETRY_TIMEOUT_MS = 30_000;
const RETRY_BACKOFF_MS = 200;

export type StartPosition =
  | { kind: 'earliest' }
  | { kind: 'latest' }
  | { kind: 'offset'; offset: number }
  | { kind: 'timestamp'; timestampMs: number };

/** `--from-timestamp`: milliseconds since the epoch, or an ISO-8601 date-time. */
export function parseTimestamp(text: string): number {
  if (/^\d+$/.test(text)) {
    const ms = Number(text);
    if (Number.isSafeInteger(ms)) return ms;
  } else if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    // Only ISO-8601 shapes: Date.parse alone also takes '1.5' or '-5' as dates.
    const ms = Date.parse(text);
    if (Number.isFinite(ms) && ms >= 0) return ms;
  }
  throw new UsageError(`--from-timestamp expects milliseconds since the epoch or an ISO-8601 date-time, got '${text}'`);
}

export function parseStartPosition(offset: string | undefined, fromTimestamp: string | undefined): StartPosition {
  if (offset !== undefined && fromTimestamp !== undefined) throw new UsageError('--offset and --from-timestamp exclude each other');
  if (fromTimestamp !== undefined) return { kind: 'timestamp', timestampMs: parseTimestamp(fromTimestamp) };
  if (offset === undefined || offset === 'earliest') return { kind: 'earliest' };
  if (offset === 'latest') return { kind: 'latest' };
  return { kind: 'offset', offset: parseIntFlag(offset, '--offset') };
}

export interface ConsumeOptions {
  topic: string;
  /** null: every partition of the topic. */
  partition: number | null;
  start: StartPosition;
  group: string | null;
  /** null: no limit. */
  maxMessages: number | null;
  follow: boolean;
  /** Stop when no record arrived for this long; null: never. */
  idleTimeoutMs: number | null;
  print: PrintOptions;
}

interface PartitionState {
  partition: number;
  position: number;
  /** Without --follow, the high watermark at start: the partition is done at it. */
  end: number | null;
}

async function partitionsToRead(cluster: KafkaCluster, topic: string, only: number | null): Promise<number[]> {
  const all = await topicPartitions(cluster, topic);
  if (only === null) return all;
  if (!all.includes(only)) throw new Error(`partition ${only} of topic '${topic}' does not exist (${all.length} partitions)`);
  return [only];
}

/** The group's committed offsets for the partitions (absent: nothing committed). */
/** Where each partition starts: the group's commit, else the start position asked for. */
async function startPositions(cluster: KafkaCluster, o: ConsumeOptions, partitions: number[]): Promise<Map<number, number>> {
  const committed = new Map<number, number>();
  if (o.group !== null) {
    for (const c of (await fetchCommittedOffsets(cluster, o.group, { topic: o.topic, partitions })).values())
      committed.set(c.partition, c.offset);
  }
  const rest = partitions.filter((p) => !committed.has(p));
  const positions = new Map(committed);
  if (rest.length === 0) return positions;
  if (o.start.kind === 'offset') {
    for (const p of rest) positions.set(p, o.start.offset);
    return positions;
  }
  const tps = rest.map((partition) => ({ topic: o.topic, partition }));
  const timestamp =
    o.start.kind === 'timestamp' ? BigInt(o.start.timestampMs) : o.start.kind === 'latest' ? LATEST_TIMESTAMP : EARLIEST_TIMESTAMP;
  const found = await withRetries(RETRY_TIMEOUT_MS, () => listOffsets(cluster, tps, timestamp));
  // No record at or after the timestamp: start at the end, as auto.offset.reset=latest would.
  const ends =
    o.start.kind === 'timestamp' ? await withRetries(RETRY_TIMEOUT_MS, () => listOffsets(cluster, tps, LATEST_TIMESTAMP)) : found;
  for (const p of rest) {
    const at = found.get(tpKey(o.topic, p)) ?? -1;
    positions.set(p, at >= 0 ? at : ends.get(tpKey(o.topic, p))!);
  }
  return positions;
}

/**
 * Fetches from each leader the partitions it leads, once; prints what arrived and advances
 * the positions. Returns how many records were printed and whether any position moved; a
 * leader change refreshes the metadata on the next round.
 */
async function fetchRound(
  cluster: KafkaCluster,
  o: ConsumeOptions,
  active: PartitionState[],
  io: Output,
  budget: number,
): Promise<{ printed: number; progressed: boolean }> {
  const leaders = (await cluster.leaders([o.topic])).get(o.topic) ?? new Map<number, number>();
  const byLeader = new Map<number, PartitionState[]>();
  for (const s of active) {
    const leader = leaders.get(s.partition) ?? -1;
    if (leader >= 0) byLeader.set(leader, [...(byLeader.get(leader) ?? []), s]);
  }
  let printed = 0;
  let progressed = false;
  if (byLeader.size === 0) {
    await sleep(RETRY_BACKOFF_MS);
    return { printed, progressed };
  }
  for (const [leader, states] of byLeader) {
    const conn = await cluster.brokerConnection(leader);
    const res = await conn.send<FetchResponse>(
      ApiKey.Fetch,
      makeFetchRequest({
        replicaId: -1,
        maxWaitMs: o.follow ? FOLLOW_MAX_WAIT_MS : 0,
        minBytes: 1,
        maxBytes: FETCH_MAX_BYTES,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [
          makeFetchRequestFetchTopic({
            topic: o.topic,
            partitions: states.map((s) =>
              makeFetchRequestFetchPartition({
                partition: s.partition,
                fetchOffset: BigInt(s.position),
                partitionMaxBytes: PARTITION_MAX_BYTES,
              }),
            ),
          }),
        ],
      }),
      conn.version(ApiKey.Fetch, FETCH_MAX_VERSION),
    );
    if (res.errorCode !== Errors.NONE.code) throw brokerError(res.errorCode, null, `Fetch from broker ${leader}`);
    for (const data of res.responses.flatMap((t) => t.partitions)) {
      const s = states.find((x) => x.partition === data.partitionIndex);
      if (s === undefined) continue;
      if (data.errorCode !== Errors.NONE.code) {
        if (errorByCode(data.errorCode).retriable) continue;
        throw brokerError(data.errorCode, null, `Fetch ${o.topic}-${s.partition} at offset ${s.position}`);
      }
      if (data.records === null) continue;
      const { records, next } = await recordsIn(o.topic, s.partition, data.records, s.position, s.end);
      const shown = records.slice(0, budget - printed);
      if (shown.length > 0) io.out(shown.map((r) => formatRecord(r, o.print) + '\n').join(''));
      printed += shown.length;
      const position = shown.length < records.length ? shown[shown.length - 1]!.offset + 1 : next;
      progressed ||= position > s.position;
      s.position = position;
      if (printed >= budget) return { printed, progressed };
    }
  }
  return { printed, progressed };
}

/** Consumes as the options say; returns how many records were printed. */
/** The partitions to read and where each starts (and, without --follow, ends). */
async function partitionStates(cluster: KafkaCluster, o: ConsumeOptions, partitions: number[]): Promise<PartitionState[]> {
  const positions = await startPositions(cluster, o, partitions);
  const tps = partitions.map((partition) => ({ topic: o.topic, partition }));
  const ends = o.follow || tps.length === 0 ? null : await withRetries(RETRY_TIMEOUT_MS, () => listOffsets(cluster, tps, LATEST_TIMESTAMP));
  return partitions.map((p) => ({
    partition: p,
    position: positions.get(p)!,
    end: ends === null ? null : ends.get(tpKey(o.topic, p))!,
  }));
}

/** Errors of a commit that lost the race with a rebalance: the next owner reads those records again. */
const LOST_GENERATION_ERRORS: ReadonlySet<number> = new Set([
  Errors.REBALANCE_IN_PROGRESS.code,
  Errors.ILLEGAL_GENERATION.code,
  Errors.UNKNOWN_MEMBER_ID.code,
]);

/**
 * Consumes as the options say; returns how many records were printed. With a group it is a
 * member: it reads the partitions the group assigns it, and on a rebalance commits what it
 * printed and joins again.
 */
export async function consume(cluster: KafkaCluster, o: ConsumeOptions, io: Output, stop: AbortSignal): Promise<number> {
  const all = await partitionsToRead(cluster, o.topic, o.partition);
  const member = o.group === null ? null : new GroupMember(cluster, { groupId: o.group, topics: [o.topic], clientId: 'sluice-consume' });
  const assigned = async (): Promise<PartitionState[]> => {
    if (member === null) return partitionStates(cluster, o, all);
    const partitions = (await member.join()).filter((tp) => tp.topic === o.topic).map((tp) => tp.partition);
    return partitionStates(cluster, o, partitions);
  };
  const commit = async (states: readonly PartitionState[]): Promise<void> => {
    if (o.group === null || member === null) return;
    const offsets = states.map((s) => ({ topic: o.topic, partition: s.partition, offset: s.position }));
    try {
      await commitOffsets(cluster, o.group, offsets, { generationId: member.generationId, memberId: member.memberId });
    } catch (err) {
      if (!(err instanceof KafkaError && LOST_GENERATION_ERRORS.has(err.code))) throw err;
    }
  };
  let printed = 0;
  try {
    let states = await assigned();
    let lastRecordMs = Date.now();
    for (;;) {
      if (member?.needsRejoin) {
        await commit(states);
        states = await assigned();
      }
      const budget = (o.maxMessages ?? Number.POSITIVE_INFINITY) - printed;
      const active = states.filter((s) => s.end === null || s.position < s.end);
      // Following, a member without partitions waits for a rebalance to give it some.
      if (budget <= 0 || (active.length === 0 && !o.follow) || stop.aborted) break;
      if (o.idleTimeoutMs !== null && Date.now() - lastRecordMs >= o.idleTimeoutMs) break;
      const round = await fetchRound(cluster, o, active, io, budget);
      if (round.printed > 0) lastRecordMs = Date.now();
      printed += round.printed;
      // A Fetch that waits for nothing (not following) and brought nothing would only spin.
      if (!round.progressed && !o.follow) await sleep(RETRY_BACKOFF_MS);
    }
    // Only after a clean stop: a failed run leaves the commit where it was (at least once).
    await commit(states);
  } finally {
    await member?.leave();
  }
  return printed;
}

function parseConsumeArgs(args: string[]) {
  const { values: v, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'bootstrap-server': { type: 'string' },
      'command-config': { type: 'string' },
      partition: { type: 'string' },
      offset: { type: 'string' },
      'from-timestamp': { type: 'string' },
      group: { type: 'string' },
      'max-messages': { type: 'string' },
      follow: { type: 'boolean' },
      'timeout-ms': { type: 'string' },
      format: { type: 'string' },
      'print-key': { type: 'boolean' },
      'key-separator': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help === true) return { help: true as const };
  if (positionals.length !== 1) throw new UsageError('consume takes one topic');
  const partition = v.partition === undefined ? null : parseIntFlag(v.partition, '--partition');
  const start = parseStartPosition(v.offset, v['from-timestamp']);
  // kafka-console-consumer's rule: a numeric offset means one partition's offset.
  if (start.kind === 'offset' && partition === null) throw new UsageError('a numeric --offset needs --partition');
  // A member reads the partitions its group assigns it.
  if (partition !== null && v.group !== undefined) throw new UsageError('--group and --partition exclude each other');
  const format = parseRecordFormat(v.format);
  if (v['key-separator'] !== undefined && v['print-key'] !== true) throw new UsageError('--key-separator needs --print-key');
  const options: ConsumeOptions = {
    topic: positionals[0]!,
    partition,
    start,
    group: v.group ?? null,
    maxMessages: v['max-messages'] === undefined ? null : parseIntFlag(v['max-messages'], '--max-messages', 1),
    follow: v.follow === true,
    idleTimeoutMs: v['timeout-ms'] === undefined ? null : parseIntFlag(v['timeout-ms'], '--timeout-ms', 1),
    print: { format, keySeparator: v['print-key'] === true && format !== 'json' ? (v['key-separator'] ?? '\t') : null },
  };
  return { help: false as const, ...clusterTarget(v), options };
}

/** Entry point of `sluice consume ...`; argv may start with the word `consume`. */
export async function runConsumeCommand(argv: string[], io: Output = stdio): Promise<number> {
  const args = argv[0] === 'consume' ? argv.slice(1) : argv;
  const parsed = parseOrUsage(io, 'consume', CONSUME_USAGE, () => parseConsumeArgs(args));
  if (parsed === null) return 2;
  if (parsed.help) {
    io.out(CONSUME_USAGE + '\n');
    return 0;
  }
  // SIGINT ends a --follow run cleanly, so that --group still commits what was printed.
  const stop = new AbortController();
  const onSigint = (): void => stop.abort();
  process.once('SIGINT', onSigint);
  try {
    return await withCluster(io, parsed, 'sluice-consume', async (cluster) => {
      const printed = await consume(cluster, parsed.options, io, stop.signal);
      io.err(`Processed a total of ${printed} messages\n`);
      return 0;
    });
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}
