/**
 * The listeners: one TCP server per configured listener, each accepted socket wrapped in a
 * Connection that feeds frames to the FrameProcessor. Each listener's acceptor admits its
 * sockets one at a time against the connection quotas (connection-quotas.ts), as Kafka's
 * Acceptor does: a socket waiting for a slot or a rate is held unread, and those behind it
 * wait their turn, as in Kafka's listen backlog.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { BrokerConfig } from '../config/broker-config.ts';
import type { Logger } from '../observability/logger.ts';
import { systemClock, type Clock, type TimerHandle } from '../runtime/clock.ts';
import { guarded, runGuarded } from '../runtime/guard.ts';
import { systemNetwork, type NetServer, type NetSocket, type Network } from '../runtime/network.ts';
import type { X509Certificate } from 'node:crypto';
import type { TlsOptions } from 'node:tls';
import { Connection, type ConnectionLimits, type FrameProcessor } from './connection.ts';
import {
  canonicalIp,
  ConnectionQuotas,
  type ConnectionQuotaLimits,
  type ListenerConnectionLimits,
  parseMaxConnectionsPerIpOverrides,
  UNLIMITED,
} from './connection-quotas.ts';
import { RequestMemoryPool } from './memory-pool.ts';
import { SaslSession, type SaslListener } from './sasl-session.ts';
import type { ListenerRole, Session } from './session.ts';

/** How a listener authenticates its clients, from its security protocol and configs. */
export interface ListenerSecurity {
  /** SSL and SASL_SSL: the TLS options; null on plaintext listeners. */
  readonly tls: TlsOptions | null;
  /** SASL_PLAINTEXT and SASL_SSL: the mechanisms offered; null on other listeners. */
  readonly sasl: SaslListener | null;
  /** The principal of a connection that does not authenticate with SASL (an SSL client's certificate, else ANONYMOUS). */
  principalOf(peerCertificate: X509Certificate | undefined): string;
  /** Why a TLS client's certificate is refused after the handshake (ssl.client.auth=requested), or null. */
  peerRefused?(socket: NetSocket): string | null;
}

export const PLAINTEXT_SECURITY: ListenerSecurity = { tls: null, sasl: null, principalOf: () => 'User:ANONYMOUS' };

export interface ListenerSpec {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly securityProtocol: string;
  readonly role: ListenerRole;
  /** PLAINTEXT_SECURITY when absent. */
  readonly security?: ListenerSecurity;
}

export interface BoundListener extends ListenerSpec {
  /** The port actually bound (differs from `port` when that was 0). */
  readonly boundPort: number;
}

/** The connection limits Kafka updates dynamically (cluster-wide); unlimited when absent. */
export interface DynamicConnectionLimits {
  /** max.connections: the acceptors wait for a slot beyond it. */
  readonly maxConnections?: number;
  /** max.connections.per.ip: a connection beyond it is closed. */
  readonly maxConnectionsPerIp?: number;
  /** max.connections.per.ip.overrides as configured ("host:n,ip:n"); hostnames are resolved. */
  readonly maxConnectionsPerIpOverrides?: string;
  /** max.connection.creation.rate: the acceptors wait to keep it. */
  readonly maxConnectionCreationRate?: number;
  /**
   * By listener name: listener.name.<l>.max.connections and .max.connection.creation.rate,
   * each the broker-wide value unless set for the listener (BrokerConfig.listenerValue).
   * A listener absent here has the broker-wide values.
   */
  readonly listenerLimits?: ReadonlyMap<string, ListenerConnectionLimits>;
}

/**
 * The dynamic connection limits as `config` has them now, every listener's own values
 * included; the `ip` entities' connection rates come from the metadata image, not from here.
 */
export function dynamicConnectionLimits(config: BrokerConfig): DynamicConnectionLimits {
  const listenerInt = (listener: string, name: string): number => Number(config.listenerValue(listener, name) ?? UNLIMITED);
  return {
    maxConnections: config.getInt('max.connections'),
    maxConnectionsPerIp: config.getInt('max.connections.per.ip'),
    maxConnectionsPerIpOverrides: config.getString('max.connections.per.ip.overrides'),
    maxConnectionCreationRate: config.getInt('max.connection.creation.rate'),
    listenerLimits: new Map(
      config.listeners.map(({ name }) => [
        name,
        {
          maxConnections: listenerInt(name, 'max.connections'),
          maxConnectionCreationRate: listenerInt(name, 'max.connection.creation.rate'),
        },
      ]),
    ),
  };
}

