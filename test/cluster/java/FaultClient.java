import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's Java client under the fault suite (test/cluster): an idempotent acks=all producer and
 * a consumer-group member in one JVM, the twin of test/cluster/fault_client.py with the same
 * arguments, stdin commands and JSON lines:
 *
 * <pre>
 *   {"event":"ack","seq":i,"partition":p,"offset":o}   record NAME-i acknowledged at offset o
 *   {"event":"error","seq":i,"error":"..."}            record i failed (after the client's retries)
 *   {"event":"done","sent":n}                          producing stopped; every record sent is reported
 *   {"event":"record","partition":p,"offset":o,"value":v}
 *   {"event":"commit","partition":p,"offset":o}        offset o committed for partition p
 *   {"event":"closed"}
 * </pre>
 *
 * Run as {@code java FaultClient BOOTSTRAP TOPIC PARTITIONS NAME GROUP INTERVAL_MS}.
 */
public final class FaultClient {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    String name = args[3];
    String group = args[4];
    long intervalMs = Long.parseLong(args[5]);

    CountDownLatch stopProducing = new CountDownLatch(1);
    CountDownLatch stdinClosed = new CountDownLatch(1);
    Thread watcher = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        String line;
        while ((line = in.readLine()) != null) {
          if (line.trim().equals("stop-producing")) stopProducing.countDown();
        }
      } catch (Exception ignored) {
        // A broken stdin ends the run as a closed one does.
      }
      stopProducing.countDown();
      stdinClosed.countDown();
    });
    watcher.setDaemon(true);
    watcher.start();

    Thread producer = new Thread(() -> produce(bootstrap, topic, partitions, name, intervalMs, stopProducing));
    producer.start();
    consume(bootstrap, topic, name, group, stdinClosed);
    producer.join();
    emit(JSON.createObjectNode().put("event", "closed"));
    System.exit(0);
  }

  private static void produce(String bootstrap, String topic, int partitions, String name, long intervalMs, CountDownLatch stop) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.CLIENT_ID_CONFIG, name);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    // Long enough to ride through every fault of a schedule (each heals within seconds).
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "2000");
    long sent = 0;
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      while (!stop.await(intervalMs, TimeUnit.MILLISECONDS)) {
        long seq = sent++;
        byte[] value = (name + "-" + seq).getBytes(StandardCharsets.UTF_8);
        producer.send(new ProducerRecord<>(topic, (int) (seq % partitions), null, value), (metadata, error) -> {
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
    } catch (InterruptedException error) {
      Thread.currentThread().interrupt();
    }
    emit(JSON.createObjectNode().put("event", "done").put("sent", sent));
  }

  private static void consume(String bootstrap, String topic, String name, String group, CountDownLatch stop) throws InterruptedException {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, name + "-consumer");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
    props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "2000");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      consumer.subscribe(List.of(topic));
      while (stop.getCount() > 0) {
        try {
          ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
          for (ConsumerRecord<byte[], byte[]> record : records) {
            emit(JSON.createObjectNode()
                .put("event", "record")
                .put("partition", record.partition())
                .put("offset", record.offset())
                .put("value", new String(record.value(), StandardCharsets.UTF_8)));
          }
          if (!records.isEmpty()) consumer.commitAsync(FaultClient::reportCommit);
        } catch (RuntimeException error) {
          // A commit refused by a rebalance, a coordinator moving: the next poll goes on.
          emit(JSON.createObjectNode().put("event", "commit-error").put("error", error.getClass().getSimpleName() + ": " + error.getMessage()));
        }
      }
      try {
        consumer.commitSync(Duration.ofSeconds(10));
      } catch (RuntimeException error) {
        emit(JSON.createObjectNode().put("event", "commit-error").put("error", error.getClass().getSimpleName() + ": " + error.getMessage()));
      }
    }
  }

  private static void reportCommit(Map<TopicPartition, OffsetAndMetadata> offsets, Exception error) {
    if (error != null) {
      emit(JSON.createObjectNode().put("event", "commit-error").put("error", error.getClass().getSimpleName() + ": " + error.getMessage()));
      return;
    }
    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
      emit(JSON.createObjectNode().put("event", "commit").put("partition", e.getKey().partition()).put("offset", e.getValue().offset()));
    }
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
