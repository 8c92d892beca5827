// Regenerates the binary fixtures in test/fixtures/records/ (listed, with their inputs, in
// test/fixtures/records/fixtures.ts): record batches and legacy message sets written by
// kafkajs's encoders, with LZ4 and zstd payloads made by the reference `lz4` and `zstd`
// command-line tools (Debian packages lz4 and zstd) in the variants real clients send:
//   - LZ4 as librdkafka writes it: 64 KiB independent blocks, no checksums, no content size;
//   - LZ4 with block and content checksums, content size and dependent blocks;
//   - zstd without a content size (streamed, as librdkafka and the Java client write it)
//     and with one.
// Run: node --import tsx scripts/record-fixtures/generate.ts

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIXTURES, type FixtureInfo, messagesOf } from '../../test/fixtures/records/fixtures.ts';
import { kafkajsMessageSet, kafkajsRecordBatch, KafkajsCompression, withKafkajsCodec } from '../../test/fixtures/records/kafkajs.ts';

const out = join(dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/records');
const scratch = mkdtempSync(join(tmpdir(), 'record-fixtures-'));

/**
 * A kafkajs codec running a CLI. With `fromFile` the input goes through a file, so the
 * tool knows its size (the LZ4 CLI writes a content size only then).
 */
function cliCodec(tool: string, args: (input: Buffer) => string[], fromFile = false) {
  const run = (argv: string[], input: Buffer): Buffer => execFileSync(tool, argv, { input, stdio: ['pipe', 'pipe', 'ignore'] });
  return {
    async compress(encoder: { buffer: Buffer }): Promise<Buffer> {
      if (!fromFile) return run(args(encoder.buffer), encoder.buffer);
      const path = join(scratch, 'input');
      writeFileSync(path, encoder.buffer);
      return run([...args(encoder.buffer), path], Buffer.alloc(0));
    },
    async decompress(buffer: Buffer): Promise<Buffer> {
      return run(['-d', '-c'], buffer);
    },
  };
}

/** The CLI codec each fixture's writer names. */
function codecFor(f: FixtureInfo) {
  if (f.writer.includes('-BD -BX')) return cliCodec('lz4', () => ['-B4', '-BD', '-BX', '--content-size', '-c'], true);
  if (f.writer.includes('lz4 -B4 -BI')) return cliCodec('lz4', () => ['-B4', '-BI', '--no-frame-crc', '-c']);
  // From stdin the CLI cannot know the size, so the frame header has no content size.
  if (f.writer.includes('--stream-size')) return cliCodec('zstd', (input) => ['-q', '-3', '-c', `--stream-size=${input.length}`]);
  if (f.writer.includes('zstd -3')) return cliCodec('zstd', () => ['-q', '-3', '-c']);
  return null;
}

const kafkajsCodecId = {
  none: KafkajsCompression.None,
  gzip: KafkajsCompression.GZIP,
  lz4: KafkajsCompression.LZ4,
  zstd: KafkajsCompression.ZSTD,
};

async function generate(f: FixtureInfo): Promise<void> {
  const messages = messagesOf(f.messages);
  const codec = kafkajsCodecId[f.codec];
  const write = (): Promise<Buffer> =>
    f.kind === 'batch'
      ? kafkajsRecordBatch(messages, {
          compression: codec,
          producerId: f.producerId,
          producerEpoch: f.producerEpoch,
          firstSequence: f.firstSequence,
          transactionalId: f.transactional ? 'transactional-id' : null,
        })
      : kafkajsMessageSet(messages, f.magic as 0 | 1, codec);
  const cli = codecFor(f);
  const bytes = cli ? await withKafkajsCodec(codec, cli, write) : await write();
  writeFileSync(join(out, f.file), bytes);
  console.log(`${f.file}: ${bytes.length} bytes (${f.writer})`);
}

try {
  for (const f of FIXTURES) await generate(f);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
