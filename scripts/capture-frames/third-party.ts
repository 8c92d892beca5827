// Captures request frames written by librdkafka (kcat) and kafka-python into
// test/fixtures/frames/librdkafka/ and test/fixtures/frames/kafka-python/.
// A Sluice broker (the CLI, temp dir) advertises the address of a small TCP proxy in front of
// it, so every connection the clients open passes through the proxy, which copies bytes both
// ways and keeps the first request of each API of interest (for Metadata the first naming a
// topic, for Produce/Fetch the first carrying records or a topic). Each file holds one request
// as it came off the socket, without the 4-byte size prefix.
// Needs kcat and kafka-python (apt-get install -y kcat python3-kafka).
// Run: node --import tsx scripts/capture-frames/third-party.ts
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeRequestHeader } from '../../protocol/headers.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import type { FetchRequest } from '../../protocol/messages/fetch.ts';
import type { MetadataRequest } from '../../protocol/messages/metadata.ts';
import type { ProduceRequest } from '../../protocol/messages/produce.ts';
import { Reader } from '../../protocol/primitives.ts';
import { spawnBroker } from '../../test/helpers/broker-process.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/frames');
const TOPIC = 'frames';
const PYTHON = '/usr/bin/python3';

/** The APIs whose first (interesting) request is kept, with the fixture name. */
const KEEP = new Map<number, string>([
  [ApiKey.ApiVersions, 'api-versions'],
  [ApiKey.Metadata, 'metadata'],
  [ApiKey.Produce, 'produce'],
  [ApiKey.Fetch, 'fetch'],
  [ApiKey.ListOffsets, 'list-offsets'],
  [ApiKey.FindCoordinator, 'find-coordinator'],
  [ApiKey.JoinGroup, 'join-group'],
  [ApiKey.SyncGroup, 'sync-group'],
  [ApiKey.OffsetCommit, 'offset-commit'],
  [ApiKey.OffsetFetch, 'offset-fetch'],
  [ApiKey.Heartbeat, 'heartbeat'],
  [ApiKey.LeaveGroup, 'leave-group'],
]);

type Captured = Map<number, { name: string; version: number; frame: Buffer; interesting: boolean }>;
let captured: Captured = new Map();

/** Whether a request shows what the fixture is for: a topic named, records carried. */
function interesting(apiKey: number, body: unknown): boolean {
  if (apiKey === ApiKey.Metadata) return ((body as MetadataRequest).topics ?? []).some((t) => t.name === TOPIC);
  if (apiKey === ApiKey.Produce)
    return (body as ProduceRequest).topicData.some((t) => t.partitionData.some((p) => (p.records?.length ?? 0) > 0));
  if (apiKey === ApiKey.Fetch) return (body as FetchRequest).topics.length > 0;
  return true;
}

function inspect(frame: Buffer): void {
  const r = new Reader(frame);
  const h = decodeRequestHeader(r);
  const name = KEEP.get(h.requestApiKey);
  if (name === undefined) return;
  const body = apis.get(h.requestApiKey)!.decodeRequest(r, h.requestApiVersion);
  const keep = interesting(h.requestApiKey, body);
  const have = captured.get(h.requestApiKey);
  if (!have || (!have.interesting && keep)) {
    captured.set(h.requestApiKey, { name, version: h.requestApiVersion, frame: Buffer.from(frame), interesting: keep });
  }
}

/** Set once the broker is up; it needs the proxy's port first, to advertise it. */
let brokerPort = 0;

function proxy() {
  return createServer((client: Socket) => {
    const upstream = connect({ host: '127.0.0.1', port: brokerPort });
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        inspect(pending.subarray(4, 4 + pending.readInt32BE(0)));
        pending = pending.subarray(4 + pending.readInt32BE(0));
      }
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
}

/** Runs a client to completion; asynchronously, since the proxy shares this event loop. */
function run(command: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'], timeout: 60_000 });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdin.end(input ?? '');
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} failed (${code}): ${stderr}`))));
  });
}

function save(client: string): void {
  const out = join(FIXTURES, client);
  mkdirSync(out, { recursive: true });
  for (const f of readdirSync(out)) if (f.endsWith('.bin')) rmSync(join(out, f));
  for (const { name, version, frame } of captured.values()) {
    writeFileSync(join(out, `${name}-v${version}.bin`), frame);
    console.log(`${client}/${name}-v${version}.bin ${frame.length} bytes`);
  }
  captured = new Map();
}

const server = proxy();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const proxyPort = (server.address() as AddressInfo).port;
const broker = await spawnBroker({ overrides: { 'advertised.listeners': `PLAINTEXT://127.0.0.1:${proxyPort}` } });
brokerPort = broker.port;
const bootstrap = `127.0.0.1:${proxyPort}`;

try {
  const kcat = ['-b', bootstrap, '-X', 'client.id=kcat-frames'];
  await run('kcat', [...kcat, '-L', '-t', TOPIC]);
  // librdkafka sends a batch uncompressed when compression would not shrink it: repeat the text.
  await run('kcat', [...kcat, '-P', '-t', TOPIC, '-z', 'lz4', '-K', ':'], `k1:${'hello '.repeat(20)}\nk2:${'world '.repeat(20)}\n`);
  await run('kcat', [...kcat, '-C', '-t', TOPIC, '-o', 'beginning', '-c', '2', '-e']);
  await run('kcat', [...kcat, '-X', 'auto.offset.reset=earliest', '-G', 'kcat-group', TOPIC, '-c', '2']);
  save('librdkafka');

  await run(PYTHON, [
    '-c',
    `
from kafka import KafkaProducer, KafkaConsumer
p = KafkaProducer(bootstrap_servers='${bootstrap}', client_id='kafka-python-frames')
for i in range(2):
    p.send('${TOPIC}', key=b'k%d' % i, value=b'python %d' % i, timestamp_ms=1700000000000 + i)
p.flush()
p.close()
c = KafkaConsumer('${TOPIC}', bootstrap_servers='${bootstrap}', client_id='kafka-python-frames', group_id='python-group',
                  auto_offset_reset='earliest', enable_auto_commit=False, consumer_timeout_ms=10000)
seen = 0
for _ in c:
    seen += 1
    if seen == 4:
        break
c.commit()
c.close()
`,
  ]);
  save('kafka-python');
} finally {
  await broker.cleanup();
  server.close();
}
