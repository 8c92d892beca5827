import assert from 'node:assert/strict';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import { serializeError } from '../../../src/observability/logger.ts';

describe('error serialization for the log', () => {
  it('serializes a KafkaError and one wrapped as a cause without touching the frozen error table', () => {
    const refused = new KafkaError(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 'no transactional id');
    const out = serializeError(refused) as { message: string };
    assert.equal(out.message, 'no transactional id');
    const wrapped = Object.assign(new Error('request failed'), { detail: refused });
    assert.doesNotThrow(() => serializeError(wrapped));
    assert.equal(refused.code, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code);
  });

  it('falls back to name, message and stack for an error-like value the serializer cannot tag', () => {
    const frozen = Object.freeze(Object.assign(new Error('frozen'), { extra: Object.freeze({ message: 'inner' }) }));
    const out = serializeError(frozen) as { message: string; stack: string };
    assert.equal(out.message, 'frozen');
    assert.match(out.stack, /frozen/);
  });
});
