/**
 * The data path as the broker wires it: the ReplicaManager, the fetch-session cache and the
 * producer-id manager, plus what the handlers need from cluster metadata.
 */
import type { FetchSessionCache } from './fetch-session.ts';
import type { ProducerIdManager } from './producer-id-manager.ts';
import type { ReplicaManager } from './replica-manager.ts';
import type { FileSystem } from '../../storage/file-system.ts';

export interface NodeEndpoint {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
}

export interface DataPathServices {
  readonly replicaManager: ReplicaManager;
  readonly fetchSessions: FetchSessionCache;
  readonly producerIds: ProducerIdManager;
  /** Topic name for a topic id from the metadata image, undefined when unknown. */
  topicNameOf(topicId: string): string | undefined;
  /** Topic id for a name from the metadata image. */
  topicIdOf(topic: string): string | undefined;
  /** fetch.max.bytes: the most a Fetch response carries, whatever the request asks for. */
  fetchMaxBytes(): number;
  /** request.timeout.ms: how long a write on another's behalf (WriteTxnMarkers) waits to be committed. */
  requestTimeoutMs(): number;
  /** Where the log dirs are (DescribeLogDirs reads their capacity); the real disk when absent. */
  readonly fileSystem?: FileSystem;
  /**
   * A live broker's endpoint on a listener (KIP-951 node_endpoints: where the current leader
   * is), undefined when it is unknown or fenced; '' is the first listener.
   */
  readonly nodeEndpoint?: (brokerId: number, listenerName: string) => NodeEndpoint | undefined;
}

export { ReplicaManager } from './replica-manager.ts';
export { ReplicaFetcherManager } from './fetcher.ts';
export { IsrManager } from './isr-manager.ts';
export { FetchSessionCache } from './fetch-session.ts';
export { ProducerIdManager } from './producer-id-manager.ts';
