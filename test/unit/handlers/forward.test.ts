import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeAlterConfigsRequest,
  makeAlterConfigsRequestAlterableConfig,
  makeAlterConfigsRequestAlterConfigsResource,
  makeAlterConfigsResponse,
  makeAlterConfigsResponseAlterConfigsResourceResponse,
  type AlterConfigsRequest,
} from '../../../protocol/messages/alter-configs.ts';
import {
  makeCreatePartitionsRequest,
  makeCreatePartitionsRequestCreatePartitionsTopic,
  makeCreatePartitionsResponse,
  makeCreatePartitionsResponseCreatePartitionsTopicResult,
} from '../../../protocol/messages/create-partitions.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsResponse,
  makeCreateTopicsResponseCreatableTopicResult,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import {
  makeDeleteTopicsRequest,
  makeDeleteTopicsRequestDeleteTopicState,
  makeDeleteTopicsResponse,
  makeDeleteTopicsResponseDeletableTopicResult,
} from '../../../protocol/messages/delete-topics.ts';
import {
  makeIncrementalAlterConfigsRequest,
  makeIncrementalAlterConfigsRequestAlterableConfig,
  makeIncrementalAlterConfigsRequestAlterConfigsResource,
  makeIncrementalAlterConfigsResponse,
  makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse,
  type IncrementalAlterConfigsRequest,
} from '../../../protocol/messages/incremental-alter-configs.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import {
  ImageWaiter,
  createTopicsThroughController,
  forwardAlterConfigs,
  forwardCreatePartitions,
  forwardCreateTopics,
  forwardDeleteTopics,
  forwardIncrementalAlterConfigs,
  type ForwardingServices,
} from '../../../src/handlers/forward.ts';
import { AlterConfigOp } from '../../../src/metadata/controller.ts';
import type { ControllerChannel } from '../../../src/metadata/controller-channel.ts';
import { MetadataImage } from '../../../src/metadata/image.ts';
import { ConfigResourceType, partitionRecord, type MetadataRecord } from '../../../src/metadata/records.ts';
import { FakeClock, settle } from '../metadata/fake-cluster.ts';

// The admin APIs on a broker listener, forwarded to a scripted controller; the wait for the
// local image runs on a fake clock.

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';

class ScriptedChannel implements Pick<ControllerChannel, 'send'> {
  readonly sent: { apiKey: number; request: unknown; version: number; timeoutMs: number }[] = [];
  answer: (apiKey: number, request: unknown) => unknown = () => assert.fail('nothing should be forwarded');

  async send(apiKey: number, request: unknown, version: number, timeoutMs: number): Promise<never> {
    this.sent.push({ apiKey, request, version, timeoutMs });
    return this.answer(apiKey, request) as never;
  }
}

function withTopic(image: MetadataImage, name: string, id: string, partitions: number): MetadataImage {
  const records: MetadataRecord[] = [{ type: 'TopicRecord', data: { name, topicId: id } }];
  for (let p = 0; p < partitions; p++) {
    records.push({ type: 'PartitionRecord', data: partitionRecord({ partitionId: p, topicId: id, replicas: [1], isr: [1], leader: 1 }) });
  }
  return image.apply(records, image.offset + records.length, 1).image;
}

function withoutTopic(image: MetadataImage, id: string): MetadataImage {
  return image.apply([{ type: 'RemoveTopicRecord', data: { topicId: id } }], image.offset + 1, 1).image;
}

