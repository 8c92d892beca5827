/**
 * Kafka's Rate over a WindowedSum (a SampledStat), the stat behind the byte-rate and
 * request-time quotas: values are summed into `samples` time windows, and the rate is that sum
 * over the elapsed time, counted as at least `samples - 1` full windows so that a client's first
 * burst is not measured against a few milliseconds.
 */

/** quota.window.num, and quota.window.size.seconds in milliseconds. */
export interface QuotaWindow {
  readonly samples: number;
  readonly windowMs: number;
}

/** Throws for a window Kafka's MetricConfig refuses (or one it could not express). */
export function assertQuotaWindow(window: QuotaWindow): void {
  if (!Number.isInteger(window.samples) || window.samples < 1) throw new RangeError('The number of samples must be at least 1.');
  if (!(window.windowMs > 0)) throw new RangeError(`The window size must be positive: ${window.windowMs} ms.`);
}

interface Sample {
  value: number;
  eventCount: number;
  startTimeMs: number;
  lastEventMs: number;
}

export class SampledRate {
  /** One more than `samples`: the extra one holds the sample that overlaps the window's start. */
  private readonly samples: Sample[] = [];
  private current = 0;

  constructor(private readonly window: QuotaWindow) {
    assertQuotaWindow(window);
  }

  record(value: number, nowMs: number): void {
    let sample = this.currentSample(nowMs);
    if (nowMs - sample.startTimeMs >= this.window.windowMs) sample = this.advance(nowMs);
    sample.value += value;
    sample.eventCount += 1;
    sample.lastEventMs = nowMs;
  }

  /** Per second. */
  rate(nowMs: number): number {
    this.purgeObsoleteSamples(nowMs);
    let total = 0;
    for (const sample of this.samples) total += sample.value;
    return total / (this.windowSizeMs(nowMs) / 1000);
  }

  /** The elapsed time the rate divides by, as Kafka's Rate.windowSize computes it. */
  windowSizeMs(nowMs: number): number {
    this.purgeObsoleteSamples(nowMs);
    const { samples, windowMs } = this.window;
    let totalElapsedMs = nowMs - this.oldest(nowMs).startTimeMs;
    const fullWindows = Math.trunc(totalElapsedMs / windowMs);
    const minFullWindows = samples - 1;
    // A sleep leaves no sample behind, so the elapsed time alone would under-count it.
    if (fullWindows < minFullWindows) totalElapsedMs += (minFullWindows - fullWindows) * windowMs;
    return Math.max(totalElapsedMs, 1);
  }

  private currentSample(nowMs: number): Sample {
    if (this.samples.length === 0) this.samples.push(newSample(nowMs));
    return this.samples[this.current] as Sample;
  }

  private advance(nowMs: number): Sample {
    this.current = (this.current + 1) % (this.window.samples + 1);
    const reused = this.samples[this.current];
    if (reused === undefined) {
      const sample = newSample(nowMs);
      this.samples.push(sample);
      return sample;
    }
    reset(reused, nowMs);
    return reused;
  }

  private oldest(nowMs: number): Sample {
    if (this.samples.length === 0) this.samples.push(newSample(nowMs));
    let oldest = this.samples[0] as Sample;
    for (const sample of this.samples) if (sample.startTimeMs < oldest.startTimeMs) oldest = sample;
    return oldest;
  }

  /** Samples with no event within the monitored window are emptied; one overlapping its start is kept. */
  private purgeObsoleteSamples(nowMs: number): void {
    const expireAgeMs = this.window.samples * this.window.windowMs;
    for (const sample of this.samples) if (nowMs - sample.lastEventMs >= expireAgeMs) reset(sample, nowMs);
  }
}

function newSample(nowMs: number): Sample {
  return { value: 0, eventCount: 0, startTimeMs: nowMs, lastEventMs: nowMs };
}

function reset(sample: Sample, nowMs: number): void {
  sample.value = 0;
  sample.eventCount = 0;
  sample.startTimeMs = nowMs;
  sample.lastEventMs = nowMs;
}
