/**
 * Records written to retry and dead-letter topics, counted where the broker sees them: the
 * leader's append. Which topics are retry or dead-letter topics is told by their names (the
 * naming of src/tools/dead-letters.ts, the retry library's); the source topic and the consumer
 * group come from the records' headers, so only batches of those topics are read, and they
 * are few by nature. A topic named otherwise (a dead-letter topic of a custom name) is not
 * counted: the broker would have to read every record of every topic to find them.
 */
import { Counter, type Registry, type RegistryContentType } from 'prom-client';
import { batchesIn } from '../../protocol/records/batch.ts';
import { readRecords } from '../../protocol/records/record.ts';
import { DeadLetterHeaders, type TopicRole, topicRole } from '../tools/dead-letters.ts';

/** Distinct label sets per counter: header values are the clients', so their number is bounded. */
export const DEAD_LETTER_SERIES_MAX = 1000;
/** The label value that stands for the source topics and groups past the bound. */
export const OVERFLOW_LABEL = '_other';

export class DeadLetterMetrics {
  private readonly deadLetters: Counter<'topic' | 'source_topic'>;
  private readonly retries: Counter<'topic' | 'source_topic' | 'group'>;
  private readonly roles = new Map<string, TopicRole>();
  /** Label sets in use, by topic, so a deleted topic's series go with it. */
  private readonly series = new Map<string, Map<string, Record<string, string>>>();
  private seriesCount = 0;
  /** Reads still running, so a caller (a test, a scrape) can wait for the counts to settle. */
  private pending = new Set<Promise<void>>();

  constructor(
    registry: Registry<RegistryContentType>,
    private readonly onError: (topic: string, err: unknown) => void,
  ) {
    const registers = [registry];
    this.deadLetters = new Counter({
      name: 'sluice_dlq_records_total',
      help: 'Records appended to dead-letter topics (<topic>.dlq), by dead-letter topic and the source topic their sluice.original.topic header names.',
      labelNames: ['topic', 'source_topic'],
      registers,
    });
    this.retries = new Counter({
      name: 'sluice_retry_records_total',
      help: 'Records appended to retry topics (<topic>.retry.N), by retry topic, source topic and the consumer group whose handler failed (sluice.consumer.group header).',
      labelNames: ['topic', 'source_topic', 'group'],
      registers,
    });
  }

  /** True when `topic` is a retry or dead-letter topic, whose appends `counted` should see. */
  counts(topic: string): boolean {
    let role = this.roles.get(topic);
    if (role === undefined) {
      role = topicRole(topic);
      this.roles.set(topic, role);
    }
    return role.kind !== 'other';
  }

  /**
   * Counts the records of batches appended to a retry or dead-letter topic. The batches are
   * copied first: the caller's buffers belong to a request and are not theirs to keep.
   */
  counted(topic: string, batches: readonly Buffer[]): void {
    const role = this.roles.get(topic) ?? topicRole(topic);
    if (role.kind === 'other') return;
    const copies = batches.map((b) => Buffer.from(b));
    const read = this.count(topic, role, copies)
      .catch((err: unknown) => this.onError(topic, err))
      .finally(() => this.pending.delete(read));
    this.pending.add(read);
  }

  /** Resolves once the batches handed to `counted` so far are counted. */
  async settled(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  /** Drops the series of topics that no longer exist. */
  prune(topicExists: (topic: string) => boolean): void {
    for (const [topic, labelSets] of this.series) {
      if (topicExists(topic)) continue;
      const counter = this.roles.get(topic)?.kind === 'retry' ? this.retries : this.deadLetters;
      for (const labels of labelSets.values()) counter.remove(labels);
      this.seriesCount -= labelSets.size;
      this.series.delete(topic);
      this.roles.delete(topic);
    }
  }

  private async count(topic: string, role: Exclude<TopicRole, { kind: 'other' }>, buffers: readonly Buffer[]): Promise<void> {
    for (const buffer of buffers) {
      for (const batch of batchesIn(buffer)) {
        if (batch.isControl) continue;
        for (const record of await readRecords(batch)) {
          const header = (name: string) => {
            const h = record.headers.find((x) => x.key === name);
            return h?.value == null ? undefined : h.value.toString('utf8');
          };
          const sourceTopic = header(DeadLetterHeaders.originalTopic) ?? role.sourceTopic;
          if (role.kind === 'dead-letter') {
            this.deadLetters.inc(this.labels(topic, { topic, source_topic: sourceTopic }));
          } else {
            const group = header(DeadLetterHeaders.consumerGroup) ?? '';
            this.retries.inc(this.labels(topic, { topic, source_topic: sourceTopic, group }));
          }
        }
      }
    }
  }

  /** The label set to count under: past the bound, new ones fold into OVERFLOW_LABEL. */
  private labels<L extends Record<string, string>>(topic: string, labels: L): L {
    let labelSets = this.series.get(topic);
    if (labelSets === undefined) {
      labelSets = new Map();
      this.series.set(topic, labelSets);
    }
    const key = JSON.stringify(labels);
    if (labelSets.has(key)) return labels;
    let chosen: L = labels;
    if (this.seriesCount >= DEAD_LETTER_SERIES_MAX) {
      chosen = { ...labels, source_topic: OVERFLOW_LABEL, ...('group' in labels ? { group: OVERFLOW_LABEL } : {}) };
      const overflowKey = JSON.stringify(chosen);
      if (labelSets.has(overflowKey)) return chosen;
      labelSets.set(overflowKey, chosen);
    } else {
      labelSets.set(key, chosen);
    }
    this.seriesCount++;
    return chosen;
  }
}
