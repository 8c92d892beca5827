// The Node flags the broker process runs with: `npm start` and the `sluice` command pass
// them, as Kafka's start scripts pass the JVM its GC settings. Reading produce traffic
// allocates a buffer per socket read and per request frame (hundreds of MB/s of 64 KiB
// buffers under load); with V8's default 16 MiB semi-spaces many of them are promoted, and
// the old-generation collections that follow, each waking V8's helper threads, cost more
// than the appends themselves. 32 MiB semi-spaces keep them in the young generation
// (scripts/bench/broker measures the difference). The semi-spaces grow to that size only
// under such allocation rates; an idle broker does not pay for them.
export const BROKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];
