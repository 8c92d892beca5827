/**
 * Requests one broker sends another for its coordinators (WriteTxnMarkers to partition
 * leaders, AddPartitionsToTxn verification to transaction coordinators): one kept connection
 * per broker on the inter-broker listener, opened again after a failure, as Kafka's
 * inter-broker send threads keep one per node.
 */
import { Errors, KafkaError } from '../../protocol/errors.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Network } from '../runtime/network.ts';
import { KafkaConnection, type ClientSecurity } from './connection.ts';

export interface InterBrokerChannelOptions {
  readonly nodeId: number;
  /** What the connections call themselves (the client id of their requests). */
  readonly purpose: string;
  /** A broker's inter-broker endpoint from the metadata, undefined when unknown. */
  readonly endpoint: (brokerId: number) => { host: string; port: number } | undefined;
  readonly requestTimeoutMs: number;
  readonly network?: Network;
  /** The inter-broker listener's TLS and SASL settings. */
  readonly security?: ClientSecurity;
  readonly clock?: Clock;
}

export class InterBrokerChannel {
  private readonly connections = new Map<number, Promise<KafkaConnection>>();
  private closed = false;

  constructor(private readonly options: InterBrokerChannelOptions) {}

  /** The highest version of `apiKey` both ends speak within [minVersion, maxVersion], or null when there is none. */
  async supportedVersion(brokerId: number, apiKey: number, minVersion: number, maxVersion: number): Promise<number | null> {
    const conn = await this.connection(brokerId);
    try {
      const version = conn.version(apiKey, maxVersion);
      return version >= minVersion ? version : null;
    } catch (err) {
      if (err instanceof KafkaError && err.code === Errors.UNSUPPORTED_VERSION.code) return null;
      throw err;
    }
  }

  /** Sends a request to another broker at `version` (default: the highest common one). */
  async send<Res>(brokerId: number, apiKey: number, request: unknown, version?: number): Promise<Res> {
    const connecting = this.connectingTo(brokerId);
    try {
      const conn = await connecting;
      if (conn.closed) throw new Error(`the connection to broker ${brokerId} closed`);
      return await conn.send<Res>(apiKey, request, version);
    } catch (err) {
      this.drop(brokerId, connecting);
      throw err;
    }
  }

  close(): void {
    this.closed = true;
    for (const connecting of this.connections.values())
      connecting.then(
        (c) => c.close(),
        () => undefined,
      );
    this.connections.clear();
  }

  private async connection(brokerId: number): Promise<KafkaConnection> {
    const connecting = this.connectingTo(brokerId);
    try {
      const conn = await connecting;
      if (conn.closed) throw new Error(`the connection to broker ${brokerId} closed`);
      return conn;
    } catch (err) {
      this.drop(brokerId, connecting);
      throw err;
    }
  }

  private connectingTo(brokerId: number): Promise<KafkaConnection> {
    if (brokerId === this.options.nodeId) return Promise.reject(new Error('a broker does not send itself requests over the network'));
    if (this.closed) return Promise.reject(new Error('the inter-broker channel is closed'));
    let connecting = this.connections.get(brokerId);
    if (connecting === undefined) {
      const endpoint = this.options.endpoint(brokerId);
      if (endpoint === undefined) return Promise.reject(new Error(`broker ${brokerId} has no inter-broker endpoint in the metadata`));
      connecting = KafkaConnection.connect(endpoint.host, endpoint.port, {
        clientId: `broker-${this.options.nodeId}-${this.options.purpose}`,
        connectTimeoutMs: this.options.requestTimeoutMs,
        requestTimeoutMs: this.options.requestTimeoutMs,
        network: this.options.network,
        clock: this.options.clock,
        ...this.options.security,
      });
      this.connections.set(brokerId, connecting);
    }
    return connecting;
  }

  private drop(brokerId: number, connecting: Promise<KafkaConnection>): void {
    if (this.connections.get(brokerId) === connecting) this.connections.delete(brokerId);
    connecting.then(
      (c) => c.close(),
      () => undefined,
    );
  }
}
