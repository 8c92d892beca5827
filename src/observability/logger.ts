/**
 * The broker's structured log (pino, JSON lines on stdout). The level comes from `log.level`
 * (SLUICE_LOG_LEVEL in the environment); `quiet` silences it for tests and embedding.
 */
import { isatty } from 'node:tty';
import { pino, type Logger } from 'pino';
import { prettyDestination } from './pretty.ts';

export type { Logger };

export interface LoggerOptions {
  level?: string;
  quiet?: boolean;
  /** Extra fields on every line (e.g. nodeId). */
  base?: Record<string, unknown>;
  /** File descriptor to write to; stdout by default (the CLI uses stderr, keeping stdout for its ready line). */
  fd?: number;
  /** JSON lines (the default), or text for a person at a terminal (pretty.ts). */
  format?: LogFormat;
}

export type LogFormat = 'json' | 'pretty';

/** Log bytes held while the output cannot take them. */
const MAX_BUFFERED_LOG_BYTES = 16 * 1024 * 1024;

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      name: 'sluice',
      level: options.quiet ? 'silent' : (options.level ?? 'info'),
      base: { pid: process.pid, ...options.base },
      serializers: { err: serializeError },
    },
    // Asynchronous and bounded: a synchronous write to a pipe whose reader falls behind spins
    // on EAGAIN inside the event loop, so a flood of log lines (a client sending garbage)
    // would stall every connection. Past the bound, lines are dropped instead; pino flushes
    // what is buffered when the process exits. A quiet logger writes nowhere: it needs no
    // stream on the fd (nor its flush at exit).
    options.quiet ? DISCARD : destination(options.fd ?? 1, options.format ?? 'json'),
  );
}

const DISCARD = { write: (_line: string): void => undefined };

function destination(fd: number, format: LogFormat) {
  const out = pino.destination({ fd, sync: false, maxLength: MAX_BUFFERED_LOG_BYTES });
  if (format === 'json') return out;
  // The asynchronous destination underneath still flushes at exit (pino registers it).
  const colour = isatty(fd) && process.env.NO_COLOR === undefined;
  return prettyDestination(out, colour);
}

/**
 * pino's error serializer, made total: it tags every error-like object it walks, which
 * throws on a frozen one, and a log line must never be what fails a request or the process.
 */
export function serializeError(err: unknown): unknown {
  try {
    return pino.stdSerializers.err(err as Error);
  } catch {
    const e = err as { name?: unknown; message?: unknown; stack?: unknown } | null;
    return { type: String(e?.name), message: String(e?.message), stack: String(e?.stack) };
  }
}
