import assert from 'node:assert/strict';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import { makeAllocateProducerIdsResponse, type AllocateProducerIdsRequest } from '../../../protocol/messages/allocate-producer-ids.ts';
import { makeBrokerHeartbeatRequest, makeBrokerHeartbeatResponse } from '../../../protocol/messages/broker-heartbeat.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsResponse,
  makeCreateTopicsResponseCreatableTopicResult,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { ConnectionError } from '../../../src/client/connection.ts';
import {
  ControllerChannelManager,
  producerIdBlockAllocator,
  type ControllerAddress,
  type ControllerChannelOptions,
  type ControllerConnection,
} from '../../../src/metadata/controller-channel.ts';
import { FakeClock } from './fake-cluster.ts';

// The channel to the active controller with a fake clock and fake connections: no sockets.

type Reply = (apiKey: number, request: unknown, version: number) => Promise<unknown> | unknown;

class FakeConnection implements ControllerConnection {
  closed = false;
  readonly sent: { apiKey: number; version: number; request: unknown }[] = [];

  constructor(
    readonly address: ControllerAddress,
    private readonly reply: Reply,
    private readonly maxVersion = 100,
  ) {}

  version(_apiKey: number, cap: number): number {
    if (this.maxVersion < 0) throw new KafkaError(Errors.UNSUPPORTED_VERSION, 'no common version');
    return Math.min(cap, this.maxVersion);
  }

  async send<Res>(apiKey: number, request: unknown, version: number): Promise<Res> {
    if (this.closed) throw new ConnectionError('closed');
    this.sent.push({ apiKey, version, request });
    return (await this.reply(apiKey, request, version)) as Res;
  }

  close(): void {
    this.closed = true;
  }
}

const VOTERS = [
  { nodeId: 1, host: 'c1', port: 9093 },
  { nodeId: 2, host: 'c2', port: 9093 },
  { nodeId: 3, host: 'c3', port: 9093 },
];

function heartbeat() {
  return makeBrokerHeartbeatRequest({ brokerId: 1, brokerEpoch: 7n, currentMetadataOffset: 10n });
}

function createTopics(...names: string[]) {
  return makeCreateTopicsRequest({
    topics: names.map((name) => makeCreateTopicsRequestCreatableTopic({ name, numPartitions: 1, replicationFactor: 1 })),
    timeoutMs: 1000,
  });
}

function topicsAnswer(errorCode: number, ...names: string[]): CreateTopicsResponse {
  return makeCreateTopicsResponse({ topics: names.map((name) => makeCreateTopicsResponseCreatableTopicResult({ name, errorCode })) });
}

