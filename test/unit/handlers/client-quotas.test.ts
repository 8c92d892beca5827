import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { handleDescribeClientQuotas } from '../../../src/handlers/client-quotas.ts';

const describe_ = (components: { entityType: string; matchType: number; match: string | null }[], strict = false) =>
  handleDescribeClientQuotas({ components, strict });

describe('DescribeClientQuotas', () => {
  it('matches nothing for a valid filter: no quota can be set', () => {
    for (const components of [
      [],
      [{ entityType: 'user', matchType: 0, match: 'alice' }],
      [
        { entityType: 'user', matchType: 2, match: null },
        { entityType: 'client-id', matchType: 1, match: null },
      ],
    ]) {
      const res = describe_(components);
      assert.equal(res.errorCode, Errors.NONE.code);
      assert.deepEqual(res.entries, []);
    }
  });

  it('refuses the filters Kafka refuses, with its messages', () => {
    const cases: [Parameters<typeof describe_>[0], number, string][] = [
      [[{ entityType: '', matchType: 0, match: 'x' }], Errors.INVALID_REQUEST.code, 'Invalid empty entity type.'],
      [
        [
          { entityType: 'user', matchType: 2, match: null },
          { entityType: 'user', matchType: 0, match: 'a' },
        ],
        Errors.INVALID_REQUEST.code,
        'Entity type user cannot appear more than once in the filter.',
      ],
      [[{ entityType: 'group', matchType: 2, match: null }], Errors.UNSUPPORTED_VERSION.code, 'Unsupported entity type group'],
      [
        [{ entityType: 'user', matchType: 0, match: null }],
        Errors.INVALID_REQUEST.code,
        'Request specified MATCH_TYPE_EXACT, but set match string to null.',
      ],
      [
        [{ entityType: 'user', matchType: 1, match: 'a' }],
        Errors.INVALID_REQUEST.code,
        'Request specified MATCH_TYPE_DEFAULT, but also specified a match string.',
      ],
      [[{ entityType: 'user', matchType: 7, match: null }], Errors.INVALID_REQUEST.code, 'Unknown match type 7'],
      [
        [
          { entityType: 'ip', matchType: 2, match: null },
          { entityType: 'user', matchType: 2, match: null },
        ],
        Errors.INVALID_REQUEST.code,
        'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.',
      ],
    ];
    for (const [components, code, message] of cases) {
      const res = describe_(components);
      assert.equal(res.errorCode, code, message);
      assert.equal(res.errorMessage, message);
    }
  });
});
