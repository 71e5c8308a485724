package io.memwire.shuffle;

import org.apache.spark.SparkConf;

/**
 * What a JVM older than Java 17 finds under this name in the shuffle manager's jar. The jar is a
 * multi-release jar: Java 17 and newer load the real manager from {@code
 * META-INF/versions/17/}, older JVMs load this class (Java 8 bytecode), which refuses to start
 * with a message naming the fix instead of an {@code UnsupportedClassVersionError}. Built by
 * shuffle-manager's packaging (maven-antrun-plugin), not by the main compilation.
 */
public final class RdmaShuffleManager {
  /**
   * Spark's constructor of a shuffle manager.
   *
   * @throws IllegalStateException always: this JVM is older than Java 17
   */
  public RdmaShuffleManager(SparkConf conf, boolean isDriver) {
    throw new IllegalStateException(message(isDriver));
  }

  /** The message: which JVM, and how to run Spark on Java 17. */
  static String message(boolean isDriver) {
    return "Memwire's shuffle manager (spark.shuffle.manager=io.memwire.shuffle.RdmaShuffleManager)"
        + " needs Java 17 or newer, but this "
        + (isDriver ? "driver" : "executor")
        + " runs Java "
        + System.getProperty("java.version")
        + " from "
        + System.getProperty("java.home")
        + ". Run the driver and every executor on Java 17: JAVA_HOME for the driver, and"
        + " spark.executorEnv.JAVA_HOME (on YARN also spark.yarn.appMasterEnv.JAVA_HOME) for"
        + " executors; see Memwire's docs/DEPLOY.md, \"Java 17\".";
  }
}
