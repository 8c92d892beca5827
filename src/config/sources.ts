/**
 * Where broker properties come from: a Java-style server.properties file, SLUICE_*
 * environment variables, and `--override key=value` flags.
 */
import { readFileSync } from 'node:fs';

/**
 * Parses the java.util.Properties text format: `key=value`, `key: value` or `key value`;
 * `#` and `!` comment lines; a trailing backslash continues a line; \t \n \r \f \uXXXX escapes.
 */
export function parseProperties(text: string): Map<string, string> {
  const result = new Map<string, string>();
  const physical = text.split(/\r\n|\r|\n/).values();
  for (const raw of physical) {
    let line = trimLeading(raw);
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (endsWithContinuation(line)) {
      const next = physical.next();
      if (next.done) break;
      line = line.slice(0, -1) + trimLeading(next.value);
    }
    if (endsWithContinuation(line)) line = line.slice(0, -1);
    const { key, value } = splitKeyValue(line);
    result.set(unescapeProperty(key), unescapeProperty(value));
  }
  return result;
}

function trimLeading(line: string): string {
  return line.replace(/^[ \t\f]+/, '');
}

function endsWithContinuation(line: string): boolean {
  let backslashes = 0;
  for (let i = line.length - 1; i >= 0 && line[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 1;
}

function splitKeyValue(line: string): { key: string; value: string } {
  let i = 0;
  while (i < line.length) {
    const c = line.charAt(i);
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '=' || c === ':' || c === ' ' || c === '\t' || c === '\f') break;
    i++;
  }
  const key = line.slice(0, i);
  let rest = line.slice(i).replace(/^[ \t\f]+/, '');
  if (rest.startsWith('=') || rest.startsWith(':')) rest = rest.slice(1).replace(/^[ \t\f]+/, '');
  return { key, value: rest };
}

/** java.util.Properties escapes (\t \n \r \f \uXXXX); a backslash before any other character is dropped. */
function unescapeProperty(s: string): string {
  return s.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_m, e: string) => {
    if (e.length === 5) return String.fromCharCode(parseInt(e.slice(1), 16));
    switch (e) {
      case 't':
        return '\t';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 'f':
        return '\f';
      default:
        return e;
    }
  });
}

export function readPropertiesFile(path: string): Map<string, string> {
  return parseProperties(readFileSync(path, 'utf8'));
}

export const ENV_PREFIX = 'SLUICE_';

/**
 * Maps an environment variable name to a property name, the convention of Kafka's Docker
 * images with our prefix: strip `SLUICE_`, lower-case, `___` -> `-`, `__` -> `_`, `_` -> `.`.
 * SLUICE_LOG_RETENTION_MS -> log.retention.ms; SLUICE_LOG_LEVEL -> log.level.
 */
export function envNameToProperty(envName: string): string | null {
  if (!envName.startsWith(ENV_PREFIX) || envName.length === ENV_PREFIX.length) return null;
  // Longest run first: `___` splits before `__`, which splits before `_`.
  return envName
    .slice(ENV_PREFIX.length)
    .toLowerCase()
    .split('___')
    .map((dashed) =>
      dashed
        .split('__')
        .map((dotted) => dotted.replaceAll('_', '.'))
        .join('_'),
    )
    .join('-');
}

export function propertiesFromEnv(env: NodeJS.ProcessEnv): Map<string, string> {
  const result = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    const property = envNameToProperty(name);
    if (property !== null && value !== undefined) result.set(property, value);
  }
  return result;
}

/** Parses one `key=value` override; the value may itself contain '='. */
export function parseOverride(arg: string): [string, string] {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new Error(`--override expects key=value, got '${arg}'`);
  return [arg.slice(0, eq).trim(), arg.slice(eq + 1).trim()];
}
