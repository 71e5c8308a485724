package io.memwire.mainjob;

import io.memwire.localcluster.SparkKeys;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A configuration the main job compares: its name and the spark-submit arguments that select it.
 * {@code spark-sort} and {@code memwire} (Memwire over the job's {@code --provider}) or {@code
 * memwire-PROVIDER} (tcp, ucx or verbs), the latter optionally with {@code -unverified} (blocks not
 * checked against Spark's checksums), each optionally with {@code -hostlocal} (Spark's default
 * {@code spark.shuffle.readHostLocalDisk=true}); without it both read blocks of the other executor
 * on this host through their transport, which is what a single-host run must do to measure a
 * transport at all.
 */
record Configuration(String name, List<String> args) {
  static final String MEMWIRE_MANAGER = "io.memwire.shuffle.RdmaShuffleManager";
  private static final List<String> PROVIDERS = List.of("tcp", "ucx", "verbs");

  /**
   * The named configurations: spark-sort[-hostlocal], memwire[-PROVIDER][-unverified][-hostlocal].
   *
   * @param ucxJars class path entries of the ucx provider and JUCX, for configurations over ucx;
   *     empty when none is given
   */
  static List<Configuration> parse(
      String names, String provider, Path memwireJar, List<Path> ucxJars) {
    List<Configuration> out = new ArrayList<>();
    for (String raw : names.split(",")) {
      String name = raw.trim();
      boolean hostLocal = name.endsWith("-hostlocal");
      String base = hostLocal ? name.substring(0, name.length() - "-hostlocal".length()) : name;
      boolean unverified = base.endsWith("-unverified");
      base = unverified ? base.substring(0, base.length() - "-unverified".length()) : base;
      List<String> args =
          new ArrayList<>(List.of("--conf", SparkKeys.READ_HOST_LOCAL_DISK + "=" + hostLocal));
      String over = base.equals("memwire") ? provider : base.replaceFirst("^memwire-", "");
      if (base.equals("spark-sort") && !unverified) {
        out.add(new Configuration(name, args));
        continue;
      }
      if (!base.startsWith("memwire") || !PROVIDERS.contains(over)) {
        throw new IllegalArgumentException(
            "--configs: unknown configuration '"
                + raw
                + "'; known: spark-sort, memwire (over --provider), memwire-tcp, memwire-ucx,"
                + " memwire-verbs, those optionally with -unverified (spark.shuffle.rdma.verifyBlocks="
                + "false), each optionally with -hostlocal (Spark's"
                + " spark.shuffle.readHostLocalDisk=true: executors on one host read each other's"
                + " files from disk)");
      }
      // Spark 3.5 builds the shuffle manager before it adds --jars to an executor's class loader:
      // the jars go on the executors' class path (the driver's: see command()).
      List<Path> classPath = new ArrayList<>(List.of(memwireJar.toAbsolutePath()));
      if (over.equals("ucx")) {
        if (ucxJars.isEmpty()) {
          throw new IllegalArgumentException(
              "--configs: '"
                  + raw
                  + "' runs over ucx and needs --ucx-jars (the ucx provider's jar and JUCX's,"
                  + " separated by '"
                  + File.pathSeparator
                  + "')");
        }
        for (Path j : ucxJars) {
          if (!Files.isRegularFile(j)) {
            throw new IllegalArgumentException(
                "--ucx-jars: missing "
                    + j
                    + ": build first with `mvn -B -DskipTests install` (the ucx provider's jar is"
                    + " block-transfer-ucx's, JUCX's comes from Maven Central)");
          }
          classPath.add(j.toAbsolutePath());
        }
        // UCX must leave the JVM's signals alone (the driver's environment says so too).
        args.addAll(List.of("--conf", SparkKeys.EXECUTOR_ENV_PREFIX + "UCX_ERROR_SIGNALS="));
      }
      args.addAll(
          List.of(
              "--conf",
              SparkKeys.EXECUTOR_EXTRA_CLASS_PATH
                  + "="
                  + String.join(
                      File.pathSeparator, classPath.stream().map(Path::toString).toList()),
              "--conf",
              SparkKeys.SHUFFLE_MANAGER + "=" + MEMWIRE_MANAGER,
              "--conf",
              SparkKeys.MEMWIRE_PROVIDER + "=" + over));
      if (unverified) {
        args.addAll(List.of("--conf", SparkKeys.MEMWIRE_VERIFY_BLOCKS + "=false"));
      }
      out.add(
          new Configuration(
              "memwire-"
                  + over
                  + (unverified ? "-unverified" : "")
                  + (hostLocal ? "-hostlocal" : ""),
              args));
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
