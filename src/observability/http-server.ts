/**
 * The node's HTTP listener (http.listeners): GET /metrics, the orchestrators' /health/live and
 * /health/ready, and whatever routes the broker adds (the admin API, the console). Routes
 * answer JSON; a route that throws answers 500 with the message and a log line, and the
 * listener serves on. Request bodies are bounded: the admin API takes small JSON documents.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from './logger.ts';

/** The largest request body read (a produced record with its headers fits many times). */
const MAX_BODY_BYTES = 1024 * 1024;
const DRAINED_BODY_BYTES = 16 * MAX_BODY_BYTES;

export interface HttpRequest {
  readonly method: string;
  readonly path: string;
  /** The route's `:name` segments, decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];
  /** The body parsed as JSON; undefined when there is none. */
  readonly body: unknown;
}

export interface HttpReply {
  readonly status: number;
  /** JSON-encoded unless `contentType` is given, then sent as is. */
  readonly body: unknown;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export type HttpRoute = (request: HttpRequest) => HttpReply | Promise<HttpReply>;

/** A client mistake, answered with `status` (400 unless given) and the message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

interface RouteEntry {
  readonly method: string;
  readonly segments: readonly string[];
  readonly route: HttpRoute;
}

export interface BoundHttpListener {
  readonly host: string;
  readonly port: number;
}

export class HttpServer {
  private readonly routes: RouteEntry[] = [];
  private readonly servers: Server[] = [];
  private bound: BoundHttpListener[] = [];

  constructor(private readonly logger: Logger) {}

  /** `pattern`: `/api/v1/topics/:topic`; a final `*` segment matches the rest of the path. */
  route(method: string, pattern: string, route: HttpRoute): void {
    this.routes.push({ method, segments: pattern.split('/').filter((s) => s !== ''), route });
  }

  get listeners(): readonly BoundHttpListener[] {
    return this.bound;
  }

  async start(listeners: readonly { host: string; port: number }[]): Promise<void> {
    for (const { host, port } of listeners) {
      const server = createServer((req, res) => {
        this.serve(req, res).catch((err: unknown) => {
          this.logger.error({ err, method: req.method, url: req.url }, 'http request failed');
          if (!res.headersSent) send(res, { status: 500, body: { error: 'internal error' } });
          else res.destroy();
        });
      });
      // Keep-alive connections would hold close() for their idle timeout.
      server.keepAliveTimeout = 5_000;
      this.servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host === '' ? undefined : host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      server.on('error', (err) => this.logger.error({ err }, 'http listener failed'));
      const address = server.address();
      const boundPort = typeof address === 'object' && address !== null ? address.port : port;
      this.bound.push({ host: host === '' ? '0.0.0.0' : host, port: boundPort });
      this.logger.info({ host, port: boundPort }, `http listener on http://${host === '' ? '0.0.0.0' : host}:${boundPort}`);
    }
  }

  async close(): Promise<void> {
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    this.servers.length = 0;
    this.bound = [];
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    const segments = url.pathname.split('/').filter((s) => s !== '');
    let pathMatched = false;
    for (const entry of this.routes) {
      const params = match(entry.segments, segments);
      if (params === null) continue;
      pathMatched = true;
      if (entry.method !== method && !(entry.method === 'GET' && method === 'HEAD')) continue;
      let reply: HttpReply;
      try {
        const body = await readJsonBody(req);
        reply = await entry.route({ method, path: url.pathname, params, query: url.searchParams, headers: req.headers, body });
      } catch (err) {
        if (!(err instanceof HttpError)) throw err;
        reply = { status: err.status, body: { error: err.message } };
      }
      send(res, reply, method === 'HEAD');
      return;
    }
    send(res, pathMatched ? { status: 405, body: { error: `${method} is not served on ${url.pathname}` } } : notFound(url.pathname));
  }
}

function notFound(path: string): HttpReply {
  return { status: 404, body: { error: `no such resource: ${path}` } };
}

function match(pattern: readonly string[], segments: readonly string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p === '*') {
      params['*'] = segments.slice(i).map(decodeSegment).join('/');
      return params;
    }
    const s = segments[i];
    if (s === undefined) return null;
    if (p.startsWith(':')) params[p.slice(1)] = decodeSegment(s);
    else if (p !== s) return null;
  }
  return segments.length === pattern.length ? params : null;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `malformed path segment ${segment}`);
  }
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  if (req.method === 'GET' || req.method === 'HEAD') return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  // An oversized body is read to its end without being kept, so that the client, still
  // sending, reads the 413 instead of a reset connection; a far larger one is cut off.
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    else if (size > DRAINED_BODY_BYTES) {
      req.destroy();
      throw new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`);
    }
  }
  if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`);
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new HttpError(400, `request body is not JSON: ${(err as Error).message}`);
  }
}

function send(res: ServerResponse, reply: HttpReply, headOnly = false): void {
  const json = reply.contentType === undefined;
  const payload = json ? JSON.stringify(reply.body, bigintAsNumber) : (reply.body as string | Buffer);
  res.writeHead(reply.status, {
    'content-type': reply.contentType ?? 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    ...reply.headers,
  });
  res.end(headOnly ? undefined : payload);
}

/** Offsets are int64 on the wire; JSON numbers hold them exactly up to 2^53. */
function bigintAsNumber(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}
