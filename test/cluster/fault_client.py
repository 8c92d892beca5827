"""librdkafka (confluent-kafka-python) under the fault suite (test/cluster): an idempotent
acks=all producer and a consumer-group member in one process. The producer sends "NAME-0",
"NAME-1", ... round robin over the topic's partitions, one every INTERVAL_MS; the consumer
reads the whole topic in GROUP and commits what it processed. One JSON line per event:

  {"event":"ack","seq":i,"partition":p,"offset":o}   record NAME-i acknowledged at offset o
  {"event":"error","seq":i,"error":"..."}            record i failed (after the client's retries)
  {"event":"done","sent":n}                          producing stopped; every record sent is reported
  {"event":"record","partition":p,"offset":o,"value":v}
  {"event":"commit","partition":p,"offset":o}        offset o committed for partition p
  {"event":"closed"}

A "stop-producing" line on stdin stops the producer (flush, then "done"); the end of stdin
closes the consumer (a last commit, LeaveGroup) and exits 0.

  python3 fault_client.py BOOTSTRAP TOPIC PARTITIONS NAME GROUP INTERVAL_MS
"""
import json
import sys
import threading
import time

from confluent_kafka import Consumer, Producer

bootstrap, topic, partitions, name, group, interval_ms = sys.argv[1:7]
partitions, interval_ms = int(partitions), int(interval_ms)
stop_producing = threading.Event()
stdin_closed = threading.Event()
lock = threading.Lock()


def emit(**event):
    with lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def watch_stdin():
    for line in sys.stdin:
        if line.strip() == "stop-producing":
            stop_producing.set()
    stop_producing.set()
    stdin_closed.set()


def report(seq):
    def on_delivery(err, msg):
        if err is not None:
            emit(event="error", seq=seq, error=str(err))
        else:
            emit(event="ack", seq=seq, partition=msg.partition(), offset=msg.offset())
    return on_delivery


def produce():
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "client.id": name,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "retry.backoff.ms": 100,
        "topic.metadata.refresh.fast.interval.ms": 100,
        # Long enough to ride through every fault of a schedule (each heals within seconds).
        "message.timeout.ms": 120000,
    })
    sent = 0
    while not stop_producing.is_set():
        producer.produce(topic, value=("%s-%d" % (name, sent)).encode("utf-8"), partition=sent % partitions, on_delivery=report(sent))
        sent += 1
        due = time.monotonic() + interval_ms / 1000.0
        while time.monotonic() < due:
            producer.poll(max(0.0, due - time.monotonic()))
    remaining = producer.flush(150)
    if remaining:
        emit(event="error", seq=-1, error="%d records not reported after 150 s" % remaining)
    emit(event="done", sent=sent)


def on_commit(err, offsets):
    if err is not None:
        emit(event="commit-error", error=str(err))
        return
    for tp in offsets:
        if tp.error is None and tp.offset >= 0:
            emit(event="commit", partition=tp.partition, offset=tp.offset)


def consume():
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name + "-consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 500,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 1000,
        "topic.metadata.refresh.interval.ms": 2000,
        "on_commit": on_commit,
    })
    consumer.subscribe([topic])
    while not stdin_closed.is_set():
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error():
            continue
        emit(event="record", partition=message.partition(), offset=message.offset(), value=message.value().decode("utf-8"))
    consumer.close()


threading.Thread(target=watch_stdin, daemon=True).start()
producer_thread = threading.Thread(target=produce)
producer_thread.start()
consume()
producer_thread.join()
emit(event="closed")
