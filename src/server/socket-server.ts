/**
 * The listeners: one TCP server per configured listener, each accepted socket wrapped in a
 * Connection that feeds frames to the FrameProcessor.
 */
import type { Logger } from '../observability/logger.ts';
import { systemClock, type Clock, type TimerHandle } from '../runtime/clock.ts';
import { systemNetwork, type NetServer, type NetSocket, type Network } from '../runtime/network.ts';
import type { X509Certificate } from 'node:crypto';
import type { TlsOptions } from 'node:tls';
import { Connection, type ConnectionLimits, type FrameProcessor } from './connection.ts';
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

/** Broker-wide limits of the server, across all its connections. */
export interface ServerLimits {
  /** max.connections; unlimited by default. */
  readonly maxConnections?: number;
  /** queued.max.request.bytes: the request memory pool (memory-pool.ts); zero or less (the default here) bounds nothing. */
  readonly maxQueuedRequestBytes?: number;
}

/** Where the server listens and what times its connections; the system's by default. */
export interface ServerRuntime {
  readonly network: Network;
  readonly clock: Clock;
}

/** An empty host binds the loopback address: some clients resolve localhost to ::1 otherwise. */
export const DEFAULT_BIND_HOST = '127.0.0.1';

export class SocketServer {
  private readonly servers: NetServer[] = [];
  private readonly serversByListener = new Map<string, NetServer>();
  private readonly connections = new Set<Connection>();
  private nextConnectionId = 1;
  private bound: BoundListener[] = [];
  private readonly maxConnections: number;
  private readonly memory: RequestMemoryPool;

  constructor(
    private readonly processor: FrameProcessor,
    private readonly limits: ConnectionLimits,
    private readonly logger: Logger,
    serverLimits: ServerLimits = {},
    private readonly runtime: ServerRuntime = { network: systemNetwork, clock: systemClock },
  ) {
    this.maxConnections = serverLimits.maxConnections ?? Number.MAX_SAFE_INTEGER;
    this.memory = new RequestMemoryPool(serverLimits.maxQueuedRequestBytes ?? -1);
  }

  get listeners(): readonly BoundListener[] {
    return this.bound;
  }

  /** Open connections (for tests and metrics). */
  get openConnections(): readonly Connection[] {
    return [...this.connections];
  }

  /** The memory held by requests read and not yet answered, broker-wide (for tests and metrics). */
  get requestMemory(): Pick<RequestMemoryPool, 'capacityBytes' | 'usedBytes' | 'peakUsedBytes' | 'exhausted' | 'waitingCount'> {
    return this.memory;
  }

  async start(listeners: readonly ListenerSpec[]): Promise<void> {
    for (const spec of listeners) {
      const tls = spec.security?.tls ?? null;
      const server = this.runtime.network.createServer(
        (socket) => this.accept(socket, spec),
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

  private accept(socket: NetSocket, spec: ListenerSpec): void {
    if (this.connections.size >= this.maxConnections) {
      this.logger.warn({ client: `${socket.remoteAddress}:${socket.remotePort}` }, 'max.connections reached, closing new connection');
      socket.destroy();
      return;
    }
    const security = spec.security ?? PLAINTEXT_SECURITY;
    const refused = security.peerRefused?.(socket) ?? null;
    if (refused !== null) {
      this.logger.info(
        { client: `${socket.remoteAddress}:${socket.remotePort}`, listener: spec.name, reason: refused },
        'client certificate refused, connection closed',
      );
      socket.destroy();
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
      socket.destroy();
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
      (c) => this.connections.delete(c),
      this.runtime.clock,
    );
    this.connections.add(conn);
  }

  /** New keys and certificates for a TLS listener (its keystore changed); open connections keep theirs. */
  reloadTls(listener: string, options: TlsOptions): void {
    this.serversByListener.get(listener)?.setSecureContext?.(options);
  }

  /** Stops accepting connections. */
  async stopAccepting(): Promise<void> {
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
    const closes = Promise.all([...this.connections].map((c) => c.close()));
    let timer: TimerHandle | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = this.runtime.clock.setTimeout(() => {
        for (const c of this.connections) c.destroy();
        resolve();
      }, graceMs);
    });
    await Promise.race([closes, timeout]);
    if (timer !== undefined) this.runtime.clock.clearTimeout(timer);
    await stopped;
  }
}
