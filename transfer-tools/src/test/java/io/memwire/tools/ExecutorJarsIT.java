package io.memwire.tools;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * The tools stay off the executors' class path: block-transfer's jar and the shuffle manager's
 * Spark jar (the one {@code --jars} ships to every executor), as this build packaged them, hold no
 * class of the doctor or the transfer benchmark, under their old or their new package, while this
 * module's jar holds them all; the Spark jar carries the shuffle service's client but not the
 * service; the Flight jar applications load holds no Flight benchmark. Runs after {@code package}
 * (failsafe); the jars' paths come from the pom.
 */
class ExecutorJarsIT {
  /** Where tool classes live now and where they lived before they moved here. */
  private static final List<String> TOOL_PACKAGES =
      List.of("io/memwire/tools/", "io/memwire/transfer/doctor/", "io/memwire/transfer/bench/");

  private static Path jar(String property) {
    String path = System.getProperty(property);
    assertTrue(path != null, "system property " + property + " is not set (run through Maven)");
    Path jar = Path.of(path);
    assertTrue(
        Files.isRegularFile(jar),
        jar + " does not exist: package it first (mvn -B -DskipTests package)");
    return jar;
  }

  private static List<String> classes(Path jar) throws IOException {
    List<String> out = new ArrayList<>();
    try (ZipFile z = new ZipFile(jar.toFile())) {
      for (ZipEntry e : Collections.list(z.entries())) {
        if (e.getName().endsWith(".class")) {
          out.add(e.getName());
        }
      }
    }
    return out;
  }

  /** The classes under any of {@code packages} (as entry-name prefixes). */
  private static List<String> under(List<String> classes, List<String> packages) {
    List<String> out = new ArrayList<>();
    for (String c : classes) {
      for (String p : packages) {
        if (c.startsWith(p)) {
          out.add(c);
        }
      }
    }
    return out;
  }

  private static void assertNoTools(String property, String mustHave) throws IOException {
    Path jar = jar(property);
    List<String> classes = classes(jar);
    assertTrue(classes.contains(mustHave), jar + " lacks " + mustHave + ": not the jar meant");
    List<String> tools = under(classes, TOOL_PACKAGES);
    assertTrue(tools.isEmpty(), jar + " carries tool classes: " + tools);
  }

  @Test
  void blockTransferJarHoldsNoTool() throws IOException {
    assertNoTools("memwire.jar.blockTransfer", "io/memwire/transfer/TransferNode.class");
  }

  @Test
  void sparkJarHoldsNoTool() throws IOException {
    assertNoTools("memwire.jar.spark", "io/memwire/shuffle/RdmaShuffleManager.class");
  }

  @Test
  void sparkJarHoldsTheServiceClientNotTheService() throws IOException {
    List<String> classes = classes(jar("memwire.jar.spark"));
    assertTrue(
        classes.contains("io/memwire/shuffle/protocol/ServiceClient.class"),
        "the Spark jar lacks the shuffle service's client");
    assertTrue(
        classes.contains("io/memwire/shuffle/directory/ShuffleDirectory.class"),
        "the Spark jar lacks the shuffle directory format");
    List<String> daemon =
        classes.stream()
            .filter(c -> c.startsWith("io/memwire/shuffle/service/"))
            .filter(c -> !c.startsWith("io/memwire/shuffle/protocol/"))
            .toList();
    assertTrue(daemon.isEmpty(), "the Spark jar carries the shuffle service: " + daemon);
  }

  @Test
  void flightJarHoldsNoBenchmark() throws IOException {
    Path jar = jar("memwire.jar.flight");
    List<String> classes = classes(jar);
    assertTrue(classes.contains("io/memwire/flight/RdmaFlightProducer.class"), jar::toString);
    List<String> bench = under(classes, List.of("io/memwire/flight/bench/"));
    assertTrue(bench.isEmpty(), jar + " carries benchmark classes: " + bench);
  }

  @Test
  void toolsJarHoldsTheDoctorAndTheBenchmark() throws IOException {
    List<String> tools = under(classes(jar("memwire.jar.tools")), TOOL_PACKAGES);
    assertTrue(tools.contains("io/memwire/tools/doctor/Doctor.class"), tools::toString);
    assertTrue(tools.contains("io/memwire/tools/doctor/Firewall.class"), tools::toString);
    assertTrue(tools.contains("io/memwire/tools/bench/TransferBenchmark.class"), tools::toString);
  }
}
