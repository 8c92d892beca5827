"""compat driver for kafka-python, see common.py for the protocol."""
import threading
import time

import kafka.errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

from common import deadline_after, past, serve, settled, text

BOOTSTRAP = None


def admin():
    return KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="compat-kafka-python")


def raise_for(code):
    if code != 0:
        raise kafka.errors.for_code(code)()


def metadata():
    a = admin()
    cluster = a.describe_cluster()
    topics = a.list_topics()
    a.close()
    return {
        "brokers": [{"id": b["node_id"], "host": b["host"], "port": b["port"]} for b in cluster["brokers"]],
        "controllerId": cluster["controller_id"],
        "topics": topics,
    }


def describe_topic(topic):
    a = admin()
    [found] = a.describe_topics([topic])
    a.close()
    raise_for(found["error_code"])
    return {"partitions": len(found["partitions"])}


def create_topic(topic, partitions, configs):
    a = admin()
    response = a.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs)])
    a.close()
    for t in response.topic_errors:
        raise_for(t[1])
    return None


def list_topics():
    a = admin()
    topics = a.list_topics()
    a.close()
    return topics


def create_partitions(topic, totalCount):
    a = admin()
    response = a.create_partitions({topic: NewPartitions(totalCount)})
    a.close()
    for t in response.topic_errors:
        raise_for(t[1])
    return None


def describe_configs(topic):
    a = admin()
    [response] = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    a.close()
    [resource] = response.resources
    raise_for(resource[0])
    # (error_code, error_message, resource_type, resource_name, config_entries)
    return {entry[0]: entry[1] for entry in resource[4]}


def alter_configs(topic, configs):
    a = admin()
    response = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
    a.close()
    for resource in response.resources:
        raise_for(resource[0])
    return None


def delete_topic(topic):
    a = admin()
    response = a.delete_topics([topic])
    a.close()
    for t in response.topic_error_codes:
        raise_for(t[1])
    return None


def produce(topic, records, codec, idempotent, murmur2):
    if idempotent:
        raise RuntimeError("kafka-python 2.0.2 has no idempotent producer")
    # kafka-python's default partitioner is murmur2, as Java's.
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", linger_ms=5, max_block_ms=20000,
                             compression_type=None if codec == "none" else codec)
    futures = []
    for r in records:
        futures.append(producer.send(
            topic,
            key=None if r["key"] is None else r["key"].encode("utf-8"),
            value=r["value"].encode("utf-8"),
            headers=[(k, v.encode("utf-8")) for k, v in r["headers"]],
            timestamp_ms=r.get("timestamp"),
        ))
    producer.flush(60)
    deliveries = []
    for f in futures:
        meta = f.get(timeout=60)
        deliveries.append({"partition": meta.partition, "offset": meta.offset})
    producer.close()
    return deliveries


def to_record(r):
    return {
        "partition": r.partition,
        "offset": r.offset,
        "key": text(r.key),
        "value": text(r.value) or "",
        "headers": [[k, text(v) or ""] for k, v in (r.headers or [])],
        "timestamp": r.timestamp,
    }


def consume(topic, partitions, count, timeoutMs, autoOffsetReset, maxWaitMs=None, **rest):
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None, enable_auto_commit=False,
                             auto_offset_reset=autoOffsetReset, fetch_max_wait_ms=maxWaitMs or 500)
    tps = [TopicPartition(topic, p) for p in partitions]
    consumer.assign(tps)
    start = rest["from"]
    if start == "earliest":
        consumer.seek_to_beginning(*tps)
    elif start == "latest":
        consumer.seek_to_end(*tps)
    else:
        for tp in tps:
            consumer.seek(tp, start["offset"])
    records = []
    deadline = deadline_after(timeoutMs)
    while len(records) < count:
        if past(deadline):
            raise RuntimeError("received %d of %d records" % (len(records), count))
        for batch in consumer.poll(timeout_ms=200).values():
            records.extend(to_record(r) for r in batch)
    consumer.close()
    return records


def list_offset(topic, partition, spec):
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None)
    tp = TopicPartition(topic, partition)
    try:
        if spec == "earliest":
            return consumer.beginning_offsets([tp])[tp]
        if spec == "latest":
            return consumer.end_offsets([tp])[tp]
        found = consumer.offsets_for_times({tp: spec["timestamp"]})[tp]
        return None if found is None else found.offset
    finally:
        consumer.close()


def group_consume(group, topic, members, count, timeoutMs):
    # kafka-python joins a group inside poll() and blocks there until the join completes, so
    # each member polls on its own thread (a KafkaConsumer belongs to one thread).
    lock = threading.Lock()
    records = {}
    state = [{"assignment": [], "caught_up": False, "error": None} for _ in range(members)]
    stop = threading.Event()

    def member(i):
        c = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group, enable_auto_commit=False,
                          auto_offset_reset="earliest")
        try:
            while not stop.is_set():
                batches = c.poll(timeout_ms=100)
                assigned = list(c.assignment())
                ends = c.end_offsets(assigned) if assigned else {}
                caught_up = all(c.position(tp) >= ends[tp] for tp in assigned)
                with lock:
                    for batch in batches.values():
                        for r in batch:
                            records["%d:%d" % (r.partition, r.offset)] = to_record(r)
                    state[i] = {"assignment": sorted(tp.partition for tp in assigned), "caught_up": caught_up,
                                "error": None}
            c.commit()
        except Exception as error:
            with lock:
                state[i]["error"] = repr(error)
        finally:
            c.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(members)]
    for t in threads:
        t.start()
    deadline = deadline_after(timeoutMs)
    try:
        while True:
            with lock:
                errors = [s["error"] for s in state if s["error"]]
                assignments = [s["assignment"] for s in state]
                done = len(records) >= count and settled(assignments) and all(s["caught_up"] for s in state)
                received = len(records)
            if errors:
                raise RuntimeError("group member failed: %s" % errors[0])
            if done:
                break
            if past(deadline):
                raise RuntimeError("group did not settle with %d records: %s" % (received, assignments))
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    errors = [s["error"] for s in state if s["error"]]
    if errors:
        raise RuntimeError("group member failed: %s" % errors[0])
    return {"assignments": assignments, "records": list(records.values())}


def committed_offsets(group, topic, partitions):
    a = admin()
    found = a.list_consumer_group_offsets(group)
    a.close()
    by_partition = {tp.partition: meta.offset for tp, meta in found.items() if tp.topic == topic}
    return [by_partition.get(p) if by_partition.get(p, -1) >= 0 else None for p in range(partitions)]


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
    "consume": consume,
    "listOffset": list_offset,
    "groupConsume": group_consume,
    "committedOffsets": committed_offsets,
}.items()})
