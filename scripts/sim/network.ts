// In-memory sockets between the nodes and clients of a simulation.
//
// Each write is copied and queued on its connection's direction; it reaches the peer after a
// seeded delay, never before an earlier write on the same connection (TCP order), while
// writes on different connections overtake each other. Faults:
// - a cut link (partition) between two hosts: connects across it fail after a while, data
//   on open connections stalls, and each such connection is reset after a seeded stall
//   unless the link heals first (then the stalled bytes flow on);
// - a reset of one connection: both ends see ECONNRESET and the bytes in flight are lost
//   (what "a dropped message" is on TCP);
// - a crashed process: its listeners vanish and its connections are reset.
// Messages are never duplicated by the network itself; duplicates reach brokers only the way
// they do on TCP, when a client retries a request whose connection was reset.

import { EventEmitter } from 'node:events';
import type { NetAddress, NetServer, NetSocket, Network } from '../../src/runtime/network.ts';
import type { Prng } from './random.ts';
import type { Owner, Scheduler } from './scheduler.ts';

interface Chunk {
  dueMs: number;
  /** null: the FIN after the last byte. */
  data: Buffer | null;
}

interface Direction {
  from: SimSocket;
  to: SimSocket;
  queue: Chunk[];
  pumping: boolean;
}

interface Listener {
  owner: Owner;
  host: string;
  port: number;
  onConnection: (socket: NetSocket) => void;
}

export interface NetworkStats {
  connects: number;
  refused: number;
  resets: number;
  chunks: number;
  bytes: number;
}

class Connection {
  readonly out: Direction;
  readonly back: Direction;
  resetScheduled = false;
  closed = false;
  finsDelivered = 0;

  constructor(
    readonly id: number,
    readonly client: SimSocket,
    readonly server: SimSocket,
  ) {
    this.out = { from: client, to: server, queue: [], pumping: false };
    this.back = { from: server, to: client, queue: [], pumping: false };
  }

  directionFrom(socket: SimSocket): Direction {
    return socket === this.client ? this.out : this.back;
  }
}

export class SimSocket extends EventEmitter implements NetSocket {
  remoteAddress: string | undefined;
  remotePort: number | undefined;
  readonly writableLength = 0;
  destroyed = false;
  connection: Connection | null = null;
  private paused = false;
  private held: Buffer[] = [];
  private idleMs = 0;
  private lastActivityMs = 0;
  private idleArmed = false;
  /** Writes made before the connection is established, sent once it is. */
  early: Buffer[] = [];
  endRequested = false;

  constructor(
    private readonly net: SimNetwork,
    readonly owner: Owner,
    readonly localHost: string,
  ) {
    super();
  }

  /** The chunk is copied at once, so `written` is called before this returns. */
  write(chunk: Uint8Array, written?: (err?: Error | null) => void): boolean {
    if (this.destroyed || this.endRequested) {
      written?.(new Error('write after the socket was closed'));
      return false;
    }
    const copy = Buffer.from(chunk);
    this.touch();
    if (this.connection === null) this.early.push(copy);
    else this.net.send(this, copy);
    written?.();
    return true;
  }

  end(): void {
    if (this.destroyed || this.endRequested) return;
    this.endRequested = true;
    if (this.connection !== null) this.net.sendFin(this);
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (this.connection !== null && !this.endRequested) this.net.sendFin(this);
    this.endRequested = true;
    this.net.afterTurn(this.owner, `close ${this.label()}`, () => this.emit('close'));
  }

