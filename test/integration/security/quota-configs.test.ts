/**
 * Client quotas set and read by Kafka's own kafka-configs (ConfigCommand, through
 * AlterClientQuotas and DescribeClientQuotas), against Sluice and Kafka started from the same
 * properties: both must print the same lines and refuse the same values with the same message.
 * kafkajs has no quota API.
 */
import assert from 'node:assert/strict';
import { againstEachSecuredBroker } from '../../helpers/secured-brokers.ts';
import { kafkaTool, requireJava } from './clients.ts';

const RATES = 'producer_byte_rate=1024,consumer_byte_rate=2048';

/** The entities quotas are set for, as kafka-configs names them. */
const ALICE = ['--entity-type', 'users', '--entity-name', 'alice'];
const CLIENT_DEFAULT = ['--entity-type', 'clients', '--entity-default'];
const ALICE_APP = ['--entity-type', 'users', '--entity-name', 'alice', '--entity-type', 'clients', '--entity-name', 'app'];
const IP = ['--entity-type', 'ips', '--entity-name', '10.0.0.1'];
const IP_DEFAULT = ['--entity-type', 'ips', '--entity-default'];

const BOTH_RATES = 'consumer_byte_rate=2048.0, producer_byte_rate=1024.0';

againstEachSecuredBroker('client quotas with kafka-configs', (broker) => {
  before(function () {
    requireJava(this);
  });

  const configs = (...args: string[]) =>
    kafkaTool('kafka.admin.ConfigCommand', ['--bootstrap-server', broker().endpoints.PLAINTEXT, ...args]);
  const succeeds = async (...args: string[]) => {
    const result = await configs(...args);
    assert.equal(result.code, 0, `kafka-configs ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`);
    return result.stdout.trim();
  };
  const describeQuotas = (...entity: string[]) => succeeds('--describe', ...entity);
  /** The broker's refusal as kafka-configs reports it: the message of the InvalidRequestException it got. */
  const refusedWith = async (message: string, ...args: string[]) => {
    const result = await configs(...args);
    assert.equal(result.code, 1, result.stdout);
    assert.ok(result.stderr.includes(`Caused by: org.apache.kafka.common.errors.InvalidRequestException: ${message}\n`), result.stderr);
  };

  it('adds producer and consumer byte rates to a user, the default client id, and a user with a client id', async () => {
    assert.equal(await succeeds('--alter', '--add-config', RATES, ...ALICE), 'Completed updating config for user alice.');
    assert.equal(
      await succeeds('--alter', '--add-config', RATES, ...CLIENT_DEFAULT),
      'Completed updating default config for clients in the cluster.',
    );
    assert.equal(await succeeds('--alter', '--add-config', RATES, ...ALICE_APP), 'Completed updating config for user alice.');
  });

  it('describes each entity with exactly the rates it was given', async () => {
    assert.equal(await describeQuotas(...ALICE), `Quota configs for user-principal 'alice' are ${BOTH_RATES}`);
    assert.equal(await describeQuotas(...CLIENT_DEFAULT), `Quota configs for the default client-id are ${BOTH_RATES}`);
    assert.equal(await describeQuotas(...ALICE_APP), `Quota configs for user-principal 'alice', client-id 'app' are ${BOTH_RATES}`);
    assert.equal(await describeQuotas('--entity-type', 'clients'), `Quota configs for the default client-id are ${BOTH_RATES}`);
    assert.equal(await describeQuotas('--entity-type', 'users', '--entity-name', 'bob'), '');
  });

  it('--delete-config removes one key and keeps the other', async () => {
    assert.equal(await succeeds('--alter', '--delete-config', 'producer_byte_rate', ...ALICE), 'Completed updating config for user alice.');
    assert.equal(await describeQuotas(...ALICE), "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0");
    assert.equal(await describeQuotas(...ALICE_APP), `Quota configs for user-principal 'alice', client-id 'app' are ${BOTH_RATES}`);
  });

  it('refuses a fractional byte rate, a rate not above 0 and an unknown key, changing nothing', async () => {
    await refusedWith('producer_byte_rate cannot be a fractional value.', '--alter', '--add-config', 'producer_byte_rate=1.5', ...ALICE);
    await refusedWith(
      'Quota consumer_byte_rate must be greater than 0',
      '--alter',
      '--add-config',
      'consumer_byte_rate=0',
      ...CLIENT_DEFAULT,
    );
    // kafka-configs checks the key names itself, before any request.
    const unknown = await configs('--alter', '--add-config', 'unknown_quota=10', ...ALICE);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.stderr.trim(),
      "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: Set(unknown_quota)",
    );
    assert.equal(await describeQuotas(...ALICE), "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0");
    assert.equal(await describeQuotas(...CLIENT_DEFAULT), `Quota configs for the default client-id are ${BOTH_RATES}`);
  });

  it('sets connection creation rates for an IP and the default IP, refusing what an INT cannot hold', async () => {
    await refusedWith(
      'connection_creation_rate cannot be a fractional value.',
      '--alter',
      '--add-config',
      'connection_creation_rate=1.5',
      ...IP,
    );
    await refusedWith(
      'Proposed value for connection_creation_rate is too large for an INT.',
      '--alter',
      '--add-config',
      'connection_creation_rate=3000000000',
      ...IP,
    );
    assert.equal(
      await succeeds('--alter', '--add-config', 'connection_creation_rate=30', ...IP_DEFAULT),
      'Completed updating default config for ips in the cluster.',
    );
    assert.equal(
      await succeeds('--alter', '--add-config', 'connection_creation_rate=5', ...IP),
      'Completed updating config for ip 10.0.0.1.',
    );
    assert.equal(await describeQuotas(...IP), "Quota configs for ip '10.0.0.1' are connection_creation_rate=5.0");
    assert.equal(await describeQuotas(...IP_DEFAULT), 'Quota configs for the default ip are connection_creation_rate=30.0');
  });
});
