/**
 * Sluice as a library: start a broker inside your own process (for test suites) and close it.
 *
 * ```ts
 * import { startBroker } from 'sluice';
 * const broker = await startBroker();           // port 0: a free port; data in a temp dir
 * const kafka = new Kafka({ brokers: [broker.bootstrap] });
 * ...
 * await broker.close();                          // also removes the temp dir it created
 * ```
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from './broker.ts';
import { devProperties } from './cli/args.ts';
import { BrokerConfig } from './config/index.ts';
import { createLogger, type Logger } from './observability/logger.ts';

const UNSAFE_BYPASS_FSYNC = 'unsafe.bypass.fsync';

export interface StartBrokerOptions {
  /** Defaults to 127.0.0.1. */
  host?: string;
  /** Defaults to 0: any free port. */
  port?: number;
  /**
   * Defaults to a fresh temp dir, deleted again by close(). In that dir, which no process
   * ever opens again, the broker runs with `unsafe.bypass.fsync=true` (unless `overrides`
   * set it): nothing is fsynced, so start-up and close() do not wait for the disk. A crash
   * of the process loses nothing the kernel holds; only an OS crash would, and the dir is
   * not reused after one. With a `dataDir` of your own, every fsync is made, as by `sluice`.
   */
  dataDir?: string;
  /** Broker properties, as `--override` would set them. */
  overrides?: Record<string, string | number | boolean>;
  /** Defaults to a silent logger. */
  logger?: Logger;
}

export interface EmbeddedBroker {
  /** `host:port` for a client's bootstrap servers. */
  readonly bootstrap: string;
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly broker: Broker;
  close(): Promise<void>;
}

/** Starts a single-node broker (the same configuration as `sluice dev`). */
export async function startBroker(options: StartBrokerOptions = {}): Promise<EmbeddedBroker> {
  const host = options.host ?? '127.0.0.1';
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'sluice-')));
  const overrides = new Map(Object.entries(options.overrides ?? {}).map(([k, v]) => [k, String(v)]));
  // Data that cannot outlive the process needs no fsync (see dataDir).
  if (ownDir && !overrides.has(UNSAFE_BYPASS_FSYNC)) overrides.set(UNSAFE_BYPASS_FSYNC, 'true');
  const config = new BrokerConfig({ file: devProperties(host, options.port ?? 0, dataDir), overrides });
  const broker = new Broker({ config, logger: options.logger ?? createLogger({ quiet: true }) });
  try {
    await broker.start();
  } catch (err) {
    await broker.close();
    if (ownDir) await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const listener = broker.listeners.find((l) => l.role === 'broker') ?? broker.listeners[0];
  if (listener === undefined) {
    await broker.close();
    if (ownDir) await rm(dataDir, { recursive: true, force: true });
    throw new Error('the broker opened no listener');
  }
  return {
    bootstrap: `${listener.host}:${listener.boundPort}`,
    host: listener.host,
    port: listener.boundPort,
    dataDir,
    broker,
    async close() {
      await broker.close();
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export { Broker, type BrokerOptions } from './broker.ts';
export { BrokerConfig } from './config/index.ts';
export { SluiceKafka, StartedSluiceKafka, KAFKA_CLIENT_PORT } from './testing/sluice-kafka.ts';
