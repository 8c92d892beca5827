import type {
  ClusterInfo,
  ConsumeOptions,
  ConsumedRecord,
  Delivery,
  Driver,
  DriverInfo,
  GroupConsumeOptions,
  GroupConsumeResult,
  OffsetSpec,
  ProduceOptions,
  ProducedRecord,
  TopicDescription,
  TransactionSpec,
  TransformOptions,
} from '../driver.ts';
import { run, tail } from '../support/process.ts';

// Runs one operation of a driver whose client lives in another process: the parameters go as
// JSON, the result comes back as JSON; a client error rejects with the client's own message.
export interface OperationRunner {
  call(operation: string, parameters: object, timeoutMs: number): Promise<unknown>;
  close(): Promise<void>;
}

// One process per operation (compat/python/*): `command ...args OPERATION` with
// {bootstrap, ...parameters} as JSON on stdin and the result as JSON on stdout; exit status 3
// carries the client's error on stderr.
export class ProcessPerOperation implements OperationRunner {
  constructor(
    private readonly client: string,
    private readonly bootstrap: string,
    private readonly command: () => Promise<[string, string[]]>,
  ) {}

  async call(operation: string, parameters: object, timeoutMs: number): Promise<unknown> {
    const [command, args] = await this.command();
    const result = await run(command, [...args, operation], {
      input: JSON.stringify({ bootstrap: this.bootstrap, ...parameters }),
      timeoutMs,
    });
    if (result.code === 3) {
      const reason = /CLIENT-ERROR: (.*)/.exec(result.stderr)?.[1] ?? tail(result.stderr);
      throw new Error(`${this.client} ${operation}: ${reason}\n${tail(result.stderr, 2000)}`);
    }
    if (result.code !== 0) {
      throw new Error(`${this.client} ${operation} exited with ${result.code ?? result.signal}: ${tail(result.stderr)}`);
    }
    return JSON.parse(result.stdout);
  }

  async close(): Promise<void> {}
}

// A driver whose client runs in another process, through an OperationRunner.
export class ProcessDriver implements Driver {
  readonly client: string;
  readonly features: DriverInfo['features'];
  readonly producerRequires: DriverInfo['producerRequires'];
  readonly consumerRequires: DriverInfo['consumerRequires'];
  readonly errors: DriverInfo['errors'];

  constructor(
    info: DriverInfo,
    private readonly runner: OperationRunner,
  ) {
    this.client = info.client;
    this.features = info.features;
    this.producerRequires = info.producerRequires;
    this.consumerRequires = info.consumerRequires;
    this.errors = info.errors;
  }

  private async call<T>(operation: string, parameters: object, timeoutMs = 90_000): Promise<T> {
    return (await this.runner.call(operation, parameters, timeoutMs)) as T;
  }

  metadata(): Promise<ClusterInfo> {
    return this.call('metadata', {});
  }

  describeTopic(topic: string): Promise<TopicDescription> {
    return this.call('describeTopic', { topic });
  }

  async createTopic(topic: string, partitions: number, configs: Record<string, string>): Promise<void> {
    await this.call('createTopic', { topic, partitions, configs });
  }

  listTopics(): Promise<string[]> {
    return this.call('listTopics', {});
  }

  async createPartitions(topic: string, totalCount: number): Promise<void> {
    await this.call('createPartitions', { topic, totalCount });
  }

  describeConfigs(topic: string): Promise<Record<string, string>> {
    return this.call('describeConfigs', { topic });
  }

  async alterConfigs(topic: string, configs: Record<string, string>): Promise<void> {
    await this.call('alterConfigs', { topic, configs });
  }

  async deleteTopic(topic: string): Promise<void> {
    await this.call('deleteTopic', { topic });
  }

  async produce(topic: string, records: ProducedRecord[], options: ProduceOptions): Promise<Delivery[]> {
    const deliveries = await this.call<(Delivery | null)[]>('produce', { topic, records, ...options });
    return deliveries.map((d) => d ?? { partition: -1, offset: -1 });
  }

  consume(options: ConsumeOptions): Promise<ConsumedRecord[]> {
    return this.call('consume', options, options.timeoutMs + 30_000);
  }

  async produceTransactions(topic: string, transactionalId: string, transactions: TransactionSpec[]): Promise<void> {
    await this.call('produceTransactions', { topic, transactionalId, transactions });
  }

  async transformInTransaction(options: TransformOptions): Promise<void> {
    await this.call('transformInTransaction', options);
  }

  listOffset(topic: string, partition: number, spec: OffsetSpec): Promise<number | null> {
    return this.call('listOffset', { topic, partition, spec });
  }

  groupConsume(options: GroupConsumeOptions): Promise<GroupConsumeResult> {
    return this.call('groupConsume', options, options.timeoutMs + 30_000);
  }

  committedOffsets(group: string, topic: string, partitions: number): Promise<(number | null)[]> {
    return this.call('committedOffsets', { group, topic, partitions });
  }

  close(): Promise<void> {
    return this.runner.close();
  }
}
