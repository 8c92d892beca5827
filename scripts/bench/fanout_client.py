"""librdkafka (confluent-kafka-python) for scripts/bench/fanout.ts.

  create BOOTSTRAP TOPIC PARTITIONS
      creates the topic (replication factor 1).

The other modes connect, print "ready" once they could start work, wait for a line on stdin,
work, then print one JSON line. The line on stdin lets the bench start several processes at the
same instant, whatever each one's start-up and group join took. Times are time.monotonic()
(CLOCK_MONOTONIC), comparable between processes on one machine.

  group-consume BOOTSTRAP TOPIC GROUP RECORDS
      one member of consumer group GROUP, librdkafka's default consumer settings with
      auto.offset.reset=earliest, reads until RECORDS records arrived. It holds its assignment
      paused until the start line, so that the join is not part of the read.
      Prints records, bytes, first and last (the times the first and last record arrived).
  hot-produce BOOTSTRAP TOPIC PARTITIONS RECORD_BYTES HOT_SHARE WARMUP_S MEASURE_S
      sends as fast as the producer's queue takes records (librdkafka's default producer
      settings, acks=all): HOT_SHARE of them to partition 0, the rest round robin over the
      others, for WARMUP_S + MEASURE_S seconds. Prints the bytes acknowledged during the last
      MEASURE_S seconds into partition 0 (hot_bytes) and into the others (cold_bytes), all the
      bytes acknowledged (all_bytes), and errors.
  probe BOOTSTRAP TOPIC PARTITIONS RECORD_BYTES RATE WARMUP_S MEASURE_S
      sends RATE records a second, one at a time (linger.ms 0, acks=all), round robin over
      partitions 1.., and times each from produce() to its acknowledgement; records sent during
      the first WARMUP_S seconds are not timed. Prints the samples' count, the count of records
      sent after the warm-up (measured), p50, p99 and max in milliseconds, and errors.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE_S = 600


def wait_for_start():
    print("ready", flush=True)
    if sys.stdin.readline() == "":
        raise SystemExit("stdin closed before the start line")


def group_consume(bootstrap, topic, group, records):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest"})
    started = {"value": False}
    assigned = {"value": False}

    def on_assign(c, partitions):
        c.assign(partitions)
        if not started["value"]:
            c.pause(partitions)
        assigned["value"] = True

    consumer.subscribe([topic], on_assign=on_assign)
    deadline = time.monotonic() + DEADLINE_S
    while not assigned["value"]:
        if time.monotonic() > deadline:
            raise SystemExit(f"group-consume: no assignment within {DEADLINE_S} s")
        for message in consumer.consume(1, 0.1):
            if message.error() is None:
                raise SystemExit("group-consume: a record arrived before the assignment")
    wait_for_start()
    started["value"] = True
    consumer.resume(consumer.assignment())
    got = 0
    nbytes = 0
    first = None
    last = None
    deadline = time.monotonic() + DEADLINE_S
    while got < records:
        if time.monotonic() > deadline:
            raise SystemExit(f"group-consume: {got} of {records} records within {DEADLINE_S} s")
        # Never more than are still to come: consume() waits out its timeout for a batch it
        # cannot fill, which would add that second to the time of the last records.
        for message in consumer.consume(min(10000, records - got), 1.0):
            if message.error():
                continue
            if first is None:
                first = time.monotonic()
            got += 1
            nbytes += len(message.value())
        last = time.monotonic()
    consumer.close()
    return {"records": got, "bytes": nbytes, "first": first, "last": last}


def hot_produce(bootstrap, topic, partitions, record_bytes, hot_share, warmup_s, measure_s):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    producer.list_topics(topic, timeout=30)
    value = b"h" * record_bytes
    acked = {"hot": 0, "cold": 0, "all": 0}
    errors = []
    window = {"from": float("inf"), "to": float("inf")}

    def on_delivery(err, message):
        if err is not None:
            if err.code() != KafkaError._PURGE_QUEUE:
                errors.append(str(err))
            return
        acked["all"] += len(message.value())
        now = time.monotonic()
        if window["from"] <= now < window["to"]:
            acked["hot" if message.partition() == 0 else "cold"] += len(message.value())

    wait_for_start()
    started = time.monotonic()
    window["from"] = started + warmup_s
    window["to"] = window["from"] + measure_s
    # Of every 100 records, the first hot_share * 100 go to the hot partition.
    hot_per_100 = round(hot_share * 100)
    i = 0
    while time.monotonic() < window["to"]:
        k = i % 100
        if k < hot_per_100:
            partition = 0
        else:
            partition = 1 + ((i // 100) * (100 - hot_per_100) + k - hot_per_100) % (partitions - 1)
        try:
            producer.produce(topic, value, partition=partition, on_delivery=on_delivery)
            i += 1
        except BufferError:
            producer.poll(0.005)
        if i % 1000 == 0:
            producer.poll(0)
    producer.purge(in_queue=True, in_flight=False)
    producer.flush(60)
    return {"hot_bytes": acked["hot"], "cold_bytes": acked["cold"], "all_bytes": acked["all"],
            "seconds": measure_s, "errors": len(errors), "first_errors": errors[:3]}


def percentile(sorted_xs, q):
    return sorted_xs[min(len(sorted_xs) - 1, int(q * len(sorted_xs)))]


def probe(bootstrap, topic, partitions, record_bytes, rate, warmup_s, measure_s):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.list_topics(topic, timeout=30)
    value = b"c" * record_bytes
    samples = []
    errors = []

    def delivered(sent_at, counted):
        def on_delivery(err, _message):
            if err is not None:
                errors.append(str(err))
            elif counted:
                samples.append((time.monotonic() - sent_at) * 1000)
        return on_delivery

    wait_for_start()
    started = time.monotonic()
    measured_from = started + warmup_s
    interval = 1 / rate
    end = measured_from + measure_s
    n = 0
    measured = 0
    while True:
        due = started + n * interval
        if due >= end:
            break
        now = time.monotonic()
        while now < due:
            producer.poll(due - now)
            now = time.monotonic()
        counted = due >= measured_from
        measured += counted
        producer.produce(topic, value, partition=1 + n % (partitions - 1),
                         on_delivery=delivered(time.monotonic(), counted))
        producer.poll(0)
        n += 1
    producer.flush(60)
    samples.sort()
    if not samples:
        raise SystemExit(f"probe: no acknowledged record; errors {errors[:3]}")
    return {"samples": len(samples), "measured": measured, "p50_ms": percentile(samples, 0.5),
            "p99_ms": percentile(samples, 0.99), "max_ms": samples[-1],
            "errors": len(errors), "first_errors": errors[:3]}


def create(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result()
    return {}


def main():
    mode, bootstrap, topic = sys.argv[1:4]
    rest = sys.argv[4:]
    if mode == "create":
        out = create(bootstrap, topic, int(rest[0]))
    elif mode == "group-consume":
        out = group_consume(bootstrap, topic, rest[0], int(rest[1]))
    elif mode == "hot-produce":
        out = hot_produce(bootstrap, topic, int(rest[0]), int(rest[1]), float(rest[2]),
                          float(rest[3]), float(rest[4]))
    elif mode == "probe":
        out = probe(bootstrap, topic, int(rest[0]), int(rest[1]), float(rest[2]),
                    float(rest[3]), float(rest[4]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out), flush=True)


main()
