import java.util.*;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.*;

/* A KTable over one topic, materialized; prints "key<TAB>value" of store.all(), sorted, once the
 * store holds exactly the keys of the file given (one key per line), or exits 1 after 60 s. */
public class KTableDump {
    public static void main(String[] a) throws Exception {
        String brokers = a[0], topic = a[1], app = a[2], stateDir = a[3];
        Set<String> want = new TreeSet<>(java.nio.file.Files.readAllLines(java.nio.file.Path.of(a[4])));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put("auto.offset.reset", "earliest");
        StreamsBuilder b = new StreamsBuilder();
        b.table(topic, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("t"));
        KafkaStreams ks = new KafkaStreams(b.build(), p);
        ks.start();
        long deadline = System.currentTimeMillis() + 60000;
        Map<String, String> got = new TreeMap<>();
        while (System.currentTimeMillis() < deadline) {
            if (ks.state() == KafkaStreams.State.RUNNING) {
                try {
                    ReadOnlyKeyValueStore<String, String> s = ks.store(
                        StoreQueryParameters.fromNameAndType("t", QueryableStoreTypes.keyValueStore()));
                    got.clear();
                    try (KeyValueIterator<String, String> it = s.all()) {
                        while (it.hasNext()) {
                            KeyValue<String, String> kv = it.next();
                            got.put(kv.key, kv.value);
                        }
                    }
                    if (got.keySet().equals(want)) {
                        for (Map.Entry<String, String> e : got.entrySet())
                            System.out.println(e.getKey() + "\t" + e.getValue());
                        ks.close();
                        System.exit(0);
                    }
                } catch (org.apache.kafka.streams.errors.InvalidStateStoreException e) {
                    /* rebalancing: try again */
                }
            }
            Thread.sleep(100);
        }
        System.err.println("KTableDump: store keys " + got.keySet() + ", want " + want);
        ks.close();
        System.exit(1);
    }
}
