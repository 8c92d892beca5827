"""librdkafka (confluent-kafka-python) for scripts/bench/consume.ts.

  produce BOOTSTRAP TOPIC PARTITIONS RECORDS RECORD_BYTES
      creates the topic (replication factor 1) and writes RECORDS keyed records of
      RECORD_BYTES each (linger.ms 5, batch.size 64 KiB, acks 1, no compression).
  consume BOOTSTRAP TOPIC PARTITIONS RECORDS
      reads every partition from its start with librdkafka's default consumer settings
      (assigned partitions, so that no group rebalance counts) until RECORDS records arrived.

Prints one JSON line: records, bytes and the seconds from the first record to the last.
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def produce(bootstrap, topic, partitions, records, record_bytes):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 65536,
                         "acks": 1, "compression.type": "none"})
    failed = []
    value = b"v" * record_bytes
    started = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, key=str(i).encode(),
                                 on_delivery=lambda err, _m: err and failed.append(str(err)))
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0 or failed:
        raise SystemExit(f"produce failed: {failed[:3]}")
    return {"records": records, "bytes": records * record_bytes, "seconds": time.monotonic() - started}


def consume(bootstrap, topic, partitions, records):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-consume",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got = 0
    nbytes = 0
    first = None
    deadline = time.monotonic() + 300
    while got < records:
        if time.monotonic() > deadline:
            raise SystemExit(f"consume: {got} of {records} records within 300 s")
        for message in consumer.consume(10000, 1.0):
            if message.error():
                continue
            if first is None:
                first = time.monotonic()
            got += 1
            nbytes += len(message.value())
    seconds = time.monotonic() - first
    consumer.close()
    return {"records": got, "bytes": nbytes, "seconds": seconds}


def main():
    mode, bootstrap, topic, partitions, records = sys.argv[1:6]
    if mode == "produce":
        out = produce(bootstrap, topic, int(partitions), int(records), int(sys.argv[6]))
    else:
        out = consume(bootstrap, topic, int(partitions), int(records))
    print(json.dumps(out), flush=True)


main()
