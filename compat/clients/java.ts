import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DriverFactory, DriverInfo } from '../driver.ts';
import { CODECS } from '../driver.ts';
import { commandExists, runOk } from '../support/process.ts';
import { ROOT, kafkaInstalled, kafkaLibs, kafkaVersion } from '../targets.ts';
import { ProcessDriver } from './process-driver.ts';
import { ResidentProcess } from './resident-process.ts';

// Kafka's Java client (the kafka-clients jar cached by scripts/install-test-clients.sh) driven
// by compat/java/CompatDriver.java, one long-lived JVM per driver that creates and closes fresh
// client objects for each operation; every class of compat/java is compiled on first use and
// cached by source hash.

// Small heap and the quick JIT tier: most JVMs of the tests run for seconds (Kafka's tools, one
// client), where C2's compilations would only take CPU from the brokers.
export const JVM_OPTIONS = [
  '-Xmx256m',
  '-XX:TieredStopAtLevel=1',
  '-XX:+UseSerialGC',
  `-Dlog4j2.configurationFile=${join(ROOT, 'scripts/reference/log4j2.properties')}`,
];

const compiled = new Map<string, Promise<string>>();

/**
 * Compiles compat/java/<className>.java against the cached Kafka jars once per source (cached
 * in .cache/compat-java/<hash>) and resolves with the classpath that runs it.
 */
export function javaClasspath(className: string): Promise<string> {
  let classes = compiled.get(className);
  if (classes === undefined) {
    classes = compile(className);
    compiled.set(className, classes);
  }
  return classes.then((dir) => `${dir}:${kafkaLibs()}/*`);
}

async function compile(className: string): Promise<string> {
  const source = join(ROOT, 'compat/java', `${className}.java`);
  const hash = createHash('sha256').update(readFileSync(source)).update(kafkaVersion()).digest('hex').slice(0, 16);
  const classes = join(ROOT, '.cache', 'compat-java', hash);
  if (!existsSync(join(classes, `${className}.class`))) {
    const partial = `${classes}.partial`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
    await runOk('javac', ['-nowarn', '-cp', `${kafkaLibs()}/*`, '-d', partial, source], { timeoutMs: 120_000 });
    rmSync(classes, { recursive: true, force: true });
    renameSync(partial, classes);
  }
  return classes;
}

/** Why the Java client cannot run here, or null. */
export function javaUnavailable(): string | null {
  if (!commandExists('javac')) return 'no JDK (javac) on PATH';
  if (!kafkaInstalled()) return `kafka-clients ${kafkaVersion()} is not cached (scripts/install-test-clients.sh)`;
  return null;
}

const INFO: DriverInfo = {
  client: 'java',
  features: {
    recordTimestamps: true,
    recordHeaders: true,
    duplicateHeaderKeys: true,
    murmur2: true,
    idempotence: true,
    transactions: true,
    admin: true,
    groups: true,
    listOffsets: true,
    pastEndTimestamp: 'none',
    wokenByAppend: false,
    resetsOutOfRange: true,
    codecs: CODECS,
  },
  // The Java producer is idempotent by default (InitProducerId before the first produce).
  producerRequires: ['idempotence'],
  consumerRequires: [],
  errors: {
    unknownTopic: /UnknownTopicOrPartitionException/,
    messageTooLarge: /RecordTooLargeException/,
  },
};

export const java: DriverFactory = {
  info: INFO,
  unavailable: javaUnavailable,
  create: (bootstrap) =>
    new ProcessDriver(
      INFO,
      new ResidentProcess(INFO.client, async () => [
        'java',
        [...JVM_OPTIONS, '-cp', await javaClasspath('CompatDriver'), 'CompatDriver', bootstrap],
      ]),
    ),
};
