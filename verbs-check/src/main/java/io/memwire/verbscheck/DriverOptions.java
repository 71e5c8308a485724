package io.memwire.verbscheck;

import io.memwire.localcluster.LocalSparkCluster;

/**
 * Prints, space-separated, the JVM options a Spark driver JVM needs on Java 17 ({@link
 * LocalSparkCluster#driverJvmOptions()}); the staging script runs it once on the build host so that
 * the guest's driver command line is not hand-written.
 */
public final class DriverOptions {
  private DriverOptions() {}

  public static void main(String[] args) {
    System.out.println(String.join(" ", LocalSparkCluster.driverJvmOptions()));
  }
}
