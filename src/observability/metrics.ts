/**
 * The node's metrics in a prom-client registry of its own (several brokers embedded in one
 * process keep their series apart). Traffic is counted where it happens, through the two
 * narrow interfaces the data path and the request processor are handed (TopicTraffic,
 * RequestObserver); everything that is state (partitions, connections, groups, lag, the
 * metadata quorum) is read from a MetricsSource when Prometheus scrapes, so an idle broker
 * does no metrics work. Traffic is counted into plain numbers kept by topic and by api key,
 * which the counters read when scraped: prom-client hashes label values into a key on every
 * count, a cost paid per request and per append on the produce path.
 */
import { Counter, Gauge, Registry, type RegistryContentType } from 'prom-client';
import { apis } from '../../protocol/messages/index.ts';
import { errorByCode, isKnownErrorCode } from '../../protocol/errors.ts';
import { CountedHistogram, type HistogramSeries } from './counted-histogram.ts';
import { collectProcessMetrics } from './process-metrics.ts';
import { DeadLetterMetrics } from './dead-letter-metrics.ts';

/** Records and bytes a topic took in and gave out; called by the data path. */
export interface TopicTraffic {
  /** A leader append of `records` records in `bytes` bytes, the record batches in `batches`. */
  appended(topic: string, records: number, bytes: number, batches: readonly Buffer[]): void;
  /** Bytes a consumer fetch returned (followers' fetches are replication, not egress). */
  fetched(topic: string, bytes: number): void;
}

/** Called once per request answered (or dropped, acks=0), with the response body. */
export interface RequestObserver {
  completed(apiKey: number, startedAtMs: number, response: unknown): void;
}

/** A topic's traffic through this node since it started. */
export interface TopicTrafficTotals {
  topic: string;
  messagesIn: number;
  bytesIn: number;
  bytesOut: number;
}

export interface PartitionStateCounts {
  online: number;
  offline: number;
  underReplicated: number;
  underMinIsr: number;
}

export interface HostedPartition {
  topic: string;
  partition: number;
  logEndOffset: number;
  highWatermark: number;
  sizeBytes: number;
}

export interface GroupLagPoint {
  group: string;
  topic: string;
  partition: number;
  lag: number;
  /** Timestamp of the oldest unconsumed record, null when caught up. */
  oldestUnconsumedTimestampMs: number | null;
}

/** The node's state, read at scrape time. */
export interface MetricsSource {
  /** Topics that exist: per-topic series of deleted topics are dropped. */
  topicExists(topic: string): boolean;
  partitionStates(): PartitionStateCounts;
  hostedPartitions(): readonly HostedPartition[];
  connectionsByListener(): ReadonlyMap<string, number>;
  groups(): readonly { group: string; state: string; members: number }[];
  groupLag(): readonly GroupLagPoint[];
  /** null on a node without the metadata quorum started. */
  raft(): { leaderId: number; commitOffset: number } | null;
  nowMs(): number;
}

export interface MetricsOptions {
  /** metrics.partition.series.max: per-partition series only while at most this many partitions are hosted. */
  readonly partitionSeriesMax: number;
  /** Default labels of every series (the node id). */
  readonly labels?: Record<string, string>;
  /** Told when the records of a retry or dead-letter topic's append could not be read for counting. */
  readonly onCountError?: (topic: string, err: unknown) => void;
}

/** The states Kafka's group coordinator reports (ConsumerGroupState / ClassicGroupState). */
const GROUP_STATES = ['PreparingRebalance', 'CompletingRebalance', 'Stable', 'Dead', 'Empty'] as const;

interface TopicCounts {
  /** Whether the topic had an append here: its in-series exist from the first. */
  appended: boolean;
  messagesIn: number;
  bytesIn: number;
  /** Only non-zero fetches count, so its series exists once this is above 0. */
  bytesOut: number;
  /** A retry or dead-letter topic, whose records DeadLetterMetrics counts. */
  deadLetters: boolean;
}

interface RequestCounts {
  api: string;
  duration: HistogramSeries;
  /** Responses' error codes, counted by code; named at scrape time. */
  errors: Map<number, number>;
  countError: (code: number) => void;
}

export class BrokerMetrics implements TopicTraffic, RequestObserver {
  readonly registry = new Registry<RegistryContentType>();
  private readonly requestDuration: CountedHistogram<'api'>;
  private readonly topics = new Map<string, TopicCounts>();
  /** By api key. */
  private readonly requests: (RequestCounts | undefined)[] = [];
  readonly deadLetters: DeadLetterMetrics;
  private source: MetricsSource | null = null;
  private lastExposition: Promise<unknown> = Promise.resolve();