/** Broker-wide limits of the server, across all its connections. */
export interface ServerLimits extends DynamicConnectionLimits {
  /** queued.max.request.bytes: the request memory pool (memory-pool.ts); zero or less (the default here) bounds nothing. */
  readonly maxQueuedRequestBytes?: number;
  /** inter.broker.listener.name: protected from max.connections when it is one of several broker listeners. */
  readonly interBrokerListenerName?: string;
  /** quota.window.num: the samples of the connection creation rates (Kafka's default 11). */
  readonly quotaWindowNum?: number;
  /** quota.window.size.seconds: the time span of each sample (Kafka's default 1). */
  readonly quotaWindowSizeSeconds?: number;
  /**
   * The `connection_creation_rate` of the `ip` quota entity for an IP (the IP's own, else the
   * default entity's); undefined: unlimited. Asked at every connection, so it answers from
   * the latest metadata image and needs no update.
   */
  readonly ipConnectionCreationRate?: (ip: string) => number | undefined;
}

/** Where the server listens and what times its connections; the system's by default. */
export interface ServerRuntime {
  readonly network: Network;
  readonly clock: Clock;
  /** A hostname's address, as Java's InetAddress.getByName gives it; the system resolver (IPv4 first) by default. */
  readonly resolveHost?: (host: string) => Promise<string>;
}

/**
 * Sockets a listener holds waiting their turn, as a listen backlog bounds those the kernel
 * holds for Kafka's blocked acceptor (network.ts listens with a backlog of 512 too); beyond
 * it, new sockets are closed as the kernel would refuse them.
 */
const MAX_HELD_SOCKETS_PER_LISTENER = 512;

/** An empty host binds the loopback address: some clients resolve localhost to ::1 otherwise. */
export const DEFAULT_BIND_HOST = '127.0.0.1';

/** A socket accepted and not yet admitted: read by nobody. */
interface HeldSocket {
  readonly socket: NetSocket;
  readonly onError: (err: Error) => void;
}

/** One listener's acceptor: the sockets waiting their turn, and the one waiting for a slot or a rate. */
interface Acceptor {
  readonly spec: ListenerSpec;
  readonly quotas: ConnectionQuotas;
  readonly backlog: HeldSocket[];
  head: HeldSocket | null;
  /** Ends the head's wait for the connection creation rates; null when it is not throttled. */
  throttle: TimerHandle | null;
}

/** What the server knows of an open connection to count it down and to choose it for closing. */
interface CountedConnection {
  readonly listener: string;
  readonly ip: string;
  readonly quotas: ConnectionQuotas;
  lastActiveMs: number;
  /** False once closed for max.connections (closeExcessConnections): counted down already. */
  counted: boolean;
}

export class SocketServer {
  private readonly servers: NetServer[] = [];
  private readonly serversByListener = new Map<string, NetServer>();
  private readonly connections = new Map<Connection, CountedConnection>();
  private nextConnectionId = 1;
  private bound: BoundListener[] = [];
  private readonly memory: RequestMemoryPool;
  /** Broker listeners and controller listeners count their connections apart, as Kafka's broker and controller socket servers do. */
  private quotasByRole: ReadonlyMap<ListenerRole, ConnectionQuotas> = new Map();
  private readonly acceptors: Acceptor[] = [];
  /** Sockets refused for their IP's connection rate, closed once their throttle time passed (Kafka's DelayedCloseSocket). */
  private readonly throttledSockets = new Map<NetSocket, TimerHandle>();
  private accepting = true;
  private dynamicLimits: DynamicConnectionLimits;
  private readonly acceptorFailed = (err: unknown, what: string): void => this.logger.error({ err }, `${what} failed`);

  constructor(
    private readonly processor: FrameProcessor,
    private readonly limits: ConnectionLimits,
    private readonly logger: Logger,
    private readonly serverLimits: ServerLimits = {},
    private readonly runtime: ServerRuntime = { network: systemNetwork, clock: systemClock },
  ) {
    this.memory = new RequestMemoryPool(serverLimits.maxQueuedRequestBytes ?? -1);
    this.dynamicLimits = serverLimits;
  }

  get listeners(): readonly BoundListener[] {
    return this.bound;
  }

  /** Open connections (for tests and metrics). */
  get openConnections(): readonly Connection[] {
    return [...this.connections.keys()];
  }

