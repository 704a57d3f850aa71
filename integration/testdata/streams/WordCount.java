// WordCount is the Kafka Streams application of the integration tests (streams_test.go): lines
// -> words -> a repartition by word -> a count in the state store "counts" (changelog
// <application.id>-counts-changelog) -> "<word>=<count>" records on the output topic. With the
// record cache off, every word read emits exactly one update. It runs until SIGTERM, then
// closes cleanly (commits, writes its checkpoints) and exits 0; it prints each state change,
// and each store restore: "RESTORE_START <changelog> <partition> <from offset> <end offset>"
// and "RESTORED <changelog> <partition> <records>".
//
//   java -cp <kafka-streams jars>:<dir> WordCount BOOTSTRAP APPLICATION_ID STATE_DIR GUARANTEE INPUT OUTPUT [PROTOCOL]
//
// PROTOCOL "streams" (Kafka Streams 4.1+ on brokers of Kafka 4) makes the application a member
// of a streams group (group.protocol=streams, KIP-1071) instead of a classic group.
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;

public class WordCount {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[3]);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 10000);
        // Kafka Streams does not leave its group on close: the group empties when the
        // session times out, after which kreconcile takes the application as stopped.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        if (args.length > 6) {
            p.put("group.protocol", args[6]); // by name: Kafka Streams 3.7.1 has no such constant
        }

        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream(args[4])
            .flatMapValues(v -> Arrays.asList(v.split(" ")))
            .groupBy((k, w) -> w)
            .count(Materialized.as("counts"))
            .toStream()
            .mapValues((w, n) -> w + "=" + n)
            .to(args[5], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> System.out.println("STATE " + now));
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long from, long end) {
                System.out.println("RESTORE_START " + tp.topic() + " " + tp.partition() + " " + from + " " + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                System.out.println("RESTORED " + tp.topic() + " " + tp.partition() + " " + total);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            System.out.println("CLOSED");
            closed.countDown();
        }));
        streams.start();
        closed.await();
    }
}
