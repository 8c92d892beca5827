/**
 * A short, printable view of record bytes for `sluice dlq inspect`: UTF-8 text when the bytes
 * are printable text, hex otherwise, cut at PREVIEW_MAX_CHARS so one huge value cannot flood
 * the terminal.
 */

/** Characters of a preview (hex digits for binary data). */
export const PREVIEW_MAX_CHARS = 200;

export interface BytesPreview {
  encoding: 'text' | 'hex';
  text: string;
  /** Size of the whole value. */
  bytes: number;
  truncated: boolean;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
/** Control characters other than tab and line breaks, which text values carry. */
const NON_PRINTABLE = /(?![\t\n\r])\p{Cc}/u;

/** The first `maxChars` characters (whole code points) of `text`, and whether any were cut. */
export function cutText(text: string, maxChars = PREVIEW_MAX_CHARS): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  const points = Array.from(text);
  if (points.length <= maxChars) return { text, truncated: false };
  return { text: points.slice(0, maxChars).join(''), truncated: true };
}

function printableText(bytes: Buffer): string | null {
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    return null;
  }
  return NON_PRINTABLE.test(text) ? null : text;
}

export function previewBytes(bytes: Buffer | null, maxChars = PREVIEW_MAX_CHARS): BytesPreview | null {
  if (bytes === null) return null;
  const text = printableText(bytes);
  if (text !== null) return { encoding: 'text', ...cutText(text, maxChars), bytes: bytes.length };
  const shown = Math.floor(maxChars / 2);
  return { encoding: 'hex', text: bytes.subarray(0, shown).toString('hex'), bytes: bytes.length, truncated: bytes.length > shown };
}

/** One line: `"text"` (JSON-quoted, so line breaks show as \n), `hex:0a0b`, or `null`; `...` and the size when cut. */
export function formatPreview(p: BytesPreview | null): string {
  if (p === null) return 'null';
  const shown = p.encoding === 'text' ? JSON.stringify(p.text) : `hex:${p.text}`;
  return p.truncated ? `${shown}... (${p.bytes} bytes)` : shown;
}
