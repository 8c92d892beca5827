import { EventEmitter } from 'node:events';
import type { Clock, TimerHandle } from '../../src/runtime/clock.ts';
import type { NetAddress, NetServer, NetSocket, Network } from '../../src/runtime/network.ts';

/**
 * An in-memory Network: listeners are names in a map, a connection is two sockets whose
 * writes reach the peer on the next turn of the clock, in order. No fault injection; enough
 * to run a broker and a client in one process without a real socket.
 */
export class MemoryNetwork implements Network {
  private readonly listeners = new Map<string, (socket: NetSocket) => void>();
  private nextEphemeralPort = 40_000;
  private nextClientPort = 50_000;

  constructor(private readonly clock: Clock) {}

  createServer(onConnection: (socket: NetSocket) => void): NetServer {
    let bound: string | null = null;
    return {
      listen: (host: string, port: number): Promise<NetAddress> => {
        const chosen = port === 0 ? this.nextEphemeralPort++ : port;
        const key = `${host}:${chosen}`;
        if (this.listeners.has(key)) return Promise.reject(Object.assign(new Error(`listen EADDRINUSE ${key}`), { code: 'EADDRINUSE' }));
        this.listeners.set(key, onConnection);
        bound = key;
        return Promise.resolve({ host, port: chosen });
      },
      close: (): Promise<void> => {
        if (bound !== null) this.listeners.delete(bound);
        bound = null;
        return Promise.resolve();
      },
    };
  }

  connect(host: string, port: number): NetSocket {
    const client = new MemorySocket(this.clock, host, port);
    this.clock.setImmediate(() => {
      const accept = this.listeners.get(`${host}:${port}`);
      if (accept === undefined) {
        client.emit('error', Object.assign(new Error(`connect ECONNREFUSED ${host}:${port}`), { code: 'ECONNREFUSED' }));
        client.destroy();
        return;
      }
      const server = new MemorySocket(this.clock, 'memory-client', this.nextClientPort++);
      client.peer = server;
      server.peer = client;
      accept(server);
      client.emit('connect');
    });
    return client;
  }

  /** Open listeners, as `host:port`. */
  get listening(): string[] {
    return [...this.listeners.keys()];
  }
}

class MemorySocket extends EventEmitter implements NetSocket {
  peer: MemorySocket | null = null;
  destroyed = false;
  readonly writableLength = 0;
  private paused = false;
  private readonly held: Buffer[] = [];
  private idleMs = 0;
  private idleTimer: TimerHandle | null = null;

  constructor(
    private readonly clock: Clock,
    readonly remoteAddress: string,
    readonly remotePort: number,
  ) {
    super();
  }

  write(chunk: Uint8Array): boolean {
    const peer = this.peer;
    if (this.destroyed || peer === null) return false;
    const copy = Buffer.from(chunk);
    this.touch();
    this.clock.setImmediate(() => peer.receive(copy));
    return true;
  }

  end(): void {
    // Without half-open sockets (node's default), the peer's end closes both sides.
    this.clock.setImmediate(() => {
      this.peer?.destroy();
      this.destroy();
    });
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (this.idleTimer !== null) this.clock.clearTimeout(this.idleTimer);
    const peer = this.peer;
    this.clock.setImmediate(() => {
      this.emit('close');
      peer?.destroy();
    });
  }

  cork(): void {}
  uncork(): void {}
  setNoDelay(): void {}

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    while (!this.paused && this.held.length > 0) this.emit('data', this.held.shift()!);
  }

  setTimeout(ms: number): void {
    this.idleMs = ms;
    this.touch();
  }

  private receive(chunk: Buffer): void {
    if (this.destroyed) return;
    this.touch();
    if (this.paused) this.held.push(chunk);
    else this.emit('data', chunk);
  }

  private touch(): void {
    if (this.idleTimer !== null) this.clock.clearTimeout(this.idleTimer);
    this.idleTimer = this.idleMs > 0 && !this.destroyed ? this.clock.setTimeout(() => this.emit('timeout'), this.idleMs) : null;
  }
}
