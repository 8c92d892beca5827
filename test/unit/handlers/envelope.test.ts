import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { encodeRequestHeader } from '../../../protocol/headers.ts';
import {
  decodeCreateTopicsResponse,
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsRequest,
} from '../../../protocol/messages/create-topics.ts';
import { makeEnvelopeRequest, type EnvelopeRequest, type EnvelopeResponse } from '../../../protocol/messages/envelope.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { makeMetadataRequest } from '../../../protocol/messages/metadata.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { decodeResponseHeader } from '../../../protocol/headers.ts';
import { ImageWaiter } from '../../../src/handlers/forward.ts';
import { registerHandlers, type HandlerServices } from '../../../src/handlers/index.ts';
import type { MetadataHandlerServices } from '../../../src/handlers/metadata.ts';
import { HandlerRegistry } from '../../../src/handlers/registry.ts';
import { MetadataImage } from '../../../src/metadata/image.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { AclOperation, ResourceType, type Authorizer, type RequestIdentity } from '../../../src/security/acl-types.ts';
import { serializePrincipal } from '../../../src/security/principal-serde.ts';
import type { RequestContext } from '../../../src/server/session.ts';

/** The broker may CLUSTER_ACTION; alice may create topics from 10.0.0.5 only; nobody else may do anything. */
const AUTHORIZER: Authorizer = {
  authorize: (identity: RequestIdentity, operation: number, resourceType: number) =>
    (identity.principal === 'User:broker' && operation === AclOperation.CLUSTER_ACTION) ||
    (identity.principal === 'User:alice' &&
      identity.host === '10.0.0.5' &&
      operation === AclOperation.CREATE &&
      resourceType === ResourceType.TOPIC),
  authorizeAny: () => false,
  authorizedOperations: () => 0,
};

function senderContext(principal: string): RequestContext {
  return {
    session: {
      connectionId: 1,
      clientAddress: '127.0.0.1:51000',
      listenerName: 'CONTROLLER',
      securityProtocol: 'PLAINTEXT',
      listenerRole: 'controller',
      principal,
      authenticated: true,
      sasl: null,
      clientSoftwareName: null,
      clientSoftwareVersion: null,
    },
    header: { requestApiKey: ApiKey.Envelope, requestApiVersion: 0, correlationId: 1, clientId: 'forwarding-channel-2', headerVersion: 2 },
    apiKey: ApiKey.Envelope,
    apiVersion: 0,
    correlationId: 1,
    clientId: 'forwarding-channel-2',
    closeConnection: () => {},
    closeAfterResponse: () => {},
    requestBytes: 0,
    throttle: () => {},
    readBuffers: { take: (size) => Buffer.alloc(size) },
  };
}

