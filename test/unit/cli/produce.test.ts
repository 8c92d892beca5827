import assert from 'node:assert/strict';
import fc from 'fast-check';
import { linesOf } from '../../../src/cli/produce.ts';

async function collect(chunks: readonly Buffer[]): Promise<string[][]> {
  const reads: string[][] = [];
  for await (const lines of linesOf(chunks.values() as unknown as AsyncIterable<Buffer>)) reads.push(lines);
  return reads;
}

/** `bytes` cut at `cuts` (positions, any order, duplicates allowed). */
function split(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    chunks.push(bytes.subarray(from, to));
    from = to;
  }
  return chunks;
}

describe('produce: stdin lines', () => {
  it('yields the same lines however stdin is cut into reads, even inside a UTF-8 character', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.string({ unit: 'grapheme', maxLength: 12 }).filter((l) => !l.includes('\n') && !l.includes('\r')),
          { minLength: 1, maxLength: 8 },
        ),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 6 }),
        async (lines, crlf, cuts) => {
          const input = Buffer.from(lines.join(crlf ? '\r\n' : '\n'), 'utf8');
          const got = (await collect(split(input, cuts))).flat();
          // A last line without its newline is still a line, unless it is empty.
          const expected = lines.at(-1) === '' ? lines.slice(0, -1) : lines;
          assert.deepEqual(got, expected);
        },
      ),
    );
  });

  it('hands over the complete lines of each read together', async () => {
    assert.deepEqual(await collect([Buffer.from('a\nb\nc'), Buffer.from('d\n'), Buffer.from('e')]), [['a', 'b'], ['cd'], ['e']]);
    assert.deepEqual(await collect([Buffer.from('\n\n')]), [['', '']]);
    assert.deepEqual(await collect([]), []);
  });
});
