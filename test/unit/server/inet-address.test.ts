import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hostOfClientAddress, ipAddressBytes, ipAddressString } from '../../../src/server/inet-address.ts';

function isMappedIpv4(bytes: Uint8Array): boolean {
  return bytes.length === 16 && bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

describe('client IP addresses as the bytes an EnvelopeRequest carries', () => {
  it('any 4 or 16 address bytes are written and read back the same (an IPv4-mapped address as its IPv4 bytes)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ minLength: 4, maxLength: 4 }), fc.uint8Array({ minLength: 16, maxLength: 16 })), (bytes) => {
        const written = ipAddressString(Buffer.from(bytes));
        assert.notEqual(written, null);
        const expected = isMappedIpv4(bytes) ? Buffer.from(bytes.subarray(12)) : Buffer.from(bytes);
        assert.deepEqual(ipAddressBytes(written!), expected);
      }),
    );
  });

  it('a length that is no address is refused, as Java refuses it (UnknownHostException)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 40 }).filter((b) => b.length !== 4 && b.length !== 16),
        (bytes) => {
          assert.equal(ipAddressString(Buffer.from(bytes)), null);
        },
      ),
    );
  });

  it("reads the session's host:port forms, and refuses a host name", () => {
    assert.equal(hostOfClientAddress('127.0.0.1:50000'), '127.0.0.1');
    assert.equal(hostOfClientAddress('::1:50000'), '::1');
    assert.deepEqual(ipAddressBytes('::ffff:10.0.0.2'), Buffer.from([10, 0, 0, 2]));
    assert.deepEqual(ipAddressBytes('::1'), Buffer.from([...new Array<number>(15).fill(0), 1]));
    assert.equal(ipAddressBytes('localhost'), null);
  });
});
