import assert from 'node:assert/strict';
describe('toolchain', () => {
  it('runs TypeScript tests', () => { assert.equal(1 + 1, 2); });
});
