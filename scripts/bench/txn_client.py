"""librdkafka (confluent-kafka-python) for scripts/bench/transactions.ts.

  produce BOOTSTRAP TOPIC PARTITIONS RECORDS RECORD_BYTES TXN_RECORDS
      creates the topic (replication factor 1) and writes RECORDS keyed records of
      RECORD_BYTES each (linger.ms 5, batch.size 64 KiB, no compression): with TXN_RECORDS 0
      from an idempotent producer (acks=all), else from a transactional one committing every
      TXN_RECORDS records.

Prints one JSON line: records, bytes, transactions and the seconds the writes took.
"""
import json
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def produce(bootstrap, topic, partitions, records, record_bytes, txn_records):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result()
    config = {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 65536,
              "compression.type": "none", "enable.idempotence": True}
    if txn_records > 0:
        config["transactional.id"] = "bench-" + topic
    producer = Producer(config)
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
    seconds = time.monotonic() - started
    return {"records": records, "bytes": records * record_bytes, "transactions": transactions, "seconds": seconds}


if __name__ == "__main__":
    mode, bootstrap, topic, partitions, records, record_bytes, txn_records = sys.argv[1:8]
    if mode != "produce":
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(produce(bootstrap, topic, int(partitions), int(records), int(record_bytes), int(txn_records))))
