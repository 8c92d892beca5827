// The ceilings of scripts/bench/broker.ts, as a separate process like the broker it is
// compared with:
//   - a minimal Kafka "broker": reads request frames, appends them to a file and answers
//     ApiVersions and Produce with canned responses (nothing is parsed beyond the header).
//     It listens twice, once appending through a write stream (the thread pool) and once
//     appending in place (writeSync), so the bench can take whichever is faster;
//   - a raw file-to-socket copy: each connection to the copy port receives the file named by
//     the 2-byte-length-prefixed path it sends, then is closed.
// Run: node --import tsx scripts/bench/null-server.ts --file /tmp/frames.bin
// Prints `null-server ports <kafka, stream writes> <kafka, in-place writes> <copy>` once
// listening; it appends to <file>.stream and <file>.inplace.
import { closeSync, createReadStream, createWriteStream, openSync, writeSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { encodeResponseHeader } from '../../protocol/headers.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { encodeApiVersionsResponse, makeApiVersionsResponse } from '../../protocol/messages/api-versions.ts';
import {
  encodeProduceResponse,
  makeProduceResponse,
  makeProduceResponsePartitionProduceResponse,
  makeProduceResponseTopicProduceResponse,
} from '../../protocol/messages/produce.ts';
import { Writer } from '../../protocol/primitives.ts';
import { ChunkQueue } from '../../src/server/chunk-queue.ts';

const { values } = parseArgs({ options: { file: { type: 'string' } } });
if (values.file === undefined) throw new Error('--file is required');
const streamSink = createWriteStream(`${values.file}.stream`, { flags: 'a' });
const inPlaceFd = openSync(`${values.file}.inplace`, 'a');
type Append = (frame: Buffer) => void;
const appendToStream: Append = (frame) => {
  streamSink.write(frame);
};
const appendInPlace: Append = (frame) => {
  for (let written = 0; written < frame.length; ) written += writeSync(inPlaceFd, frame, written);
};

const produce = apis.get(ApiKey.Produce)!;
const apiVersionsBody = (version: number): Buffer => {
  const w = new Writer();
  encodeApiVersionsResponse(
    w,
    makeApiVersionsResponse({
      apiKeys: [ApiKey.ApiVersions, ApiKey.Produce].map((apiKey) => ({
        apiKey,
        minVersion: apis.get(apiKey)!.minVersion,
        maxVersion: apis.get(apiKey)!.maxVersion,
      })),
    }),
    version,
  );
  return w.toBuffer();
};

/** One canned body per Produce version: partition 0 of topic `bench`, offset 0, no error. */
const produceBodies = new Map<number, Buffer>();
for (let v = produce.minVersion; v <= produce.maxVersion; v++) {
  const w = new Writer();
  encodeProduceResponse(
    w,
    makeProduceResponse({
      responses: [
        makeProduceResponseTopicProduceResponse({
          name: 'bench',
          partitionResponses: [makeProduceResponsePartitionProduceResponse({ index: 0 })],
        }),
      ],
    }),
    v,
  );
  produceBodies.set(v, w.toBuffer());
}

function respond(socket: Socket, correlationId: number, apiKey: number, version: number, body: Buffer): void {
  const w = new Writer(32);
  const setLength = w.reserveInt32();
  encodeResponseHeader(w, correlationId, apiKey, version);
  setLength(w.length - 4 + body.length);
  socket.write(Buffer.concat([w.toBuffer(), body]));
}

function onFrame(socket: Socket, frame: Buffer, append: Append): void {
  const apiKey = frame.readInt16BE(4);
  const version = frame.readInt16BE(6);
  const correlationId = frame.readInt32BE(8);
  if (apiKey === ApiKey.ApiVersions) {
    respond(socket, correlationId, apiKey, version, apiVersionsBody(Math.min(version, 3)));
  } else if (apiKey === ApiKey.Produce) {
    append(frame);
    const body = produceBodies.get(version);
    if (body === undefined) socket.destroy();
    else respond(socket, correlationId, apiKey, version, body);
  } else {
    socket.destroy();
  }
}

const kafkaServer = (append: Append): ReturnType<typeof createServer> =>
  createServer((socket) => {
    socket.setNoDelay(true);
    const pending = new ChunkQueue();
    socket.on('data', (chunk: Buffer) => {
      pending.push(chunk);
      // The responses to every frame this chunk completes leave in one write.
      socket.cork();
      process.nextTick(() => socket.uncork());
      while (pending.length >= 4) {
        const size = pending.peekInt32();
        if (pending.length < 4 + size) return;
        onFrame(socket, pending.take(4 + size), append);
      }
    });
    socket.on('error', () => socket.destroy());
  });

const copy = createServer((socket) => {
  let request = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    request = Buffer.concat([request, chunk]);
    if (request.length < 2 || request.length < 2 + request.readUInt16BE(0)) return;
    socket.removeAllListeners('data');
    createReadStream(request.subarray(2, 2 + request.readUInt16BE(0)).toString(), { highWaterMark: 1024 * 1024 }).pipe(socket);
  });
  socket.on('error', () => socket.destroy());
});

const listen = (server: ReturnType<typeof createServer>): Promise<number> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
const [streamPort, inPlacePort, copyPort] = await Promise.all([
  listen(kafkaServer(appendToStream)),
  listen(kafkaServer(appendInPlace)),
  listen(copy),
]);
process.stdout.write(`null-server ports ${streamPort} ${inPlacePort} ${copyPort}\n`);
process.on('SIGTERM', () =>
  streamSink.end(() => {
    closeSync(inPlaceFd);
    process.exit(0);
  }),
);