describe('ControllerChannelManager', () => {
  let clock: FakeClock;
  let leaderId: number;
  let connects: ControllerAddress[];
  let connections: FakeConnection[];
  let reply: Reply;
  let connectFailures: number;

  function channel(options: Partial<ControllerChannelOptions> = {}): ControllerChannelManager {
    return new ControllerChannelManager({
      nodeId: 1,
      activeControllerId: () => leaderId,
      voters: VOTERS,
      retryBackoffMs: 20,
      clock,
      connect: async (address) => {
        connects.push(address);
        if (connectFailures > 0) {
          connectFailures--;
          throw new ConnectionError(`${address.host}:${address.port}: connection refused`);
        }
        const conn = new FakeConnection(address, (k, r, v) => reply(k, r, v));
        connections.push(conn);
        return conn;
      },
      ...options,
    });
  }

  beforeEach(() => {
    clock = new FakeClock();
    leaderId = -1;
    connects = [];
    connections = [];
    connectFailures = 0;
    reply = () => makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isFenced: false });
  });

  it('calls the local controller-side handler in-process when this node is the active controller', async () => {
    leaderId = 1;
    const seen: number[] = [];
    const ch = channel({
      local: {
        [ApiKey.BrokerHeartbeat]: async (_request, version) => {
          seen.push(version);
          return makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isCaughtUp: true });
        },
      },
    });
    const res = await ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 1000);
    assert.equal(res.errorCode, Errors.NONE.code);
    assert.equal(res.isCaughtUp, true);
    assert.deepEqual(seen, [1]);
    assert.equal(connects.length, 0, 'no connection for a local call');
  });

  it('answers a KafkaError thrown by a local handler with the error response, as the server would', async () => {
    leaderId = 1;
    const ch = channel({
      local: {
        [ApiKey.CreateTopics]: async () => {
          throw new KafkaError(Errors.INVALID_REQUEST, 'bad');
        },
      },
    });
    const res = await ch.send(ApiKey.CreateTopics, createTopics('a', 'b'), 7, 1000);
    assert.deepEqual(
      res.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
      [
        ['a', Errors.INVALID_REQUEST.code, 'bad'],
        ['b', Errors.INVALID_REQUEST.code, 'bad'],
      ],
    );
  });

  it("sends to the active controller's controller listener from controller.quorum.voters", async () => {
    leaderId = 2;
    const ch = channel({ local: { [ApiKey.BrokerHeartbeat]: async () => assert.fail('not the active controller') } });
    const res = await ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 1000);
    assert.equal(res.errorCode, Errors.NONE.code);
    assert.deepEqual(connects, [{ host: 'c2', port: 9093 }]);
    assert.equal(connections[0]!.sent[0]!.apiKey, ApiKey.BrokerHeartbeat);
    // The connection is kept for the next request.
    await ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 1000);
    assert.equal(connects.length, 1);
    assert.equal(connections[0]!.sent.length, 2);
  });

  it('retries a top-level NOT_CONTROLLER at the new leader after a backoff', async () => {
    leaderId = 2;
    reply = () => {
      // The answer tells of a leader change, which the Raft client learns meanwhile.
      if (leaderId === 2) {
        leaderId = 3;
        return makeBrokerHeartbeatResponse({ errorCode: Errors.NOT_CONTROLLER.code });
      }
      return makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isFenced: false });
    };
    const ch = channel();
    const pending = ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 5000);
    await clock.advance(20);
    const res = await pending;
    assert.equal(res.errorCode, Errors.NONE.code);
    assert.deepEqual(
      connects.map((a) => a.host),
      ['c2', 'c3'],
    );
    assert.equal(connections[0]!.closed, true, 'the connection to the former controller is dropped');
  });

  it('retries a NOT_CONTROLLER of any one topic of a CreateTopics', async () => {
    leaderId = 2;
    let calls = 0;
    reply = () =>
      ++calls === 1
        ? makeCreateTopicsResponse({
            topics: [
              makeCreateTopicsResponseCreatableTopicResult({ name: 'a', errorCode: Errors.NONE.code }),
              makeCreateTopicsResponseCreatableTopicResult({ name: 'b', errorCode: Errors.NOT_CONTROLLER.code }),
            ],
          })
        : topicsAnswer(Errors.NONE.code, 'a', 'b');
    const ch = channel();
    const pending = ch.send(ApiKey.CreateTopics, createTopics('a', 'b'), 7, 5000);
    await clock.advance(20);
    const res = await pending;
    assert.equal(calls, 2);
    assert.deepEqual(
      res.topics.map((t) => t.errorCode),
      [Errors.NONE.code, Errors.NONE.code],
    );
  });

  it('retries connection failures with growing backoff until one succeeds', async () => {
    leaderId = 2;
    connectFailures = 2;
    const ch = channel();
    let done = false;
    const pending = ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 5000).then((r) => {
      done = true;
      return r;
    });
    await clock.advance(20);
    assert.equal(connects.length, 2, 'second attempt after 20 ms');
    assert.equal(done, false);
    await clock.advance(39);
    assert.equal(connects.length, 2, 'third attempt waits 40 ms');
    await clock.advance(1);
    const res = await pending;
    assert.equal(connects.length, 3);
    assert.equal(res.errorCode, Errors.NONE.code);
  });

  it('retries a send that fails with a closed connection, on a new connection', async () => {
    leaderId = 2;
    let calls = 0;
    reply = () => {
      if (++calls === 1) throw new ConnectionError('c2:9093: connection closed');
      return makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code });
    };
    const ch = channel();
    const pending = ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 5000);
    await clock.advance(20);
    assert.equal((await pending).errorCode, Errors.NONE.code);
    assert.equal(connects.length, 2);
  });

  it('waits for a leader while none is known', async () => {
    const ch = channel();
    const pending = ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 5000);
    await clock.advance(100);
    assert.equal(connects.length, 0);
    leaderId = 3;
    await clock.advance(200);
    assert.equal((await pending).errorCode, Errors.NONE.code);
    assert.deepEqual(connects, [{ host: 'c3', port: 9093 }]);
  });

  it('answers REQUEST_TIMED_OUT once the deadline passes', async () => {
    leaderId = 2;
    reply = () => topicsAnswer(Errors.NOT_CONTROLLER.code, 'a');
    const ch = channel();
    let res: CreateTopicsResponse | undefined;
    const pending = ch.send(ApiKey.CreateTopics, createTopics('a'), 7, 1000).then((r) => {
      res = r;
    });
    await clock.advance(999);
    assert.equal(res, undefined);
    await clock.advance(1);
    await pending;
    assert.equal(res!.topics[0]!.name, 'a');
    assert.equal(res!.topics[0]!.errorCode, Errors.REQUEST_TIMED_OUT.code);
  });

  it('answers REQUEST_TIMED_OUT when the controller does not answer before the deadline', async () => {
    leaderId = 2;
    reply = () => new Promise(() => {});
    const ch = channel();
    const pending = ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 500);
    await clock.advance(500);
    const res = await pending;
    assert.equal(res.errorCode, Errors.REQUEST_TIMED_OUT.code);
  });

  it('answers a request the controller has no version for with UNSUPPORTED_VERSION, without retrying', async () => {
    leaderId = 2;
    const ch = channel({ connect: async (address) => new FakeConnection(address, () => assert.fail('not sent'), -1) });
    const res = await ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 5000);
    assert.equal(res.errorCode, Errors.UNSUPPORTED_VERSION.code);
  });

  it('sends at most the version both sides support', async () => {
    leaderId = 2;
    const ch = channel({ connect: async (address) => connections[connections.push(new FakeConnection(address, reply, 0)) - 1]! });
    await ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 5000);
    assert.equal(connections[0]!.sent[0]!.version, 0);
  });

  it('tries the bootstrap servers in turn while the leader has no known address', async () => {
    let calls = 0;
    reply = () => makeBrokerHeartbeatResponse({ errorCode: ++calls < 3 ? Errors.NOT_CONTROLLER.code : Errors.NONE.code });
    const ch = channel({
      voters: [],
      bootstrapServers: [
        { host: 'b1', port: 1 },
        { host: 'b2', port: 2 },
      ],
    });
    const pending = ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 5000);
    await clock.advance(100);
    assert.equal((await pending).errorCode, Errors.NONE.code);
    assert.deepEqual(
      connects.map((a) => a.host),
      ['b1', 'b2', 'b1'],
    );
  });

  it('answers at once after close', async () => {
    leaderId = 2;
    reply = () => new Promise(() => {});
    const ch = channel();
    const pending = ch.send(ApiKey.BrokerHeartbeat, heartbeat(), 1, 60_000);
    await clock.advance(0);
    await ch.close();
    assert.equal((await pending).errorCode, Errors.REQUEST_TIMED_OUT.code);
    assert.equal(connections[0]!.closed, true);
  });
});

