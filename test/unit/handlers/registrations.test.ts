import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsResponse,
  makeCreateTopicsResponseCreatableTopicResult,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { ImageWaiter } from '../../../src/handlers/forward.ts';
import { controllerSideHandlers, registerHandlers, type HandlerServices } from '../../../src/handlers/index.ts';
import type { MetadataHandlerServices } from '../../../src/handlers/metadata.ts';
import { HandlerRegistry } from '../../../src/handlers/registry.ts';
import type { ForwardedApiKey } from '../../../src/metadata/controller-channel.ts';
import { MetadataImage } from '../../../src/metadata/image.ts';
import type { RequestContext } from '../../../src/server/session.ts';
import type { Authorizer } from '../../../src/security/acl-types.ts';
import { makeEnvelopeResponse } from '../../../protocol/messages/envelope.ts';
import { frameResponse } from '../../../src/server/request-processor.ts';

/** A response as the controller writes it into an EnvelopeResponse: its header (correlation id 7), then its body. */
function responseFrame(response: unknown, version: number): Buffer {
  return Buffer.concat(frameResponse(7, ApiKey.CreateTopics, version, response)).subarray(4);
}

// Where each API is served: the admin APIs forwarded on broker listeners and served by the
// controller on controller listeners, the broker-to-controller RPCs on controller listeners only.

const FORWARDED: readonly ForwardedApiKey[] = [
  ApiKey.CreateTopics,
  ApiKey.DeleteTopics,
  ApiKey.CreatePartitions,
  ApiKey.AlterConfigs,
  ApiKey.IncrementalAlterConfigs,
  ApiKey.ElectLeaders,
  ApiKey.AlterPartitionReassignments,
  ApiKey.ListPartitionReassignments,
  ApiKey.AlterUserScramCredentials,
  ApiKey.CreateAcls,
  ApiKey.DeleteAcls,
];
const CONTROLLER_ONLY: readonly ForwardedApiKey[] = [
  ApiKey.BrokerRegistration,
  ApiKey.BrokerHeartbeat,
  ApiKey.AlterPartition,
  ApiKey.AllocateProducerIds,
];

/** A request from `principal` at `clientAddress` on a listener of `role`. */
function contextOf(
  role: 'broker' | 'controller',
  principal: string,
  clientAddress: string,
  apiKey: number,
  apiVersion: number,
): RequestContext {
  return {
    session: {
      connectionId: 1,
      clientAddress,
      listenerName: role === 'broker' ? 'PLAINTEXT' : 'CONTROLLER',
      securityProtocol: 'PLAINTEXT',
      listenerRole: role,
      principal,
      authenticated: true,
      sasl: null,
      clientSoftwareName: null,
      clientSoftwareVersion: null,
    },
    header: { requestApiKey: apiKey, requestApiVersion: apiVersion, correlationId: 7, clientId: 'admin-tool', headerVersion: 2 },
    apiKey,
    apiVersion,
    correlationId: 7,
    clientId: 'admin-tool',
    closeConnection: () => {},
    closeAfterResponse: () => {},
    requestBytes: 0,
    throttle: () => {},
    readBuffers: { take: (size) => Buffer.alloc(size) },
  };
}
const ctx = contextOf('broker', 'User:alice', '10.0.0.5:40000', ApiKey.CreateTopics, 4);

const TOPICS = { topicName: () => undefined, topicExists: () => false, autoCreateTopicsEnable: () => false };
const DENY_ALL: Authorizer = { authorize: () => false, authorizeAny: () => false, authorizedOperations: () => 0 };

