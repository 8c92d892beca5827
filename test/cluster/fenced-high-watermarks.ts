// High watermark samples no deposed leader can answer: each ListOffsets (v4+) carries the
// newest leader epoch the sampler has seen for its partition, from any node's metadata or an
// earlier answer, so a leader that has not yet learned it lost the partition answers
// UNKNOWN_LEADER_EPOCH (a newer one FENCED_LEADER_EPOCH) instead of a high watermark from an
// older epoch. Within an epoch one leader answers, and its high watermark never goes back;
// a new leader answers OFFSET_NOT_AVAILABLE until its high watermark reaches the start of its
// epoch (KIP-207). So the checker holds these samples to never going backwards, with no
// allowance for a node that was cut off.
import { Errors } from '../../protocol/errors.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  type ListOffsetsResponse,
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
} from '../../protocol/messages/list-offsets.ts';
import { KafkaCluster } from '../../src/client/cluster.ts';
import { LATEST_TIMESTAMP } from '../../src/client/offsets.ts';

/** The first ListOffsets version with CurrentLeaderEpoch. */
const FENCED_LIST_OFFSETS_VERSION = 4;

export interface SampledNode {
  readonly nodeId: number;
  readonly address: string;
  readonly running: boolean;
  readonly paused: boolean;
}

export class FencedHighWatermarks {
  /** The newest leader epoch seen of each partition. */
  private readonly epochs = new Map<number, number>();

  constructor(
    private readonly topic: string,
    private readonly nodes: () => readonly SampledNode[],
    private readonly timeoutMs: number,
  ) {}

  /** The high watermark of every partition whose leader at the newest known epoch answered. */
  async sample(): Promise<Map<number, number>> {
    const leaders = await this.newestLeaders();
    const byLeader = new Map<number, number[]>();
    for (const [partition, leaderId] of leaders) byLeader.set(leaderId, [...(byLeader.get(leaderId) ?? []), partition]);
    const out = new Map<number, number>();
    await Promise.all(
      [...byLeader].map(async ([leaderId, partitions]) => {
        const node = this.nodes().find((n) => n.nodeId === leaderId && n.running && !n.paused);
        if (node === undefined) return;
        const answered = await this.withClient(node, (client) => this.listLatest(client, partitions));
        for (const [partition, highWatermark] of answered ?? []) out.set(partition, highWatermark);
      }),
    );
    return out;
  }

  /** Each partition's leader by the answer with the newest leader epoch, which also raises the epochs known. */
  private async newestLeaders(): Promise<Map<number, number>> {
    const answers = await Promise.all(
      this.nodes()
        .filter((n) => n.running && !n.paused)
        .map((n) => this.withClient(n, async (client) => (await client.metadata([this.topic])).topics.find((t) => t.name === this.topic))),
    );
    const leaders = new Map<number, { leaderId: number; epoch: number }>();
    for (const topic of answers) {
      if (topic === undefined || topic === null || topic.errorCode !== Errors.NONE.code) continue;
      for (const p of topic.partitions) {
        if (p.leaderId < 0) continue;
        this.raise(p.partitionIndex, p.leaderEpoch);
        const best = leaders.get(p.partitionIndex);
        if (best === undefined || p.leaderEpoch > best.epoch) leaders.set(p.partitionIndex, { leaderId: p.leaderId, epoch: p.leaderEpoch });
      }
    }
    return new Map([...leaders].map(([partition, l]) => [partition, l.leaderId]));
  }

  private async listLatest(client: KafkaCluster, partitions: readonly number[]): Promise<Map<number, number>> {
    const conn = await client.anyConnection();
    const version = conn.version(ApiKey.ListOffsets);
    if (version < FENCED_LIST_OFFSETS_VERSION) throw new Error(`ListOffsets v${version} carries no leader epoch`);
    const request = makeListOffsetsRequest({
      replicaId: -1,
      topics: [
        makeListOffsetsRequestListOffsetsTopic({
          name: this.topic,
          partitions: partitions.map((partitionIndex) =>
            makeListOffsetsRequestListOffsetsPartition({
              partitionIndex,
              currentLeaderEpoch: this.epochs.get(partitionIndex) ?? -1,
              timestamp: LATEST_TIMESTAMP,
            }),
          ),
        }),
      ],
    });
    const response = await conn.send<ListOffsetsResponse>(ApiKey.ListOffsets, request, version);
    const out = new Map<number, number>();
    for (const t of response.topics) {
      for (const p of t.partitions) {
        if (p.errorCode !== Errors.NONE.code) continue;
        this.raise(p.partitionIndex, p.leaderEpoch);
        out.set(p.partitionIndex, Number(p.offset));
      }
    }
    return out;
  }

  private raise(partition: number, epoch: number): void {
    if (epoch > (this.epochs.get(partition) ?? -1)) this.epochs.set(partition, epoch);
  }

  /** Runs `work` against one node, null when it fails or does not answer in time. */
  private async withClient<T>(node: SampledNode, work: (client: KafkaCluster) => Promise<T>): Promise<T | null> {
    const client = new KafkaCluster([node.address]);
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        work(client).catch(() => null),
        new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), this.timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      // Not awaited: a connection to a paused node may still be opening, and closes once it opens.
      void client.close().catch(() => {});
    }
  }
}