  /** The memory held by requests read and not yet answered, broker-wide (for tests and metrics). */
  get requestMemory(): Pick<RequestMemoryPool, 'capacityBytes' | 'usedBytes' | 'peakUsedBytes' | 'exhausted' | 'waitingCount'> {
    return this.memory;
  }

  /**
   * New values of the dynamic connection limits (the whole set: an absent limit is
   * unlimited). Connections already waiting see the new limits at once; when max.connections
   * went below the connections open, the least recently used are closed, as Kafka's
   * processors do. Rejects, changing nothing, when a hostname of the overrides does not resolve.
   */
  async updateLimits(limits: DynamicConnectionLimits): Promise<void> {
    const resolved = await this.quotaLimits(limits);
    this.dynamicLimits = limits;
    for (const quotas of this.quotasByRole.values()) quotas.update(resolved);
    this.onConnectionSlotsChanged();
  }

  async start(listeners: readonly ListenerSpec[]): Promise<void> {
    const limits = await this.quotaLimits(this.dynamicLimits);
    const window = {
      samples: this.serverLimits.quotaWindowNum ?? 11,
      windowMs: (this.serverLimits.quotaWindowSizeSeconds ?? 1) * 1000,
    };
    const interBroker = this.serverLimits.interBrokerListenerName ?? null;
    const quotasByRole = new Map<ListenerRole, ConnectionQuotas>();
    for (const spec of listeners) {
      let quotas = quotasByRole.get(spec.role);
      if (quotas === undefined) {
        quotas = new ConnectionQuotas(window, limits, interBroker);
        quotasByRole.set(spec.role, quotas);
      }
      quotas.addListener(spec.name);
    }
    this.quotasByRole = quotasByRole;
    for (const spec of listeners) {
      const acceptor: Acceptor = { spec, quotas: quotasByRole.get(spec.role)!, backlog: [], head: null, throttle: null };
      this.acceptors.push(acceptor);
      const tls = spec.security?.tls ?? null;
      const server = this.runtime.network.createServer(
        (socket) =>
          runGuarded(
            this.acceptorFailed,
            'accepting a connection',
            () => this.onAccepted(socket, acceptor),
            () => socket.destroy(),
          ),
        tls === null
          ? undefined
          : {
              options: tls,
              onHandshakeError: (err, remote) =>
                this.logger.info({ client: remote, listener: spec.name, reason: err.message }, 'TLS handshake failed, connection closed'),
            },
      );
      this.servers.push(server);
      this.serversByListener.set(spec.name, server);
      const host = spec.host === '' ? DEFAULT_BIND_HOST : spec.host;
      const { port: boundPort } = await server.listen(host, spec.port);
      this.bound.push({ ...spec, host, boundPort });
      this.logger.info({ listener: spec.name, host, port: boundPort }, 'listening');
    }
  }

  /** The limits as ConnectionQuotas takes them: overrides parsed and their hostnames resolved. */
  private async quotaLimits(limits: DynamicConnectionLimits): Promise<ConnectionQuotaLimits> {
    const maxConnectionsPerIp = limits.maxConnectionsPerIp ?? UNLIMITED;
    const overrides = parseMaxConnectionsPerIpOverrides(limits.maxConnectionsPerIpOverrides ?? '');
    if (maxConnectionsPerIp === 0 && overrides.size === 0) {
      throw new Error(
        'requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.',
      );
    }
    const resolveHost = this.runtime.resolveHost ?? resolveHostIpv4First;
    const byAddress = new Map<string, number>();
    for (const [host, max] of overrides) {
      byAddress.set(canonicalIp(isIP(host) === 0 ? await resolveHost(host) : host), max);
    }
    return {
      maxConnectionsPerIp,
      maxConnectionsPerIpOverrides: byAddress,
      maxConnections: limits.maxConnections ?? UNLIMITED,
      maxConnectionCreationRate: limits.maxConnectionCreationRate ?? UNLIMITED,
      listeners: limits.listenerLimits ?? new Map(),
      ...(this.serverLimits.ipConnectionCreationRate === undefined
        ? {}
        : { ipConnectionCreationRate: this.serverLimits.ipConnectionCreationRate }),
    };
  }

  /** A socket the listener accepted: held, unread, until its acceptor admits it. */
  private onAccepted(socket: NetSocket, acceptor: Acceptor): void {
    if (!this.accepting || acceptor.backlog.length >= MAX_HELD_SOCKETS_PER_LISTENER) {
      socket.destroy();
      return;
    }
    socket.pause();
    const onError = (err: Error): void =>
      this.logger.debug({ client: `${socket.remoteAddress}:${socket.remotePort}`, err: err.message }, 'connection error');
    socket.on('error', onError);
    acceptor.backlog.push({ socket, onError });
    this.runAcceptor(acceptor);
  }

