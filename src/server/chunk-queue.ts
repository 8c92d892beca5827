// The bytes read from a socket but not yet cut into frames, kept as the chunks they arrived
// in. Taking bytes that sit in one chunk returns a slice of it; bytes spanning chunks are
// copied once, exactly, into a buffer the caller's allocator gives, and the rest of the last
// chunk stays a slice.

export class ChunkQueue {
  private chunks: Buffer[] = [];
  private bytes = 0;

  get length(): number {
    return this.bytes;
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
  }

  clear(): void {
    this.chunks = [];
    this.bytes = 0;
  }

  /** Whether the first `bytes` bytes span chunks (so that taking them copies). */
  spans(bytes: number): boolean {
    return this.chunks[0]!.length < bytes;
  }

  /** The big-endian int32 at the front (4 bytes must be queued). */
  peekInt32(): number {
    const first = this.chunks[0]!;
    if (first.length >= 4) return first.readInt32BE(0);
    const head = this.take(4);
    this.chunks.unshift(head);
    this.bytes += head.length;
    return head.readInt32BE(0);
  }

  /**
   * Removes and returns the first `bytes` bytes (no more than `length`); `allocate` gives the
   * buffer they are copied into when they span chunks.
   */
  take(bytes: number, allocate: (size: number) => Buffer = Buffer.allocUnsafe): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= bytes) {
      if (first.length === bytes) this.chunks.shift();
      else this.chunks[0] = first.subarray(bytes);
      this.bytes -= bytes;
      return first.subarray(0, bytes);
    }
    const out = allocate(bytes);
    let filled = 0;
    while (filled < bytes) {
      const chunk = this.chunks[0]!;
      const used = Math.min(chunk.length, bytes - filled);
      chunk.copy(out, filled, 0, used);
      filled += used;
      if (used === chunk.length) this.chunks.shift();
      else this.chunks[0] = chunk.subarray(used);
    }
    this.bytes -= bytes;
    return out;
  }
}
