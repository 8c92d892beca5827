import assert from 'node:assert/strict';
import { PREVIEW_MAX_CHARS, cutText, formatPreview, previewBytes } from '../../../../src/tools/dlq/preview.ts';

describe('dlq value preview', () => {
  it('shows printable UTF-8 as text, line breaks and tabs included', () => {
    assert.deepEqual(previewBytes(Buffer.from('{"id":1}\n\tcafé ✓')), {
      encoding: 'text',
      text: '{"id":1}\n\tcafé ✓',
      bytes: 19,
      truncated: false,
    });
  });

  it('shows invalid UTF-8 and control characters as hex', () => {
    assert.deepEqual(previewBytes(Buffer.from([0xff, 0xfe, 0x00])), { encoding: 'hex', text: 'fffe00', bytes: 3, truncated: false });
    assert.deepEqual(previewBytes(Buffer.from('a\u0000b')), { encoding: 'hex', text: '610062', bytes: 3, truncated: false });
    assert.equal(previewBytes(Buffer.from('bell\u0007'))!.encoding, 'hex');
  });

  it('cuts text at the limit on a code point boundary and hex at half as many bytes', () => {
    const long = previewBytes(Buffer.from('x'.repeat(500)))!;
    assert.equal(long.text, 'x'.repeat(PREVIEW_MAX_CHARS));
    assert.equal(long.truncated, true);
    assert.equal(long.bytes, 500);
    const emoji = cutText('😀'.repeat(300));
    assert.equal(Array.from(emoji.text).length, PREVIEW_MAX_CHARS);
    assert.equal(emoji.text, '😀'.repeat(PREVIEW_MAX_CHARS));
    const binary = previewBytes(Buffer.alloc(300, 0xff))!;
    assert.equal(binary.text, 'ff'.repeat(PREVIEW_MAX_CHARS / 2));
    assert.equal(binary.truncated, true);
  });

  it('keeps a null value apart from an empty one', () => {
    assert.equal(previewBytes(null), null);
    assert.deepEqual(previewBytes(Buffer.alloc(0)), { encoding: 'text', text: '', bytes: 0, truncated: false });
  });

  it('formats previews on one line', () => {
    assert.equal(formatPreview(previewBytes(Buffer.from('a\nb'))), '"a\\nb"');
    assert.equal(formatPreview(previewBytes(Buffer.from([1, 2]))), 'hex:0102');
    assert.equal(formatPreview(null), 'null');
    assert.equal(formatPreview(previewBytes(Buffer.from('y'.repeat(201)))), `"${'y'.repeat(200)}"... (201 bytes)`);
  });
});
