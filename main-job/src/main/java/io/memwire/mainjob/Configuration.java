package io.memwire.mainjob;

import io.memwire.localcluster.SparkKeys;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A configuration the main job compares: its name and the spark-submit arguments that select it.
 * {@code spark-sort} and {@code memwire}, each optionally with {@code -hostlocal} (Spark's default
 * {@code spark.shuffle.readHostLocalDisk=true}); without it both read blocks of the other executor
 * on this host through their transport, which is what a single-host run must do to measure a
 * transport at all.
 */
record Configuration(String name, List<String> args) {
  static final String MEMWIRE_MANAGER = "io.memwire.shuffle.RdmaShuffleManager";

  /** The named configurations: spark-sort[-hostlocal], memwire[-hostlocal]. */
  static List<Configuration> parse(String names, String provider, Path memwireJar) {
    List<Configuration> out = new ArrayList<>();
    for (String raw : names.split(",")) {
      String name = raw.trim();
      boolean hostLocal = name.endsWith("-hostlocal");
      String base = hostLocal ? name.substring(0, name.length() - "-hostlocal".length()) : name;
      List<String> args =
          new ArrayList<>(List.of("--conf", SparkKeys.READ_HOST_LOCAL_DISK + "=" + hostLocal));
      switch (base) {
        case "spark-sort" -> {}
        case "memwire" -> {
          // Spark 3.5 builds the shuffle manager before it adds --jars to an executor's class
          // loader: the jar goes on the executors' class path (the driver's: see command()).
          args.addAll(
              List.of(
                  "--conf",
                  SparkKeys.EXECUTOR_EXTRA_CLASS_PATH + "=" + memwireJar.toAbsolutePath(),
                  "--conf",
                  SparkKeys.SHUFFLE_MANAGER + "=" + MEMWIRE_MANAGER,
                  "--conf",
                  SparkKeys.MEMWIRE_PROVIDER + "=" + provider));
          name = "memwire-" + provider + (hostLocal ? "-hostlocal" : "");
        }
        default ->
            throw new IllegalArgumentException(
                "--configs: unknown configuration '"
                    + raw
                    + "'; known: spark-sort, memwire, each optionally with -hostlocal (Spark's"
                    + " spark.shuffle.readHostLocalDisk=true: executors on one host read each other's"
                    + " files from disk)");
      }
      out.add(new Configuration(name, args));
    }
    if (out.isEmpty() || !out.get(0).name().startsWith("spark-sort")) {
      throw new IllegalArgumentException(
          "--configs: the first configuration is the reference"
              + " and must be spark-sort or spark-sort-hostlocal, got "
              + names);
    }
    return out;
  }
}
