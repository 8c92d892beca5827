// The JSON-line protocol between a PlatformaticDriver proxy (compat/clients/platformatic.ts,
// Node 20) and its host process (host.ts, Node 22). One line each way per call:
//   parent -> host: {"id": 1, "method": "produce", "args": [...]}
//   host -> parent: {"id": 1, "result": ...} or {"id": 1, "error": {"name", "message", "stack"}}
// Buffers and bigints travel as {"$buffer": base64} and {"$bigint": decimal} and come back as
// themselves; undefined object members are dropped, as JSON does.

export interface Request {
  id: number;
  method: string;
  args: unknown[];
}

export interface RemoteError {
  name: string;
  message: string;
  stack?: string;
}

export type Reply = { id: number; result: unknown } | { id: number; error: RemoteError };

export function encode(message: Request | Reply): string {
  return JSON.stringify(message, function (key, value: unknown) {
    // `this[key]` is the raw member: Buffer#toJSON has already run on `value`.
    const raw: unknown = (this as Record<string, unknown>)[key];
    if (Buffer.isBuffer(raw)) return { $buffer: raw.toString('base64') };
    if (typeof value === 'bigint') return { $bigint: value.toString() };
    return value;
  });
}

export function decode(line: string): unknown {
  return JSON.parse(line, (_, value: unknown) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const keys = Object.keys(value);
      const tagged = value as Record<string, unknown>;
      if (keys.length === 1 && typeof tagged.$buffer === 'string') return Buffer.from(tagged.$buffer, 'base64');
      if (keys.length === 1 && typeof tagged.$bigint === 'string') return BigInt(tagged.$bigint);
    }
    return value;
  });
}

export function isRequest(value: unknown): value is Request {
  const r = value as Partial<Request> | null;
  return r !== null && typeof r === 'object' && typeof r.id === 'number' && typeof r.method === 'string' && Array.isArray(r.args);
}

export function isReply(value: unknown): value is Reply {
  const r = value as { id?: unknown } | null;
  return r !== null && typeof r === 'object' && typeof r.id === 'number' && ('result' in r || 'error' in r);
}