  /**
   * Admits the acceptor's sockets in order, as far as the quotas let it (Kafka's
   * waitForConnectionSlot): each is recorded in the connection creation rates when its turn
   * comes, waits out the throttle time they ask for, then waits for a free slot of its
   * listener and of the broker. Reentrant: every step reads the acceptor's state afresh.
   */
  private runAcceptor(acceptor: Acceptor): void {
    const { quotas, spec } = acceptor;
    for (;;) {
      if (acceptor.head === null) {
        const next = acceptor.backlog.shift();
        if (next === undefined) return;
        if (next.socket.destroyed) continue;
        acceptor.head = next;
        const throttleTimeMs = quotas.recordConnectionAndGetThrottleTimeMs(spec.name, this.runtime.clock.monotonicMs());
        if (throttleTimeMs > 0) {
          acceptor.throttle = this.runtime.clock.setTimeout(
            guarded(this.acceptorFailed, 'admitting a throttled connection', () => {
              acceptor.throttle = null;
              this.runAcceptor(acceptor);
            }),
            throttleTimeMs,
          );
        }
      }
      if (acceptor.throttle !== null || !quotas.connectionSlotAvailable(spec.name)) return;
      const head = acceptor.head;
      acceptor.head = null;
      this.admit(head, acceptor);
    }
  }

  /** A socket that found its slot: checked against its IP's limits, then served. */
  private admit(held: HeldSocket, acceptor: Acceptor): void {
    const { socket } = held;
    if (socket.destroyed) return;
    const listener = acceptor.spec.name;
    const ip = canonicalIp(socket.remoteAddress ?? '');
    const admission = acceptor.quotas.inc(listener, ip, this.runtime.clock.monotonicMs());
    switch (admission.kind) {
      case 'too-many-connections':
        this.logger.info(
          { client: `${socket.remoteAddress}:${socket.remotePort}`, listener },
          `Rejected connection from ${ip}, address already has the configured maximum of ${admission.max} connections.`,
        );
        socket.destroy();
        return;
      case 'throttled':
        this.logger.debug(
          { client: `${socket.remoteAddress}:${socket.remotePort}`, listener },
          `Delaying closing of connection from ${ip} for ${admission.throttleTimeMs} ms`,
        );
        this.throttledSockets.set(
          socket,
          this.runtime.clock.setTimeout(() => {
            this.throttledSockets.delete(socket);
            socket.destroy();
          }, admission.throttleTimeMs),
        );
        return;
      case 'accepted':
        socket.off('error', held.onError);
        this.serve(socket, acceptor, ip);
        this.closeExcessConnections();
    }
  }

  /** The acceptors waiting for a slot look again: a connection closed, or the limits changed. */
  private onConnectionSlotsChanged(): void {
    this.closeExcessConnections();
    for (const acceptor of this.acceptors) this.runAcceptor(acceptor);
  }

  /**
   * Past max.connections (the protected inter-broker listener took connections beyond it,
   * or the limit went down), closes the least recently active connections of the other
   * listeners until back at the limit, as Kafka's processors close their lowest priority channel.
   */
  private closeExcessConnections(): void {
    if (![...this.quotasByRole.values()].some((quotas) => quotas.overMaxConnections)) return;
    const candidates = [...this.connections].filter(([, c]) => c.counted && c.quotas.maxConnectionsExceeded(c.listener));
    candidates.sort(([, a], [, b]) => a.lastActiveMs - b.lastActiveMs);
    for (const [conn, counted] of candidates) {
      if (!counted.quotas.maxConnectionsExceeded(counted.listener)) continue;
      this.logger.debug(
        { client: conn.session.clientAddress, listener: counted.listener },
        'max.connections exceeded: closing the least recently used connection',
      );
      counted.counted = false;
      counted.quotas.dec(counted.listener, counted.ip);
      conn.destroy();
    }
  }

  private connectionClosed(conn: Connection): void {
    const counted = this.connections.get(conn);
    this.connections.delete(conn);
    if (counted === undefined || !counted.counted) return;
    counted.quotas.dec(counted.listener, counted.ip);
    this.onConnectionSlotsChanged();
  }

