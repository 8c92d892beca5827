/**
 * A Sluice node and an Apache Kafka node started from the same server.properties, with a
 * listener of each security protocol, so that one secured scenario runs against both:
 *
 *   PLAINTEXT        no authentication
 *   SASL_PLAINTEXT   PLAIN (users from its JAAS entry), SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
 *                    (Kafka's unsecured-token validator); inter-broker, PLAIN as admin
 *   SSL              TLS with client certificates required (mTLS)
 *   SASL_SSL         TLS, then any of the same mechanisms
 *
 * The certificates are made at test time (test/helpers/certs.ts). Outside CI a missing Kafka
 * install skips the Kafka half loudly; under CI=true it fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JVM_OPTIONS } from '../../compat/clients/java.ts';
import { ROOT, brokerSettings, kafkaInstalled, kafkaLibs } from '../../compat/targets.ts';
import { freePorts, propertiesText } from '../../src/cli/dev-cluster.ts';
import { createTestPki, type TestPki } from './certs.ts';
import { sluiceCommand } from './sluice-cli.ts';
import { eventually } from './wait.ts';

export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SASL_PLAINTEXT', 'SSL', 'SASL_SSL'] as const;
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

export interface User {
  readonly username: string;
  readonly password: string;
}

/** In the PLAIN JAAS entries; the broker's own (inter-broker) user. */
export const ADMIN: User = { username: 'admin', password: 'admin-secret' };
/** In the PLAIN JAAS entries. */
export const ALICE: User = { username: 'alice', password: 'alice-secret' };

const PLAIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule';
const SCRAM_MODULE = 'org.apache.kafka.common.security.scram.ScramLoginModule';
const OAUTHBEARER_MODULE = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule';

export interface SecuredBroker {
  readonly name: 'Sluice' | 'Kafka';
  /** `host:port` of each listener. */
  readonly endpoints: Readonly<Record<SecurityProtocol, string>>;
  readonly pki: TestPki;
  /** What the broker process wrote so far. */
  output(): string;
  stop(): Promise<void>;
}

/** The server.properties both brokers start from. */
export function securedProperties(
  pki: TestPki,
  ports: Record<SecurityProtocol | 'CONTROLLER', number>,
  logDir: string,
): Map<string, string> {
  const at = (p: SecurityProtocol | 'CONTROLLER') => `${p}://127.0.0.1:${ports[p]}`;
  const plainJaas = `${PLAIN_MODULE} required username="${ADMIN.username}" password="${ADMIN.password}" user_${ADMIN.username}="${ADMIN.password}" user_${ALICE.username}="${ALICE.password}";`;
  const scramJaas = `${SCRAM_MODULE} required;`;
  const props = new Map<string, string>([
    ['process.roles', 'broker,controller'],
    ['node.id', '1'],
    ['controller.quorum.voters', `1@127.0.0.1:${ports.CONTROLLER}`],
    ['listeners', [...SECURITY_PROTOCOLS, 'CONTROLLER' as const].map(at).join(',')],
    ['advertised.listeners', SECURITY_PROTOCOLS.map(at).join(',')],
    ['controller.listener.names', 'CONTROLLER'],
    ['listener.security.protocol.map', `CONTROLLER:PLAINTEXT,${SECURITY_PROTOCOLS.map((p) => `${p}:${p}`).join(',')}`],
    ['inter.broker.listener.name', 'SASL_PLAINTEXT'],
    ['sasl.mechanism.inter.broker.protocol', 'PLAIN'],
    ['sasl.enabled.mechanisms', 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER'],
    ['ssl.keystore.type', 'PEM'],
    ['ssl.keystore.location', pki.server.keystorePem],
    ['ssl.truststore.type', 'PEM'],
    ['ssl.truststore.location', pki.caCert],
    ['listener.name.ssl.ssl.client.auth', 'required'],
    ['log.dirs', logDir],
    ...brokerSettings(),
  ]);
  for (const listener of ['sasl_plaintext', 'sasl_ssl']) {
    props.set(`listener.name.${listener}.plain.sasl.jaas.config`, plainJaas);
    props.set(`listener.name.${listener}.scram-sha-256.sasl.jaas.config`, scramJaas);
    props.set(`listener.name.${listener}.scram-sha-512.sasl.jaas.config`, scramJaas);
    props.set(`listener.name.${listener}.oauthbearer.sasl.jaas.config`, `${OAUTHBEARER_MODULE} required;`);
  }
  return props;
}

/** Properties a scenario adds to (or overrides in) the secured ones, e.g. an authorizer. */
export type ExtraProperties = Readonly<Record<string, string>>;

/**
 * The authorizer Kafka and Sluice both serve. The super users are the broker's own user and
 * the principal of the (PLAINTEXT) controller listener, which registers the node with its
 * controller: Kafka refuses that registration otherwise.
 */
export const WITH_ACLS: ExtraProperties = {
  'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
  'super.users': `User:${ADMIN.username};User:ANONYMOUS`,
};

async function prepare(
  extra: ExtraProperties,
): Promise<{ dir: string; pki: TestPki; endpoints: Record<SecurityProtocol, string>; properties: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-secured-'));
  const pki = await createTestPki();
  const [p1, p2, p3, p4, controller] = await freePorts(5);
  const ports = { PLAINTEXT: p1!, SASL_PLAINTEXT: p2!, SSL: p3!, SASL_SSL: p4!, CONTROLLER: controller! };
  const properties = join(dir, 'server.properties');
  const props = securedProperties(pki, ports, join(dir, 'logs'));
  for (const [key, value] of Object.entries(extra)) props.set(key, value);
  await writeFile(properties, propertiesText(props, 'A node with a listener of each security protocol.'));
  const endpoints = Object.fromEntries(SECURITY_PROTOCOLS.map((p) => [p, `127.0.0.1:${ports[p]}`])) as Record<SecurityProtocol, string>;
  return { dir, pki, endpoints, properties };
}

function capture(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (c: Buffer) => {
    text += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    text += c.toString();
  });
  return () => text;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(killer);
}