  constructor(options: MetricsOptions) {
    if (options.labels !== undefined) this.registry.setDefaultLabels(options.labels);
    const registers = [this.registry];
    const metrics = this;
    const topicCounter = (name: string, help: string, read: (t: TopicCounts) => number | null) =>
      new Counter({
        name,
        help,
        labelNames: ['topic'],
        registers,
        collect() {
          this.reset();
          for (const [topic, t] of metrics.topics) {
            const value = read(t);
            if (value !== null) this.inc({ topic }, value);
          }
        },
      });
    topicCounter('sluice_topic_messages_in_total', 'Records appended to the partitions this node leads, by topic.', (t) =>
      t.appended ? t.messagesIn : null,
    );
    topicCounter('sluice_topic_bytes_in_total', 'Record batch bytes appended to the partitions this node leads, by topic.', (t) =>
      t.appended ? t.bytesIn : null,
    );
    topicCounter('sluice_topic_bytes_out_total', 'Record batch bytes returned to consumers, by topic.', (t) =>
      t.bytesOut > 0 ? t.bytesOut : null,
    );
    this.requestDuration = new CountedHistogram(
      'sluice_request_duration_seconds',
      'Time from a request read to its response encoded, by api.',
      'api',
      [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      this.registry,
    );
    new Counter({
      name: 'sluice_request_errors_total',
      help: 'Error codes in responses (each partition or resource that failed counts once), by api and error.',
      labelNames: ['api', 'error'],
      registers,
      collect() {
        this.reset();
        for (const r of metrics.requests) {
          if (r === undefined) continue;
          for (const [code, n] of r.errors) this.inc({ api: r.api, error: errorName(code) }, n);
        }
      },
    });
    this.deadLetters = new DeadLetterMetrics(this.registry, options.onCountError ?? (() => undefined));
    this.registerStateGauges(options.partitionSeriesMax);
    collectProcessMetrics(this.registry, 'sluice_');
  }

  /** Where scrape-time gauges read the node's state; until set they are empty. */
  attach(source: MetricsSource): void {
    this.source = source;
  }

  appended(topic: string, records: number, bytes: number, batches: readonly Buffer[]): void {
    const t = this.topic(topic);
    t.appended = true;
    t.messagesIn += records;
    t.bytesIn += bytes;
    if (t.deadLetters) this.deadLetters.counted(topic, batches);
  }

  fetched(topic: string, bytes: number): void {
    if (bytes > 0) this.topic(topic).bytesOut += bytes;
  }

  completed(apiKey: number, startedAtMs: number, response: unknown): void {
    let r = this.requests[apiKey];
    if (r === undefined) {
      const api = apis.get(apiKey)?.name ?? String(apiKey);
      const errors = new Map<number, number>();
      r = { api, duration: this.requestDuration.labels(api), errors, countError: (code) => errors.set(code, (errors.get(code) ?? 0) + 1) };
      this.requests[apiKey] = r;
    }
    r.duration.observe((performance.now() - startedAtMs) / 1000);
    if (response !== null) forEachErrorCode(response, r.countError);
  }

  /** The exposition in Prometheus text format, or OpenMetrics when `openMetrics`. */
  exposition(openMetrics: boolean): Promise<{ contentType: string; body: string }> {
    // The format is the registry's one setting: scrapes run one after another so that one
    // in either format never renders with the other's.
    const next = this.lastExposition.then(async () => {
      this.registry.setContentType(openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE);
      this.pruneDeletedTopics();
      await this.deadLetters.settled();
      // prom-client renders OpenMetrics counters by cutting `_total` off their names for good;
      // they get them back so that the next Prometheus scrape finds the same series.
      const counters = this.registry.getMetricsAsArray().filter((m) => String(m.type) === 'counter') as unknown as { name: string }[];
      const names = counters.map((c) => c.name);
      try {
        return { contentType: this.registry.contentType, body: await this.registry.metrics() };
      } finally {
        counters.forEach((c, i) => {
          c.name = names[i]!;
        });
      }
    });
    this.lastExposition = next.catch(() => undefined);
    return next;
  }

  /** The per-topic counters as they stand, for the admin API's throughput view. */
  async topicTraffic(): Promise<TopicTrafficTotals[]> {
    return [...this.topics]
      .map(([topic, t]) => ({ topic, messagesIn: t.messagesIn, bytesIn: t.bytesIn, bytesOut: t.bytesOut }))
      .sort((a, b) => a.topic.localeCompare(b.topic));
  }

  private topic(topic: string): TopicCounts {
    let t = this.topics.get(topic);
    if (t === undefined) {
      t = { appended: false, messagesIn: 0, bytesIn: 0, bytesOut: 0, deadLetters: this.deadLetters.counts(topic) };
      this.topics.set(topic, t);
    }
    return t;
  }

  /** Kafka removes a deleted topic's metrics; so does the scrape after the deletion. */
  private pruneDeletedTopics(): void {
    const source = this.source;
    if (source === null) return;
    this.deadLetters.prune((topic) => source.topicExists(topic));
    for (const topic of this.topics.keys()) {
      if (!source.topicExists(topic)) this.topics.delete(topic);
    }
  }

  private registerStateGauges(partitionSeriesMax: number): void {
    const registers = [this.registry];
    const metrics = this;
    const gauge = <L extends string>(name: string, help: string, labelNames: L[], collect: (g: Gauge<L>, source: MetricsSource) => void) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        collect() {
          this.reset();
          if (metrics.source !== null) collect(this, metrics.source);
        },
      });
    gauge(
      'sluice_partitions',
      'Partitions by state: online and offline as this node leads or hosts them, under_replicated and under_min_isr among those it leads (offline counts partitions without a leader on the active controller, as Kafka).',
      ['state'],
      (g, source) => {
        const s = source.partitionStates();
        g.set({ state: 'online' }, s.online);
        g.set({ state: 'offline' }, s.offline);
        g.set({ state: 'under_replicated' }, s.underReplicated);
        g.set({ state: 'under_min_isr' }, s.underMinIsr);
      },
    );
    const hosted = (source: MetricsSource) => {
      const partitions = source.hostedPartitions();
      return partitions.length <= partitionSeriesMax ? partitions : [];
    };
    gauge('sluice_partition_log_end_offset', 'Log end offset of each hosted partition.', ['topic', 'partition'], (g, source) => {
      for (const p of hosted(source)) g.set({ topic: p.topic, partition: String(p.partition) }, p.logEndOffset);
    });
    gauge('sluice_partition_high_watermark', 'High watermark of each hosted partition.', ['topic', 'partition'], (g, source) => {
      for (const p of hosted(source)) g.set({ topic: p.topic, partition: String(p.partition) }, p.highWatermark);
    });
    gauge('sluice_log_size_bytes', 'Bytes on disk of each hosted partition log.', ['topic', 'partition'], (g, source) => {
      for (const p of hosted(source)) g.set({ topic: p.topic, partition: String(p.partition) }, p.sizeBytes);
    });
    gauge('sluice_connections', 'Open client connections, by listener.', ['listener'], (g, source) => {
      for (const [listener, n] of source.connectionsByListener()) g.set({ listener }, n);
    });
    const lag = (source: MetricsSource) => {
      const points = source.groupLag();
      return points.length <= partitionSeriesMax ? points : [];
    };
    gauge(
      'sluice_consumer_group_lag',
      'Records between a group committed offset and the high watermark, for the groups this node coordinates (sampled every metrics.lag.sample.interval.ms).',
      ['group', 'topic', 'partition'],
      (g, source) => {
        for (const p of lag(source)) g.set({ group: p.group, topic: p.topic, partition: String(p.partition) }, p.lag);
      },
    );
    gauge(
      'sluice_consumer_group_lag_seconds',
      'Age of the oldest record a group has not consumed (0 when caught up), for the groups this node coordinates.',
      ['group', 'topic', 'partition'],
      (g, source) => {
        const now = source.nowMs();
        for (const p of lag(source)) {
          const age = p.oldestUnconsumedTimestampMs === null ? 0 : Math.max(0, now - p.oldestUnconsumedTimestampMs) / 1000;
          g.set({ group: p.group, topic: p.topic, partition: String(p.partition) }, age);
        }
      },
    );
    gauge('sluice_consumer_group_members', 'Members of each group this node coordinates.', ['group'], (g, source) => {
      for (const group of source.groups()) g.set({ group: group.group }, group.members);
    });
    gauge(
      'sluice_consumer_group_state',
      'The state of each group this node coordinates: 1 for its state, 0 for the others.',
      ['group', 'state'],
      (g, source) => {
        for (const group of source.groups()) {
          for (const state of GROUP_STATES) g.set({ group: group.group, state }, group.state === state ? 1 : 0);
        }
      },
    );
    gauge('sluice_raft_leader', 'The node id of the metadata quorum leader as this node knows it (-1: none).', [], (g, source) => {
      const raft = source.raft();
      if (raft !== null) g.set(raft.leaderId);
    });
    gauge('sluice_raft_commit_offset', 'The metadata log offset known committed (its high watermark) on this node.', [], (g, source) => {
      const raft = source.raft();
      if (raft !== null) g.set(raft.commitOffset);
    });
  }
}

/** Kafka's error names (UNKNOWN_TOPIC_OR_PARTITION); a code Kafka does not define keeps its number. */
function errorName(code: number): string {
  return isKnownErrorCode(code) ? errorByCode(code).name : String(code);
}

/**
 * Every non-zero `errorCode` in a response, as Kafka's AbstractResponse.errorCounts counts
 * them: one per partition, topic or resource that failed. Byte fields (records) are not walked.
 */
export function forEachErrorCode(value: unknown, onError: (code: number) => void): void {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return;
  if (Array.isArray(value)) {
    for (const v of value) forEachErrorCode(v, onError);
    return;
  }
  const fields = value as Record<string, unknown>;
  for (const key in fields) {
    const v = fields[key];
    if (key === 'errorCode') {
      if (typeof v === 'number' && v !== 0) onError(v);
    } else if (typeof v === 'object' && v !== null) {
      forEachErrorCode(v, onError);
    }
  }
}
