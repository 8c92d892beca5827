"""The process protocol shared by compat's Python client drivers.

A driver is run as `python3 driver.py OPERATION` with the operation's parameters as JSON on
stdin. It prints the result as JSON on stdout and exits 0, or prints the client's error on
stderr and exits 3. compat/clients/process-driver.ts is the other end.
"""
import json
import sys
import time
import traceback


def serve(operations):
    op = sys.argv[1]
    params = json.load(sys.stdin)
    try:
        result = operations[op](**params)
    except Exception as error:  # the client's own error is the cell's reason
        sys.stderr.write(traceback.format_exc())
        sys.stderr.write("CLIENT-ERROR: %s: %s\n" % (type(error).__name__, error))
        sys.exit(3)
    json.dump(result, sys.stdout)
    sys.stdout.flush()


def text(value):
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


def deadline_after(timeout_ms):
    return time.monotonic() + timeout_ms / 1000.0


def past(deadline):
    return time.monotonic() > deadline


def settled(assignments):
    flat = [p for a in assignments for p in a]
    return all(len(a) > 0 for a in assignments) and len(set(flat)) == len(flat)
