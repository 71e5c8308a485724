package io.memwire.mainjob;

import io.memwire.localcluster.ExecutorCpu;
import io.memwire.localcluster.RandomRecords;
import io.memwire.localcluster.SparkKeys;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How the main job calls spark-submit: the command line of one configuration's {@link ShuffleApp},
 * and the Scala version of the Spark runtime it runs on.
 */
final class SparkSubmitCommand {
  private SparkSubmitCommand() {}

  /**
   * The Scala binary version of the Spark runtime in {@code sparkHome} (its {@code
   * scala-library-X.Y.Z.jar}); 2.13 when none is found.
   */
  static String scalaVersion(Path sparkHome) throws IOException {
    Pattern lib = Pattern.compile("scala-library-(\\d+\\.\\d+)\\..*\\.jar");
    try (var jars = Files.list(sparkHome.resolve("jars"))) {
      return jars.map(p -> lib.matcher(p.getFileName().toString()))
          .filter(Matcher::matches)
          .map(m -> m.group(1))
          .findFirst()
          .orElse("2.13");
    }
  }

  /** The spark-submit command of one configuration's application, up to its output options. */
  static List<String> command(
      Path sparkHome,
      String master,
      Configuration c,
      Path appJar,
      long records,
      int smallRepeats,
      int executors)
      throws java.net.URISyntaxException {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "bash",
                sparkHome.resolve("bin/spark-submit").toAbsolutePath().toString(),
                "--master",
                master,
                "--conf",
                SparkKeys.UI_ENABLED + "=false",
                "--conf",
                SparkKeys.UI_SHOW_CONSOLE_PROGRESS + "=false"));
    cmd.addAll(c.args());
    // ExecutorCpu (local-cluster's jar) on the driver: the executors' CPU per GiB; and Memwire's
    // jar when the executors have it (the driver builds its shuffle manager too).
    String driverClassPath =
        Paths.get(ExecutorCpu.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .toString();
    for (int i = 0; i + 1 < c.args().size(); i++) {
      String a = c.args().get(i + 1);
      if (c.args().get(i).equals("--conf")
          && a.startsWith(SparkKeys.EXECUTOR_EXTRA_CLASS_PATH + "=")) {
        driverClassPath += java.io.File.pathSeparator + a.substring(a.indexOf('=') + 1);
      }
    }
    cmd.addAll(List.of("--driver-class-path", driverClassPath));
    // The executors make the job's records with local-cluster's RandomRecords.
    cmd.addAll(
        List.of(
            "--jars",
            Paths.get(
                    RandomRecords.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                .toString()));
    cmd.addAll(
        List.of(
            "--class",
            ShuffleApp.class.getName(),
            appJar.toAbsolutePath().toString(),
            "--records",
            String.valueOf(records),
            "--small-repeats",
            String.valueOf(smallRepeats),
            "--wait-executors",
            String.valueOf(executors)));
    return cmd;
  }
}
