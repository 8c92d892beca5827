import type { Capability } from './capabilities.ts';

// What every client adapter offers the scenarios. Each adapter drives one real client
// (in-process for the Node clients, a child process for the others) and reports what the
// client saw; the scenarios hold all the expectations, once for every client.

export type Codec = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
export const CODECS: readonly Codec[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

export type Header = [string, string];

export interface ProducedRecord {
  key: string | null;
  value: string;
  headers: Header[];
  // CreateTime set by the producer; absent when the client cannot set it per record.
  timestamp?: number;
}

export interface Delivery {
  partition: number;
  offset: number;
}

export interface ConsumedRecord {
  partition: number;
  offset: number;
  key: string | null;
  value: string;
  headers: Header[];
  timestamp: number;
}

export interface ClusterInfo {
  brokers: { id: number; host: string; port: number }[];
  controllerId: number | null;
  topics: string[];
}

export interface ProduceOptions {
  codec: Codec;
  idempotent: boolean;
  // Java-compatible murmur2 partitioning of keyed records, for clients that offer it.
  murmur2: boolean;
}

export type StartOffset = 'earliest' | 'latest' | { offset: number };

export interface ConsumeOptions {
  topic: string;
  partitions: number[];
  from: StartOffset;
  autoOffsetReset: 'earliest' | 'latest';
  count: number;
  // The broker-side long-poll wait the client asks for (fetch.max.wait.ms and friends).
  maxWaitMs?: number;
  // isolation.level read_committed; the client's default when absent.
  readCommitted?: boolean;
  timeoutMs: number;
}

export interface TransactionSpec {
  records: ProducedRecord[];
  commit: boolean;
}

export interface TransformOptions {
  input: string;
  output: string;
  group: string;
  transactionalId: string;
  // Records to read from `input` (read_committed, from the earliest) and write to `output`.
  count: number;
  timeoutMs: number;
}

export interface GroupConsumeOptions {
  group: string;
  topic: string;
  members: number;
  // Records the members receive between them before they commit and leave.
  count: number;
  timeoutMs: number;
}

export interface GroupConsumeResult {
  // Partitions each member was assigned once the group settled.
  assignments: number[][];
  records: ConsumedRecord[];
}

export type OffsetSpec = 'earliest' | 'latest' | { timestamp: number };

export interface TopicDescription {
  partitions: number;
}

export interface DriverInfo {
  readonly client: string;
  readonly features: {
    recordTimestamps: boolean;
    recordHeaders: boolean;
    // Whether a record may carry one header key twice (Kafka allows it).
    duplicateHeaderKeys: boolean;
    murmur2: boolean;
    idempotence: boolean;
    // A transactional producer that commits or aborts each transaction on request.
    transactions: boolean;
    admin: boolean;
    groups: boolean;
    listOffsets: boolean;
    // What the client reports for a timestamp after every record: Kafka answers -1 and most
    // clients pass that on as "none"; kafkajs substitutes the latest offset.
    pastEndTimestamp: 'none' | 'latest';
    // Whether a fetch this client leaves waiting at the broker ends as soon as a record arrives.
    // Measured against Apache Kafka 4.1.1: librdkafka and kafka-python consumers get the record
    // at once; the Java client and kafkajs consumers get it only when their fetch.max.wait.ms
    // runs out, so for them the long-poll scenario checks delivery, not promptness.
    wokenByAppend: boolean;
    // Whether the consumer applies its auto.offset.reset policy to an out-of-range position.
    resetsOutOfRange: boolean;
    codecs: readonly Codec[];
  };
  // Capabilities the client itself uses beyond a scenario's own (the Java producer is
  // idempotent by default; some consumers always join a group).
  readonly producerRequires: readonly Capability[];
  readonly consumerRequires: readonly Capability[];
  // How the client reports these broker errors.
  readonly errors: { unknownTopic: RegExp; messageTooLarge: RegExp };
}

export interface Driver extends DriverInfo {
  metadata(): Promise<ClusterInfo>;
  // Rejects with the client's error for an unknown topic.
  describeTopic(topic: string): Promise<TopicDescription>;

  createTopic?(topic: string, partitions: number, configs: Record<string, string>): Promise<void>;
  listTopics?(): Promise<string[]>;
  createPartitions?(topic: string, totalCount: number): Promise<void>;
  describeConfigs?(topic: string): Promise<Record<string, string>>;
  // Sets the given topic configs (the others keep or regain their values as the client's
  // API does; scenarios pass every config they check).
  alterConfigs?(topic: string, configs: Record<string, string>): Promise<void>;
  deleteTopic?(topic: string): Promise<void>;

  // Resolves once every record is acknowledged (acks=all); rejects with the client's error.
  produce(topic: string, records: ProducedRecord[], options: ProduceOptions): Promise<Delivery[]>;
  consume(options: ConsumeOptions): Promise<ConsumedRecord[]>;
  // One transactional producer (transactional.id `transactionalId`) sends each transaction's
  // records and commits or aborts it, in order; resolves once the last one has ended.
  produceTransactions?(topic: string, transactionalId: string, transactions: TransactionSpec[]): Promise<void>;
  // Exactly-once consume-transform-produce (KIP-447): a read_committed consumer in `group`
  // reads `count` records of `input`, and one transaction writes their values to `output` and
  // commits the consumer's offsets with them (the client's sendOffsetsToTransaction).
  transformInTransaction?(options: TransformOptions): Promise<void>;
  listOffset?(topic: string, partition: number, spec: OffsetSpec): Promise<number | null>;
  groupConsume?(options: GroupConsumeOptions): Promise<GroupConsumeResult>;
  committedOffsets?(group: string, topic: string, partitions: number): Promise<(number | null)[]>;

  close(): Promise<void>;
}

export interface DriverFactory {
  readonly info: DriverInfo;
  // null when the client can run here, else why it cannot (a missing system package).
  unavailable(): string | null;
  create(bootstrap: string): Driver;
}