describe('EnvelopeRequest on the controller (KIP-590)', () => {
  const created: string[] = [];
  const metadata = {
    nodeId: 1,
    config: { getBoolean: () => true },
    metadata: {
      controller: {
        createTopics: async (topics: { name: string }[]) => {
          created.push(...topics.map((t) => t.name));
          return topics.map((t) => ({
            name: t.name,
            errorCode: 0,
            errorMessage: null,
            topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
            numPartitions: 1,
            replicationFactor: 1,
          }));
        },
      },
      image: () => MetadataImage.EMPTY,
    },
  } as unknown as MetadataHandlerServices;
  const registry = new HandlerRegistry();
  registerHandlers(registry, {
    metadata,
    controllerApis: { controller: {} },
    quorum: {},
    dataPath: {},
    groups: {},
    transactions: {},
    envelope: { registry, logger: createLogger({ quiet: true }) },
    access: {
      authorizer: AUTHORIZER,
      topics: { topicName: () => undefined, topicExists: () => false, autoCreateTopicsEnable: () => false },
    },
    forwarding: {
      nodeId: 1,
      forwardTimeoutMs: 1000,
      images: new ImageWaiter(MetadataImage.EMPTY),
      channel: { send: async () => null as never },
    },
  } as unknown as HandlerServices);
  const envelopeHandler = registry.lookup(ApiKey.Envelope, 'controller')!.handler;
  const send = async (sender: string, envelope: EnvelopeRequest) =>
    (await envelopeHandler(senderContext(sender), envelope, 0)) as EnvelopeResponse;

  const createTopics = (name: string): CreateTopicsRequest =>
    makeCreateTopicsRequest({ topics: [makeCreateTopicsRequestCreatableTopic({ name, numPartitions: 1, replicationFactor: 1 })] });

  function inner(apiKey: number, version: number, request: unknown): Buffer {
    const w = new Writer();
    encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: version, correlationId: 42, clientId: 'admin-tool' });
    apis.get(apiKey)!.encodeRequest(w, request, version);
    return w.toBuffer();
  }

  const envelopeOf = (principal: string, address: number[], requestData: Buffer) =>
    makeEnvelopeRequest({
      requestData,
      requestPrincipal: serializePrincipal({ principalType: 'User', name: principal, tokenAuthenticated: false }),
      clientHostAddress: Buffer.from(address),
    });

  function innerResponse(response: EnvelopeResponse) {
    assert.equal(response.errorCode, Errors.NONE.code);
    const r = new Reader(response.responseData!);
    assert.equal(decodeResponseHeader(r, ApiKey.CreateTopics, 4), 42, "the client's correlation id");
    return decodeCreateTopicsResponse(r, 4);
  }

  it("serves the inner request as the client's: its principal and address, authorized with the controller's ACLs", async () => {
    const allowed = innerResponse(
      await send('User:broker', envelopeOf('alice', [10, 0, 0, 5], inner(ApiKey.CreateTopics, 4, createTopics('orders')))),
    );
    assert.deepEqual(
      allowed.topics.map((t) => [t.name, t.errorCode]),
      [['orders', 0]],
    );
    const otherHost = innerResponse(
      await send('User:broker', envelopeOf('alice', [10, 0, 0, 6], inner(ApiKey.CreateTopics, 4, createTopics('clicks')))),
    );
    const otherUser = innerResponse(
      await send('User:broker', envelopeOf('mallory', [10, 0, 0, 5], inner(ApiKey.CreateTopics, 4, createTopics('views')))),
    );
    for (const refused of [otherHost, otherUser]) {
      assert.deepEqual(
        refused.topics.map((t) => t.errorCode),
        [Errors.TOPIC_AUTHORIZATION_FAILED.code],
      );
    }
    assert.deepEqual(created, ['orders']);
  });

  it('refuses an envelope from a principal without CLUSTER_ACTION, without serving what it carries', async () => {
    const response = await send('User:alice', envelopeOf('alice', [10, 0, 0, 5], inner(ApiKey.CreateTopics, 4, createTopics('sneaky'))));
    assert.equal(response.errorCode, Errors.CLUSTER_AUTHORIZATION_FAILED.code);
    assert.equal(response.responseData, null);
    assert.ok(!created.includes('sneaky'));
  });

  it('answers what it cannot read with the envelope error Kafka answers', async () => {
    const good = inner(ApiKey.CreateTopics, 4, createTopics('x'));
    const principalless = { ...envelopeOf('alice', [10, 0, 0, 5], good), requestPrincipal: null };
    const badPrincipal = { ...envelopeOf('alice', [10, 0, 0, 5], good), requestPrincipal: Buffer.from([0, 9, 1]) };
    assert.equal((await send('User:broker', principalless)).errorCode, Errors.PRINCIPAL_DESERIALIZATION_FAILURE.code);
    assert.equal((await send('User:broker', badPrincipal)).errorCode, Errors.PRINCIPAL_DESERIALIZATION_FAILURE.code);
    assert.equal((await send('User:broker', envelopeOf('alice', [10, 0, 5], good))).errorCode, Errors.INVALID_REQUEST.code, 'address');
    const metadataRequest = inner(ApiKey.Metadata, 12, makeMetadataRequest({ topics: null }));
    assert.equal(
      (await send('User:broker', envelopeOf('alice', [10, 0, 0, 5], metadataRequest))).errorCode,
      Errors.INVALID_REQUEST.code,
      'not forwardable',
    );
    assert.equal(
      (await send('User:broker', envelopeOf('alice', [10, 0, 0, 5], good.subarray(0, good.length - 3)))).errorCode,
      Errors.INVALID_REQUEST.code,
    );
    const future = Buffer.from(good);
    future.writeInt16BE(99, 2);
    assert.equal((await send('User:broker', envelopeOf('alice', [10, 0, 0, 5], future))).errorCode, Errors.UNSUPPORTED_VERSION.code);
  });

  it('never fails on arbitrary inner bytes: every answer is an envelope error or a response', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 80 }), async (bytes) => {
        const response = await send('User:broker', envelopeOf('alice', [10, 0, 0, 5], Buffer.from(bytes)));
        assert.ok(response.errorCode !== Errors.NONE.code || response.responseData !== null);
      }),
    );
  });
});
