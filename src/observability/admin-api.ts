/**
 * The admin JSON API under /api/v1 on the node's HTTP listener. It is an admin client of the
 * cluster (src/client), so it answers what any Kafka client would see, wherever the topics,
 * partitions and groups live; only the lag history and the traffic counters are the node's
 * own.
 *
 *   GET    /api/v1/cluster                                   brokers, controller, quorum
 *   GET    /api/v1/topics[?internal=true]                    topics
 *   POST   /api/v1/topics                                    {name, partitions?, replicationFactor?, configs?}
 *   GET    /api/v1/topics/:topic                             partitions, leaders, ISR, offsets, configs, and
 *                                                             `policy`: what `sluice apply` stored for it (or null)
 *   DELETE /api/v1/topics/:topic
 *   PATCH  /api/v1/topics/:topic/configs                     {set?: {name: value}, delete?: [name]}
 *   GET    /api/v1/topics/:topic/partitions/:p/records       ?offset=N | ?timestamp=ms|ISO, &limit=N, &format=text|json|hex
 *   POST   /api/v1/topics/:topic/records                     {value, key?, headers?, partition?, format?}
 *   GET    /api/v1/groups                                    groups
 *   GET    /api/v1/groups/:group                             members, assignments, lag in records and time
 *   DELETE /api/v1/groups/:group                             an empty group and its offsets
 *   POST   /api/v1/groups/:group/offsets/reset               {to, topics?, execute?}: the plan, committed with execute
 *   GET    /api/v1/groups/:group/lag-history                 the node's lag samples of the group
 *   GET    /api/v1/traffic                                   the node's records and bytes in and out per topic
 */
import { Errors, KafkaError } from '../../protocol/errors.ts';
import type { RecordHeader } from '../../protocol/records/record.ts';
import { describeCluster } from '../client/admin.ts';
import type { KafkaCluster } from '../client/cluster.ts';
import { UnknownTopicError } from '../client/errors.ts';
import {
  ActiveGroupError,
  GroupNotFoundError,
  commitOffsets,
  deleteGroups,
  describeGroup,
  listGroups,
  planOffsetReset,
  type OffsetResetSpec,
  type OffsetResetTarget,
} from '../client/groups.ts';
import { EARLIEST_TIMESTAMP, listOffsets, tpKey } from '../client/offsets.ts';
import { TopicProducer } from '../client/producer.ts';
import { type ConsumerRecord, readPartition } from '../client/records.ts';
import { alterTopicConfigs, createTopic, deleteTopics, describeTopics, listTopics } from '../client/topics.ts';
import { readPolicyStore } from '../tools/policy/store.ts';
import { HttpError, type HttpReply, type HttpRequest, type HttpServer } from './http-server.ts';
import type { LagSample } from './lag-sampler.ts';
import type { TopicTrafficTotals } from './metrics.ts';

export interface AdminApiServices {
  /** The node's admin client; throws while the node does not serve clients yet. */
  cluster(): KafkaCluster;
  /** The lag samples of a group this node coordinates, oldest first. */
  lagHistory(groupId: string): readonly LagSample[];
  /** Records and bytes in and out of each topic on this node since it started. */
  traffic(): Promise<TopicTrafficTotals[]>;
}

/** How a record's key, value and header values are shown. */
type ValueFormat = 'text' | 'json' | 'hex';

const DEFAULT_BROWSE_LIMIT = 50;
const MAX_BROWSE_LIMIT = 1000;
/** How long a produced record may wait for its replicas (acks=all). */
const PRODUCE_TIMEOUT_MS = 30_000;

const NOT_FOUND_ERRORS: ReadonlySet<number> = new Set([
  Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
  Errors.UNKNOWN_TOPIC_ID.code,
  Errors.GROUP_ID_NOT_FOUND.code,
]);
const AUTHORIZATION_ERRORS: ReadonlySet<number> = new Set([
  Errors.TOPIC_AUTHORIZATION_FAILED.code,
  Errors.GROUP_AUTHORIZATION_FAILED.code,
  Errors.CLUSTER_AUTHORIZATION_FAILED.code,
]);
const CONFLICT_ERRORS: ReadonlySet<number> = new Set([Errors.TOPIC_ALREADY_EXISTS.code, Errors.NON_EMPTY_GROUP.code]);

