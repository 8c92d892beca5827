// Readable descriptions of how two values or byte strings differ, for failure messages.
import { isDeepStrictEqual } from 'node:util';

function show(v: unknown): string {
  if (Buffer.isBuffer(v)) return `<${v.length} bytes ${v.subarray(0, 32).toString('hex')}${v.length > 32 ? '…' : ''}>`;
  if (typeof v === 'bigint') return `${v}n`;
  if (v === undefined) return '(absent)';
  const text = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/** Up to `limit` paths where `actual` and `expected` differ, each "path: actual != expected". */
export function differences(actual: unknown, expected: unknown, limit = 6, path = '$'): string[] {
  if (isDeepStrictEqual(actual, expected)) return [];
  const bothObjects =
    typeof actual === 'object' &&
    typeof expected === 'object' &&
    actual !== null &&
    expected !== null &&
    !Buffer.isBuffer(actual) &&
    !Buffer.isBuffer(expected);
  if (!bothObjects || Array.isArray(actual) !== Array.isArray(expected)) {
    return [`${path}: ${show(actual)} != ${show(expected)}`];
  }
  if (Array.isArray(actual) && Array.isArray(expected) && actual.length !== expected.length) {
    return [`${path}: ${actual.length} elements != ${expected.length}`];
  }
  const out: string[] = [];
  const a = actual as Record<string, unknown>;
  const e = expected as Record<string, unknown>;
  for (const k of new Set([...Object.keys(a), ...Object.keys(e)])) {
    out.push(...differences(a[k], e[k], limit - out.length, Array.isArray(actual) ? `${path}[${k}]` : `${path}.${k}`));
    if (out.length >= limit) break;
  }
  return out;
}

/** Where two byte strings first differ, with some context, or null when equal. */
export function byteDifference(actual: Buffer, expected: Buffer): string | null {
  if (actual.equals(expected)) return null;
  let i = 0;
  while (i < actual.length && i < expected.length && actual[i] === expected[i]) i++;
  const from = Math.max(0, i - 8);
  return (
    `lengths ${actual.length} vs ${expected.length}, first difference at byte ${i}: ` +
    `ours …${actual.subarray(from, i + 16).toString('hex')} vs Kafka's …${expected.subarray(from, i + 16).toString('hex')}`
  );
}
