// Kafka's internal topics (org.apache.kafka.common.internals.Topic): the one definition of
// their names. Clients know them too (Metadata marks the coordinators' topics internal, the
// quorum fetches `__cluster_metadata`), so they live with the protocol. Storage knows no
// topic: the broker hands it the names it must leave alone (LogManager's skipTopics).

/** The group coordinator's topic (Topic.GROUP_METADATA_TOPIC_NAME). */
export const OFFSETS_TOPIC = '__consumer_offsets';

/** The transaction coordinator's topic (Topic.TRANSACTION_STATE_TOPIC_NAME). */
export const TRANSACTION_STATE_TOPIC = '__transaction_state';

/** The KRaft metadata log's topic (Topic.CLUSTER_METADATA_TOPIC_NAME); it has one partition, 0. */
export const METADATA_TOPIC = '__cluster_metadata';

/** Kafka's Uuid.METADATA_TOPIC_ID (0, 1): how Fetch v13+ names `__cluster_metadata`. */
export const METADATA_TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';

/**
 * Topic.INTERNAL_TOPICS: the coordinators' topics. Metadata reports them with is_internal,
 * and clients other than Kafka's admin client may not produce to them.
 */
export const INTERNAL_TOPICS: ReadonlySet<string> = new Set([OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC]);
