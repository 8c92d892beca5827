"""An idempotent acks=all producer through librdkafka (confluent-kafka-python) that keeps
producing to one partition until its stdin closes, for
test/integration/cluster/non-js-clients.test.ts (the Java twin is
compat/java/FailoverProducer.java). Prints one JSON line per event on stdout:

  {"event":"ack","seq":i,"partition":p,"offset":o}   record "v<i>" acknowledged at offset o
  {"event":"error","seq":i,"error":"..."}            record i failed (after librdkafka's retries)
  {"event":"done","sent":n}                          every record sent has been reported

Records are "v0", "v1", ... produced one every INTERVAL_MS milliseconds; once stdin closes the
producer stops sending, flushes and exits 0.

  python3 python-failover-producer.py BOOTSTRAP TOPIC PARTITION INTERVAL_MS
"""
import json
import sys
import threading
import time

from confluent_kafka import Producer

bootstrap, topic, partition, interval_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
stdin_closed = threading.Event()


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def watch_stdin():
    sys.stdin.read()
    stdin_closed.set()


def report(seq):
    def on_delivery(err, msg):
        if err is not None:
            emit(event="error", seq=seq, error=str(err))
        else:
            emit(event="ack", seq=seq, partition=msg.partition(), offset=msg.offset())
    return on_delivery


def main():
    threading.Thread(target=watch_stdin, daemon=True).start()
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "client.id": "librdkafka-failover-producer",
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 0,
        # librdkafka's defaults ride through a failover (message.timeout.ms 300 s); a shorter
        # metadata refresh backoff finds the new leader sooner.
        "retry.backoff.ms": 100,
        "topic.metadata.refresh.fast.interval.ms": 100,
    })
    sent = 0
    while not stdin_closed.is_set():
        producer.produce(topic, value=("v%d" % sent).encode("utf-8"), partition=partition, on_delivery=report(sent))
        sent += 1
        due = time.monotonic() + interval_ms / 1000.0
        while time.monotonic() < due:
            producer.poll(max(0.0, due - time.monotonic()))
    remaining = producer.flush(120)
    if remaining:
        emit(event="error", seq=-1, error="%d records not delivered after 120 s" % remaining)
    emit(event="done", sent=sent)


main()
