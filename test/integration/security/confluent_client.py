"""Produces records through librdkafka (confluent-kafka-python) and reads them back, with the
security settings it is given, for test/integration/security/*.test.ts.

  python3 confluent_client.py '{"config": {...}, "topic": "t", "values": ["a", "b"]}'

"config" holds librdkafka properties (bootstrap.servers, security.protocol, sasl.*, ssl.*),
given to both the producer and the consumer. Prints one JSON line and exits 0:

  {"delivered": n, "consumed": ["a", "b"], "errors": ["..."]}

The first error librdkafka reports (a refused authentication, a failed TLS handshake) ends
the run: a refused client would otherwise retry until its timeouts.
"""
import json
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer

TIMEOUT_S = 30

request = json.loads(sys.argv[1])
errors = []


def on_error(err):
    errors.append(f"{err.name()}: {err.str()}")


def produce(values):
    delivered = []

    def on_delivery(err, _msg):
        if err is None:
            delivered.append(1)
        else:
            errors.append(f"{err.name()}: {err.str()}")

    producer = Producer({**request["config"], "error_cb": on_error, "acks": "all", "message.timeout.ms": TIMEOUT_S * 1000})
    for value in values:
        producer.produce(request["topic"], value.encode(), on_delivery=on_delivery)
    deadline = time.monotonic() + TIMEOUT_S
    while len(delivered) < len(values) and not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    return len(delivered)


def consume(count):
    consumer = Consumer(
        {
            **request["config"],
            "error_cb": on_error,
            "group.id": f"confluent-client-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([request["topic"]])
    consumed = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(consumed) < count and not errors and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(f"{msg.error().name()}: {msg.error().str()}")
            else:
                consumed.append(msg.value().decode())
    finally:
        consumer.close()
    return consumed


delivered = produce(request["values"])
consumed = consume(delivered) if delivered > 0 and not errors else []
print(json.dumps({"delivered": delivered, "consumed": consumed, "errors": errors}))
