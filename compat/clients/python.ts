import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { DriverFactory, DriverInfo } from '../driver.ts';
import { CODECS } from '../driver.ts';
import { commandExists } from '../support/process.ts';
import { ROOT } from '../targets.ts';
import { ProcessDriver, ProcessPerOperation } from './process-driver.ts';

// The Python clients come from Debian's packages, installed for Debian's interpreter: another
// python3 first on PATH (pyenv) would not see them. -B: no __pycache__ in the source tree.
const PYTHON = '/usr/bin/python3';

function importable(module: string): boolean {
  if (!commandExists(PYTHON)) return false;
  try {
    execFileSync(PYTHON, ['-c', `import ${module}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function pythonClient(info: DriverInfo, module: string, script: string, apt: string): DriverFactory {
  let available: boolean | null = null;
  return {
    info,
    unavailable() {
      available ??= importable(module);
      return available ? null : `${PYTHON} cannot import ${module} (apt-get install ${apt}: scripts/install-test-clients.sh)`;
    },
    create: (bootstrap) =>
      new ProcessDriver(
        info,
        new ProcessPerOperation(info.client, bootstrap, async () => [PYTHON, ['-B', join(ROOT, 'compat/python', script)]]),
      ),
  };
}

export const confluentKafkaPython = pythonClient(
  {
    client: 'confluent-kafka-python',
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
      wokenByAppend: true,
      resetsOutOfRange: true,
      codecs: CODECS,
    },
    producerRequires: [],
    consumerRequires: [],
    errors: {
      unknownTopic: /UNKNOWN_TOPIC_OR_PART/,
      messageTooLarge: /MSG_SIZE_TOO_LARGE/,
    },
  },
  'confluent_kafka',
  'confluent_kafka_driver.py',
  'python3-confluent-kafka',
);

export const kafkaPython = pythonClient(
  {
    client: 'kafka-python',
    features: {
      recordTimestamps: true,
      recordHeaders: true,
      duplicateHeaderKeys: true,
      murmur2: true,
      // kafka-python 2.0.2 (Debian 12) has no idempotent producer.
      idempotence: false,
      transactions: false,
      admin: true,
      groups: true,
      listOffsets: true,
      pastEndTimestamp: 'none',
      wokenByAppend: true,
      resetsOutOfRange: true,
      codecs: CODECS,
    },
    producerRequires: [],
    consumerRequires: [],
    errors: {
      unknownTopic: /UnknownTopicOrPartitionError/,
      messageTooLarge: /MessageSizeTooLargeError/,
    },
  },
  'kafka',
  'kafka_python_driver.py',
  'python3-kafka',
);
