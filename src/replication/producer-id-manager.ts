/**
 * Hands out producer ids from blocks the controller allocates (a ProducerIdsRecord in the
 * metadata log per block). The next block is requested once 90% of the current one is used,
 * as Kafka's RPCProducerIdManager does, and concurrent callers share one request.
 */
export interface ProducerIdBlock {
  readonly firstProducerId: bigint;
  readonly size: number;
}

export class ProducerIdManager {
  private block: ProducerIdBlock | null = null;
  private next = 0n;
  private nextBlock: Promise<ProducerIdBlock> | null = null;

  constructor(private readonly allocateBlock: () => Promise<ProducerIdBlock>) {}

  async generateProducerId(): Promise<bigint> {
    for (;;) {
      const block = this.block;
      if (block !== null && this.next < block.firstProducerId + BigInt(block.size)) {
        const id = this.next++;
        if (this.nextBlock === null && Number(this.next - block.firstProducerId) >= block.size * 0.9) this.requestBlock();
        return id;
      }
      const pending = this.nextBlock ?? this.requestBlock();
      let allocated: ProducerIdBlock;
      try {
        allocated = await pending;
      } finally {
        if (this.nextBlock === pending) this.nextBlock = null;
      }
      // Callers sharing the request resume one by one: only the first installs the block.
      if (this.block === null || allocated.firstProducerId > this.block.firstProducerId) {
        this.block = allocated;
        this.next = allocated.firstProducerId;
      }
    }
  }

  private requestBlock(): Promise<ProducerIdBlock> {
    const pending = this.allocateBlock();
    // A prefetch nobody awaits yet must not count as an unhandled rejection; the caller that
    // awaits it later still sees the failure.
    pending.catch(() => undefined);
    this.nextBlock = pending;
    return pending;
  }
}
