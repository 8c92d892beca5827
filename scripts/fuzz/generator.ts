// Valid requests for every API and version, built from the generated schemas and the
// generated make* constructors, with plausible values: topics, groups and transactional
// ids from small pools, real record batches for every codec, small timeouts. In "edge"
// mode numeric fields take extreme values (2^60 retention, negative offsets, int32 max
// counts) while the encoding stays valid.
import { schemas } from '../../protocol/messages/schemas.ts';
import type { FieldSchema, MessageSchema, VersionRange } from '../../protocol/messages/schemas.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import { CompressionType, RecordBatchBuilder } from '../../protocol/records/index.ts';
import type { Prng } from './prng.ts';

export const LEDGER_TOPICS = ['fz-ledger-0', 'fz-ledger-1'];
export const LEDGER_PARTITIONS = 3;
export const SCRATCH_TOPICS = ['fz-scratch-0', 'fz-scratch-1', 'fz-scratch-2'];
const MISSING_TOPICS = ['fz-missing', 'fz-auto-0', 'fz-auto-1', '', 'bad/topic', '__consumer_offsets'];
const GROUPS = ['fz-group-0', 'fz-group-1', 'fz-group-2', ''];
const TXN_IDS = ['fz-txn-0', 'fz-txn-1'];
const CONFIG_NAMES = [
  'retention.ms',
  'cleanup.policy',
  'segment.bytes',
  'max.message.bytes',
  'min.insync.replicas',
  'retention.bytes',
  'no.such.config',
];
const CONFIG_VALUES = ['1000', 'delete', 'compact', '1048576', '-1', '0', 'x'];
const PROTOCOL_NAMES = ['range', 'roundrobin', 'cooperative-sticky'];
export const CODECS = [CompressionType.None, CompressionType.Gzip, CompressionType.Snappy, CompressionType.Lz4, CompressionType.Zstd];

/** APIs that delete or rewrite data: never aimed at the ledger topics. */
const DESTRUCTIVE = new Set<number>([
  ApiKey.DeleteTopics,
  ApiKey.DeleteRecords,
  ApiKey.AlterConfigs,
  ApiKey.IncrementalAlterConfigs,
  ApiKey.AlterPartitionReassignments,
  ApiKey.AlterReplicaLogDirs,
  ApiKey.ElectLeaders,
  ApiKey.StopReplica,
  ApiKey.LeaderAndIsr,
  ApiKey.UpdateMetadata,
  ApiKey.WriteTxnMarkers,
  ApiKey.CreatePartitions,
]);

/** APIs that change a connection's state (SASL) or that a broker closes connections for by design. */
export const CONNECTION_STATEFUL = new Set<number>([ApiKey.SaslHandshake, ApiKey.SaslAuthenticate]);

const requestSchemas = new Map<number, MessageSchema>();
for (const s of schemas) if (s.type === 'request' && s.apiKey !== null) requestSchemas.set(s.apiKey, s);

type Maker = (fields?: Record<string, unknown>) => Record<string, unknown>;
const makers = new Map<string, Maker>();
for (const s of requestSchemas.values()) {
  const mod = (await import(new URL(`../../protocol/messages/${s.module.slice(2)}`, import.meta.url).href)) as Record<string, unknown>;
  for (const [name, fn] of Object.entries(mod))
    if (name.startsWith('make') && typeof fn === 'function') makers.set(name.slice(4), fn as Maker);
}

export interface RecordKV {
  key: Buffer;
  value: Buffer;
}

/** One batch a Produce carries, for the oracle. */
export interface ProducedBatch {
  topic: string;
  partition: number;
  batch: Buffer;
  /** What the fuzzer built into it (before any corruption). */
  records: RecordKV[];
  /** Set when the fuzzer knows the batch is invalid without decoding it (e.g. a bomb). */
  knownInvalid: string | null;
  /** Whether the fuzzer deliberately changed the batch after building it. */
  tampered: string | null;
  /** The request names this partition more than once: its answer is ambiguous. */
  duplicate?: boolean;
}

export interface GenRequest {
  apiKey: number;
  version: number;
  msg: unknown;
  label: string;
  /** acks=0 produces get no response. */
  expectResponse: boolean;
  produced?: ProducedBatch[];
}

export interface GenOptions {
  edge?: boolean;
}

function inRange(r: VersionRange | null | undefined, v: number): boolean {
  return r != null && v >= r[0] && v <= r[1];
}

