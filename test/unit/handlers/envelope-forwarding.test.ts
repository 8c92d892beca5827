import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { decodeRequestHeader } from '../../../protocol/headers.ts';
import {
  decodeCreateTopicsRequest,
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsResponse,
  makeCreateTopicsResponseCreatableTopicResult,
} from '../../../protocol/messages/create-topics.ts';
import { makeEnvelopeResponse, type EnvelopeRequest, type EnvelopeResponse } from '../../../protocol/messages/envelope.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { Reader } from '../../../protocol/primitives.ts';
import { forwardingFor } from '../../../src/handlers/envelope-forwarding.ts';
import { deserializePrincipal } from '../../../src/security/principal-serde.ts';
import { frameResponse } from '../../../src/server/request-processor.ts';
import type { RequestContext } from '../../../src/server/session.ts';

interface Client {
  readonly ctx: RequestContext;
  readonly throttled: number[];
  readonly closed: string[];
}

function client(principal: string, clientAddress: string): Client {
  const throttled: number[] = [];
  const closed: string[] = [];
  const ctx = {
    session: { principal, clientAddress },
    correlationId: 31,
    clientId: 'admin-tool',
    throttle: (ms: number) => throttled.push(ms),
    closeConnection: (reason: string) => closed.push(reason),
  } as unknown as RequestContext;
  return { ctx, throttled, closed };
}

const REQUEST = makeCreateTopicsRequest({
  topics: [makeCreateTopicsRequestCreatableTopic({ name: 'orders', numPartitions: 1, replicationFactor: 1 })],
});

/** A controller channel that records the envelope and answers `answer`. */
function channel(answer: (envelope: EnvelopeRequest) => EnvelopeResponse) {
  const sent: EnvelopeRequest[] = [];
  return {
    sent,
    send: async (apiKey: number, request: unknown) => {
      assert.equal(apiKey, ApiKey.Envelope);
      sent.push(request as EnvelopeRequest);
      return answer(request as EnvelopeRequest) as never;
    },
  };
}

const answered = (throttleTimeMs: number, correlationId = 31) =>
  makeEnvelopeResponse({
    responseData: Buffer.concat(
      frameResponse(
        correlationId,
        ApiKey.CreateTopics,
        7,
        makeCreateTopicsResponse({ throttleTimeMs, topics: [makeCreateTopicsResponseCreatableTopicResult({ name: 'orders' })] }),
      ),
    ).subarray(4),
  });

describe("the forwarding broker's Envelope (Kafka's ForwardingManager)", () => {
  it("wraps the request with the client's header, principal and address, and answers the controller's response", async () => {
    const c = client('User:alice', '10.1.2.3:50123');
    const controller = channel(() => answered(0));
    const response = await forwardingFor(controller, c.ctx).send(ApiKey.CreateTopics, REQUEST, 7, 1000);
    assert.deepEqual(
      response.topics.map((t) => [t.name, t.errorCode]),
      [['orders', 0]],
    );
    const envelope = controller.sent[0]!;
    assert.deepEqual(deserializePrincipal(envelope.requestPrincipal!), { principalType: 'User', name: 'alice', tokenAuthenticated: false });
    assert.deepEqual(envelope.clientHostAddress, Buffer.from([10, 1, 2, 3]));
    const r = new Reader(envelope.requestData);
    const header = decodeRequestHeader(r);
    assert.deepEqual(
      [header.requestApiKey, header.requestApiVersion, header.correlationId, header.clientId],
      [ApiKey.CreateTopics, 7, 31, 'admin-tool'],
    );
    assert.deepEqual(decodeCreateTopicsRequest(r, 7), REQUEST);
    assert.deepEqual(c.throttled, []);
  });

  it("holds the client back for the controller's throttle time", async () => {
    const c = client('User:alice', '::1:50123');
    const response = await forwardingFor(
      channel(() => answered(850)),
      c.ctx,
    ).send(ApiKey.CreateTopics, REQUEST, 7, 1000);
    assert.equal(response.throttleTimeMs, 850);
    assert.deepEqual(c.throttled, [850]);
  });

  it('answers envelope errors as Kafka does: a timeout as such, UNSUPPORTED_VERSION by closing the connection, anything else UNKNOWN_SERVER_ERROR', async () => {
    const codeOf = async (errorCode: number, c = client('User:alice', '10.1.2.3:1')) => {
      const response = await forwardingFor(
        channel(() => makeEnvelopeResponse({ errorCode })),
        c.ctx,
      ).send(ApiKey.CreateTopics, REQUEST, 7, 1000);
      return response.topics.map((t) => t.errorCode);
    };
    assert.deepEqual(await codeOf(Errors.REQUEST_TIMED_OUT.code), [Errors.REQUEST_TIMED_OUT.code]);
    for (const code of [
      Errors.CLUSTER_AUTHORIZATION_FAILED.code,
      Errors.PRINCIPAL_DESERIALIZATION_FAILURE.code,
      Errors.INVALID_REQUEST.code,
    ]) {
      assert.deepEqual(await codeOf(code), [Errors.UNKNOWN_SERVER_ERROR.code]);
    }
    const c = client('User:alice', '10.1.2.3:1');
    await codeOf(Errors.UNSUPPORTED_VERSION.code, c);
    assert.equal(c.closed.length, 1);
  });

  it('never fails on arbitrary response data, and answers UNKNOWN_SERVER_ERROR for a response to another request', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), async (bytes) => {
        const response = await forwardingFor(
          channel(() => makeEnvelopeResponse({ responseData: Buffer.from(bytes) })),
          client('User:alice', '10.1.2.3:1').ctx,
        ).send(ApiKey.CreateTopics, REQUEST, 7, 1000);
        assert.ok(response.topics.every((t) => t.errorCode === Errors.UNKNOWN_SERVER_ERROR.code || t.errorCode === Errors.NONE.code));
      }),
    );
    const other = await forwardingFor(
      channel(() => answered(0, 32)),
      client('User:alice', '10.1.2.3:1').ctx,
    ).send(ApiKey.CreateTopics, REQUEST, 7, 1000);
    assert.deepEqual(
      other.topics.map((t) => t.errorCode),
      [Errors.UNKNOWN_SERVER_ERROR.code],
    );
  });
});
