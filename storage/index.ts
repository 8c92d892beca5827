// The storage engine's public API. The broker uses LogManager to find or create a
// partition's PartitionLog, then append / read / offset lookups on it.

export {
  LogManager,
  CLEAN_SHUTDOWN_FILE,
  RECOVERY_POINT_CHECKPOINT,
  LOG_START_OFFSET_CHECKPOINT,
  REPLICATION_OFFSET_CHECKPOINT,
  CLEANER_OFFSET_CHECKPOINT,
} from './log-manager.ts';
export { DEFAULT_LOAD_CONCURRENCY } from './log-manager.ts';
export type { LogManagerOptions, LogManagerTasks, RecoverySummary } from './log-manager.ts';
export { PartitionLog } from './log.ts';
export type {
  AppendListener,
  AppendOptions,
  LogAppendInfo,
  LogReadResult,
  PartitionLogOptions,
  TimestampAndOffset,
} from './log.ts';
export { NEVER, isCompacted, hasDeletePolicy } from './config.ts';
export type { LogConfig, CleanupPolicy, MessageTimestampType } from './config.ts';
export {
  StorageError,
  CorruptRecordError,
  RecordTooLargeError,
  OffsetOutOfRangeError,
  UnexpectedAppendOffsetError,
  LogClosedError,
  StorageIOError,
  ProducerStateError,
} from './errors.ts';
export type { BackgroundErrorSink, ProducerErrorCode } from './errors.ts';
export { LeaderEpochCache, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET } from './leader-epoch-cache.ts';
export type { EpochEntry } from './leader-epoch-cache.ts';
export { ProducerStateManager, NUM_BATCHES_TO_RETAIN } from './producer-state.ts';
export type {
  ProducerCheck,
  ProducerDescription,
  ProducerStateEntry,
  BatchMetadata,
  AppendOrigin,
  TransactionVerification,
  VerificationGuard,
} from './producer-state.ts';
export { LogCleaner, CLEANER_MAX_MAP_KEYS, CLEANER_SLICE_MS } from './cleaner.ts';
export type { CleanerOptions, CleanResult } from './cleaner.ts';
export { FileHandlePool, DEFAULT_MAX_OPEN_FILES, DEFAULT_SYNC_READ_MAX_BYTES } from './file-pool.ts';
export { ReadBufferPool, ReadBufferLease } from './read-buffers.ts';
export type { ReadBufferSource } from './read-buffers.ts';
export type { FileHandlePoolOptions } from './file-pool.ts';
export { createDirectory, readOffsetCheckpoint, writeOffsetCheckpoint } from './checkpoint.ts';
export { systemClock } from './clock.ts';
export type { Clock, TimerHandle } from './clock.ts';
export { nodeFileSystem } from './file-system.ts';
export type { DirEntry, FileHandle, FileStats, FileSystem, FileSystemStats, OpenFlags } from './file-system.ts';
export { MemoryFileSystem } from './memory-file-system.ts';
export type { InjectedErrno, MemoryFileSystemOptions, NameDurability } from './memory-file-system.ts';
