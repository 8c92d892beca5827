import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's Java producer with its defaults (idempotent, acks=all) producing to one partition
 * until its stdin closes, for test/integration/cluster/non-js-clients.test.ts (the librdkafka
 * twin is test/helpers/python-failover-producer.py). Prints one JSON line per event:
 *
 * <pre>
 *   {"event":"ack","seq":i,"partition":p,"offset":o}   record "v&lt;i&gt;" acknowledged at offset o
 *   {"event":"error","seq":i,"error":"..."}            record i failed (after the client's retries)
 *   {"event":"done","sent":n}                          every record sent has been reported
 * </pre>
 *
 * Run as {@code java FailoverProducer BOOTSTRAP TOPIC PARTITION INTERVAL_MS}.
 */
public final class FailoverProducer {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int partition = Integer.parseInt(args[2]);
    long intervalMs = Long.parseLong(args[3]);

    CountDownLatch stdinClosed = new CountDownLatch(1);
    Thread watcher = new Thread(() -> {
      try {
        while (System.in.read() >= 0) {
          // Only the end of input matters.
        }
      } catch (Exception ignored) {
        // A broken stdin ends production as a closed one does.
      }
      stdinClosed.countDown();
    });
    watcher.setDaemon(true);
    watcher.start();

    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.CLIENT_ID_CONFIG, "java-failover-producer");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    // Idempotence and acks=all are the client's defaults; said here so that a changed default
    // cannot turn this into another test.
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, "0");

    long sent = 0;
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      while (!stdinClosed.await(intervalMs, TimeUnit.MILLISECONDS)) {
        long seq = sent++;
        byte[] value = ("v" + seq).getBytes(StandardCharsets.UTF_8);
        producer.send(new ProducerRecord<>(topic, partition, null, value), (metadata, error) -> {
          ObjectNode event = JSON.createObjectNode();
          if (error != null) {
            event.put("event", "error").put("seq", seq).put("error", error.getClass().getSimpleName() + ": " + error.getMessage());
          } else {
            event.put("event", "ack").put("seq", seq).put("partition", metadata.partition()).put("offset", metadata.offset());
          }
          emit(event);
        });
      }
      producer.flush();
    }
    emit(JSON.createObjectNode().put("event", "done").put("sent", sent));
    System.exit(0);
  }

  private static synchronized void emit(ObjectNode event) {
    try {
      System.out.println(JSON.writeValueAsString(event));
      System.out.flush();
    } catch (Exception error) {
      throw new RuntimeException(error);
    }
  }
}
