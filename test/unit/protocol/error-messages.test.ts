import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeFitting, fitErrorMessages, fittedMessage } from '../../../protocol/error-messages.ts';
import { makeCreateTopicsResponse, makeCreateTopicsResponseCreatableTopicResult } from '../../../protocol/messages/create-topics.ts';
import { apis, ApiKey } from '../../../protocol/messages/index.ts';
import { EncodeError, MAX_STRING_BYTES, Reader, Writer } from '../../../protocol/primitives.ts';

describe('error messages too long for a string', () => {
  it('are cut to fit, between characters, and shorter ones are kept whole', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 0, maxLength: 40_000 }), fc.nat(3), (tail, pad) => {
        const message = `${'é'.repeat(pad)}${tail}`;
        const fitted = fittedMessage(message);
        assert.ok(Buffer.byteLength(fitted, 'utf8') <= MAX_STRING_BYTES);
        if (Buffer.byteLength(message, 'utf8') <= MAX_STRING_BYTES) assert.equal(fitted, message);
        else assert.ok(message.startsWith(fitted.slice(0, -3)) && fitted.endsWith('...'));
      }),
      { numRuns: 200 },
    );
  });

  it('are cut wherever a response carries them, and the response then encodes with its codes and names', () => {
    const name = 'n'.repeat(32_700);
    const response = makeCreateTopicsResponse({
      topics: [
        makeCreateTopicsResponseCreatableTopicResult({
          name,
          errorCode: 17,
          errorMessage: `Topic name is illegal, it can't be longer than 249 characters, topic name: ${name}`,
        }),
        makeCreateTopicsResponseCreatableTopicResult({ name: 'short', errorCode: 0, errorMessage: null }),
      ],
    });
    const encode = () => {
      const w = new Writer();
      apis.get(ApiKey.CreateTopics)!.encodeResponse(w, response, 7);
      return w.toBuffer();
    };
    assert.throws(encode, EncodeError);
    assert.equal(fitErrorMessages(response), true);
    const decoded = apis.get(ApiKey.CreateTopics)!.decodeResponse(new Reader(encode()), 7) as typeof response;
    assert.deepEqual(
      decoded.topics.map((t) => [t.name, t.errorCode]),
      [
        [name, 17],
        ['short', 0],
      ],
    );
    assert.match(decoded.topics[0]!.errorMessage ?? '', /^Topic name is illegal, .*\.\.\.$/);
    assert.equal(fitErrorMessages(response), false, 'nothing is left to cut');
  });

  it('a response that fails to encode for another reason still fails: only error messages are cut', () => {
    const body = { errorMessage: 'short', name: 'n'.repeat(MAX_STRING_BYTES + 1) };
    let attempts = 0;
    assert.throws(
      () =>
        encodeFitting(body, () => {
          attempts++;
          new Writer().compactString(body.name);
        }),
      EncodeError,
    );
    assert.equal(attempts, 1);
    assert.equal(body.name.length, MAX_STRING_BYTES + 1, 'names are never cut');
  });
});