export async function startSecuredSluice(extra: ExtraProperties = {}): Promise<SecuredBroker> {
  const { dir, pki, endpoints, properties } = await prepare(extra);
  const cmd = sluiceCommand(['start', '--config', properties]);
  const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = capture(child);
  await eventually('the secured Sluice node to start', () => output().includes('sluice ready:') || child.exitCode !== null, 60_000);
  if (!output().includes('sluice ready:')) throw new Error(`Sluice did not start:\n${output().slice(-3000)}`);
  return {
    name: 'Sluice',
    endpoints,
    pki,
    output,
    async stop() {
      await stopChild(child);
      await pki.remove();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function startSecuredKafka(extra: ExtraProperties = {}): Promise<SecuredBroker> {
  const { dir, pki, endpoints, properties } = await prepare(extra);
  const java = ['-Xms256m', '-Xmx512m', '-XX:+UseG1GC', '-cp', `${kafkaLibs()}/*`];
  const clusterId = randomBytes(16).toString('base64url');
  const format = spawn(
    'java',
    // `--cluster-id=`: a base64url id may start with '-', which the parser would take for an option.
    [...JVM_OPTIONS, '-cp', `${kafkaLibs()}/*`, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '-c', properties],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const formatOutput = capture(format);
  const formatted = await new Promise<number | null>((resolve) => format.once('exit', resolve));
  if (formatted !== 0) throw new Error(`kafka-storage format failed:\n${formatOutput()}`);
  const log = join(dir, 'server.log');
  const child = spawn(
    'java',
    [
      ...java,
      `-Dlog4j2.configurationFile=${join(ROOT, 'scripts/reference/log4j2-broker.properties')}`,
      `-Dkafka.log.file=${log}`,
      'kafka.Kafka',
      properties,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = capture(child);
  const serverLog = async () => (existsSync(log) ? await readFile(log, 'utf8') : '');
  await eventually(
    'the secured Kafka node to start',
    async () => (await serverLog()).includes('Kafka Server started') || child.exitCode !== null,
    120_000,
  );
  if (child.exitCode !== null) {
    const errors = `${output()}\n${await serverLog()}`.split('\n').filter((line) => /ERROR|Exception/.test(line));
    throw new Error(`Kafka did not start:\n${errors.slice(0, 20).join('\n')}`);
  }
  return {
    name: 'Kafka',
    endpoints,
    pki,
    output: () => output(),
    async stop() {
      await stopChild(child);
      await pki.remove();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Defines `scenario` against a secured Sluice node and a secured Kafka node. */
export function againstEachSecuredBroker(
  title: string,
  scenario: (broker: () => SecuredBroker) => void,
  extra: ExtraProperties = {},
): void {
  for (const start of [startSecuredSluice, startSecuredKafka]) {
    const name = start === startSecuredSluice ? 'Sluice' : 'Kafka';
    describe(`${title} against ${name}`, function () {
      this.timeout(120_000);
      let broker: SecuredBroker | undefined;
      before(async function () {
        if (name === 'Kafka' && !kafkaInstalled()) {
          if (process.env.CI === 'true')
            throw new Error('the Apache Kafka reference broker is not installed (scripts/install-test-clients.sh)');
          console.error(
            `\n    !!!!! SKIP: ${title} against Kafka: the reference broker is not installed (bash scripts/install-test-clients.sh) !!!!!\n`,
          );
          this.skip();
        }
        this.timeout(180_000);
        broker = await start(extra);
      });
      after(async function () {
        this.timeout(60_000);
        await broker?.stop();
      });
      scenario(() => broker!);
    });
  }
}
