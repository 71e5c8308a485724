package io.memwire.yarnit;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;

/**
 * Spark settings for an application on YARN in client mode whose driver is this JVM, with this
 * JVM's test class path standing in for a Spark distribution: its jars are the application master's
 * and executors' Spark jars ({@code spark.yarn.jars}, as {@code local:} paths, since the
 * NodeManager runs on this host), and its class directories go on the executors' class path so the
 * tests' functions load there. Memwire reaches the executors the same way, as the shaded {@code
 * -spark} jar users deploy.
 */
final class SparkOnYarn {
  private SparkOnYarn() {}

  /** The entries of this JVM's test class path (surefire's, not its booter jar's). */
  static List<String> testClassPath() {
    String cp = System.getProperty("surefire.test.class.path");
    if (cp == null || cp.isEmpty()) {
      cp = System.getProperty("java.class.path");
    }
    List<String> entries = new ArrayList<>();
    for (String e : cp.split(File.pathSeparator)) {
      if (!e.isEmpty() && Files.exists(Path.of(e))) {
        entries.add(Path.of(e).toAbsolutePath().toString());
      }
    }
    return entries;
  }

  /**
   * A client-mode configuration for {@code yarnConf} (the ResourceManager's addresses as {@code
   * spark.hadoop.*}), staging under {@code staging}, executors of 512 MB and one core.
   */
  static SparkConf clientMode(String appName, Map<String, String> yarnConf, Path staging) {
    List<String> jars = new ArrayList<>();
    List<String> dirs = new ArrayList<>();
    for (String e : testClassPath()) {
      if (e.endsWith(".jar")) {
        jars.add("local:" + e);
      } else {
        dirs.add(e);
      }
    }
    String javaHome = System.getProperty("java.home");
    SparkConf conf =
        new SparkConf()
            .setMaster("yarn")
            .setAppName(appName)
            .set("spark.submit.deployMode", "client")
            .set("spark.yarn.jars", String.join(",", jars))
            .set("spark.executor.extraClassPath", String.join(File.pathSeparator, dirs))
            .set("spark.yarn.stagingDir", staging.toUri().toString())
            // Containers get the NodeManager's environment only where whitelisted.
            .set("spark.yarn.appMasterEnv.JAVA_HOME", javaHome)
            .set("spark.executorEnv.JAVA_HOME", javaHome)
            .set("spark.yarn.am.memory", "512m")
            .set("spark.executor.memory", "512m")
            .set("spark.executor.cores", "1")
            .set("spark.ui.enabled", "false");
    yarnConf.forEach(conf::set);
    return conf;
  }
}
