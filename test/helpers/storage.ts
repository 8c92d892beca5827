import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordBatchBuilder } from '../../protocol/records/index.ts';
import type { RecordBatchOptions } from '../../protocol/records/index.ts';
import { type RecordBatch, batchesIn } from '../../protocol/records/batch.ts';
import { iterateRecords, decompressedRecords } from '../../protocol/records/index.ts';
import type { LogConfig } from '../../storage/config.ts';
import type { BackgroundErrorSink } from '../../storage/errors.ts';
import { DEFAULT_LOG_CONFIG } from '../../src/config/topic-config.ts';

export interface TestRecord {
  key?: string | null;
  value?: string | null;
  timestamp?: number;
}

/** One v2 batch (base offset 0, as a producer sends it). */
export async function batch(records: TestRecord[], options: RecordBatchOptions = {}): Promise<Buffer> {
  const b = new RecordBatchBuilder(options);
  for (const r of records) {
    b.add({
      key: r.key == null ? null : Buffer.from(r.key),
      value: r.value === null ? null : Buffer.from(r.value ?? 'v'),
      timestamp: r.timestamp ?? 1_000,
    });
  }
  return b.build();
}

/** A batch of `count` records with values of `valueBytes` bytes. */
export function simpleBatch(count: number, timestamp = 1_000, valueBytes = 10, options: RecordBatchOptions = {}): Promise<Buffer> {
  const records: TestRecord[] = [];
  for (let i = 0; i < count; i++) records.push({ key: `k${i}`, value: 'x'.repeat(valueBytes), timestamp });
  return batch(records, options);
}

export function headers(buf: Buffer): RecordBatch[] {
  return [...batchesIn(buf, true)];
}

export async function recordsOf(buf: Buffer): Promise<{ offset: number; key: string | null; value: string | null; timestamp: number }[]> {
  const out = [];
  for (const b of batchesIn(buf, true)) {
    for (const r of iterateRecords(b, await decompressedRecords(b))) {
      out.push({ offset: r.offset, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null, timestamp: r.timestamp });
    }
  }
  return out;
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-storage-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A settable clock. */
export class ManualClock {
  constructor(public nowMs = 1_000_000) {}
  readonly time = (): number => this.nowMs;
  advance(ms: number): void {
    this.nowMs += ms;
  }
}

/** A whole LogConfig: Kafka's topic defaults (from the config definitions) with `overrides`. */
export function logConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  return { ...DEFAULT_LOG_CONFIG, ...overrides };
}

/** Collects what storage reports to its BackgroundErrorSink, for a test to assert on. */
export class BackgroundErrors {
  readonly reported: { err: unknown; what: string }[] = [];
  readonly sink: BackgroundErrorSink = (err, what) => {
    this.reported.push({ err, what });
  };
  get whats(): string[] {
    return this.reported.map((r) => r.what);
  }
}
