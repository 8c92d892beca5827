import type { TopicPolicy } from '../../src/tools/policy/policy.ts';

/** The example policy of the README's "Topics as code", as YAML with `partitions` as given. */
export function orderEventsYaml(partitions = 24): string {
  return `topic_policy:
  name: order.events
  partitions: ${partitions}
  replication_factor: 3
  min_insync_replicas: 2
  cleanup_policy: delete
  retention_ms: 604800000
  key_schema: order_id
  value_schema: order_event_v2
  delivery_contract: at_least_once
`;
}

/** The same policy as it reads. */
export const ORDER_EVENTS: TopicPolicy = {
  name: 'order.events',
  partitions: 24,
  replication_factor: 3,
  min_insync_replicas: 2,
  cleanup_policy: 'delete',
  retention_ms: 604800000,
  key_schema: 'order_id',
  value_schema: 'order_event_v2',
  delivery_contract: 'at_least_once',
};