  cork(): void {}
  uncork(): void {}
  setNoDelay(): void {}

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const held = this.held;
    this.held = [];
    for (const b of held) {
      if (this.destroyed) return;
      this.emit('data', b);
      // A listener may pause again within 'data': keep the rest until the next resume.
      if (this.paused) {
        this.held = held.slice(held.indexOf(b) + 1).concat(this.held);
        return;
      }
    }
  }

  setTimeout(ms: number): void {
    this.idleMs = ms;
    this.touch();
    if (ms > 0 && !this.idleArmed) this.armIdle(ms);
  }

  /** Bytes reaching this end from the peer. */
  receive(data: Buffer): void {
    if (this.destroyed) return;
    this.touch();
    if (this.paused) this.held.push(data);
    else this.emit('data', data);
  }

  /** The peer's FIN: nothing more will come; the socket closes (no half-open sockets). */
  receiveFin(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (!this.endRequested) this.net.sendFin(this);
    this.endRequested = true;
    this.emit('close');
  }

  /** A reset: the socket fails and closes at once. */
  receiveReset(code: string): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.endRequested = true;
    this.held = [];
    this.emit('error', errnoError(code, `${code} ${this.label()}`));
    this.emit('close');
  }

  label(): string {
    return `c${this.connection?.id ?? '?'} ${this.localHost}`;
  }

  private touch(): void {
    this.lastActivityMs = this.net.scheduler.nowMs;
  }

  private armIdle(delayMs: number): void {
    this.idleArmed = true;
    this.net.scheduler.schedule(this.owner, 'timer', delayMs, 'socket idle check', () => {
      this.idleArmed = false;
      if (this.destroyed || this.idleMs <= 0) return;
      const idleForMs = this.net.scheduler.nowMs - this.lastActivityMs;
      if (idleForMs >= this.idleMs) {
        this.emit('timeout');
        this.touch();
      }
      if (!this.destroyed && this.idleMs > 0) this.armIdle(Math.max(1, this.idleMs - (this.net.scheduler.nowMs - this.lastActivityMs)));
    });
  }
}

class SimServer implements NetServer {
  private bound: Listener | null = null;

  constructor(
    private readonly net: SimNetwork,
    private readonly owner: Owner,
    private readonly onConnection: (socket: NetSocket) => void,
  ) {}

  async listen(host: string, port: number): Promise<NetAddress> {
    this.bound = this.net.listen(this.owner, host, port, this.onConnection);
    return { host, port: this.bound.port };
  }

  async close(): Promise<void> {
    if (this.bound !== null) this.net.unlisten(this.bound);
    this.bound = null;
  }
}

/** Delays, in ms, of one hop: mostly sub-millisecond to a few ms, now and then a spike. */
export interface LinkProfile {
  minDelayMs: number;
  maxDelayMs: number;
  spikeChance: number;
  spikeMaxDelayMs: number;
}

export const defaultLinkProfile: LinkProfile = { minDelayMs: 0.1, maxDelayMs: 2, spikeChance: 0.02, spikeMaxDelayMs: 40 };

export class SimNetwork {
  readonly stats: NetworkStats = { connects: 0, refused: 0, resets: 0, chunks: 0, bytes: 0 };
  private readonly listeners = new Map<string, Listener>();
  private readonly connections = new Set<Connection>();
  /** Cut links as "a|b" with a < b. */
  private readonly cuts = new Set<string>();
  private nextEphemeralPort = 40_000;
  private connectionIds = 0;

  constructor(
    readonly scheduler: Scheduler,
    private readonly prng: Prng,
    private readonly profile: LinkProfile = defaultLinkProfile,
  ) {}

  /** The Network a process (or client) on `host` uses; its sockets and listeners belong to `owner`. */
  endpoint(owner: Owner, host: string): Network {
    return {
      createServer: (onConnection) => new SimServer(this, owner, onConnection),
      connect: (toHost, port) => this.connect(owner, host, toHost, port),
    };
  }

  listen(owner: Owner, host: string, port: number, onConnection: (socket: NetSocket) => void): Listener {
    const p = port === 0 ? this.nextEphemeralPort++ : port;
    const key = `${host}:${p}`;
    const existing = this.listeners.get(key);
    if (existing?.owner.alive === true) throw errnoError('EADDRINUSE', `listen EADDRINUSE ${key}`);
    const listener = { owner, host, port: p, onConnection };
    this.listeners.set(key, listener);
    return listener;
  }

