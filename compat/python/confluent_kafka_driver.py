"""compat driver for confluent-kafka-python (librdkafka), see common.py for the protocol."""
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from common import deadline_after, past, serve, settled, text

BOOTSTRAP = None
ADMIN = None


def admin():
    # One client for the process: its futures fail once the client is garbage-collected.
    global ADMIN
    if ADMIN is None:
        ADMIN = AdminClient({"bootstrap.servers": BOOTSTRAP})
    return ADMIN


def wait_all(futures):
    for future in futures.values():
        future.result(timeout=30)


def metadata():
    md = admin().list_topics(timeout=20)
    return {
        "brokers": [{"id": b.id, "host": b.host, "port": b.port} for b in md.brokers.values()],
        "controllerId": md.controller_id,
        "topics": list(md.topics.keys()),
    }


def describe_topic(topic):
    md = admin().list_topics(topic=topic, timeout=20)
    found = md.topics[topic]
    if found.error is not None:
        raise KafkaException(found.error)
    return {"partitions": len(found.partitions)}


def create_topic(topic, partitions, configs):
    wait_all(admin().create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1, config=configs)]))
    return None


def list_topics():
    return list(admin().list_topics(timeout=20).topics.keys())


def create_partitions(topic, totalCount):
    wait_all(admin().create_partitions([NewPartitions(topic, totalCount)]))
    return None


def describe_configs(topic):
    futures = admin().describe_configs([ConfigResource("topic", topic)])
    entries = list(futures.values())[0].result(timeout=30)
    return {name: entry.value for name, entry in entries.items()}


def alter_configs(topic, configs):
    wait_all(admin().alter_configs([ConfigResource("topic", topic, set_config=configs)]))
    return None


def delete_topic(topic):
    wait_all(admin().delete_topics([topic]))
    return None


def produce(topic, records, codec, idempotent, murmur2):
    producer = Producer({
        "bootstrap.servers": BOOTSTRAP,
        "acks": "all",
        "compression.type": codec,
        "enable.idempotence": idempotent,
        "partitioner": "murmur2_random" if murmur2 else "consistent_random",
        "linger.ms": 5,
    })
    deliveries = [None] * len(records)
    errors = []

    def report(index):
        def on_delivery(err, msg):
            if err is not None:
                errors.append(err)
            else:
                deliveries[index] = {"partition": msg.partition(), "offset": msg.offset()}
        return on_delivery

    for i, r in enumerate(records):
        kwargs = {"value": r["value"].encode("utf-8"), "headers": [(k, v.encode("utf-8")) for k, v in r["headers"]],
                  "on_delivery": report(i)}
        if r["key"] is not None:
            kwargs["key"] = r["key"].encode("utf-8")
        if r.get("timestamp") is not None:
            kwargs["timestamp"] = r["timestamp"]
        producer.produce(topic, **kwargs)
        producer.poll(0)
    remaining = producer.flush(60)
    if errors:
        raise KafkaException(errors[0])
    if remaining:
        raise RuntimeError("%d records not delivered in 60 s" % remaining)
    return deliveries


def produce_transactions(topic, transactionalId, transactions):
    producer = Producer({
        "bootstrap.servers": BOOTSTRAP,
        "transactional.id": transactionalId,
        "partitioner": "murmur2_random",
        "linger.ms": 5,
    })
    producer.init_transactions(60)
    for txn in transactions:
        producer.begin_transaction()
        for r in txn["records"]:
            kwargs = {"value": r["value"].encode("utf-8"), "headers": [(k, v.encode("utf-8")) for k, v in r["headers"]]}
            if r["key"] is not None:
                kwargs["key"] = r["key"].encode("utf-8")
            producer.produce(topic, **kwargs)
            producer.poll(0)
        if producer.flush(60):
            raise RuntimeError("records of a transaction not delivered in 60 s")
        if txn["commit"]:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    return None


def transform_in_transaction(input, output, group, transactionalId, count, timeoutMs):
    consumer = Consumer({
        "bootstrap.servers": BOOTSTRAP,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    })
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": transactionalId, "linger.ms": 5})
    try:
        producer.init_transactions(60)
        consumer.subscribe([input])
        read = poll_messages(consumer, count, timeoutMs)
        producer.begin_transaction()
        for msg in read:
            producer.produce(output, value=msg.value())
            producer.poll(0)
        # The consumer's positions (the offset after each partition's last record) and its
        # group metadata (generation and member id, KIP-447) go with the transaction.
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 60)
        producer.commit_transaction(60)
    finally:
        consumer.close()
    return None


