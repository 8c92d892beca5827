/**
 * Sockets. The listeners, the connections they accept and the clients a broker opens (to
 * its controllers, to partition leaders) reach the network through a Network, so that the
 * simulation can run several brokers in one process over in-memory links it delays, drops
 * and cuts. The system Network hands out node:net sockets themselves (node:tls ones on TLS
 * listeners and connections): no wrapper on the data path.
 */
import type { X509Certificate } from 'node:crypto';
import { createServer, connect, type Server } from 'node:net';
import { connect as tlsConnect, createServer as tlsCreateServer, type ConnectionOptions, type TLSSocket, type TlsOptions } from 'node:tls';

/** The part of net.Socket the broker and its client use. */
export interface NetSocket {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  /** Bytes queued for writing that the peer has not taken yet. */
  readonly writableLength: number;
  readonly destroyed: boolean;
  /** `written` is called once the socket no longer holds `chunk` (sent, or dropped with the socket). */
  write(chunk: Uint8Array, written?: (err?: Error | null) => void): boolean;
  /** Half-closes: sends what is queued, then FIN. */
  end(): void;
  destroy(): void;
  cork(): void;
  uncork(): void;
  pause(): void;
  resume(): void;
  setNoDelay(noDelay?: boolean): void;
  /** Emits 'timeout' after `ms` without activity (0 disables). */
  setTimeout(ms: number): void;
  on(event: 'data', listener: (chunk: Buffer) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'drain' | 'timeout' | 'close' | 'connect', listener: () => void): this;
  once(event: 'data', listener: (chunk: Buffer) => void): this;
  once(event: 'error', listener: (err: Error) => void): this;
  once(event: 'drain' | 'timeout' | 'close' | 'connect', listener: () => void): this;
  off(event: 'data', listener: (chunk: Buffer) => void): this;
  off(event: 'error', listener: (err: Error) => void): this;
  off(event: 'drain' | 'timeout' | 'close' | 'connect', listener: () => void): this;
  removeAllListeners(event?: 'data' | 'error' | 'drain' | 'timeout' | 'close' | 'connect'): this;
  /** The certificate a TLS peer presented; absent on plaintext sockets. */
  getPeerX509Certificate?(): X509Certificate | undefined;
}

export interface NetAddress {
  host: string;
  port: number;
}

export interface NetServer {
  /** Binds and listens; resolves with the address bound (the port chosen when `port` was 0). */
  listen(host: string, port: number): Promise<NetAddress>;
  /** A TLS listener's new keys and certificates, for connections accepted from now on. */
  setSecureContext?(options: TlsOptions): void;
  /** Stops accepting; resolves once the server is closed (open connections stay open). */
  close(): Promise<void>;
}

/** A TLS listener: its options, and where handshakes that fail are reported. */
export interface TlsListenerOptions {
  readonly options: TlsOptions;
  onHandshakeError(err: Error, remote: string): void;
}

export interface Network {
  createServer(onConnection: (socket: NetSocket) => void, tls?: TlsListenerOptions): NetServer;
  /** Opens a connection (TLS when `tls` is given); the socket emits 'connect' once established, or 'error'. */
  connect(host: string, port: number, tls?: ConnectionOptions): NetSocket;
}

const LISTEN_BACKLOG = 512;

class SystemServer implements NetServer {
  private readonly server: Server;

  constructor(onConnection: (socket: NetSocket) => void, tls?: TlsListenerOptions) {
    if (tls === undefined) {
      this.server = createServer({ noDelay: true }, onConnection);
      return;
    }
    const server = tlsCreateServer({ ...tls.options, noDelay: true }, onConnection);
    server.on('tlsClientError', (err, socket) => tls.onHandshakeError(err, `${socket.remoteAddress}:${socket.remotePort}`));
    this.server = server;
  }

  setSecureContext(options: TlsOptions): void {
    (this.server as ReturnType<typeof tlsCreateServer>).setSecureContext(options);
  }

  listen(host: string, port: number): Promise<NetAddress> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host, port, backlog: LISTEN_BACKLOG }, () => {
        this.server.off('error', reject);
        const address = this.server.address();
        resolve({ host, port: typeof address === 'object' && address !== null ? address.port : port });
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export const systemNetwork: Network = {
  createServer: (onConnection, tls) => new SystemServer(onConnection, tls),
  connect: (host, port, tls) => (tls === undefined ? connect({ host, port }) : tlsClientSocket(host, port, tls)),
};

/**
 * A TLS client socket that says 'connect' once the handshake is done, as a plaintext socket
 * says it once connected: callers wait for it before their first request either way.
 */
function tlsClientSocket(host: string, port: number, options: ConnectionOptions): TLSSocket {
  const socket = tlsConnect({ ...options, host, port });
  socket.once('secureConnect', () => socket.emit('connect'));
  return socket;
}
