package io.memwire.tpcds;

import io.memwire.tpcds.run.BenchmarkRun;
import io.memwire.tpcds.run.RunOptions;
import io.memwire.tpcds.run.RunResult;
import io.memwire.tpcds.verify.AnswerMismatchException;
import io.memwire.tpcds.verify.PathCheckException;
import java.util.Locale;
import java.util.Map;

/**
 * Command-line entry point: runs TPC-DS queries with each configured shuffle manager and writes a
 * results directory. See {@code docs/TPCDS.md} and {@code --help}. Exit status: 0 done, 1 failed, 2
 * bad arguments, 3 answers differ between configurations, 4 a Memwire configuration's remote bytes
 * did not all go one-sided, 5 every query was run but some failed to run (listed in the report).
 */
public final class TpcdsRunner {
  private TpcdsRunner() {}

  private static void loud(String message) {
    System.err.println();
    System.err.println("=".repeat(72));
    System.err.println(message);
    System.err.println("=".repeat(72));
  }

  /** Parses the arguments, runs, and prints the summary. */
  public static void main(String[] args) {
    RunOptions options;
    try {
      options = RunOptions.parse(args);
    } catch (RunOptions.HelpRequested e) {
      System.out.print(RunOptions.usage());
      return;
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.err.print(RunOptions.usage());
      System.exit(2);
      return;
    }
    try {
      io.memwire.transfer.fabric.FabricWindow fabric =
          io.memwire.transfer.fabric.FabricWindow.open();
      RunResult result = new BenchmarkRun(options, System.out::println).run();
      FabricSection.append(fabric, java.nio.file.Path.of(result.runDir(), "report.md"));
      for (Map.Entry<String, Double> g : result.geomeanSpeedup().entrySet()) {
        System.out.printf(
            Locale.ROOT,
            "geometric-mean speedup of %s over %s: %.3fx%n",
            g.getKey(),
            result.reference(),
            g.getValue());
      }
      System.out.println("report: " + result.runDir() + "/report.md");
      if (!result.failures().isEmpty()) {
        System.err.println(
            "queries that failed to run: "
                + result.failures().stream()
                    .map(f -> f.query() + " (" + f.config() + ")")
                    .distinct()
                    .toList());
        System.exit(5);
      }
    } catch (AnswerMismatchException e) {
      loud(e.getMessage());
      System.exit(3);
    } catch (PathCheckException e) {
      loud(e.getMessage());
      System.exit(4);
    } catch (Exception e) {
      System.err.println("error: " + e);
      System.exit(1);
    }
  }
}
