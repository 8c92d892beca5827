/**
 * The broker's structured log (pino, JSON lines on stdout). The level comes from `log.level`
 * (SLUICE_LOG_LEVEL in the environment); `quiet` silences it for tests and embedding.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export interface LoggerOptions {
  level?: string;
  quiet?: boolean;
  /** Extra fields on every line (e.g. nodeId). */
  base?: Record<string, unknown>;
  /** File descriptor to write to; stdout by default (the CLI uses stderr, keeping stdout for its ready line). */
  fd?: number;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      name: 'sluice',
      level: options.quiet ? 'silent' : (options.level ?? 'info'),
      base: { pid: process.pid, ...options.base },
    },
    pino.destination({ fd: options.fd ?? 1, sync: true }),
  );
}