describe('producerIdBlockAllocator', () => {
  it('allocates a block with AllocateProducerIds carrying the broker id and current epoch', async () => {
    const sent: AllocateProducerIdsRequest[] = [];
    let epoch = 5n;
    const allocate = producerIdBlockAllocator(
      {
        send: async (_apiKey, request) => {
          sent.push(request as AllocateProducerIdsRequest);
          return makeAllocateProducerIdsResponse({ errorCode: Errors.NONE.code, producerIdStart: 4000n, producerIdLen: 1000 }) as never;
        },
      },
      { brokerId: 2, brokerEpoch: () => epoch, timeoutMs: 1000 },
    );
    assert.deepEqual(await allocate(), { firstProducerId: 4000n, size: 1000 });
    epoch = 9n;
    await allocate();
    assert.deepEqual(
      sent.map((r) => [r.brokerId, r.brokerEpoch]),
      [
        [2, 5n],
        [2, 9n],
      ],
    );
  });

  it('rejects with the controller error', async () => {
    const allocate = producerIdBlockAllocator(
      { send: async () => makeAllocateProducerIdsResponse({ errorCode: Errors.STALE_BROKER_EPOCH.code }) as never },
      { brokerId: 2, brokerEpoch: () => 1n, timeoutMs: 1000 },
    );
    await assert.rejects(allocate(), (err: unknown) => err instanceof KafkaError && err.code === Errors.STALE_BROKER_EPOCH.code);
  });
});