export function registerAdminApi(http: HttpServer, services: AdminApiServices): void {
  const route = (
    method: string,
    path: string,
    handler: (cluster: KafkaCluster, request: HttpRequest) => Promise<unknown>,
    successStatus = method === 'POST' ? 201 : 200,
  ) =>
    http.route(method, path, async (request) => {
      let cluster: KafkaCluster;
      try {
        cluster = services.cluster();
      } catch (err) {
        return { status: 503, body: { error: (err as Error).message } };
      }
      try {
        return { status: successStatus, body: await handler(cluster, request) };
      } catch (err) {
        return errorReply(err);
      }
    });

  route('GET', '/api/v1/cluster', (cluster) => describeCluster(cluster));

  route('GET', '/api/v1/topics', async (cluster, request) => ({
    topics: await listTopics(cluster, request.query.get('internal') === 'true'),
  }));
  route('POST', '/api/v1/topics', async (cluster, request) => {
    const body = objectBody(request);
    const name = stringField(body, 'name');
    const configs = body.configs === undefined ? {} : stringMap(body.configs, 'configs');
    await createTopic(
      cluster,
      {
        name,
        numPartitions: optionalInt(body, 'partitions') ?? -1,
        replicationFactor: optionalInt(body, 'replicationFactor') ?? -1,
        configs: Object.entries(configs),
      },
      false,
    );
    const [described] = await describeTopics(cluster, [name]);
    return described;
  });
  route('GET', '/api/v1/topics/:topic', async (cluster, request) => {
    const topic = request.params.topic!;
    const [[described], { policies }] = await Promise.all([describeTopics(cluster, [topic]), readPolicyStore(cluster)]);
    return { ...described, policy: policies.get(topic) ?? null };
  });
  route('DELETE', '/api/v1/topics/:topic', async (cluster, request) => ({
    deleted: await deleteTopics(cluster, [request.params.topic!], false),
  }));
  route('PATCH', '/api/v1/topics/:topic/configs', async (cluster, request) => {
    const body = objectBody(request);
    const set = body.set === undefined ? {} : stringMap(body.set, 'set');
    const remove = body.delete === undefined ? [] : stringList(body.delete, 'delete');
    const topic = request.params.topic!;
    await alterTopicConfigs(cluster, topic, { set: Object.entries(set), delete: remove });
    return (await describeTopics(cluster, [topic]))[0];
  });
  route('GET', '/api/v1/topics/:topic/partitions/:partition/records', (cluster, request) => browse(cluster, request));
  route('POST', '/api/v1/topics/:topic/records', (cluster, request) => produce(cluster, request));

  route('GET', '/api/v1/groups', async (cluster) => ({ groups: await listGroups(cluster) }));
  route('GET', '/api/v1/groups/:group', (cluster, request) => describeGroup(cluster, request.params.group!));
  route('DELETE', '/api/v1/groups/:group', async (cluster, request) => {
    const [deletion] = await deleteGroups(cluster, [request.params.group!]);
    if (deletion?.error) throw deletion.error;
    return { deleted: [request.params.group] };
  });
  route(
    'POST',
    '/api/v1/groups/:group/offsets/reset',
    async (cluster, request) => {
      const body = objectBody(request);
      const groupId = request.params.group!;
      const plan = await planOffsetReset(cluster, groupId, resetSpec(body));
      const execute = body.execute === true;
      if (execute)
        await commitOffsets(
          cluster,
          groupId,
          plan.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.newOffset })),
        );
      return { group: groupId, executed: execute, partitions: plan };
    },
    200,
  );
  http.route('GET', '/api/v1/groups/:group/lag-history', (request) => ({
    status: 200,
    body: { group: request.params.group, samples: services.lagHistory(request.params.group!) },
  }));
  http.route('GET', '/api/v1/traffic', async () => ({ status: 200, body: { atMs: Date.now(), topics: await services.traffic() } }));
}

/**
 * An offset reset as kafka-consumer-groups --reset-offsets takes it: `to` is "earliest",
 * "latest", {"offset": N}, {"shiftBy": N} or {"timestamp": ms or ISO-8601}; `topics` (all the
 * group committed to when absent) names topics, each with its partitions or all of them.
 */