  unlisten(listener: Listener): void {
    const key = `${listener.host}:${listener.port}`;
    if (this.listeners.get(key) === listener) this.listeners.delete(key);
  }

  isCut(a: string, b: string): boolean {
    return a !== b && this.cuts.has(linkKey(a, b));
  }

  /** Cuts the link between two hosts, both ways. */
  cut(a: string, b: string): void {
    if (a === b || this.cuts.has(linkKey(a, b))) return;
    this.cuts.add(linkKey(a, b));
    for (const c of this.connections) {
      if (!this.crosses(c, a, b) || c.resetScheduled) continue;
      c.resetScheduled = true;
      const stallMs = this.prng.range(500, 4000);
      this.scheduler.schedule(c.client.owner, 'net', stallMs, `stall ends c${c.id}`, () => {
        c.resetScheduled = false;
        if (this.isCut(c.client.localHost, c.server.localHost)) this.reset(c, 'ETIMEDOUT');
      });
    }
  }

  heal(a: string, b: string): void {
    if (!this.cuts.delete(linkKey(a, b))) return;
    for (const c of this.connections) {
      if (!this.crosses(c, a, b)) continue;
      this.pump(c.out);
      this.pump(c.back);
    }
  }

  healAll(): void {
    for (const key of [...this.cuts]) {
      const [a, b] = key.split('|') as [string, string];
      this.heal(a, b);
    }
  }

  /** Open connections (for faults that pick one). */
  openConnections(): Connection[] {
    return [...this.connections].filter((c) => !c.closed);
  }

  /** Resets a connection: both ends fail, in-flight bytes are lost. */
  reset(c: Connection, code = 'ECONNRESET'): void {
    if (c.closed) return;
    c.closed = true;
    this.connections.delete(c);
    this.stats.resets++;
    c.out.queue = [];
    c.back.queue = [];
    for (const end of [c.client, c.server]) {
      this.scheduler.schedule(end.owner, 'net', this.delay(), `reset ${end.label()} ${code}`, () => end.receiveReset(code));
    }
  }

  /** A process died: its listeners vanish and its peers' connections are reset. */
  crashed(owner: Owner): void {
    for (const [key, l] of this.listeners) if (l.owner === owner) this.listeners.delete(key);
    for (const c of [...this.connections]) if (c.client.owner === owner || c.server.owner === owner) this.reset(c);
  }

  send(from: SimSocket, data: Buffer): void {
    const c = from.connection;
    if (c === null || c.closed) return;
    this.stats.chunks++;
    this.stats.bytes += data.length;
    this.enqueue(c.directionFrom(from), data);
  }

  sendFin(from: SimSocket): void {
    const c = from.connection;
    if (c === null || c.closed) return;
    this.enqueue(c.directionFrom(from), null);
  }

  /** Runs `fn` for `owner` as a separate event right away (what Node does with process.nextTick-like emits). */
  afterTurn(owner: Owner, label: string, fn: () => void): void {
    this.scheduler.immediate(owner, label, fn);
  }

  private connect(owner: Owner, fromHost: string, host: string, port: number): NetSocket {
    const socket = new SimSocket(this, owner, fromHost);
    socket.remoteAddress = host;
    socket.remotePort = port;
    this.stats.connects++;
    this.scheduler.schedule(owner, 'net', this.delay(), `connect ${fromHost}>${host}:${port}`, () => {
      if (socket.destroyed) return;
      const listener = this.listeners.get(`${host}:${port}`);
      if (this.isCut(fromHost, host)) {
        // No answer across a cut link: the connect times out (sooner than TCP's minutes).
        this.scheduler.schedule(owner, 'net', this.prng.range(200, 2000), `connect timeout ${fromHost}>${host}`, () =>
          this.failConnect(socket, 'ETIMEDOUT', host, port),
        );
        return;
      }
      if (listener === undefined || !listener.owner.alive) {
        this.stats.refused++;
        this.scheduler.schedule(owner, 'net', this.delay(), `refused ${fromHost}>${host}:${port}`, () =>
          this.failConnect(socket, 'ECONNREFUSED', host, port),
        );
        return;
      }
      this.accept(socket, listener);
    });
    return socket;
  }

