import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeResponseHeader } from '../../protocol/headers.ts';
import { type ApiVersionsResponse, makeApiVersionsRequest } from '../../protocol/messages/api-versions.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { Reader } from '../../protocol/primitives.ts';
import { frame } from './raw-requests.ts';

/** A raw connection from a chosen local address that notes its first response frame and its close. */
export class Peer {
  private buffered = Buffer.alloc(0);
  private readonly answered: Promise<Buffer>;
  readonly closed: Promise<void>;
  isClosed = false;

  private constructor(private readonly socket: Socket) {
    this.answered = new Promise((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        this.buffered = Buffer.concat([this.buffered, chunk]);
        if (this.buffered.length >= 4 && this.buffered.length >= 4 + this.buffered.readInt32BE(0)) {
          resolve(this.buffered.subarray(4, 4 + this.buffered.readInt32BE(0)));
        }
      });
    });
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.isClosed = true;
        resolve();
      }),
    );
    socket.on('error', () => undefined);
  }

  static open(port: number, localAddress: string, host = '127.0.0.1'): Promise<Peer> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, localAddress }, () => {
        socket.off('error', reject);
        resolve(new Peer(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Sends ApiVersions v0 and resolves with its answer. */
  apiVersions(): Promise<ApiVersionsResponse> {
    const { id, bytes } = frame(ApiKey.ApiVersions, 0, makeApiVersionsRequest());
    const size = Buffer.alloc(4);
    size.writeInt32BE(bytes.length);
    this.socket.write(Buffer.concat([size, bytes]));
    return this.answered.then((payload) => {
      const r = new Reader(payload);
      assert.equal(decodeResponseHeader(r, ApiKey.ApiVersions, 0), id);
      return apis.get(ApiKey.ApiVersions)!.decodeResponse(r, 0) as ApiVersionsResponse;
    });
  }

  /** Whether the request sent is still unanswered (and the connection open) after `ms`. */
  async unansweredFor(ms: number): Promise<boolean> {
    const outcome = await Promise.race([
      this.answered.then(() => 'answered'),
      this.closed.then(() => 'closed'),
      sleep(ms).then(() => 'waiting'),
    ]);
    return outcome === 'waiting';
  }

  close(): void {
    this.socket.destroy();
  }
}
