/** Dead-letter records as the tests of src/tools/dlq build them: the contract's headers as UTF-8 text. */
import type { RecordHeader } from '../../../../protocol/records/record.ts';
import type { ConsumerRecord } from '../../../../src/client/records.ts';

export function headers(entries: Record<string, string | null>): RecordHeader[] {
  return Object.entries(entries).map(([key, value]) => ({ key, value: value === null ? null : Buffer.from(value, 'utf8') }));
}

export function record(fields: Partial<ConsumerRecord> & { headers?: readonly RecordHeader[] }): ConsumerRecord {
  return {
    topic: 'orders.dlq',
    partition: 0,
    offset: 0,
    timestamp: 1_700_000_000_000,
    key: null,
    value: null,
    headers: [],
    ...fields,
  };
}