  private accept(client: SimSocket, listener: Listener): void {
    const server = new SimSocket(this, listener.owner, listener.host);
    server.remoteAddress = client.localHost;
    server.remotePort = this.nextEphemeralPort++;
    const c = new Connection(++this.connectionIds, client, server);
    this.connections.add(c);
    server.connection = c;
    this.scheduler.schedule(listener.owner, 'net', 0, `accept c${c.id} ${client.localHost}>${listener.host}:${listener.port}`, () => {
      listener.onConnection(server);
    });
    this.scheduler.schedule(client.owner, 'net', this.delay(), `connected c${c.id}`, () => {
      if (c.closed) return;
      if (client.destroyed) {
        client.connection = c;
        this.sendFin(client);
        return;
      }
      client.connection = c;
      for (const b of client.early) this.send(client, b);
      client.early = [];
      if (client.endRequested) this.sendFin(client);
      client.emit('connect');
    });
  }

  private failConnect(socket: SimSocket, code: string, host: string, port: number): void {
    if (socket.destroyed) return;
    socket.destroyed = true;
    socket.emit('error', errnoError(code, `connect ${code} ${host}:${port}`));
    socket.emit('close');
  }

  private enqueue(d: Direction, data: Buffer | null): void {
    const last = d.queue[d.queue.length - 1];
    const dueMs = Math.max(this.scheduler.nowMs + this.delay(), last?.dueMs ?? 0);
    d.queue.push({ dueMs, data });
    this.pump(d);
  }

  /** Delivers the head of a direction's queue when due; one pending event per direction. */
  private pump(d: Direction): void {
    if (d.pumping) return;
    const head = d.queue[0];
    if (head === undefined) return;
    d.pumping = true;
    const wait = Math.max(0, head.dueMs - this.scheduler.nowMs);
    const c = d.from.connection!;
    const label =
      head.data === null ? `fin c${c.id} ${d.from.localHost}>${d.to.localHost}` : `deliver c${c.id} ${d.from.localHost}>${d.to.localHost}`;
    this.scheduler.schedule(d.to.owner, head.data === null ? 'net' : 'data', wait, label, () => {
      d.pumping = false;
      if (c.closed) return;
      if (this.isCut(d.from.localHost, d.to.localHost)) return;
      let bytes = 0;
      while (d.queue.length > 0 && d.queue[0]!.dueMs <= this.scheduler.nowMs) {
        const chunk = d.queue.shift()!;
        if (chunk.data === null) {
          d.to.receiveFin();
          if (++c.finsDelivered === 2) this.forget(c);
          return;
        }
        bytes += chunk.data.length;
        d.to.receive(chunk.data);
        if (c.closed) return;
      }
      if (bytes > 0) this.scheduler.trace.hashOnly(this.scheduler.nowMs, d.to.owner.name, `${bytes}B`);
      this.pump(d);
    });
  }

  /** Both FINs delivered: the connection is gone. */
  private forget(c: Connection): void {
    c.closed = true;
    this.connections.delete(c);
  }

  private crosses(c: Connection, a: string, b: string): boolean {
    const x = c.client.localHost;
    const y = c.server.localHost;
    return (x === a && y === b) || (x === b && y === a);
  }

  private delay(): number {
    const p = this.profile;
    const base = p.minDelayMs + this.prng.float() * (p.maxDelayMs - p.minDelayMs);
    return this.prng.chance(p.spikeChance) ? base + this.prng.float() * p.spikeMaxDelayMs : base;
  }
}

function linkKey(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(message);
  err.code = code;
  return err;
}
