// Buffers that fetch reads land in, reused once the response that carried them is written.
//
// A fetch reads each partition's range into a buffer of its own: a consumer reading at a few
// hundred MB/s makes a 1 MiB buffer every few milliseconds. Each fresh one is memory outside
// V8's heap that V8 still accounts for, and every few tens of MB of it V8 starts a full
// mark-compact of the heap, whether or not the heap grew: profiled under librdkafka consumers,
// those collections took a third of the broker's CPU. Reading into buffers that come back
// after the response left keeps the bytes read from driving the collector.
//
// The pool hands out buffers; whoever owns a read decides when its bytes are no longer
// referenced and gives them back through a lease. Reads without a lease (the log's own
// readers: recovery, the cleaner, coordinators loading their state) allocate as before.

/** Where a read gets the buffer it reads into. */
export interface ReadBufferSource {
  /** A buffer of exactly `size` bytes, its contents undefined. */
  take(size: number): Buffer;
}

/** Reads smaller than this allocate as usual: V8 hardly notices them. */
const MIN_POOLED_BYTES = 64 * 1024;
/** Larger reads are rare (a batch bigger than the fetch size) and not worth keeping. */
const MAX_POOLED_BYTES = 16 * 1024 * 1024;

/**
 * Sizes are rounded up to a class (four per power of two) so that a returned buffer fits the
 * next read of its class: a fetch reads max.partition.fetch.bytes plus an index interval, just
 * over a power of two, which whole powers of two would nearly double.
 */
function sizeClass(size: number): number {
  const step = 2 ** Math.floor(Math.log2(size)) / 4;
  return Math.ceil(size / step) * step;
}

export class ReadBufferPool {
  private readonly free = new Map<number, ArrayBuffer[]>();
  private retainedBytes = 0;

  /** `retainedBytesMax`: the most idle buffer bytes kept for reuse; beyond it they are left to the collector. */
  constructor(readonly retainedBytesMax: number) {}

  /** A lease that collects what it takes, for `release` once none of it is referenced any more. */
  lease(): ReadBufferLease {
    return new ReadBufferLease(this);
  }

  /** Bytes of idle buffers held for reuse. */
  get idleBytes(): number {
    return this.retainedBytes;
  }

  /** @internal a buffer for `size` bytes, pooled when its size class is. */
  acquire(size: number): { buffer: Buffer; pooled: ArrayBuffer | null } {
    if (size < MIN_POOLED_BYTES || size > MAX_POOLED_BYTES) return { buffer: Buffer.allocUnsafe(size), pooled: null };
    const bytes = sizeClass(size);
    let backing = this.free.get(bytes)?.pop();
    if (backing === undefined) backing = new ArrayBuffer(bytes);
    else this.retainedBytes -= bytes;
    return { buffer: Buffer.from(backing, 0, size), pooled: backing };
  }

  /** @internal takes back a buffer no one references any more. */
  recycle(backing: ArrayBuffer): void {
    if (this.retainedBytes + backing.byteLength > this.retainedBytesMax) return;
    let list = this.free.get(backing.byteLength);
    if (list === undefined) {
      list = [];
      this.free.set(backing.byteLength, list);
    }
    list.push(backing);
    this.retainedBytes += backing.byteLength;
  }
}

/**
 * The buffers one request's reads took. After `release` their bytes will be overwritten by
 * later reads, so it is called only once nothing holds a slice of them: for a fetch, once its
 * response has been handed to the socket.
 */
export class ReadBufferLease implements ReadBufferSource {
  private taken: ArrayBuffer[] = [];

  constructor(private readonly pool: ReadBufferPool) {}

  take(size: number): Buffer {
    const { buffer, pooled } = this.pool.acquire(size);
    if (pooled !== null) this.taken.push(pooled);
    return buffer;
  }

  release(): void {
    const taken = this.taken;
    this.taken = [];
    for (const backing of taken) this.pool.recycle(backing);
  }
}