const INT_EDGES: Record<string, readonly (number | bigint)[]> = {
  int8: [-128, 127, -1, 0],
  int16: [-32768, 32767, -1, 0],
  uint16: [65535, 0],
  int32: [-1, 0, 2147483647, -2147483648, 1_000_000_000],
  int64: [2n ** 60n, -1n, -2n, 2n ** 63n - 1n, -(2n ** 63n), 0n],
};

/** Builds plausible record batches; every record has a unique key so the oracle can find it. */
export class BatchFactory {
  private counter = 0;

  constructor(
    private readonly rng: Prng,
    private readonly tag: string,
  ) {}

  records(n: number): RecordKV[] {
    const out: RecordKV[] = [];
    for (let i = 0; i < n; i++) {
      const key = Buffer.from(`${this.tag}-${this.counter++}`);
      const len = this.rng.pick([0, 1, 16, 100, 700]);
      const value = this.rng.chance(0.5) ? this.rng.bytes(len) : Buffer.from('v'.repeat(len) + key.toString());
      out.push({ key, value });
    }
    return out;
  }

  async build(
    codec: CompressionType,
    records: RecordKV[],
    extra: { producerId?: bigint; producerEpoch?: number; baseSequence?: number; isTransactional?: boolean } = {},
  ): Promise<Buffer> {
    const b = new RecordBatchBuilder({
      compression: codec,
      compressionOptions: { snappyFraming: this.rng.chance(0.5) ? 'xerial' : 'raw' },
      ...extra,
    });
    const now = Date.now();
    for (const r of records)
      b.add({ key: r.key, value: r.value, timestamp: now, headers: this.rng.chance(0.2) ? [{ key: 'h', value: Buffer.from('x') }] : [] });
    return b.build();
  }

  async batch(topic: string, partition: number, codec = this.rng.pick(CODECS)): Promise<ProducedBatch> {
    const records = this.records(this.rng.range(1, 5));
    return { topic, partition, batch: await this.build(codec, records), records, knownInvalid: null, tampered: null };
  }
}

/** The generator: one per run, fed by the run's PRNG. */
export class Generator {
  constructor(
    private readonly rng: Prng,
    readonly batches: BatchFactory,
    /** Advertised (apiKey -> [min, max]) from ApiVersions. */
    readonly advertised: ReadonlyMap<number, readonly [number, number]>,
  ) {}

  topic(destructive: boolean): string {
    const r = this.rng.float();
    if (!destructive && r < 0.5) return this.rng.pick(LEDGER_TOPICS);
    if (r < 0.8) return this.rng.pick(SCRATCH_TOPICS);
    return this.rng.pick(MISSING_TOPICS);
  }

  /** A random advertised (apiKey, version). */
  pickApi(): { apiKey: number; version: number } {
    const keys = [...this.advertised.keys()];
    // Produce, Fetch and Metadata carry most of a real broker's traffic.
    const apiKey = this.rng.chance(0.3)
      ? this.rng.pick([ApiKey.Produce, ApiKey.Produce, ApiKey.Fetch, ApiKey.Metadata])
      : this.rng.pick(keys);
    const [lo, hi] = this.advertised.get(apiKey) ?? [0, 0];
    return { apiKey, version: this.rng.range(lo, hi) };
  }

  /** A valid request for (apiKey, version). */
  async request(apiKey: number, version: number, opts: GenOptions = {}): Promise<GenRequest> {
    const schema = requestSchemas.get(apiKey);
    if (!schema) throw new Error(`no request schema for api ${apiKey}`);
    const ctx: Ctx = { version, edge: opts.edge ?? false, destructive: DESTRUCTIVE.has(apiKey), api: schema.name, depth: 0 };
    const msg = this.struct(schema.name, schema.fields, ctx, '');
    const out: GenRequest = { apiKey, version, msg, label: `${schema.name} v${version}${ctx.edge ? ' edge' : ''}`, expectResponse: true };
    if (apiKey === ApiKey.Produce) await this.fillProduce(out, ctx);
    return out;
  }

