// The bytes read from a socket but not yet cut into frames, kept as the chunks they arrived
// in. Taking bytes that sit in one chunk returns a slice of it; bytes spanning chunks are
// copied once, exactly, and the rest of the last chunk stays a slice.

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

  /** The big-endian int32 at the front (4 bytes must be queued). */
  peekInt32(): number {
    const first = this.chunks[0]!;
    if (first.length >= 4) return first.readInt32BE(0);
    const head = this.take(4);
    this.chunks.unshift(head);
    this.bytes += head.length;
    return head.readInt32BE(0);
  }

  /** Removes and returns the first n bytes (n must not exceed `length`). */
  take(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.bytes -= n;
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[0]!;
      const used = Math.min(chunk.length, n - filled);
      chunk.copy(out, filled, 0, used);
      filled += used;
      if (used === chunk.length) this.chunks.shift();
      else this.chunks[0] = chunk.subarray(used);
    }
    this.bytes -= n;
    return out;
  }
}
