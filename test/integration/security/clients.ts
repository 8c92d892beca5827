/**
 * The real clients the security scenarios drive, each configured for one listener and one way
 * of authenticating: kafkajs in process; kcat, confluent-kafka-python (confluent_client.py)
 * and Kafka's own tools (the Java client, from the cached Kafka jars) as child processes.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import kafkajs, { type Kafka, type KafkaConfig, type SASLOptions } from 'kafkajs';
import { JVM_OPTIONS } from '../../../compat/clients/java.ts';
import { type RunResult, run } from '../../../compat/support/process.ts';
import { kafkaLibs } from '../../../compat/targets.ts';
import { PYTHON } from '../../cluster/clients.ts';
import { readRecords } from '../../helpers/read-records.ts';
import type { TestCert } from '../../helpers/certs.ts';
import { hasCommand, missingTool } from '../../helpers/runtimes.ts';
import type { SecuredBroker, User } from '../../helpers/secured-brokers.ts';
import { REPO } from '../../helpers/sluice-cli.ts';

const { Kafka: KafkaClient, logLevel } = kafkajs;

const CONFLUENT_CLIENT = join(import.meta.dirname, 'confluent_client.py');
const PROCESS_TIMEOUT_MS = 90_000;

/**
 * Debian's librdkafka (2.0.2) cannot do SCRAM with Kafka 4 (librdkafkaScramWorks), so
 * scripts/install-test-clients.sh installs confluent-kafka's wheel, which bundles a recent one,
 * into a virtualenv, and links that library as librdkafka.so.1 for Debian's kcat to load.
 * compat/ keeps Debian's. Under CI both must be there: falling back would quietly test the old
 * library's refusal instead of the round trip.
 */
const VENV_PYTHON = join(REPO, '.cache', 'python-venv', 'bin', 'python');
const KCAT_LIBRDKAFKA = join(REPO, '.cache', 'kcat-librdkafka');

function installed(path: string): boolean {
  if (existsSync(path)) return true;
  if (process.env.CI === 'true') throw new Error(`${path} is missing (scripts/install-test-clients.sh)`);
  return false;
}

/** The python that runs confluent_client.py: the virtualenv's when installed, else Debian's. */
function confluentPython(): string {
  return installed(VENV_PYTHON) ? VENV_PYTHON : PYTHON;
}

/** kcat's environment: loading the wheel's librdkafka when installed, else the system's. */
function kcatEnv(): NodeJS.ProcessEnv {
  if (!installed(join(KCAT_LIBRDKAFKA, 'librdkafka.so.1'))) return process.env;
  const inherited = process.env.LD_LIBRARY_PATH;
  return { ...process.env, LD_LIBRARY_PATH: inherited ? `${KCAT_LIBRDKAFKA}:${inherited}` : KCAT_LIBRDKAFKA };
}

/**
 * A kafkajs client with short retries: a group's coordinator takes a moment to load, while a
 * refused authentication is not retried at all (kafkajs takes it as final).
 */
export function kafkajsClient(brokers: string, security: Pick<KafkaConfig, 'sasl' | 'ssl'>): Kafka {
  return new KafkaClient({
    clientId: 'sluice-security-test',
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 },
    connectionTimeout: 5000,
    authenticationTimeout: 5000,
    requestTimeout: 10_000,
    ...security,
  });
}

export function plain(user: User): SASLOptions {
  return { mechanism: 'plain', username: user.username, password: user.password };
}

/** kafkajs TLS options trusting `caCert`, presenting `cert` when given. */
export function tlsOptions(caCert: string, cert?: TestCert): KafkaConfig['ssl'] {
  const ca = [readFileSync(caCert)];
  return cert === undefined ? { ca } : { ca, cert: readFileSync(cert.cert), key: readFileSync(cert.key) };
}

/** The ADMIN client on SASL_PLAINTEXT creates `topic` (one partition). */
export async function createTopic(broker: SecuredBroker, admin: User, topic: string): Promise<void> {
  const client = kafkajsClient(broker.endpoints.SASL_PLAINTEXT, { sasl: plain(admin) }).admin();
  await client.connect();
  try {
    await client.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
  } finally {
    await client.disconnect();
  }
}