  private async fillProduce(req: GenRequest, ctx: Ctx): Promise<void> {
    const msg = req.msg as {
      acks: number;
      transactionalId: string | null;
      topicData: { name: string; partitionData: { index: number; records: Buffer | null }[] }[];
    };
    msg.transactionalId = null;
    if (!ctx.edge) {
      // Distinct (topic, partition) pairs, so each acknowledgement names one batch.
      const topics = this.rng.chance(0.8) ? [this.rng.pick(LEDGER_TOPICS)] : [...LEDGER_TOPICS];
      msg.topicData = topics.map((name) => {
        const n = this.rng.range(1, LEDGER_PARTITIONS);
        const start = this.rng.int(LEDGER_PARTITIONS);
        return { name, partitionData: Array.from({ length: n }, (_, i) => ({ index: (start + i) % LEDGER_PARTITIONS, records: null })) };
      });
    }
    if (msg.acks === 0) req.expectResponse = false;
    req.produced = [];
    const seen = new Set<string>();
    for (const t of msg.topicData) {
      for (const p of t.partitionData) {
        // zstd needs Produce v7+ (KIP-110): older versions answer UNSUPPORTED_COMPRESSION_TYPE.
        const codecs = req.version >= 7 ? CODECS : CODECS.filter((c) => c !== CompressionType.Zstd);
        const b = await this.batches.batch(t.name, p.index, this.rng.pick(codecs));
        p.records = b.batch;
        const id = `${t.name}/${p.index}`;
        if (!seen.has(id)) {
          seen.add(id);
          req.produced.push(b);
        } else {
          for (const x of req.produced) if (`${x.topic}/${x.partition}` === id) x.duplicate = true;
        }
      }
    }
    req.label = `${req.label} ${req.produced.map((b) => `${b.topic.slice(0, 40)}/${b.partition}`).join(',')}`.slice(0, 200);
  }

  private struct(name: string, fields: readonly FieldSchema[], ctx: Ctx, path: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const v = ctx.version;
    for (const f of fields) {
      if (!inRange(f.versions, v)) continue;
      if (inRange(f.taggedVersions, v) && this.rng.chance(0.6)) continue;
      if (inRange(f.nullableVersions, v) && this.rng.chance(0.1)) {
        out[f.name] = null;
        continue;
      }
      out[f.name] = this.value(f, f.type, ctx, `${path}.${f.name}`, name);
    }
    const make = makers.get(name);
    return make ? make(out) : out;
  }

  private value(f: FieldSchema, type: string, ctx: Ctx, path: string, parent: string): unknown {
    if (type.startsWith('[]')) {
      const element = type.slice(2);
      const top = ctx.depth === 0;
      let n = top ? this.rng.range(1, 2) : this.rng.range(0, 3);
      if (ctx.edge && this.rng.chance(0.05)) n = element === 'struct' ? 200 : 2000;
      const sub = { ...ctx, depth: ctx.depth + 1 };
      // Distinct names where the broker keys by them (topics, groups); duplicates come from mutation.
      const out: unknown[] = [];
      for (let i = 0; i < n; i++) out.push(this.value(f, element, sub, path, parent));
      return out;
    }
    if (type === 'struct') return this.struct(f.struct ?? '', f.fields ?? [], { ...ctx, depth: ctx.depth + 1 }, path);
    const name = f.name.toLowerCase();
    const p = parent.toLowerCase();
    switch (type) {
      case 'bool':
        return this.rng.chance(0.5);
      case 'uuid':
        return this.rng.chance(0.8) ? ZERO_UUID : this.rng.bytes(16).toString('base64url');
      case 'float64':
        return this.rng.pick([0, 1.5, -1, 1e9]);
      case 'bytes':
        return this.bytesValue(name, p);
      case 'records':
        return null; // filled by fillProduce (Produce is the only request with records)
      case 'string':
        return this.stringValue(name, p, ctx);
      default:
        return this.intValue(type, name, p, ctx);
    }
  }

  private bytesValue(name: string, parent: string): Buffer {
    if (name === 'metadata' && parent.includes('protocol')) {
      // ConsumerProtocolSubscription v0: one topic.
      const topic = Buffer.from(this.rng.pick(LEDGER_TOPICS));
      const b = Buffer.alloc(2 + 4 + 2 + topic.length + 4);
      let at = b.writeInt16BE(0, 0);
      at = b.writeInt32BE(1, at);
      at = b.writeInt16BE(topic.length, at);
      at += topic.copy(b, at);
      b.writeInt32BE(-1, at);
      return b;
    }
    return this.rng.bytes(this.rng.pick([0, 4, 32]));
  }