describe('handler registrations', () => {
  const forwardedTo: number[] = [];
  const controllerCalls: string[] = [];
  const answer = (name: string): CreateTopicsResponse =>
    makeCreateTopicsResponse({ topics: [makeCreateTopicsResponseCreatableTopicResult({ name, errorCode: Errors.INVALID_REQUEST.code })] });

  const metadata = {
    nodeId: 1,
    metadata: {
      controller: {
        createTopics: async (topics: { name: string }[]) => {
          controllerCalls.push('createTopics');
          return topics.map((t) => ({
            name: t.name,
            errorCode: Errors.INVALID_REQUEST.code,
            errorMessage: 'x',
            topicId: '',
            numPartitions: -1,
            replicationFactor: -1,
          }));
        },
      },
      image: () => MetadataImage.EMPTY,
    },
  } as unknown as MetadataHandlerServices;
  const services = {
    metadata,
    controllerApis: { controller: {} },
    quorum: {},
    dataPath: {},
    groups: {},
    transactions: {},
    access: { authorizer: null, topics: TOPICS },
    forwarding: {
      nodeId: 1,
      forwardTimeoutMs: 1000,
      images: new ImageWaiter(MetadataImage.EMPTY),
      channel: {
        send: async (apiKey: number) => {
          forwardedTo.push(apiKey);
          return makeEnvelopeResponse({ responseData: responseFrame(answer('orders'), 4) }) as never;
        },
      },
    },
  } as unknown as HandlerServices;

  const registry = new HandlerRegistry();
  registerHandlers(registry, services);

  it('serves the admin APIs on both listener roles, with different handlers', () => {
    for (const apiKey of FORWARDED) {
      const broker = registry.lookup(apiKey, 'broker');
      const controller = registry.lookup(apiKey, 'controller');
      assert.ok(broker !== undefined && controller !== undefined, `api key ${apiKey} on both roles`);
      assert.notEqual(broker.handler, controller.handler, `api key ${apiKey}: forwarded on broker listeners`);
    }
  });

  it('serves the broker-to-controller RPCs on controller listeners only', () => {
    for (const apiKey of CONTROLLER_ONLY) {
      assert.ok(registry.lookup(apiKey, 'controller') !== undefined, `api key ${apiKey} on controller listeners`);
      assert.equal(registry.lookup(apiKey, 'broker'), undefined, `api key ${apiKey} not on broker listeners`);
    }
  });

  it('forwards CreateTopics on a broker listener and lets the controller serve it on a controller listener', async () => {
    const request = makeCreateTopicsRequest({
      topics: [makeCreateTopicsRequestCreatableTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 })],
    });
    await registry.lookup(ApiKey.CreateTopics, 'broker')!.handler(ctx, request, 4);
    assert.deepEqual(forwardedTo, [ApiKey.Envelope]);
    assert.deepEqual(controllerCalls, []);
    await registry.lookup(ApiKey.CreateTopics, 'controller')!.handler(ctx, request, 4);
    assert.deepEqual(controllerCalls, ['createTopics']);
    assert.deepEqual(forwardedTo, [ApiKey.Envelope]);
  });

  it('registers every API through its authorization when an authorizer is configured, advertising the same set', () => {
    const authorized = new HandlerRegistry();
    registerHandlers(authorized, { ...services, access: { authorizer: DENY_ALL, topics: TOPICS } } as HandlerServices);
    for (const role of ['broker', 'controller'] as const) {
      assert.deepEqual(
        authorized.supported(role).map((api) => api.apiKey),
        registry.supported(role).map((api) => api.apiKey),
      );
    }
    assert.notEqual(
      authorized.lookup(ApiKey.CreateTopics, 'controller')!.handler,
      registry.lookup(ApiKey.CreateTopics, 'controller')!.handler,
    );
  });

  it('a forwarding broker authorizes nothing itself: the request goes to the controller even when its own ACLs deny it', async () => {
    const authorized = new HandlerRegistry();
    registerHandlers(authorized, { ...services, access: { authorizer: DENY_ALL, topics: TOPICS } } as HandlerServices);
    const sent = forwardedTo.length;
    const request = makeCreateTopicsRequest({
      topics: [makeCreateTopicsRequestCreatableTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 })],
    });
    const response = (await authorized.lookup(ApiKey.CreateTopics, 'broker')!.handler(ctx, request, 4)) as CreateTopicsResponse;
    assert.deepEqual(forwardedTo.slice(sent), [ApiKey.Envelope]);
    assert.deepEqual(
      response.topics.map((t) => t.errorCode),
      [Errors.INVALID_REQUEST.code],
      "the controller's answer",
    );
  });

  it('has a controller-side handler for every request the controller channel carries', () => {
    const handlers = controllerSideHandlers(services);
    for (const apiKey of [...FORWARDED, ...CONTROLLER_ONLY]) assert.equal(typeof handlers[apiKey], 'function', `api key ${apiKey}`);
  });
});
