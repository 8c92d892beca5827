import assert from 'node:assert/strict';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { HandlerRegistry, codecRange } from '../../../src/handlers/registry.ts';

const noop = (): null => null;

describe('handler registry', () => {
  it('serves the codec range by default and narrows it to what the handler asks', () => {
    const registry = new HandlerRegistry();
    registry.register(ApiKey.Produce, noop, { minVersion: 3 });
    registry.register(ApiKey.Metadata, noop, { maxVersion: 9 });
    const produce = registry.lookup(ApiKey.Produce, 'broker')!;
    assert.equal(produce.minVersion, 3);
    assert.equal(produce.maxVersion, codecRange(ApiKey.Produce)!.maxVersion);
    assert.equal(registry.lookup(ApiKey.Metadata, 'broker')!.maxVersion, 9);
  });

  it('refuses versions outside the codec and double registrations', () => {
    const registry = new HandlerRegistry();
    assert.throws(() => registry.register(ApiKey.Produce, noop, { minVersion: 500 }), /outside the codec/);
    assert.throws(() => registry.register(4242 as ApiKey, noop), /not in the codec/);
    registry.register(ApiKey.Produce, noop);
    assert.throws(() => registry.register(ApiKey.Produce, noop), /registered twice/);
  });

  it('keeps broker and controller listeners apart', () => {
    const registry = new HandlerRegistry();
    const dataPath = (): null => null;
    const raft = (): null => null;
    registry.register(ApiKey.Fetch, dataPath, { listeners: 'broker' });
    registry.register(ApiKey.Fetch, raft, { listeners: 'controller' });
    registry.register(ApiKey.Vote, noop);
    assert.equal(registry.lookup(ApiKey.Fetch, 'broker')!.handler, dataPath);
    assert.equal(registry.lookup(ApiKey.Fetch, 'controller')!.handler, raft);
    assert.equal(registry.lookup(ApiKey.Vote, 'broker'), undefined, 'Vote is a controller-only API in Kafka');
    assert.deepEqual(
      registry.supported('controller').map((a) => a.apiKey),
      [ApiKey.Fetch, ApiKey.Vote],
    );
    assert.deepEqual(
      registry.supported('broker').map((a) => a.apiKey),
      [ApiKey.Fetch],
    );
  });

  it('does not advertise a version the codec marks unstable', () => {
    const unstable = [...apis.values()].filter((a) => a.latestVersionUnstable);
    assert.ok(unstable.length > 0);
    for (const api of unstable) assert.equal(codecRange(api.apiKey)!.maxVersion, api.maxVersion - 1, api.name);
    const stable = apis.get(ApiKey.Produce)!;
    assert.equal(codecRange(ApiKey.Produce)!.maxVersion, stable.maxVersion);
  });
});