  private stringValue(n: string, p: string, ctx: Ctx): string {
    if (ctx.edge && this.rng.chance(0.05)) return this.rng.chance(0.5) ? 'x'.repeat(32767) : 'ü'.repeat(this.rng.range(1, 300));
    if (n === 'topic' || n === 'topicname' || (n === 'name' && p.includes('topic'))) return this.topic(ctx.destructive);
    if (n === 'resourcename') return this.rng.chance(0.6) ? this.topic(ctx.destructive) : this.rng.pick(GROUPS);
    if (n === 'groupid' || (n === 'name' && p.includes('group')) || n === 'groupids') return this.rng.pick(GROUPS);
    if (n.includes('transactionalid')) return this.rng.pick(TXN_IDS);
    if (n === 'memberid') return this.rng.chance(0.7) ? '' : `member-${this.rng.int(3)}`;
    if (n === 'groupinstanceid') return `inst-${this.rng.int(2)}`;
    if (n === 'protocoltype') return 'consumer';
    if ((n === 'name' && p.includes('protocol')) || n === 'protocolname') return this.rng.pick(PROTOCOL_NAMES);
    if ((n === 'name' || n === 'configname' || n === 'key') && p.includes('config')) return this.rng.pick(CONFIG_NAMES);
    if (n === 'value' && p.includes('config')) return this.rng.pick(CONFIG_VALUES);
    if (n.includes('principal')) return 'User:fuzz';
    if (n === 'host') return this.rng.pick(['*', '127.0.0.1']);
    if (n === 'clientsoftwarename') return 'sluice-fuzz';
    if (n === 'clientsoftwareversion') return '0.1.0';
    if (n === 'mechanism') return 'PLAIN';
    if (n.includes('rack')) return '';
    return this.rng.pick(['', 'a', 'fuzz', `s${this.rng.int(1000)}`]);
  }

  private intValue(type: string, n: string, p: string, ctx: Ctx): number | bigint {
    const big = type === 'int64';
    const num = (x: number): number | bigint => (big ? BigInt(x) : x);
    // Waits stay short even in edge mode: a long wait is legitimate, not a hang.
    const isWait = /(timeout|wait|delay)ms$/.test(n) || n === 'maxwaitms';
    if (ctx.edge && !isWait && n !== 'acks' && this.rng.chance(0.35)) return this.rng.pick(INT_EDGES[type] ?? [0]);
    if (n === 'acks') return this.rng.pick([1, -1, 1, -1, 0]);
    if (n === 'sessiontimeoutms') return this.rng.range(6000, 10000);
    if (n === 'rebalancetimeoutms') return this.rng.range(500, 3000);
    if (isWait) return num(this.rng.range(0, 500));
    if (/^(partition|partitionindex|partitionid|index)$/.test(n) || (n === 'partitions' && type === 'int32'))
      return num(this.rng.range(0, 2));
    if (n === 'numpartitions' || n === 'count') return num(this.rng.pick([1, 2, 3, -1]));
    if (n === 'replicationfactor') return this.rng.pick([1, -1]);
    if (n.includes('generationid') || n === 'memberepoch') return num(this.rng.range(-1, 1));
    if (n.includes('epoch')) return num(this.rng.range(-1, 2));
    if (n === 'maxbytes' || n === 'partitionmaxbytes') return num(1 << 20);
    if (n === 'minbytes') return num(this.rng.range(0, 1));
    if (n === 'isolationlevel') return this.rng.range(0, 1);
    if (/(replica|broker|node|leader)id$/.test(n)) return num(this.rng.pick([-1, 1, 0]));
    if (n === 'sessionid' || n.includes('throttle')) return num(0);
    if (n === 'retentiontimems') return -1n;
    if (n === 'producerid') return this.rng.chance(0.6) ? -1n : BigInt(this.rng.range(0, 3));
    if (n.includes('offset')) return num(this.rng.pick([0, 1, 5, 20, -1, -2]));
    if (n.includes('timestamp')) return num(this.rng.pick([-1, -2, Date.now()]));
    if (n === 'resourcetype') return this.rng.pick([1, 2, 3, 4]);
    if (n.endsWith('patterntype')) return this.rng.pick([1, 3, 4]);
    if (n === 'operation') return this.rng.range(1, 4);
    if (n === 'permissiontype') return this.rng.pick([1, 3]);
    return num(this.rng.range(0, 3));
  }
}

interface Ctx {
  version: number;
  edge: boolean;
  destructive: boolean;
  api: string;
  depth: number;
}

export function apiName(apiKey: number): string {
  return apis.get(apiKey)?.name ?? `api${apiKey}`;
}
