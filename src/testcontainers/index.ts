/**
 * `sluice/testcontainers`: Sluice's image (scripts/container/build-image.sh) as a
 * Testcontainers container with Sluice's own options. `testcontainers` is an optional peer
 * dependency: only this entry point loads it.
 *
 * ```ts
 * import { SluiceContainer } from 'sluice/testcontainers';
 * await using sluice = await new SluiceContainer().withBrokerConfig({ 'num.partitions': 3 }).start();
 * const kafka = new Kafka({ brokers: [sluice.getBootstrapServers()] });
 * ```
 *
 * Users of @testcontainers/kafka need none of this: `new KafkaContainer('localhost/sluice:8.0.0')`
 * starts the same image as it starts Confluent's.
 *
 * Like KafkaContainer, it starts the container first and the broker once the mapped port is
 * known, since clients on the host must be told that port (advertised.listeners): the
 * container waits for a file holding the advertised listeners, which containerStarted()
 * writes into it.
 */
import { randomBytes } from 'node:crypto';
import {
  AbstractStartedContainer,
  BoundPorts,
  GenericContainer,
  Wait,
  getContainerRuntimeClient,
  waitForContainer,
  type InspectResult,
  type StartedTestContainer,
  type WaitStrategy,
} from 'testcontainers';

/** The tag scripts/container/build-image.sh gives the image. */
export const SLUICE_IMAGE = 'localhost/sluice:8.0.0';
/** The listener for clients on the host (PLAINTEXT), mapped to a free host port. */
export const SLUICE_PORT = 9093;
/** The listener for other containers on the same network (BROKER), advertised as the container's hostname. */
export const SLUICE_NETWORK_PORT = 9092;
const CONTROLLER_PORT = 9094;

const ADVERTISED_LISTENERS_FILE = '/tmp/sluice-advertised-listeners';
const WAITING_MESSAGE = 'sluice container: waiting for the advertised listeners';
/** `sluice container` prints this once its listeners are bound. */
const READY_LINE = /^sluice ready: /;

// `read` fails on a line without its newline yet, so a file caught half-written is read again.
const START_SCRIPT = `echo '${WAITING_MESSAGE}'
until [ -f ${ADVERTISED_LISTENERS_FILE} ] && read -r KAFKA_ADVERTISED_LISTENERS < ${ADVERTISED_LISTENERS_FILE}; do sleep 0.1; done
export KAFKA_ADVERTISED_LISTENERS
exec sluice container "$@"`;

export class SluiceContainer extends GenericContainer {
  private readonly brokerConfig = new Map<string, string>();
  private readyWaitStrategy: WaitStrategy | null = null;

  constructor(image = SLUICE_IMAGE) {
    super(image);
    this.withExposedPorts(SLUICE_PORT)
      .withStartupTimeout(60_000)
      .withEnvironment({
        CLUSTER_ID: randomBytes(16).toString('base64url'),
        KAFKA_NODE_ID: '1',
        KAFKA_PROCESS_ROLES: 'broker,controller',
        KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${SLUICE_PORT},BROKER://0.0.0.0:${SLUICE_NETWORK_PORT},CONTROLLER://0.0.0.0:${CONTROLLER_PORT}`,
        KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT',
        KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
        KAFKA_INTER_BROKER_LISTENER_NAME: 'BROKER',
        KAFKA_CONTROLLER_QUORUM_VOTERS: `1@localhost:${CONTROLLER_PORT}`,
        // One node: the internal topics cannot have more replicas than that.
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
        // A test's consumer group should not wait 3 s for members that will never come.
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      });
  }

  /** Broker properties (Kafka's names), passed as `--override`: they win over the environment. */
  withBrokerConfig(properties: Readonly<Record<string, string | number | boolean>>): this {
    for (const [name, value] of Object.entries(properties)) this.brokerConfig.set(name, String(value));
    return this;
  }

  /** What "started" means; by default, Sluice's ready line (its listeners are bound). */
  override withWaitStrategy(waitStrategy: WaitStrategy): this {
    this.readyWaitStrategy = waitStrategy;
    return this;
  }

  override async start(): Promise<StartedSluiceContainer> {
    return new StartedSluiceContainer(await super.start());
  }

  protected override async beforeContainerCreated(): Promise<void> {
    const overrides = [...this.brokerConfig].flatMap(([name, value]) => ['--override', `${name}=${value}`]);
    this.withEntrypoint(['/bin/bash', '-c', START_SCRIPT, 'sluice-start']).withCommand(overrides);
    // Started means the script waits for its file; containerStarted() then waits for the broker.
    this.waitStrategy = Wait.forLogMessage(WAITING_MESSAGE);
  }

  protected override async containerStarted(container: StartedTestContainer, inspectResult: InspectResult): Promise<void> {
    const networkHost = this.networkMode !== undefined && this.networkAliases.length > 0 ? this.networkAliases[0]! : inspectResult.hostname;
    const advertised = `PLAINTEXT://${container.getHost()}:${container.getMappedPort(SLUICE_PORT)},BROKER://${networkHost}:${SLUICE_NETWORK_PORT}`;
    await container.copyContentToContainer([{ content: `${advertised}\n`, target: ADVERTISED_LISTENERS_FILE }]);
    const client = await getContainerRuntimeClient();
    const boundPorts = BoundPorts.fromInspectResult(client.info.containerRuntime.hostIps, inspectResult).filter(this.exposedPorts);
    const ready = (this.readyWaitStrategy ?? Wait.forLogMessage(READY_LINE)).withStartupTimeout(this.startupTimeoutMs ?? 60_000);
    await waitForContainer(client, client.container.getById(container.getId()), ready, boundPorts);
  }
}

export class StartedSluiceContainer extends AbstractStartedContainer {
  /** `host:port` of the listener for clients on the host. */
  getBootstrapServers(): string {
    return `${this.getHost()}:${this.getMappedPort(SLUICE_PORT)}`;
  }
}
