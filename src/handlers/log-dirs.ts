/** DescribeLogDirs: each log directory with the partitions it holds and their sizes. */
import {
  makeDescribeLogDirsResponse,
  makeDescribeLogDirsResponseDescribeLogDirsPartition,
  makeDescribeLogDirsResponseDescribeLogDirsResult,
  makeDescribeLogDirsResponseDescribeLogDirsTopic,
  type DescribeLogDirsRequest,
  type DescribeLogDirsResponse,
} from '../../protocol/messages/describe-log-dirs.ts';
import { Errors } from '../../protocol/errors.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';
import { type FileSystem, nodeFileSystem } from '../../storage/file-system.ts';

/** What DescribeLogDirs needs: the replicas this broker hosts and the directories they are in. */
export interface DescribeLogDirsServices {
  readonly replicaManager: Pick<ReplicaManager, 'describeLogDirs'>;
  /** Where the log dirs are, for their capacity (nodeFileSystem, the real disk, by default). */
  readonly fileSystem?: Pick<FileSystem, 'statfs'>;
}

export async function handleDescribeLogDirs(
  services: DescribeLogDirsServices,
  request: DescribeLogDirsRequest,
): Promise<DescribeLogDirsResponse> {
  let filter: ((topic: string, partition: number) => boolean) | null = null;
  if (request.topics !== null) {
    const wanted = new Map(request.topics.map((t) => [t.topic, new Set(t.partitions)]));
    filter = (topic, partition) => wanted.get(topic)?.has(partition) ?? false;
  }
  const dirs = services.replicaManager.describeLogDirs(filter);
  const results = await Promise.all(
    dirs.map(async (dir) => {
      if (dir.offline) {
        // As Kafka answers a failed dir: the error alone, no sizes, no partitions.
        return makeDescribeLogDirsResponseDescribeLogDirsResult({ errorCode: Errors.KAFKA_STORAGE_ERROR.code, logDir: dir.logDir });
      }
      let totalBytes = -1n;
      let usableBytes = -1n;
      let errorCode = Errors.NONE.code;
      try {
        const stats = await (services.fileSystem ?? nodeFileSystem).statfs(dir.logDir);
        totalBytes = BigInt(stats.blocks) * BigInt(stats.bsize);
        usableBytes = BigInt(stats.bavail) * BigInt(stats.bsize);
      } catch {
        errorCode = Errors.KAFKA_STORAGE_ERROR.code;
      }
      return makeDescribeLogDirsResponseDescribeLogDirsResult({
        errorCode,
        logDir: dir.logDir,
        totalBytes,
        usableBytes,
        topics: dir.topics.map((t) =>
          makeDescribeLogDirsResponseDescribeLogDirsTopic({
            name: t.name,
            partitions: t.partitions.map((p) =>
              makeDescribeLogDirsResponseDescribeLogDirsPartition({
                partitionIndex: p.partitionIndex,
                partitionSize: BigInt(p.partitionSizeBytes),
                offsetLag: BigInt(p.offsetLag),
                isFutureKey: p.isFutureKey,
              }),
            ),
          }),
        ),
      });
    }),
  );
  return makeDescribeLogDirsResponse({ errorCode: Errors.NONE.code, results });
}
