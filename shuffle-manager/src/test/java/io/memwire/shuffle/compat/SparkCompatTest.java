package io.memwire.shuffle.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.SparkConf;
import org.apache.spark.network.client.StreamCallbackWithID;
import org.apache.spark.network.util.TransportConf;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleIndexBlockId;
import org.junit.jupiter.api.Test;

/**
 * Every probe of {@link SparkCompat} gives the answer expected of the Spark line the tests run on
 * (the build's Spark, or {@code -Dspark.runtime.version}), and what it selects works there. The
 * expectations are written per line from the release notes and javap of each line's jars; the code
 * under test never reads the version.
 */
class SparkCompatTest {
  private static final String VERSION = SparkCompat.sparkVersion();

  private static int[] version() {
    String[] p = VERSION.split("[.-]");
    return new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2])};
  }

  @Test
  void theTestsRunTheSparkTheBuildAskedFor() {
    String asked = System.getProperty("memwire.test.sparkVersion");
    if (asked != null) {
      assertEquals(asked, VERSION);
    }
  }

  @Test
  void probesAnswerAsTheRunningLineHasItsApi() {
    int[] v = version();
    boolean spark35 = v[0] == 3;
    Map<String, String> probes = SparkCompat.probes();
    assertEquals(
        spark35 ? (v[2] >= 2 ? "CONF_BLOCK_MANAGER_MAP" : "CONF_BLOCK_MANAGER") : "CONF",
        probes.get(SparkCompat.RESOLVER_PROBE),
        probes.toString());
    assertEquals(
        spark35 ? "4 arguments" : "5 arguments",
        probes.get(SparkCompat.TRANSPORT_CONF_PROBE),
        probes.toString());
    assertEquals(
        Boolean.toString(!spark35), probes.get(SparkCompat.TLS_RPC_PROBE), probes.toString());
    assertEquals(
        v[0] > 4 || (v[0] == 4 && v[1] >= 1) ? "6 arguments" : "5 arguments",
        probes.get(SparkCompat.SORTER_PROBE),
        probes.toString());
  }

  @Test
  void theHookedResolverIsSparksResolverAndCallsTheHook() throws Exception {
    AtomicReference<BlockId> asked = new AtomicReference<>();
    StreamCallbackWithID answer = new NoStream();
    IndexShuffleBlockResolver r =
        SparkCompat.newHookedResolver(
            new SparkConf(false),
            (id, sm) -> {
              asked.set(id);
              return answer;
            });
    BlockId id = new ShuffleIndexBlockId(3, 7L, 0);
    assertSame(answer, r.putShuffleBlockAsStream(id, null));
    assertEquals(id, asked.get());
  }

  @Test
  void shuffleTransportConfIsSparksShuffleModule() {
    TransportConf tc = SparkCompat.shuffleTransportConf(new SparkConf(false));
    assertNotNull(tc);
    assertEquals("shuffle", tc.getModuleName());
  }

  @Test
  void scalaCollectionsConvertBothWays() {
    List<String> in = List.of("a", "b", "c");
    scala.collection.Iterator<String> it = ScalaCollections.asScala(in.iterator());
    List<String> out = new ArrayList<>();
    while (it.hasNext()) {
      out.add(it.next());
    }
    assertEquals(in, out);
    assertEquals(in, ScalaCollections.callSeq(new Holder(), "items"));
    assertThrows(
        IllegalArgumentException.class, () -> ScalaCollections.callSeq(new Holder(), "missing"));
    assertThrows(
        IllegalArgumentException.class, () -> ScalaCollections.callSeq(new Holder(), "notSeq"));
  }

  /** A target with a method returning a Scala collection, as Spark's Seq-returning methods do. */
  public static final class Holder {
    /** A Scala collection of three strings. */
    @SuppressWarnings("deprecation") // JavaConverters: the API both Scala versions have
    public scala.collection.Iterable<String> items() {
      return scala.collection.JavaConverters$.MODULE$.iterableAsScalaIterable(
          List.of("a", "b", "c"));
    }

    /** Not a Scala collection. */
    public String notSeq() {
      return "x";
    }
  }

  private static final class NoStream implements StreamCallbackWithID {
    @Override
    public String getID() {
      return "none";
    }

    @Override
    public void onData(String streamId, ByteBuffer buf) {}

    @Override
    public void onComplete(String streamId) {}

    @Override
    public void onFailure(String streamId, Throwable cause) {}
  }
}
