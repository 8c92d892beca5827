/**
 * Human-readable log lines for a terminal: what `sluice dev` prints when stderr is a TTY.
 * pino writes each record as one JSON line; this turns it into
 *
 *   12:03:04.512 INFO  metadata: metadata quorum leader changed leaderId=1 epoch=2
 *
 * with the level coloured on a colour terminal, and the error's stack on the lines after.
 * Written here rather than taken from pino-pretty: this is all `sluice dev` needs, and it
 * keeps the bounded asynchronous destination of logger.ts underneath.
 */

/** pino's numeric levels. */
const LEVELS: Readonly<Record<number, { name: string; colour: string }>> = {
  10: { name: 'TRACE', colour: '\x1b[90m' },
  20: { name: 'DEBUG', colour: '\x1b[36m' },
  30: { name: 'INFO ', colour: '\x1b[32m' },
  40: { name: 'WARN ', colour: '\x1b[33m' },
  50: { name: 'ERROR', colour: '\x1b[31m' },
  60: { name: 'FATAL', colour: '\x1b[41m' },
};
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';
/** Fields every line has, shown in the prefix or not at all. */
const PREFIX_FIELDS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name', 'nodeId', 'component', 'err']);

export interface Destination {
  write(chunk: string): boolean;
  flushSync?(): void;
}

/** A pino destination that writes each JSON line to `out` formatted for a reader. */
export function prettyDestination(out: Destination, colour: boolean): Destination {
  return {
    flushSync: () => out.flushSync?.(),
    write(chunk: string): boolean {
      let ok = true;
      for (const line of chunk.split('\n')) {
        if (line !== '') ok = out.write(`${formatLine(line, colour)}\n`) && ok;
      }
      return ok;
    },
  };
}

/** One JSON log line as text; a line that is not a JSON object passes through unchanged. */
export function formatLine(line: string, colour: boolean): string {
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return line;
    record = parsed as Record<string, unknown>;
  } catch {
    return line;
  }
  const level = LEVELS[Number(record.level)] ?? { name: String(record.level).padEnd(5), colour: '' };
  const time = typeof record.time === 'number' ? new Date(record.time).toISOString().slice(11, 23) : '';
  const component = typeof record.component === 'string' ? `${record.component}: ` : '';
  const fields = Object.entries(record)
    .filter(([key]) => !PREFIX_FIELDS.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const text = [String(record.msg ?? ''), ...fields].join(' ');
  const err = record.err as { stack?: unknown; message?: unknown } | undefined;
  const stack = err === undefined ? '' : `\n    ${String(err.stack ?? err.message).replaceAll('\n', '\n    ')}`;
  if (!colour) return `${time} ${level.name} ${component}${text}${stack}`;
  return `${DIM}${time}${RESET} ${level.colour}${level.name}${RESET} ${component}${text}${stack}`;
}
