"""librdkafka (confluent-kafka-python) for scripts/bench/consume.ts, fanout.ts and transactions.ts.

  produce BOOTSTRAP TOPIC PARTITIONS RECORDS RECORD_BYTES
      creates the topic (replication factor 1) and writes RECORDS keyed records of
      RECORD_BYTES each (linger.ms 5, batch.size 64 KiB, acks 1, no compression).
  produce-eos BOOTSTRAP TOPIC PARTITIONS RECORDS RECORD_BYTES TXN_RECORDS
      the same records from an idempotent producer (acks=all) with TXN_RECORDS 0, else from a
      transactional one committing every TXN_RECORDS records.
  consume BOOTSTRAP TOPIC PARTITIONS RECORDS
      reads every partition from its start with librdkafka's default consumer settings
      (assigned partitions, so that no group rebalance counts; read_committed) until RECORDS
      records arrived.

Prints one JSON line: records, bytes, transactions (produce-eos) and the seconds the writes
took, or (consume) the seconds from the first record to the last and the CPU seconds this
process used between them (every thread, librdkafka's included).
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

WRITE_CONFIG = {"linger.ms": 5, "batch.size": 65536, "compression.type": "none"}


def create_topic(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result()


def write(producer, topic, records, record_bytes, txn_records):
    """Writes the records, committing every txn_records of them when txn_records > 0."""
    failed = []
    value = b"v" * record_bytes
    transactions = 0
    if txn_records > 0:
        producer.init_transactions(60)
    started = time.monotonic()
    for i in range(records):
        if txn_records > 0 and i % txn_records == 0:
            producer.begin_transaction()
        while True:
            try:
                producer.produce(topic, value, key=str(i).encode(),
                                 on_delivery=lambda err, _m: err and failed.append(str(err)))
                break
            except BufferError:
                producer.poll(0.01)
        if txn_records > 0 and (i + 1) % txn_records == 0:
            producer.commit_transaction(60)
            transactions += 1
        elif i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0 or failed:
        raise SystemExit(f"produce failed: {failed[:3]}")
    return {"records": records, "bytes": records * record_bytes, "transactions": transactions,
            "seconds": time.monotonic() - started}


def produce(bootstrap, topic, partitions, records, record_bytes):
    create_topic(bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, **WRITE_CONFIG})
    return write(producer, topic, records, record_bytes, 0)


def produce_eos(bootstrap, topic, partitions, records, record_bytes, txn_records):
    create_topic(bootstrap, topic, partitions)
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, **WRITE_CONFIG}
    if txn_records > 0:
        config["transactional.id"] = "bench-" + topic
    return write(Producer(config), topic, records, record_bytes, txn_records)


def consume(bootstrap, topic, partitions, records):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-consume",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got = 0
    nbytes = 0
    first = None
    first_cpu = 0.0
    deadline = time.monotonic() + 300
    while got < records:
        if time.monotonic() > deadline:
            raise SystemExit(f"consume: {got} of {records} records within 300 s")
        # Never more than are still to come: consume() waits out its timeout for a batch it
        # cannot fill, which would add that second to the time of the last records.
        for message in consumer.consume(min(10000, records - got), 1.0):
            if message.error():
                continue
            if first is None:
                first = time.monotonic()
                first_cpu = time.process_time()
            got += 1
            nbytes += len(message.value())
    seconds = time.monotonic() - first
    cpu_seconds = time.process_time() - first_cpu
    consumer.close()
    return {"records": got, "bytes": nbytes, "seconds": seconds, "cpuSeconds": cpu_seconds}


def main():
    mode, bootstrap, topic, partitions, records = sys.argv[1:6]
    if mode == "produce":
        out = produce(bootstrap, topic, int(partitions), int(records), int(sys.argv[6]))
    elif mode == "produce-eos":
        out = produce_eos(bootstrap, topic, int(partitions), int(records), int(sys.argv[6]), int(sys.argv[7]))
    elif mode == "consume":
        out = consume(bootstrap, topic, int(partitions), int(records))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out), flush=True)


main()
