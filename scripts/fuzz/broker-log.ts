// The broker's error-level log lines. A request that failed inside a handler is answered
// with a well-formed UNKNOWN_SERVER_ERROR, which the response checks accept; the pino line
// at level error (50) or fatal (60) is where such a bug shows. A client's mistake is logged
// at info or warn at most, so every error-level line is a finding.

/** pino's numeric level of `error`: this and above are findings. */
export const ERROR_LEVEL = 50;

export interface BrokerErrorLine {
  /** The line as the broker wrote it. */
  raw: string;
  level: number;
  timeMs: number | null;
  msg: string;
  /** The error's message when the line carries one (`err`). */
  errMessage: string | null;
  /** The client's port, when the line names the connection ("client": "host:port"). */
  clientPort: number | null;
  apiKey: number | null;
  apiVersion: number | null;
}

/** The complete lines of `text` (everything up to its last newline) and where they end. */
export function completeLines(text: string, from: number): { lines: string[]; end: number } {
  const last = text.lastIndexOf('\n');
  if (last < from) return { lines: [], end: from };
  return { lines: text.slice(from, last).split('\n'), end: last + 1 };
}

/** The JSON lines at level error or above; other lines (text, lower levels) are skipped. */
export function errorLines(lines: readonly string[]): BrokerErrorLine[] {
  const out: BrokerErrorLine[] = [];
  for (const raw of lines) {
    const line = parseLine(raw);
    if (line !== null && line.level >= ERROR_LEVEL) out.push(line);
  }
  return out;
}

function parseLine(raw: string): BrokerErrorLine | null {
  if (!raw.startsWith('{')) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const o = parsed as Record<string, unknown>;
  if (typeof o.level !== 'number') return null;
  const err = typeof o.err === 'object' && o.err !== null ? (o.err as Record<string, unknown>) : null;
  return {
    raw,
    level: o.level,
    timeMs: typeof o.time === 'number' ? o.time : null,
    msg: typeof o.msg === 'string' ? o.msg : '',
    errMessage: typeof err?.message === 'string' ? err.message : null,
    clientPort: portOf(o.client),
    apiKey: typeof o.apiKey === 'number' ? o.apiKey : null,
    apiVersion: typeof o.apiVersion === 'number' ? o.apiVersion : null,
  };
}

function portOf(client: unknown): number | null {
  if (typeof client !== 'string') return null;
  const m = /:(\d+)$/.exec(client);
  return m ? Number(m[1]) : null;
}

/**
 * What makes two error lines the same bug: the message and the error's message with
 * numbers (offsets, ids, ports) taken out.
 */
export function errorLineSignature(line: BrokerErrorLine): string {
  return `${line.msg}|${line.errMessage ?? ''}`.replace(/\d+/g, 'N').slice(0, 200);
}
