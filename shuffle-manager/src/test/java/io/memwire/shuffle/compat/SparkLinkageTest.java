package io.memwire.shuffle.compat;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.compat.spark35.ResolverWithTaskIdMap;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proof that one jar serves every Spark line: every reference the shuffle manager's classes
 * (with the shaded Spark 3.5 classes) and the local cluster make into Spark and Scala resolves on
 * the Spark this test runs on, except the constructors of the resolver subclasses the running
 * Spark's probe does not select (each exists for another line and is never loaded here). Run on
 * every line: {@code -Dspark.runtime.version=... -Dspark.runtime.scala=...}.
 */
class SparkLinkageTest {
  private static final Logger LOG = LoggerFactory.getLogger(SparkLinkageTest.class);

  /** The resolver subclass of each probe answer, by internal class name. */
  private static final Map<SparkCompat.ResolverConstructor, String> RESOLVERS =
      Map.of(
          SparkCompat.ResolverConstructor.CONF,
          "io/memwire/shuffle/compat/HookedResolvers$OnConf",
          SparkCompat.ResolverConstructor.CONF_BLOCK_MANAGER,
          "io/memwire/shuffle/compat/HookedResolvers$OnConfAndBlockManager",
          SparkCompat.ResolverConstructor.CONF_BLOCK_MANAGER_MAP,
          "io/memwire/shuffle/compat/spark35/ResolverWithTaskIdMap");

  @Test
  void everySparkAndScalaReferenceResolvesOnThisLine() throws Exception {
    ClassLoader loader = getClass().getClassLoader();
    String selected = RESOLVERS.get(SparkCompat.resolverConstructor());
    List<Linkage.Broken> broken = new ArrayList<>();
    int classes = 0;
    List<Path> locations =
        new ArrayList<>(
            List.of(
                Linkage.locationOf(RdmaShuffleManager.class),
                Linkage.locationOf(ResolverWithTaskIdMap.class),
                Linkage.locationOf(LocalSparkCluster.class)));
    // More class directories or jars to check, e.g. main-job's, tpcds-bench's and verbs-check's
    // target/classes: -Dmemwire.linkage.extra=dir1,dir2 (surefire passes it on).
    String extra = System.getProperty("memwire.linkage.extra", "");
    for (String e : extra.split(",")) {
      if (!e.isBlank()) {
        locations.add(Path.of(e.trim()));
      }
    }
    for (Path location : locations) {
      for (Map.Entry<String, byte[]> c : Linkage.classFiles(location, "io/memwire/").entrySet()) {
        classes++;
        for (Linkage.Broken b : Linkage.check(c.getKey(), c.getValue(), loader)) {
          boolean otherLinesResolver =
              RESOLVERS.containsValue(b.fromClass())
                  && !b.fromClass().equals(selected)
                  && b.reference()
                      .startsWith("org/apache/spark/shuffle/IndexShuffleBlockResolver.<init>");
          if (!otherLinesResolver) {
            broken.add(b);
          }
        }
      }
    }
    LOG.info(
        "linkage on Spark {} (Scala {}): {} classes checked, {} broken references",
        SparkCompat.sparkVersion(),
        scala.util.Properties$.MODULE$.versionNumberString(),
        classes,
        broken.size());
    assertTrue(classes > 50, classes + " classes found");
    assertTrue(broken.isEmpty(), "references that do not link:\n" + joined(broken));
  }

  @Test
  void theCheckFindsAReferenceThatDoesNotLink() throws Exception {
    // The resolver subclasses of the other lines reference a constructor this Spark lacks, unless
    // this line has every constructor (4.0 has all three).
    ClassLoader loader = getClass().getClassLoader();
    String selected = RESOLVERS.get(SparkCompat.resolverConstructor());
    int found = 0;
    for (String other : RESOLVERS.values()) {
      if (other.equals(selected)) {
        continue;
      }
      Class<?> k = Class.forName(other.replace('/', '.'), false, loader);
      byte[] bytes;
      try (var in = k.getResourceAsStream("/" + other + ".class")) {
        bytes = in.readAllBytes();
      }
      found += Linkage.check(other, bytes, loader).size();
    }
    boolean allThree =
        SparkCompat.probes().get(SparkCompat.SORTER_PROBE).startsWith("5")
            && SparkCompat.tlsRpcSupported();
    assertTrue(allThree || found > 0, "a missing constructor was found: " + found);
  }

  private static String joined(List<Linkage.Broken> broken) {
    StringBuilder sb = new StringBuilder();
    for (Linkage.Broken b : broken) {
      sb.append("  ").append(b).append('\n');
    }
    return sb.toString();
  }
}
