package io.memwire.localcluster;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@link LocalSparkCluster} needs outside Spark: the generated SPARK_HOME, the variables it
 * puts into this JVM's environment, the executors' classpath, and the executors' logs and work
 * directory after a failure or at close.
 */
final class ClusterEnvironment {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterEnvironment.class);

  /** The SPARK_HOME this class put into the environment, so a later cluster may replace it. */
  private static volatile String injectedSparkHome;

  private ClusterEnvironment() {}

  /**
   * The SPARK_HOME a cluster runs with: the environment's, else a generated one under {@code dir}
   * with an empty {@code jars/}; missing SPARK_HOME, SPARK_SCALA_VERSION and SPARK_LOCAL_IP are put
   * into this JVM's environment.
   */
  static Path prepareSparkHome(Path dir, String localIp) {
    String envHome = System.getenv("SPARK_HOME");
    boolean given = envHome != null && !envHome.isBlank() && !envHome.equals(injectedSparkHome);
    Path home =
        given ? Path.of(envHome).toAbsolutePath() : dir.resolve("spark-home").toAbsolutePath();
    try {
      // Workers refuse a SPARK_HOME without jars/; the classpath comes from SPARK_DIST_CLASSPATH.
      Files.createDirectories(home.resolve("jars"));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + home.resolve("jars"), e);
    }
    Map<String, String> missing = new LinkedHashMap<>();
    if (!given) {
      missing.put("SPARK_HOME", home.toString());
      injectedSparkHome = home.toString();
    }
    if (System.getenv("SPARK_SCALA_VERSION") == null) {
      missing.put("SPARK_SCALA_VERSION", scalaVersion());
    }
    if (System.getenv("SPARK_LOCAL_IP") == null) {
      missing.put("SPARK_LOCAL_IP", localIp);
    }
    if (!missing.isEmpty()) {
      ProcessEnvironment.put(missing);
    }
    return home;
  }

  /** The executors' classpath: the extra entries, then this JVM's. */
  static String executorClassPath(List<String> extraExecutorClassPath) {
    Set<String> entries = new LinkedHashSet<>(extraExecutorClassPath);
    entries.addAll(jvmClassPath());
    return String.join(File.pathSeparator, entries);
  }

  /** Scala binary version of the Spark on the classpath, e.g. 2.13. */
  static String scalaVersion() {
    String v = scala.util.Properties$.MODULE$.versionNumberString();
    String[] parts = v.split("\\.");
    return parts.length >= 2 ? parts[0] + "." + parts[1] : v;
  }

  /**
   * This JVM's classpath entries. Surefire's manifest-only jar and Maven's exec:java hide the real
   * classpath from {@code java.class.path}; surefire publishes it in its own property, and a
   * URLClassLoader lists its URLs.
   */
  static List<String> jvmClassPath() {
    String cp = System.getProperty("surefire.test.class.path");
    if (cp == null || cp.isBlank()) {
      cp = System.getProperty("java.class.path", "");
    }
    List<String> entries =
        Arrays.stream(cp.split(File.pathSeparator))
            .filter(s -> !s.isBlank())
            .collect(Collectors.toList());
    boolean hasSpark = entries.stream().anyMatch(e -> e.contains("spark-core"));
    ClassLoader cl = Thread.currentThread().getContextClassLoader();
    if (!hasSpark && cl instanceof URLClassLoader) {
      for (URL u : ((URLClassLoader) cl).getURLs()) {
        if ("file".equals(u.getProtocol())) {
          entries.add(new File(u.getPath()).getAbsolutePath());
        }
      }
    }
    return entries;
  }

  static String executorStderrTail(Path home) {
    Path work = home.resolve("work");
    if (!Files.isDirectory(work)) {
      return "No executor was launched (no " + work + ").";
    }
    try (Stream<Path> files = Files.walk(work)) {
      Path newest =
          files
              .filter(p -> p.getFileName().toString().equals("stderr"))
              .max(Comparator.comparingLong(p -> p.toFile().lastModified()))
              .orElse(null);
      if (newest == null) {
        return "No executor stderr under " + work + ".";
      }
      List<String> lines = Files.readAllLines(newest, StandardCharsets.UTF_8);
      List<String> tail = lines.subList(Math.max(0, lines.size() - 15), lines.size());
      return "Last lines of " + newest + ":\n" + String.join("\n", tail);
    } catch (IOException | UncheckedIOException e) {
      return "Could not read executor logs under " + work + ": " + e;
    }
  }

  static void deleteRecursively(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      LOG.debug("could not delete {}", dir, e);
    }
  }

  /**
   * Sets variables in this JVM's environment view, so {@code System.getenv} (Spark's Worker and
   * driver) and child processes see them. Java has no API for this; the map behind {@code
   * System.getenv()} is reached by reflection, which {@code --add-opens=java.base/java.util}
   * permits.
   */
  static final class ProcessEnvironment {
    private ProcessEnvironment() {}

    @SuppressWarnings("unchecked")
    static void put(Map<String, String> vars) {
      Map<String, String> env = System.getenv();
      try {
        Field f = env.getClass().getDeclaredField("m");
        f.setAccessible(true);
        ((Map<String, String>) f.get(env)).putAll(vars);
      } catch (ReflectiveOperationException | RuntimeException e) {
        throw new IllegalStateException(
            "cannot set "
                + vars.keySet()
                + " in this JVM's "
                + "environment ("
                + e
                + "). Either start the JVM with "
                + "--add-opens=java.base/java.util=ALL-UNNAMED (see LocalSparkCluster."
                + "driverJvmOptions()) or set them before starting it: "
                + vars.entrySet().stream()
                    .map(en -> en.getKey() + "=" + en.getValue())
                    .collect(Collectors.joining(" ")),
            e);
      }
      for (Map.Entry<String, String> e : vars.entrySet()) {
        if (!e.getValue().equals(System.getenv(e.getKey()))) {
          throw new IllegalStateException(
              "setting "
                  + e.getKey()
                  + " in the environment did not "
                  + "take effect; set it before starting the JVM");
        }
      }
    }
  }
}