function resetSpec(body: Record<string, unknown>): OffsetResetSpec {
  const to = body.to;
  let target: OffsetResetTarget;
  if (to === 'earliest' || to === 'latest') target = { kind: to };
  else if (typeof to === 'object' && to !== null && !Array.isArray(to)) {
    const t = to as Record<string, unknown>;
    if (typeof t.offset === 'number' && Number.isSafeInteger(t.offset) && t.offset >= 0) target = { kind: 'offset', offset: t.offset };
    else if (typeof t.shiftBy === 'number' && Number.isSafeInteger(t.shiftBy)) target = { kind: 'shift', by: t.shiftBy };
    else if (typeof t.timestamp === 'number' || typeof t.timestamp === 'string')
      target = { kind: 'timestamp', timestampMs: parseTimestamp(String(t.timestamp)) };
    else throw new HttpError(400, 'to must be "earliest", "latest", {"offset": N}, {"shiftBy": N} or {"timestamp": T}');
  } else {
    throw new HttpError(400, 'to must be "earliest", "latest", {"offset": N}, {"shiftBy": N} or {"timestamp": T}');
  }
  if (body.topics === undefined) return { scope: 'all', target };
  if (!Array.isArray(body.topics)) throw new HttpError(400, 'topics must be a list');
  const scope = body.topics.map((entry) => {
    if (typeof entry === 'string' && entry !== '') return { topic: entry, partitions: null };
    const e = entry as Record<string, unknown> | null;
    if (typeof e !== 'object' || e === null || typeof e.topic !== 'string')
      throw new HttpError(400, 'each topic is a name or {"topic", "partitions"}');
    const partitions = e.partitions;
    if (partitions !== undefined && (!Array.isArray(partitions) || !partitions.every((p) => Number.isSafeInteger(p) && p >= 0)))
      throw new HttpError(400, `partitions of ${e.topic} must be a list of partition numbers`);
    return { topic: e.topic, partitions: (partitions as number[] | undefined) ?? null };
  });
  return { scope, target };
}

/** A partition's records from an offset, or from the first record at or after a timestamp. */
async function browse(cluster: KafkaCluster, request: HttpRequest): Promise<unknown> {
  const topic = request.params.topic!;
  const partition = nonNegativeInt(request.params.partition!, 'partition');
  const format = valueFormat(request.query.get('format'));
  const limitText = request.query.get('limit');
  const limit = limitText === null ? DEFAULT_BROWSE_LIMIT : Math.min(MAX_BROWSE_LIMIT, nonNegativeInt(limitText, 'limit'));
  const offsetText = request.query.get('offset');
  const timestampText = request.query.get('timestamp');
  if (offsetText !== null && timestampText !== null) throw new HttpError(400, 'offset and timestamp exclude each other');
  let offset: number;
  if (offsetText !== null) {
    offset = nonNegativeInt(offsetText, 'offset');
  } else {
    const timestamp = timestampText === null ? EARLIEST_TIMESTAMP : BigInt(parseTimestamp(timestampText));
    const found = await listOffsets(cluster, [{ topic, partition }], timestamp);
    offset = found.get(tpKey(topic, partition)) ?? -1;
    // No record at or after the timestamp: the browse starts at the end, empty.
    if (offset < 0) offset = (await listOffsets(cluster, [{ topic, partition }])).get(tpKey(topic, partition)) ?? 0;
  }
  const read = await readPartition(cluster, topic, partition, offset, limit);
  const last = read.records.at(-1);
  return {
    topic,
    partition,
    logStartOffset: read.logStartOffset,
    highWatermark: read.highWatermark,
    nextOffset: last === undefined ? offset : last.offset + 1,
    format,
    records: read.records.map((r) => shownRecord(r, format)),
  };
}

