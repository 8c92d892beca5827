/**
 * An in-process stand-in for Testcontainers' KafkaContainer, for suites that cannot run
 * containers: the same calls a test makes on a started container, answered by a Sluice
 * broker in the test's own process (startBroker()).
 *
 * ```ts
 * import { SluiceKafka } from 'sluice';
 * await using kafka = await new SluiceKafka().start();   // or: new KafkaContainer(image).start()
 * const client = new Kafka({ brokers: [`${kafka.getHost()}:${kafka.getMappedPort(9093)}`] });
 * ```
 *
 * A container maps its port 9093 (KafkaContainer's PLAINTEXT listener) to some host port;
 * here getMappedPort(9093) is the port the broker listens on. Any other port throws, as a
 * started container does for a port it does not map.
 */
import { startBroker, type EmbeddedBroker, type StartBrokerOptions } from '../index.ts';

/** The container port KafkaContainer (and SluiceContainer) map for clients on the host. */
export const KAFKA_CLIENT_PORT = 9093;

export class SluiceKafka {
  private readonly options: StartBrokerOptions;

  /** Options as startBroker() takes them: a free port and a temp dir unless set. */
  constructor(options: StartBrokerOptions = {}) {
    this.options = { ...options, overrides: { ...options.overrides } };
  }

  /** Broker properties, as `--override key=value` would set them. */
  withBrokerConfig(properties: Record<string, string | number | boolean>): this {
    this.options.overrides = { ...this.options.overrides, ...properties };
    return this;
  }

  async start(): Promise<StartedSluiceKafka> {
    return new StartedSluiceKafka(await startBroker(this.options));
  }
}

export class StartedSluiceKafka {
  private stopped: Promise<void> | null = null;

  constructor(readonly broker: EmbeddedBroker) {}

  getHost(): string {
    return this.broker.host;
  }

  /** The host port behind container port 9093 (or "9093/tcp"); any other port throws. */
  getMappedPort(port: number | string, protocol = 'tcp'): number {
    const [number, portProtocol = protocol] = String(port).split('/');
    const key = `${number}/${portProtocol.toLowerCase()}`;
    if (key !== `${KAFKA_CLIENT_PORT}/tcp`) throw new Error(`No port binding found for :${key}`);
    return this.broker.port;
  }

  getFirstMappedPort(): number {
    return this.broker.port;
  }

  /** `host:port` for a client's bootstrap servers. */
  getBootstrapServers(): string {
    return this.broker.bootstrap;
  }

  /** Closes the broker and deletes the temp dir it created; safe to call more than once. */
  stop(): Promise<void> {
    this.stopped ??= this.broker.close();
    return this.stopped;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
