"""One member of a consumer group, through librdkafka (confluent-kafka-python) or kafka-python,
for test/broker/groups-librdkafka.test.ts. Prints one JSON line per event on stdout:

  {"event":"assigned","partitions":[...],"assignment":[...]}   partitions added by a rebalance
  {"event":"revoked","partitions":[...],"assignment":[...]}    partitions taken away
  {"event":"record","partition":p,"offset":o}
  {"event":"closed"}                                           after committing and leaving

"assignment" is the member's whole assignment after the change. Offsets are committed
automatically (every 200 ms, on revocation and on close). SIGTERM closes the consumer
cleanly (final commit, LeaveGroup); SIGKILL leaves the group without a word.

  python3 python-group-consumer.py confluent BOOTSTRAP GROUP TOPIC [ASSIGNMENT_STRATEGY]
  python3 python-group-consumer.py kafka-python BOOTSTRAP GROUP TOPIC
"""
import json
import signal
import sys

client, bootstrap, group, topic = sys.argv[1:5]
strategy = sys.argv[5] if len(sys.argv) > 5 else None
running = True
assignment = set()


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def stop(_signum, _frame):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)


def on_assign(partitions):
    added = sorted(p.partition for p in partitions)
    assignment.update(added)
    emit(event="assigned", partitions=added, assignment=sorted(assignment))


def on_revoke(partitions):
    removed = sorted(p.partition for p in partitions)
    assignment.difference_update(removed)
    emit(event="revoked", partitions=removed, assignment=sorted(assignment))


def run_confluent():
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": "librdkafka-group-member",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if strategy is not None:
        config["partition.assignment.strategy"] = strategy
    consumer = Consumer(config)
    # The binding assigns (eagerly or incrementally, by the negotiated protocol) after
    # these callbacks return, since they do not assign themselves.
    consumer.subscribe([topic], on_assign=lambda _c, ps: on_assign(ps), on_revoke=lambda _c, ps: on_revoke(ps))
    while running:
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error():
            emit(event="error", error=str(message.error()))
            continue
        emit(event="record", partition=message.partition(), offset=message.offset())
    consumer.close()


def run_kafka_python():
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            on_revoke(revoked)

        def on_partitions_assigned(self, assigned):
            on_assign(assigned)

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="kafka-python-group-member",
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        auto_commit_interval_ms=200,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=1000,
    )
    consumer.subscribe([topic], listener=Listener())
    while running:
        for tp, records in consumer.poll(timeout_ms=200).items():
            for record in records:
                emit(event="record", partition=tp.partition, offset=record.offset)
    consumer.close()


if client == "confluent":
    run_confluent()
elif client == "kafka-python":
    run_kafka_python()
else:
    raise SystemExit("unknown client " + client)
emit(event="closed")