async function produce(cluster: KafkaCluster, request: HttpRequest): Promise<unknown> {
  const body = objectBody(request);
  const format = valueFormat(typeof body.format === 'string' ? body.format : null);
  // With format json the value is any JSON value, written as its JSON text; keys stay text.
  const bytes = (field: 'key' | 'value'): Buffer | null => {
    const v = body[field];
    if (v === undefined || v === null) return null;
    if (format === 'json' && field === 'value') return Buffer.from(JSON.stringify(v), 'utf8');
    if (typeof v !== 'string')
      throw new HttpError(400, `${field} must be a string${field === 'value' ? ' (any JSON value with format json)' : ''}`);
    return format === 'hex' ? hexBytes(v, field) : Buffer.from(v, 'utf8');
  };
  const headers: RecordHeader[] = Object.entries(body.headers === undefined ? {} : stringMap(body.headers, 'headers')).map(
    ([key, value]) => ({ key, value: Buffer.from(value, 'utf8') }),
  );
  const partition = optionalInt(body, 'partition');
  const producer = new TopicProducer(cluster, request.params.topic!, { acks: -1, timeoutMs: PRODUCE_TIMEOUT_MS });
  await producer.open();
  const written = await producer.send([{ key: bytes('key'), value: bytes('value'), headers, partition, timestamp: null }]);
  const [only] = [...written];
  if (only === undefined) throw new Error('the record was not written');
  return { topic: request.params.topic, partition: only[0], offset: only[1] };
}

function shownRecord(r: ConsumerRecord, format: ValueFormat) {
  return {
    offset: r.offset,
    timestamp: r.timestamp,
    key: shown(r.key, format),
    value: shown(r.value, format),
    headers: r.headers.map((h) => ({ key: h.key, value: shown(h.value, format === 'json' ? 'text' : format) })),
  };
}

/** text: UTF-8; hex; json: the parsed value, or the text when it is not JSON. */
function shown(bytes: Buffer | null, format: ValueFormat): unknown {
  if (bytes === null) return null;
  if (format === 'hex') return bytes.toString('hex');
  const text = bytes.toString('utf8');
  if (format === 'text') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function valueFormat(value: string | null): ValueFormat {
  if (value === null) return 'text';
  if (value === 'text' || value === 'json' || value === 'hex') return value;
  throw new HttpError(400, `format must be text, json or hex, not ${value}`);
}

function parseTimestamp(text: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isSafeInteger(ms) || ms < 0)
    throw new HttpError(400, `timestamp must be milliseconds since the epoch or ISO-8601, not ${text}`);
  return ms;
}

function hexBytes(text: string, field: string): Buffer {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(text)) throw new HttpError(400, `${field} is not hex`);
  return Buffer.from(text, 'hex');
}

function nonNegativeInt(text: string, name: string): number {
  const n = Number(text);
  if (text === '' || !Number.isSafeInteger(n) || n < 0) throw new HttpError(400, `${name} must be a non-negative integer, not ${text}`);
  return n;
}

function objectBody(request: HttpRequest): Record<string, unknown> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

function stringField(body: Record<string, unknown>, name: string): string {
  const v = body[name];
  if (typeof v !== 'string' || v === '') throw new HttpError(400, `${name} must be a non-empty string`);
  return v;
}

function optionalInt(body: Record<string, unknown>, name: string): number | null {
  const v = body[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new HttpError(400, `${name} must be an integer`);
  return v;
}

function stringMap(value: unknown, name: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new HttpError(400, `${name} must be an object`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') throw new HttpError(400, `${name}.${k} must be a string`);
    out[k] = String(v);
  }
  return out;
}

function stringList(value: unknown, name: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new HttpError(400, `${name} must be a list of strings`);
  return value;
}

/** Kafka's errors as HTTP statuses: unknown things 404, refusals 403, conflicts 409, client mistakes 400, the rest 502/503. */
function errorReply(err: unknown): HttpReply {
  if (err instanceof HttpError) return { status: err.status, body: { error: err.message } };
  if (err instanceof GroupNotFoundError || err instanceof UnknownTopicError) return { status: 404, body: { error: err.message } };
  if (err instanceof ActiveGroupError) return { status: 409, body: { error: err.message } };
  if (err instanceof KafkaError) {
    const status = NOT_FOUND_ERRORS.has(err.code)
      ? 404
      : AUTHORIZATION_ERRORS.has(err.code)
        ? 403
        : CONFLICT_ERRORS.has(err.code)
          ? 409
          : err.error.retriable
            ? 503
            : 400;
    return { status, body: { error: err.message, kafkaError: err.error.name } };
  }
  return { status: 502, body: { error: (err as Error).message ?? String(err) } };
}