/** Produces `values` to `topic` with kafkajs and reads them back; resolves with what was read. */
export async function kafkajsRoundTrip(kafka: Kafka, topic: string, values: readonly string[]): Promise<string[]> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
  } finally {
    await producer.disconnect();
  }
  return (await readRecords(kafka, topic, values.length, undefined, 30_000)).map((r) => r.value);
}

/** Connects a kafkajs admin client and lists topics: rejects when the broker refuses the client. */
export async function kafkajsListTopics(kafka: Kafka): Promise<string[]> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return await admin.listTopics();
  } finally {
    await admin.disconnect();
  }
}

/** The error message a promise rejects with; fails when it resolves. */
export async function refusal(what: string, action: Promise<unknown>): Promise<string> {
  try {
    await action;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error(`${what} was accepted`);
}

export function requireKcat(ctx: Mocha.Context): void {
  if (!hasCommand('kcat')) missingTool(ctx, 'kcat', 'scripts/install-test-clients.sh');
}

export function requireConfluentKafka(ctx: Mocha.Context): void {
  if (spawnSync(confluentPython(), ['-c', 'import confluent_kafka'], { stdio: 'ignore' }).status !== 0) {
    missingTool(ctx, 'confluent-kafka-python', 'apt-get install python3-confluent-kafka');
  }
}

export function requireJava(ctx: Mocha.Context): void {
  if (!hasCommand('java')) missingTool(ctx, 'a JDK', 'scripts/install-test-clients.sh');
}

export type LibrdkafkaConfig = Record<string, string>;

/** The librdkafka version kcat is built with (`kcat -V`). */
export function kcatLibrdkafkaVersion(): string {
  const banner = spawnSync('kcat', ['-V'], { encoding: 'utf8', env: kcatEnv() }).stdout;
  const match = /librdkafka (\d+\.\d+\.\d+)/.exec(banner);
  if (match === null) throw new Error(`no librdkafka version in kcat -V: ${banner}`);
  return match[1]!;
}

/** The librdkafka version confluent-kafka-python runs on. */
export function confluentLibrdkafkaVersion(): string {
  return spawnSync(confluentPython(), ['-c', 'import confluent_kafka; print(confluent_kafka.libversion()[0])'], {
    encoding: 'utf8',
  }).stdout.trim();
}

/**
 * Whether librdkafka's SCRAM exchange passes Kafka 4's check of the client-final nonce
 * (RFC 5802): before 2.6.1 it repeats its own nonce after the server's, and Kafka 4 refuses
 * that proof (confluentinc/librdkafka#4895).
 */
export function librdkafkaScramWorks(version: string): boolean {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map(Number);
  return major * 1_000_000 + minor * 1000 + patch >= 2_006_001;
}

export interface KcatRoundTrip {
  /** What the consumer read back ([] when the producer failed). */
  consumed: string[];
  /** What the producer and the consumer printed on stderr. */
  stderr: string;
}

const kcatArgs = (config: LibrdkafkaConfig): string[] => Object.entries(config).flatMap(([k, v]) => ['-X', `${k}=${v}`]);

/** Produces `values` with kcat -P, then reads them back with kcat -C. */
export async function kcatRoundTrip(config: LibrdkafkaConfig, topic: string, values: readonly string[]): Promise<KcatRoundTrip> {
  const produced = await run('kcat', ['-P', '-t', topic, '-X', 'acks=all', ...kcatArgs(config)], {
    input: `${values.join('\n')}\n`,
    timeoutMs: PROCESS_TIMEOUT_MS,
    env: kcatEnv(),
  });
  if (produced.code !== 0 || /ERROR|Delivery failed/.test(produced.stderr)) return { consumed: [], stderr: produced.stderr };
  const consumed = await run('kcat', ['-C', '-t', topic, '-o', 'beginning', '-c', String(values.length), '-e', ...kcatArgs(config)], {
    timeoutMs: PROCESS_TIMEOUT_MS,
    env: kcatEnv(),
  });
  return { consumed: consumed.stdout.split('\n').filter((line) => line !== ''), stderr: produced.stderr + consumed.stderr };
}

/**
 * kcat -L with `config`: a refused client exits non-zero and says why on stderr, at once for
 * a refused authentication, after 5 s of retried connections for a failed TLS handshake.
 */
export function kcatMetadata(config: LibrdkafkaConfig): Promise<RunResult> {
  return run('kcat', ['-L', '-m', '5', ...kcatArgs(config)], { timeoutMs: PROCESS_TIMEOUT_MS, env: kcatEnv() });
}

export interface ConfluentRoundTrip {
  delivered: number;
  consumed: string[];
  errors: string[];
}

/** Produces `values` through librdkafka (confluent-kafka-python) and reads them back. */
export async function confluentRoundTrip(config: LibrdkafkaConfig, topic: string, values: readonly string[]): Promise<ConfluentRoundTrip> {
  const result = await run(confluentPython(), [CONFLUENT_CLIENT, JSON.stringify({ config, topic, values })], {
    timeoutMs: PROCESS_TIMEOUT_MS,
  });
  const line = result.stdout.trim().split('\n').pop() ?? '';
  if (result.code !== 0 || !line.startsWith('{')) {
    throw new Error(`confluent_client.py exited with ${result.code}: ${result.stdout}\n${result.stderr.slice(-3000)}`);
  }
  return JSON.parse(line) as ConfluentRoundTrip;
}

/** Runs one of Kafka's tool classes from the cached Kafka jars, as bin/kafka-*.sh do. */
export function kafkaTool(className: string, args: readonly string[], input = ''): Promise<RunResult> {
  return run('java', [...JVM_OPTIONS, '-cp', `${kafkaLibs()}/*`, className, ...args], { input, timeoutMs: PROCESS_TIMEOUT_MS });
}

/** Writes a Java client properties file and resolves with its path. */
export async function javaClientProperties(dir: string, name: string, properties: Record<string, string>): Promise<string> {
  const path = join(dir, `${name}.properties`);
  await writeFile(
    path,
    Object.entries(properties)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
  );
  return path;
}

/** Java client properties for SASL with SCRAM (`mechanism` SCRAM-SHA-256 or SCRAM-SHA-512). */
export function javaScram(mechanism: string, user: User): Record<string, string> {
  return {
    'sasl.mechanism': mechanism,
    'sasl.jaas.config': `org.apache.kafka.common.security.scram.ScramLoginModule required username="${user.username}" password="${user.password}";`,
  };
}

/** Java client properties for PLAIN. */
export function javaPlain(user: User): Record<string, string> {
  return {
    'sasl.mechanism': 'PLAIN',
    'sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required username="${user.username}" password="${user.password}";`,
  };
}

export interface ConsoleRoundTrip {
  consumed: string[];
  producer: RunResult;
  consumer: RunResult;
}

/**
 * Produces `values` with Kafka's console producer and reads them back with its console
 * consumer, both configured by the properties file `config`.
 */
export async function consoleRoundTrip(
  bootstrap: string,
  config: string,
  topic: string,
  values: readonly string[],
): Promise<ConsoleRoundTrip> {
  const producer = await kafkaTool(
    'org.apache.kafka.tools.ConsoleProducer',
    ['--bootstrap-server', bootstrap, '--topic', topic, '--producer.config', config, '--producer-property', 'acks=all'],
    `${values.join('\n')}\n`,
  );
  const consumer = await kafkaTool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
    '--bootstrap-server',
    bootstrap,
    '--topic',
    topic,
    '--from-beginning',
    '--max-messages',
    String(values.length),
    '--timeout-ms',
    '20000',
    '--consumer.config',
    config,
  ]);
  return { consumed: consumer.stdout.split('\n').filter((line) => line !== ''), producer, consumer };
}

/**
 * An unsecured JWT (RFC 7515 with "alg":"none" and an empty signature), what Kafka's
 * OAuthBearerUnsecuredValidatorCallbackHandler accepts: `sub` names the principal.
 */
export function unsecuredJwt(sub: string, lifetimeSeconds: number): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (json: object) => Buffer.from(JSON.stringify(json)).toString('base64url');
  const issuedAt = Math.min(now, now + lifetimeSeconds);
  return `${part({ alg: 'none' })}.${part({ sub, iat: issuedAt - 60, exp: now + lifetimeSeconds })}.`;
}