describe('forwarded admin APIs', () => {
  let clock: FakeClock;
  let image: MetadataImage;
  let images: ImageWaiter;
  let channel: ScriptedChannel;
  let services: ForwardingServices;

  function publish(next: MetadataImage): void {
    image = next;
    images.published(next);
  }

  /** The promise's value once it settled, else 'pending'. */
  async function state<T>(promise: Promise<T>): Promise<T | 'pending'> {
    let value: T | 'pending' = 'pending';
    void promise.then((v) => {
      value = v;
    });
    await settle();
    return value;
  }

  beforeEach(() => {
    clock = new FakeClock();
    image = MetadataImage.EMPTY;
    images = new ImageWaiter(image, clock);
    channel = new ScriptedChannel();
    services = { nodeId: 1, channel, forwardTimeoutMs: 30_000, images };
  });

  describe('CreateTopics', () => {
    function request(fields: Partial<CreateTopicsRequest> = {}): CreateTopicsRequest {
      return makeCreateTopicsRequest({
        topics: [makeCreateTopicsRequestCreatableTopic({ name: 'orders', numPartitions: 3, replicationFactor: 1 })],
        timeoutMs: 5000,
        ...fields,
      });
    }

    const created = (): CreateTopicsResponse =>
      makeCreateTopicsResponse({
        topics: [
          makeCreateTopicsResponseCreatableTopicResult({
            name: 'orders',
            topicId: TOPIC_ID,
            errorCode: Errors.NONE.code,
            numPartitions: 3,
          }),
        ],
      });

    it('is forwarded with its version, and answered once the local image has the topic', async () => {
      channel.answer = created;
      const pending = forwardCreateTopics(services, request(), 7);
      assert.equal(await state(pending), 'pending', 'waits for the local image');
      assert.deepEqual(
        channel.sent.map((s) => [s.apiKey, s.version, s.timeoutMs]),
        [[ApiKey.CreateTopics, 7, 30_000]],
      );
      publish(withTopic(image, 'other', 'AAAAAAAAAAAAAAAAAAAAAg', 1));
      assert.equal(await state(pending), 'pending', 'an unrelated change does not end the wait');
      publish(withTopic(image, 'orders', TOPIC_ID, 3));
      const res = await pending;
      assert.equal(res.topics[0]!.errorCode, Errors.NONE.code);
      assert.equal(res.topics[0]!.topicId, TOPIC_ID);
    });

    it('answers at once when the image already has the topic', async () => {
      channel.answer = created;
      publish(withTopic(image, 'orders', TOPIC_ID, 3));
      assert.notEqual(await state(forwardCreateTopics(services, request(), 7)), 'pending');
    });

    it("stops waiting after the request's timeoutMs and answers the controller's result", async () => {
      channel.answer = created;
      const pending = forwardCreateTopics(services, request({ timeoutMs: 1000 }), 7);
      await clock.advance(999);
      assert.equal(await state(pending), 'pending');
      await clock.advance(1);
      assert.equal((await pending).topics[0]!.errorCode, Errors.NONE.code);
    });

    it('does not wait with timeoutMs 0, for validateOnly, or for a topic that failed', async () => {
      channel.answer = created;
      assert.notEqual(await state(forwardCreateTopics(services, request({ timeoutMs: 0 }), 7)), 'pending');
      assert.notEqual(await state(forwardCreateTopics(services, request({ validateOnly: true }), 7)), 'pending');
      channel.answer = () =>
        makeCreateTopicsResponse({
          topics: [makeCreateTopicsResponseCreatableTopicResult({ name: 'orders', errorCode: Errors.TOPIC_ALREADY_EXISTS.code })],
        });
      assert.equal(
        ((await state(forwardCreateTopics(services, request(), 7))) as CreateTopicsResponse).topics[0]!.errorCode,
        Errors.TOPIC_ALREADY_EXISTS.code,
      );
    });

    it("passes the channel's REQUEST_TIMED_OUT through", async () => {
      channel.answer = () =>
        makeCreateTopicsResponse({
          topics: [makeCreateTopicsResponseCreatableTopicResult({ name: 'orders', errorCode: Errors.REQUEST_TIMED_OUT.code })],
        });
      const res = await forwardCreateTopics(services, request(), 7);
      assert.equal(res.topics[0]!.errorCode, Errors.REQUEST_TIMED_OUT.code);
    });
  });

  it('DeleteTopics is answered once the local image no longer has the topic', async () => {
    publish(withTopic(image, 'orders', TOPIC_ID, 1));
    channel.answer = () =>
      makeDeleteTopicsResponse({
        responses: [makeDeleteTopicsResponseDeletableTopicResult({ name: 'orders', topicId: TOPIC_ID, errorCode: Errors.NONE.code })],
      });
    const request = makeDeleteTopicsRequest({
      topics: [makeDeleteTopicsRequestDeleteTopicState({ name: 'orders', topicId: ZERO_UUID })],
      timeoutMs: 5000,
    });
    const pending = forwardDeleteTopics(services, request, 6);
    assert.equal(await state(pending), 'pending');
    publish(withoutTopic(image, TOPIC_ID));
    assert.equal((await pending).responses[0]!.errorCode, Errors.NONE.code);
  });

  it('CreatePartitions is answered once the local image has the new partitions', async () => {
    publish(withTopic(image, 'orders', TOPIC_ID, 1));
    channel.answer = () =>
      makeCreatePartitionsResponse({
        results: [makeCreatePartitionsResponseCreatePartitionsTopicResult({ name: 'orders', errorCode: Errors.NONE.code })],
      });
    const request = makeCreatePartitionsRequest({
      topics: [makeCreatePartitionsRequestCreatePartitionsTopic({ name: 'orders', count: 3, assignments: null })],
      timeoutMs: 5000,
    });
    const pending = forwardCreatePartitions(services, request, 3);
    assert.equal(await state(pending), 'pending');
    publish(
      image.apply(
        [1, 2].map((p) => ({
          type: 'PartitionRecord' as const,
          data: partitionRecord({ partitionId: p, topicId: TOPIC_ID, replicas: [1], isr: [1], leader: 1 }),
        })),
        image.offset + 2,
        1,
      ).image,
    );
    assert.equal((await pending).results[0]!.errorCode, Errors.NONE.code);
  });

  describe('AlterConfigs', () => {
    const resource = (resourceType: number, resourceName: string, configs: [string, string | null][] = [['retention.ms', '1']]) =>
      makeAlterConfigsRequestAlterConfigsResource({
        resourceType,
        resourceName,
        configs: configs.map(([name, value]) => makeAlterConfigsRequestAlterableConfig({ name, value })),
      });

    function echo(request: unknown) {
      return makeAlterConfigsResponse({
        responses: (request as AlterConfigsRequest).resources.map((r) =>
          makeAlterConfigsResponseAlterConfigsResourceResponse({
            resourceType: r.resourceType,
            resourceName: r.resourceName,
            errorCode: Errors.NONE.code,
          }),
        ),
      });
    }

    it("forwards topic and this broker's resources, answers another broker's here, in request order", async () => {
      channel.answer = (_k, r) => echo(r);
      const request = makeAlterConfigsRequest({
        resources: [
          resource(ConfigResourceType.BROKER, '2', [['log.cleaner.threads', '2']]),
          resource(ConfigResourceType.TOPIC, 'orders'),
          resource(ConfigResourceType.BROKER, '1', [['log.cleaner.threads', '2']]),
          resource(ConfigResourceType.BROKER, '', [['log.cleaner.threads', '2']]),
        ],
        validateOnly: true,
      });
      const res = await forwardAlterConfigs(services, request, 2);
      const forwarded = channel.sent[0]!.request as AlterConfigsRequest;
      assert.deepEqual(
        forwarded.resources.map((r) => r.resourceName),
        ['orders', '1', ''],
      );
      assert.equal(forwarded.validateOnly, true, 'validateOnly is forwarded');
      assert.deepEqual(
        res.responses.map((r) => [r.resourceName, r.errorCode]),
        [
          ['2', Errors.INVALID_REQUEST.code],
          ['orders', Errors.NONE.code],
          ['1', Errors.NONE.code],
          ['', Errors.NONE.code],
        ],
      );
      assert.equal(res.responses[0]!.errorMessage, 'Unexpected broker id, expected 1, but received 2');
    });

    it('refuses a resource named twice, a config named twice and a null value without asking the controller', async () => {
      const request = makeAlterConfigsRequest({
        resources: [
          resource(ConfigResourceType.TOPIC, 'a'),
          resource(ConfigResourceType.TOPIC, 'a'),
          resource(ConfigResourceType.TOPIC, 'b', [
            ['retention.ms', '1'],
            ['retention.ms', '2'],
          ]),
          resource(ConfigResourceType.TOPIC, 'c', [['retention.ms', null]]),
          resource(ConfigResourceType.BROKER_LOGGER, '1', [['root', 'DEBUG']]),
        ],
      });
      const res = await forwardAlterConfigs(services, request, 1);
      assert.equal(channel.sent.length, 0);
      assert.deepEqual(
        res.responses.map((r) => [r.resourceName, r.errorCode, r.errorMessage]),
        [
          ['a', Errors.INVALID_REQUEST.code, 'Each resource must appear at most once.'],
          ['a', Errors.INVALID_REQUEST.code, 'Each resource must appear at most once.'],
          ['b', Errors.INVALID_REQUEST.code, 'Error due to duplicate config keys'],
          ['c', Errors.INVALID_REQUEST.code, 'Null value not supported for : retention.ms'],
          ['1', Errors.INVALID_REQUEST.code, 'Unknown resource type 8'],
        ],
      );
    });
  });

  it('IncrementalAlterConfigs forwards DELETEs with null values and answers BROKER_LOGGER here', async () => {
    channel.answer = (_k, r) =>
      makeIncrementalAlterConfigsResponse({
        responses: (r as IncrementalAlterConfigsRequest).resources.map((x) =>
          makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse({
            resourceType: x.resourceType,
            resourceName: x.resourceName,
            errorCode: Errors.NONE.code,
          }),
        ),
      });
    const request = makeIncrementalAlterConfigsRequest({
      resources: [
        makeIncrementalAlterConfigsRequestAlterConfigsResource({
          resourceType: ConfigResourceType.BROKER_LOGGER,
          resourceName: '1',
          configs: [
            makeIncrementalAlterConfigsRequestAlterableConfig({ name: 'kafka.server', configOperation: AlterConfigOp.SET, value: 'DEBUG' }),
          ],
        }),
        makeIncrementalAlterConfigsRequestAlterConfigsResource({
          resourceType: ConfigResourceType.TOPIC,
          resourceName: 'orders',
          configs: [
            makeIncrementalAlterConfigsRequestAlterableConfig({ name: 'retention.ms', configOperation: AlterConfigOp.DELETE, value: null }),
          ],
        }),
        makeIncrementalAlterConfigsRequestAlterConfigsResource({
          resourceType: ConfigResourceType.TOPIC,
          resourceName: 'other',
          configs: [
            makeIncrementalAlterConfigsRequestAlterableConfig({ name: 'retention.ms', configOperation: AlterConfigOp.SET, value: null }),
          ],
        }),
      ],
    });
    const res = await forwardIncrementalAlterConfigs(services, request, 1);
    assert.deepEqual(
      (channel.sent[0]!.request as IncrementalAlterConfigsRequest).resources.map((r) => r.resourceName),
      ['orders'],
    );
    assert.deepEqual(
      res.responses.map((r) => [r.resourceName, r.errorCode]),
      [
        ['1', Errors.INVALID_CONFIG.code],
        ['orders', Errors.NONE.code],
        ['other', Errors.INVALID_REQUEST.code],
      ],
    );
  });

  it('IncrementalAlterConfigs answers a BROKER_LOGGER resource CLUSTER_AUTHORIZATION_FAILED for a principal without ALTER_CONFIGS on the cluster', async () => {
    const logger = (name: string) =>
      makeIncrementalAlterConfigsRequestAlterConfigsResource({
        resourceType: ConfigResourceType.BROKER_LOGGER,
        resourceName: '1',
        configs: [makeIncrementalAlterConfigsRequestAlterableConfig({ name, configOperation: AlterConfigOp.SET, value: 'DEBUG' })],
      });
    const request = makeIncrementalAlterConfigsRequest({ resources: [logger('kafka.server')] });
    const res = await forwardIncrementalAlterConfigs(services, request, 1, () => false);
    assert.equal(channel.sent.length, 0, 'nothing goes to the controller');
    assert.deepEqual(
      res.responses.map((r) => [r.resourceName, r.errorCode, r.errorMessage]),
      [['1', Errors.CLUSTER_AUTHORIZATION_FAILED.code, Errors.CLUSTER_AUTHORIZATION_FAILED.message]],
    );
  });

  it('createTopicsThroughController sends the topics as one CreateTopics and returns its results', async () => {
    channel.answer = (_k, r) =>
      makeCreateTopicsResponse({
        topics: (r as CreateTopicsRequest).topics.map((t) =>
          makeCreateTopicsResponseCreatableTopicResult({
            name: t.name,
            errorCode: Errors.TOPIC_ALREADY_EXISTS.code,
            errorMessage: 'exists',
          }),
        ),
      });
    const create = createTopicsThroughController(channel, 5000);
    const results = await create([
      {
        name: '__consumer_offsets',
        numPartitions: 50,
        replicationFactor: 3,
        assignments: [],
        configs: [{ name: 'cleanup.policy', value: 'compact' }],
      },
    ]);
    assert.deepEqual(results, [{ name: '__consumer_offsets', errorCode: Errors.TOPIC_ALREADY_EXISTS.code, errorMessage: 'exists' }]);
    const sent = channel.sent[0]!.request as CreateTopicsRequest;
    assert.equal(sent.topics[0]!.numPartitions, 50);
    assert.equal(sent.topics[0]!.configs[0]!.value, 'compact');
    assert.equal(channel.sent[0]!.timeoutMs, 5000);
  });
});
