import assert from 'node:assert/strict';
import { makeFetchRequest } from '../../../protocol/messages/fetch.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeProduceRequest } from '../../../protocol/messages/produce.ts';
import { MetadataImage } from '../../../src/metadata/image.ts';
import type { MetadataRecord } from '../../../src/metadata/records.ts';
import { QuotaManagers } from '../../../src/server/quota-managers.ts';
import type { ListenerRole, RequestContext } from '../../../src/server/session.ts';

const quota = (entity: [string, string | null][], key: string, value: number): MetadataRecord => ({
  type: 'ClientQuotaRecord',
  data: { entity: entity.map(([entityType, entityName]) => ({ entityType, entityName })), key, value, remove: false },
});

function managers(records: MetadataRecord[]): { quotas: QuotaManagers; advance(ms: number): void } {
  let now = 1_000_000;
  const image = MetadataImage.EMPTY.apply(records, records.length - 1, 1).image;
  const quotas = new QuotaManagers(
    { client: { samples: 2, windowMs: 1000 }, controllerMutation: { samples: 11, windowMs: 1000 } },
    image,
    () => now,
  );
  return { quotas, advance: (ms) => (now += ms) };
}

function context(
  apiKey: number,
  fields: { role?: ListenerRole; authenticated?: boolean; bytes?: number; version?: number } = {},
): RequestContext {
  return {
    session: {
      connectionId: 1,
      clientAddress: '127.0.0.1:50000',
      listenerName: 'PLAINTEXT',
      securityProtocol: 'PLAINTEXT',
      listenerRole: fields.role ?? 'broker',
      principal: 'User:alice',
      authenticated: fields.authenticated ?? true,
      sasl: null,
      clientSoftwareName: null,
      clientSoftwareVersion: null,
    },
    header: {
      requestApiKey: apiKey,
      requestApiVersion: fields.version ?? 9,
      correlationId: 1,
      clientId: 'app',
    } as RequestContext['header'],
    apiKey,
    apiVersion: fields.version ?? 9,
    correlationId: 1,
    clientId: 'app',
    requestBytes: fields.bytes ?? 0,
    closeConnection: () => {},
    closeAfterResponse: () => {},
    throttle: () => {},
    readBuffers: undefined as unknown as RequestContext['readBuffers'],
  };
}

describe('the broker quota managers (what each request is charged)', () => {
  it("charges a produce its size against the user's producer_byte_rate, acks=0 included", () => {
    const { quotas } = managers([quota([['user', 'alice']], 'producer_byte_rate', 1000)]);
    assert.equal(quotas.charge(context(ApiKey.Produce, { bytes: 500 }), makeProduceRequest({ acks: 1 }), 0), 0);
    assert.ok(quotas.charge(context(ApiKey.Produce, { bytes: 5000 }), makeProduceRequest({ acks: 0 }), 0) > 0);
  });

  it('charges request time to request_percentage, except for replicas, controllers, inter-broker APIs, acks=0 and authentication', () => {
    const { quotas } = managers([quota([['user', null]], 'request_percentage', 1)]);
    // 1 % of a 1-2 s window is 10-20 ms: 500 ms is far over.
    const over = (ctx: RequestContext, request: unknown) => quotas.charge(ctx, request, 500) > 0;
    assert.equal(over(context(ApiKey.Fetch, { version: 12 }), makeFetchRequest({ replicaId: 2 })), false, 'a follower');
    assert.equal(over(context(ApiKey.Metadata, { role: 'controller' }), {}), false, 'the controller listener');
    assert.equal(over(context(ApiKey.WriteTxnMarkers), {}), false, 'an inter-broker API');
    assert.equal(over(context(ApiKey.Produce), makeProduceRequest({ acks: 0 })), false, 'acks=0');
    assert.equal(over(context(ApiKey.SaslAuthenticate), {}), false, 'authentication');
    assert.equal(over(context(ApiKey.ApiVersions, { authenticated: false }), {}), false, 'before authentication');
    assert.equal(over(context(ApiKey.Metadata), {}), true, 'a client request');
  });

  it('gives a consumer fetch a bandwidth bound and none to followers or without a consumer quota', () => {
    const { quotas } = managers([quota([['client-id', 'app']], 'consumer_byte_rate', 2048)]);
    const consumer = quotas.fetchBandwidth(context(ApiKey.Fetch, { version: 12 }), makeFetchRequest({ replicaId: -1 }));
    assert.ok(consumer !== null);
    // Kafka's getMaxValueInQuotaWindow: the quota times (samples - 1) windows.
    assert.equal(consumer.maxBytes, 2048);
    assert.equal(quotas.fetchBandwidth(context(ApiKey.Fetch, { version: 12 }), makeFetchRequest({ replicaId: 1 })), null);
    assert.equal(managers([]).quotas.fetchBandwidth(context(ApiKey.Fetch, { version: 12 }), makeFetchRequest({ replicaId: -1 })), null);
  });

  it("finds an address's connection_creation_rate by address, however its entity spells it, else the default ip entity's", () => {
    const { quotas } = managers([
      quota([['ip', '0:0:0:0:0:0:0:1']], 'connection_creation_rate', 5),
      quota([['ip', '127.0.0.2']], 'connection_creation_rate', 7),
      quota([['ip', null]], 'connection_creation_rate', 50),
    ]);
    assert.equal(quotas.connectionCreationRate('::1'), 5);
    assert.equal(quotas.connectionCreationRate('::ffff:127.0.0.2'), 7);
    assert.equal(quotas.connectionCreationRate('127.0.0.9'), 50);
    assert.equal(managers([]).quotas.connectionCreationRate('127.0.0.9'), undefined);
  });
});