  /** A counted socket refused before it became a connection: its slot is free again. */
  private refuse(socket: NetSocket, acceptor: Acceptor, ip: string): void {
    socket.destroy();
    acceptor.quotas.dec(acceptor.spec.name, ip);
    this.onConnectionSlotsChanged();
  }

  private serve(socket: NetSocket, acceptor: Acceptor, ip: string): void {
    const { spec } = acceptor;
    const security = spec.security ?? PLAINTEXT_SECURITY;
    const refused = security.peerRefused?.(socket) ?? null;
    if (refused !== null) {
      this.logger.info(
        { client: `${socket.remoteAddress}:${socket.remotePort}`, listener: spec.name, reason: refused },
        'client certificate refused, connection closed',
      );
      this.refuse(socket, acceptor, ip);
      return;
    }
    const clock = this.runtime.clock;
    let principal = 'User:ANONYMOUS';
    try {
      if (security.sasl === null) principal = security.principalOf(socket.getPeerX509Certificate?.());
    } catch (err) {
      this.logger.info(
        { client: `${socket.remoteAddress}:${socket.remotePort}`, listener: spec.name, reason: (err as Error).message },
        'no principal for the client certificate, connection closed',
      );
      this.refuse(socket, acceptor, ip);
      return;
    }
    const session: Session = {
      connectionId: this.nextConnectionId++,
      clientAddress: `${socket.remoteAddress}:${socket.remotePort}`,
      listenerName: spec.name,
      securityProtocol: spec.securityProtocol,
      listenerRole: spec.role,
      principal,
      authenticated: security.sasl === null,
      sasl:
        security.sasl === null
          ? null
          : new SaslSession(
              security.sasl,
              () => clock.monotonicMs(),
              (ms) => new Promise((resolve) => clock.setTimeout(resolve, ms)),
            ),
      clientSoftwareName: null,
      clientSoftwareVersion: null,
    };
    this.logger.debug({ client: session.clientAddress, listener: spec.name, connectionId: session.connectionId }, 'connection accepted');
    const conn = new Connection(
      session,
      socket,
      this.processor,
      this.limits,
      this.memory,
      this.logger,
      (c) => runGuarded(this.acceptorFailed, 'counting down a closed connection', () => this.connectionClosed(c)),
      this.runtime.clock,
    );
    const counted: CountedConnection = {
      listener: spec.name,
      ip,
      quotas: acceptor.quotas,
      lastActiveMs: clock.monotonicMs(),
      counted: true,
    };
    this.connections.set(conn, counted);
    socket.on('data', () => {
      counted.lastActiveMs = clock.monotonicMs();
    });
    socket.resume();
  }

  /** New keys and certificates for a TLS listener (its keystore changed); open connections keep theirs. */
  reloadTls(listener: string, options: TlsOptions): void {
    this.serversByListener.get(listener)?.setSecureContext?.(options);
  }

  /** Stops accepting connections; sockets not yet admitted, or waiting to be closed, are closed. */
  async stopAccepting(): Promise<void> {
    this.accepting = false;
    for (const acceptor of this.acceptors) {
      if (acceptor.throttle !== null) this.runtime.clock.clearTimeout(acceptor.throttle);
      acceptor.throttle = null;
      for (const held of [acceptor.head, ...acceptor.backlog.splice(0)]) held?.socket.destroy();
      acceptor.head = null;
    }
    for (const [socket, timer] of this.throttledSockets) {
      this.runtime.clock.clearTimeout(timer);
      socket.destroy();
    }
    this.throttledSockets.clear();
    await Promise.all(this.servers.map((s) => s.close()));
    this.servers.length = 0;
    this.serversByListener.clear();
  }

  /**
   * Stops accepting, lets each connection finish the request it is processing, then closes
   * them; connections still open after `graceMs` are destroyed.
   */
  async close(graceMs = 5000): Promise<void> {
    const stopped = this.stopAccepting();
    const closes = Promise.all([...this.connections.keys()].map((c) => c.close()));
    let timer: TimerHandle | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = this.runtime.clock.setTimeout(() => {
        for (const c of this.connections.keys()) c.destroy();
        resolve();
      }, graceMs);
    });
    await Promise.race([closes, timeout]);
    if (timer !== undefined) this.runtime.clock.clearTimeout(timer);
    await stopped;
  }
}

/** Java's InetAddress.getByName: the first address, IPv4 ones first. */
async function resolveHostIpv4First(host: string): Promise<string> {
  return (await lookup(host, { verbatim: false })).address;
}
