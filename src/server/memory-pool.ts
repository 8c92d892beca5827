/**
 * queued.max.request.bytes: one broker-wide bound on the memory held by requests that were
 * read and are not yet answered, with the semantics of Kafka's SimpleMemoryPool as its
 * SocketServer uses it (non-strict):
 *
 * - a connection reserves a request's size when it reads the request's size prefix, before it
 *   buffers the request; the reservation is released when the request is done (its response
 *   handed to the socket, or no response) or dropped with its connection;
 * - a reservation is granted while the pool is not in deficit (at least one byte free), even
 *   when the request is larger than what is free, so one large request is never starved by
 *   smaller ones; held bytes stay below capacity + the largest request (socket.request.max.bytes);
 * - a connection whose reservation is refused stops being read (Kafka's Selector mutes it)
 *   until a release brings the pool out of deficit; then every waiting connection retries.
 *
 * A capacity of zero or less is Kafka's MemoryPool.NONE: every reservation is granted (the
 * bytes are still counted, for the accessors).
 */
export class RequestMemoryPool {
  private availableBytes: number;
  private peakBytes = 0;
  private readonly waiters = new Set<() => void>();
  private wakeScheduled = false;

  constructor(readonly capacityBytes: number) {
    this.availableBytes = capacityBytes;
  }

  /** Whether the pool bounds anything (queued.max.request.bytes > 0). */
  get bounded(): boolean {
    return this.capacityBytes > 0;
  }

  /** Bytes reserved by requests read and not yet done. */
  get usedBytes(): number {
    return this.capacityBytes - this.availableBytes;
  }

  /** The most bytes ever reserved at once. */
  get peakUsedBytes(): number {
    return this.peakBytes;
  }

  /** No reservation is granted until memory is released (the pool is in deficit or exactly full). */
  get exhausted(): boolean {
    return this.bounded && this.availableBytes <= 0;
  }

  /** Connections waiting for memory. */
  get waitingCount(): number {
    return this.waiters.size;
  }

  /** Reserves `bytes` unless the pool is exhausted; zero bytes are always granted. */
  tryReserve(bytes: number): boolean {
    if (bytes > 0 && this.exhausted) return false;
    this.availableBytes -= bytes;
    this.peakBytes = Math.max(this.peakBytes, this.usedBytes);
    return true;
  }

  /** Returns a reservation; waiting connections retry once the pool is out of deficit. */
  release(bytes: number): void {
    if (bytes <= 0) return;
    this.availableBytes += bytes;
    if (this.availableBytes > this.capacityBytes && this.bounded) {
      throw new Error(`request memory pool: released more than reserved (${this.availableBytes} > ${this.capacityBytes})`);
    }
    if (!this.exhausted && this.waiters.size > 0) this.scheduleWake();
  }

  /**
   * Calls `wake` once memory is available again (on a later microtask, never inside the
   * release that frees it). Returns a function that cancels the wait.
   */
  whenAvailable(wake: () => void): () => void {
    this.waiters.add(wake);
    if (!this.exhausted) this.scheduleWake();
    return () => {
      this.waiters.delete(wake);
    };
  }

  private scheduleWake(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    queueMicrotask(() => {
      this.wakeScheduled = false;
      const woken = [...this.waiters];
      this.waiters.clear();
      for (const wake of woken) wake();
    });
  }
}