def to_record(msg):
    return {
        "partition": msg.partition(),
        "offset": msg.offset(),
        "key": text(msg.key()),
        "value": text(msg.value()) or "",
        "headers": [[k, text(v) or ""] for k, v in (msg.headers() or [])],
        "timestamp": msg.timestamp()[1],
    }


def start_offset(start):
    if start == "earliest":
        return OFFSET_BEGINNING
    if start == "latest":
        return OFFSET_END
    return start["offset"]


def consume(topic, partitions, count, timeoutMs, autoOffsetReset, maxWaitMs=None, readCommitted=None, **_):
    config = {
        "bootstrap.servers": BOOTSTRAP,
        "group.id": "compat-confluent-%s" % uuid.uuid4(),
        "enable.auto.commit": False,
        "auto.offset.reset": autoOffsetReset,
    }
    if readCommitted is not None:
        config["isolation.level"] = "read_committed" if readCommitted else "read_uncommitted"
    if maxWaitMs:
        config["fetch.wait.max.ms"] = maxWaitMs
    consumer = Consumer(config)
    start = start_offset(_["from"])
    consumer.assign([TopicPartition(topic, p, start) for p in partitions])
    records = [to_record(msg) for msg in poll_messages(consumer, count, timeoutMs)]
    consumer.close()
    return records


def poll_messages(consumer, count, timeoutMs):
    messages = []
    deadline = deadline_after(timeoutMs)
    while len(messages) < count:
        if past(deadline):
            raise RuntimeError("received %d of %d records" % (len(messages), count))
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            if msg.error().code() == -191:  # _PARTITION_EOF is informational
                continue
            raise KafkaException(msg.error())
        messages.append(msg)
    return messages


def list_offset(topic, partition, spec):
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "compat-confluent-offsets"})
    try:
        if spec in ("earliest", "latest"):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=20)
            return low if spec == "earliest" else high
        [found] = consumer.offsets_for_times([TopicPartition(topic, partition, spec["timestamp"])], timeout=20)
        if found.error is not None:
            raise KafkaException(found.error)
        return found.offset if found.offset >= 0 else None
    finally:
        consumer.close()


def group_consume(group, topic, members, count, timeoutMs):
    consumers = []
    assignments = [[] for _ in range(members)]

    def on_assign(i):
        def callback(consumer, partitions):
            assignments[i] = sorted(tp.partition for tp in partitions)
        return callback

    def on_revoke(i):
        def callback(consumer, partitions):
            assignments[i] = []
        return callback

    for i in range(members):
        c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
        c.subscribe([topic], on_assign=on_assign(i), on_revoke=on_revoke(i))
        consumers.append(c)
    records = {}
    deadline = deadline_after(timeoutMs)

    def caught_up():
        for c in consumers:
            for tp in c.position(c.assignment()):
                low, high = c.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10)
                if high > 0 and tp.offset < high:
                    return False
        return True

    while not (len(records) >= count and settled(assignments) and caught_up()):
        if past(deadline):
            raise RuntimeError("group did not settle with %d records: %s" % (len(records), assignments))
        for c in consumers:
            msg = c.poll(0.05)
            if msg is None or msg.error() is not None:
                continue
            r = to_record(msg)
            records["%d:%d" % (r["partition"], r["offset"])] = r
    for c in consumers:
        c.commit(asynchronous=False)
    result = [list(a) for a in assignments]
    for c in consumers:
        c.close()
    return {"assignments": result, "records": list(records.values())}


def committed_offsets(group, topic, partitions):
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=20)
        return [tp.offset if tp.offset >= 0 else None for tp in sorted(found, key=lambda tp: tp.partition)]
    finally:
        consumer.close()


def with_bootstrap(fn):
    def call(bootstrap, **params):
        global BOOTSTRAP
        BOOTSTRAP = bootstrap
        return fn(**params)
    return call


serve({name: with_bootstrap(fn) for name, fn in {
    "metadata": metadata,
    "describeTopic": describe_topic,
    "createTopic": create_topic,
    "listTopics": list_topics,
    "createPartitions": create_partitions,
    "describeConfigs": describe_configs,
    "alterConfigs": alter_configs,
    "deleteTopic": delete_topic,
    "produce": produce,
    "produceTransactions": produce_transactions,
    "transformInTransaction": transform_in_transaction,
    "consume": consume,
    "listOffset": list_offset,
    "groupConsume": group_consume,
    "committedOffsets": committed_offsets,
}.items()})
