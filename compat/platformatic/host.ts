import { createInterface } from 'node:readline';
import { PlatformaticDriver } from './driver.ts';
import type { Operations } from './driver.ts';
import { decode, encode, isRequest } from './rpc.ts';
import type { Reply, Request } from './rpc.ts';

// Holds one @platformatic/kafka 2.x driver for a parent on Node 20 (compat/clients/platformatic.ts):
//   node22 --import tsx compat/platformatic/host.ts BOOTSTRAP
// reads one request a line on stdin and answers each on stdout (rpc.ts), concurrently, in
// the order they finish. It closes the driver and exits on the "close" request or at the end
// of stdin (the parent went away). stdout carries only replies: console output goes to stderr.

const bootstrap = process.argv[2];
if (!bootstrap) {
  console.error('usage: host.ts BOOTSTRAP');
  process.exit(2);
}

console.log = console.error;
console.info = console.error;
console.debug = console.error;

const METHODS = new Set<string>([
  'metadata',
  'describeTopic',
  'createTopic',
  'listTopics',
  'createPartitions',
  'describeConfigs',
  'alterConfigs',
  'deleteTopic',
  'produceTransactions',
  'transformInTransaction',
  'produce',
  'consume',
  'listOffset',
  'groupConsume',
  'committedOffsets',
] satisfies (keyof Operations)[]);

const driver = new PlatformaticDriver(bootstrap);
let closing: Promise<never> | null = null;

function reply(message: Reply): void {
  process.stdout.write(`${encode(message)}\n`);
}

function fail(id: number, error: unknown): void {
  const e = error instanceof Error ? error : new Error(String(error));
  reply({ id, error: { name: e.name, message: e.message, stack: e.stack } });
}

// Closes the driver (bounded: a stuck client must not keep the host alive) and exits once
// stdout has drained.
function close(id: number | null): Promise<never> {
  closing ??= (async () => {
    let code = 0;
    try {
      await Promise.race([
        driver.close(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('driver.close() took over 10 s')), 10_000).unref()),
      ]);
      if (id !== null) reply({ id, result: null });
    } catch (error) {
      code = 1;
      if (id !== null) fail(id, error);
      else console.error(error);
    }
    process.stdout.write('', () => process.exit(code));
    return new Promise<never>(() => {});
  })();
  return closing;
}

async function handle(request: Request): Promise<void> {
  const { id, method, args } = request;
  if (method === 'close') {
    await close(id);
    return;
  }
  if (closing) {
    fail(id, new Error(`${method} after close`));
    return;
  }
  if (!METHODS.has(method)) {
    fail(id, new Error(`unknown method ${method}`));
    return;
  }
  try {
    const operation = driver[method as keyof Operations] as (...a: unknown[]) => Promise<unknown>;
    const result = await operation.apply(driver, args);
    reply({ id, result: result ?? null });
  } catch (error) {
    fail(id, error);
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
lines.on('line', (line) => {
  if (!line.trim()) return;
  let request: unknown;
  try {
    request = decode(line);
  } catch {
    request = null;
  }
  if (!isRequest(request)) {
    console.error(`host: not a request: ${line}`);
    return;
  }
  void handle(request);
});
lines.on('close', () => void close(null));

// The host must not die silently of an error no operation caught: report it and exit.
process.on('uncaughtException', (error) => {
  console.error('host: uncaught exception', error);
  process.exit(1);
});
