/**
 * The history as it is recorded during a fault run: every client reports here (each
 * acknowledgement, consumed record and commit), the sampler its high watermarks and committed
 * offsets, the nodes their exits. Times are milliseconds since the run started.
 */
import type { Ack, Consumed, NodeExit, Sample } from './history.ts';
import { recordValue } from './history.ts';

/** Distinct client errors kept for the report (the count goes on). */
const ERRORS_KEPT = 40;

export class Recorder {
  readonly startedAtMs = Date.now();
  readonly acks: Ack[] = [];
  readonly consumed: Consumed[] = [];
  readonly highWatermarks: Sample[] = [];
  readonly commits = new Map<string, Sample[]>();
  readonly exits: NodeExit[] = [];
  /** Each distinct client error (its first time) and how often it came. */
  readonly clientErrors = new Map<string, { firstAtMs: number; count: number }>();
  unacknowledged = 0;
  clientErrorCount = 0;
  private readonly consumedValues = new Map<string, Set<string>>();
  private readonly ackedByProducer = new Map<string, number>();

  now(): number {
    return Date.now() - this.startedAtMs;
  }

  ack(producer: string, seq: number, partition: number, offset: number | null): void {
    this.acks.push({ producer, seq, partition, offset, value: recordValue(producer, seq) });
    this.ackedByProducer.set(producer, (this.ackedByProducer.get(producer) ?? 0) + 1);
  }

  acked(producer: string): number {
    return this.ackedByProducer.get(producer) ?? 0;
  }

  /** A record the producer gave up on. */
  failed(producer: string, seq: number, error: string): void {
    this.unacknowledged++;
    this.clientError(`${producer}: a record not acknowledged: ${error}`);
  }

  clientError(message: string): void {
    this.clientErrorCount++;
    const seen = this.clientErrors.get(message);
    if (seen !== undefined) seen.count++;
    else if (this.clientErrors.size < ERRORS_KEPT) this.clientErrors.set(message, { firstAtMs: this.now(), count: 1 });
  }

  record(group: string, partition: number, offset: number, value: string): void {
    this.consumed.push({ group, partition, offset, value });
    let seen = this.consumedValues.get(group);
    if (seen === undefined) {
      seen = new Set();
      this.consumedValues.set(group, seen);
    }
    seen.add(value);
  }

  /** A client's report of its own commit (a floor from now on). */
  commit(group: string, partition: number, offset: number, source: string): void {
    this.commitSample(group, { atMs: this.now(), floor: true, partition, value: offset, source });
  }

  /** A committed offset the sampler read between `atMs` and now. */
  sampledCommit(group: string, partition: number, offset: number, atMs: number): void {
    this.commitSample(group, { atMs, untilMs: this.now(), partition, value: offset, source: 'sampler' });
  }

  private commitSample(group: string, sample: Sample): void {
    let samples = this.commits.get(group);
    if (samples === undefined) {
      samples = [];
      this.commits.set(group, samples);
    }
    samples.push(sample);
  }

  /** A high watermark the sampler read between `atMs` and now. */
  highWatermark(partition: number, value: number, atMs: number): void {
    this.highWatermarks.push({ atMs, untilMs: this.now(), partition, value, source: 'sampler' });
  }

  /** How many acknowledged records `group` has not consumed yet. */
  unconsumed(group: string): number {
    const seen = this.consumedValues.get(group);
    let missing = 0;
    for (const a of this.acks) if (seen === undefined || !seen.has(a.value)) missing++;
    return missing;
  }
}
