import assert from 'node:assert/strict';
import {
  BrokerConfig,
  ConfigException,
  DEFAULT_LOG_CONFIG,
  cleanupPolicyOf,
  logConfigOf,
  topicConfigLookup,
  topicLogConfig,
} from '../../../src/config/index.ts';
import { NEVER } from '../../../storage/index.ts';

describe('topic config parsing (the one parser of topic config values)', () => {
  it('maps Kafka topic config names to the log config, the rest from the definitions', () => {
    const c = logConfigOf(
      topicConfigLookup({
        'retention.ms': '1000',
        'cleanup.policy': 'delete,compact',
        'segment.bytes': '4096',
        'min.insync.replicas': '2',
      }),
    );
    assert.equal(c.retentionMs, 1000);
    assert.equal(c.cleanupPolicy, 'compact,delete');
    assert.equal(c.segmentBytes, 4096);
    assert.equal(c.indexIntervalBytes, 4096);
    assert.equal(c.segmentIndexBytes, 10 * 1024 * 1024);
  });

  it("has Kafka's defaults, read from the topic config definitions, Long.MAX_VALUE as never", () => {
    assert.deepEqual(DEFAULT_LOG_CONFIG, {
      segmentBytes: 1073741824,
      segmentMs: 604800000,
      segmentJitterMs: 0,
      segmentIndexBytes: 10485760,
      retentionMs: 604800000,
      retentionBytes: -1,
      cleanupPolicy: 'delete',
      flushMessages: NEVER,
      flushMs: NEVER,
      indexIntervalBytes: 4096,
      maxMessageBytes: 1048588,
      minCleanableDirtyRatio: 0.5,
      minCompactionLagMs: 0,
      maxCompactionLagMs: NEVER,
      deleteRetentionMs: 86400000,
      fileDeleteDelayMs: 60000,
      messageTimestampType: 'CreateTime',
    });
  });

  it('takes what a topic does not set from the broker synonyms, with their units converted', () => {
    const broker = new BrokerConfig({
      overrides: new Map([
        ['log.retention.hours', '2'],
        ['log.segment.bytes', '2097152'],
      ]),
    });
    const c = topicLogConfig({ 'segment.ms': '5000' }, broker);
    assert.equal(c.retentionMs, 2 * 3_600_000);
    assert.equal(c.segmentBytes, 2097152);
    assert.equal(c.segmentMs, 5000);
    assert.equal(broker.logRetentionMs, 2 * 3_600_000, 'the broker getter follows the same synonyms');
  });

  it('refuses values it cannot apply with ConfigException', () => {
    assert.throws(() => cleanupPolicyOf('shred'), ConfigException);
    assert.throws(() => logConfigOf(topicConfigLookup({ 'cleanup.policy': 'shred' })), ConfigException);
    assert.throws(() => logConfigOf(topicConfigLookup({ 'retention.ms': 'soon' })), ConfigException);
    assert.throws(() => logConfigOf(topicConfigLookup({ 'message.timestamp.type': 'WallClock' })), ConfigException);
  });
});
