package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * The jar users pass with {@code --jars} holds Memwire and DiSNI's Java classes only, and none of
 * its classes is also in the Spark runtime: nothing it adds can clash with Spark's own.
 */
class SparkBundleIT {
  private static Set<String> classes(Path jar) throws IOException {
    Set<String> out = new HashSet<>();
    try (ZipFile z = new ZipFile(jar.toFile())) {
      for (ZipEntry e : java.util.Collections.list(z.entries())) {
        if (e.getName().endsWith(".class")) {
          // A multi-release entry (the manager for Java 17+) is the class of its plain name.
          out.add(e.getName().replaceFirst("^META-INF/versions/\\d+/", ""));
        }
      }
    }
    return out;
  }

  @Test
  void bundleHoldsOnlyMemwireAndDisniAndClashesWithNothingInSpark() throws Exception {
    String version = System.getProperty("project.version");
    Path bundle =
        Paths.get(
            "..", "shuffle-manager", "target", "memwire-shuffle-manager-" + version + "-spark.jar");
    Set<String> ours = classes(bundle);
    assertTrue(ours.contains("io/memwire/shuffle/RdmaShuffleManager.class"));
    assertTrue(ours.contains("io/memwire/transfer/TransferNode.class"));
    assertTrue(ours.contains("com/ibm/disni/RdmaEndpoint.class"));
    List<String> foreign = new ArrayList<>();
    for (String c : ours) {
      if (!c.startsWith("io/memwire/") && !c.startsWith("com/ibm/disni/")) {
        foreign.add(c);
      }
    }
    assertTrue(foreign.isEmpty(), "classes other than Memwire's and DiSNI's: " + foreign);
    List<String> clashes = new ArrayList<>();
    try (Stream<Path> jars = Files.list(Paths.get("target", "spark-home", "jars"))) {
      for (Path jar : (Iterable<Path>) jars::iterator) {
        assertFalse(
            jar.getFileName().toString().startsWith("memwire-"),
            "the Spark runtime must not contain Memwire itself: " + jar);
        for (String c : classes(jar)) {
          if (ours.contains(c)) {
            clashes.add(c + " in " + jar.getFileName());
          }
        }
      }
    }
    assertTrue(clashes.isEmpty(), "classes also in Spark's runtime: " + clashes);
  }
}
