/**
 * A cluster seen through its bootstrap servers: Metadata for brokers and partition leaders,
 * FindCoordinator for group coordinators, one pooled connection per broker, every connection
 * opened with the same options (client id, TLS and SASL of a secured listener).
 *
 *   const cluster = new KafkaCluster(['127.0.0.1:9092']);
 *   const leader = await cluster.leaderConnection('orders', 0);
 *   const coordinator = await cluster.coordinatorConnection('my-group');
 *   await cluster.close();
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import {
  makeMetadataRequest,
  makeMetadataRequestTopic,
  type MetadataResponse,
  type MetadataResponseTopic,
} from '../../protocol/messages/metadata.ts';
import { makeFindCoordinatorRequest, type FindCoordinatorResponse } from '../../protocol/messages/find-coordinator.ts';
import { KafkaConnection, type ConnectionOptions } from './connection.ts';

export interface BrokerAddress {
  nodeId: number;
  host: string;
  port: number;
}

/** FindCoordinator key types. */
export enum CoordinatorType {
  Group = 0,
  Transaction = 1,
}

/** Topic names travel in Metadata up to v12 (v10+ also carries ids). */
const METADATA_MAX_VERSION = 12;

export function parseHostPort(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  const port = Number(address.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`invalid address '${address}': expected host:port`);
  }
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

export function kafkaError(code: number, context: string): KafkaError {
  const e = errorByCode(code);
  return new KafkaError(e, `${context}: ${e.name}${e.message ? ` (${e.message})` : ''}`);
}

export class KafkaCluster {
  private readonly bootstrap: { host: string; port: number }[];
  private readonly byAddress = new Map<string, Promise<KafkaConnection>>();
  private brokers = new Map<number, BrokerAddress>();

  constructor(
    bootstrapServers: readonly string[],
    private readonly options: ConnectionOptions = {},
  ) {
    if (bootstrapServers.length === 0) throw new Error('no bootstrap servers');
    this.bootstrap = bootstrapServers.map(parseHostPort);
  }

  /** A pooled connection to `host:port`, opened (and versions negotiated) on first use. */
  connection(host: string, port: number): Promise<KafkaConnection> {
    const key = `${host}:${port}`;
    const existing = this.byAddress.get(key);
    if (existing !== undefined) {
      return existing.then((c) => {
        if (!c.closed) return c;
        this.byAddress.delete(key);
        return this.connection(host, port);
      });
    }
    const opening = this.open(host, port);
    this.byAddress.set(key, opening);
    opening.catch(() => this.byAddress.delete(key));
    return opening;
  }

  /**
   * A new connection to `host:port`, outside the pool, with this cluster's options (its TLS
   * and SASL among them) and `overrides`: the pool's connections, and those a caller keeps
   * for itself (a group member's to its coordinator, with a longer request timeout).
   */
  open(host: string, port: number, overrides: ConnectionOptions = {}): Promise<KafkaConnection> {
    return KafkaConnection.connect(host, port, { ...this.options, ...overrides });
  }

  /** A connection to any bootstrap server that answers. */
  async anyConnection(): Promise<KafkaConnection> {
    let last: unknown;
    for (const { host, port } of this.bootstrap) {
      try {
        return await this.connection(host, port);
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }

  async brokerConnection(nodeId: number): Promise<KafkaConnection> {
    let broker = this.brokers.get(nodeId);
    if (broker === undefined) {
      await this.metadata([]);
      broker = this.brokers.get(nodeId);
    }
    if (broker === undefined) throw new Error(`broker ${nodeId} is not in the cluster metadata`);
    return this.connection(broker.host, broker.port);
  }

  /** Metadata for `topics` (null: all topics); refreshes the known brokers. */
  async metadata(topics: readonly string[] | null): Promise<MetadataResponse> {
    const conn = await this.anyConnection();
    const request = makeMetadataRequest({
      topics: topics === null ? null : topics.map((name) => makeMetadataRequestTopic({ name })),
      allowAutoTopicCreation: false,
    });
    const res = await conn.send<MetadataResponse>(ApiKey.Metadata, request, conn.version(ApiKey.Metadata, METADATA_MAX_VERSION));
    this.brokers = new Map(res.brokers.map((b) => [b.nodeId, { nodeId: b.nodeId, host: b.host, port: b.port }]));
    return res;
  }

  async listBrokers(): Promise<BrokerAddress[]> {
    await this.metadata([]);
    return [...this.brokers.values()].sort((a, b) => a.nodeId - b.nodeId);
  }

  /** The topic's metadata; throws with Kafka's error when the topic is unknown or has an error. */
  async topic(name: string): Promise<MetadataResponseTopic> {
    const res = await this.metadata([name]);
    const t = res.topics.find((x) => x.name === name);
    if (t === undefined) throw kafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION.code, `topic '${name}'`);
    if (t.errorCode !== Errors.NONE.code) throw kafkaError(t.errorCode, `topic '${name}'`);
    return t;
  }

  /** Leader node id per partition for each topic asked for (topics with errors are left out). */
  async leaders(topics: readonly string[]): Promise<Map<string, Map<number, number>>> {
    const res = await this.metadata(topics);
    const out = new Map<string, Map<number, number>>();
    for (const t of res.topics) {
      if (t.errorCode !== Errors.NONE.code || t.name === null) continue;
      out.set(t.name, new Map(t.partitions.map((p) => [p.partitionIndex, p.leaderId])));
    }
    return out;
  }

  async leaderConnection(topic: string, partition: number): Promise<KafkaConnection> {
    const t = await this.topic(topic);
    const p = t.partitions.find((x) => x.partitionIndex === partition);
    if (p === undefined || p.leaderId < 0) {
      throw kafkaError(
        p === undefined ? Errors.UNKNOWN_TOPIC_OR_PARTITION.code : Errors.LEADER_NOT_AVAILABLE.code,
        `${topic}-${partition}`,
      );
    }
    return this.brokerConnection(p.leaderId);
  }

  /** The coordinator of a group (or transactional id): FindCoordinator, batched keys from v4. */
  async findCoordinator(key: string, keyType = CoordinatorType.Group): Promise<BrokerAddress> {
    const conn = await this.anyConnection();
    const version = conn.version(ApiKey.FindCoordinator);
    const request =
      version >= 4 ? makeFindCoordinatorRequest({ keyType, coordinatorKeys: [key] }) : makeFindCoordinatorRequest({ key, keyType });
    const res = await conn.send<FindCoordinatorResponse>(ApiKey.FindCoordinator, request, version);
    const c =
      version >= 4
        ? res.coordinators.find((x) => x.key === key)
        : { nodeId: res.nodeId, host: res.host, port: res.port, errorCode: res.errorCode };
    if (c === undefined) throw new Error(`FindCoordinator answered without key '${key}'`);
    if (c.errorCode !== Errors.NONE.code) throw kafkaError(c.errorCode, `FindCoordinator '${key}'`);
    return { nodeId: c.nodeId, host: c.host, port: c.port };
  }

  async coordinatorConnection(key: string, keyType = CoordinatorType.Group): Promise<KafkaConnection> {
    const c = await this.findCoordinator(key, keyType);
    return this.connection(c.host, c.port);
  }

  async close(): Promise<void> {
    const all = [...this.byAddress.values()];
    this.byAddress.clear();
    for (const p of all) {
      try {
        (await p).close();
      } catch {
        // A connection that never opened has nothing to close.
      }
    }
  }
}
