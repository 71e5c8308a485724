package io.memwire.verbscheck;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.PrintWriter;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.EngineFilter;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs JUnit 5 test classes given by name (the guest has no Maven) and exits 0 only when at least
 * one test ran and none failed; an aborted test (its assumption does not hold) counts as skipped,
 * with its reason printed. Prints JUnit's summary and one line {@code tests=N passed=N failed=N
 * skipped=N}.
 */
public final class RunTests {
  private RunTests() {}

  public static void main(String[] args) {
    if (args.length == 0) {
      System.err.println("usage: RunTests CLASS...");
      System.exit(2);
    }
    LauncherDiscoveryRequest request =
        LauncherDiscoveryRequestBuilder.request()
            .selectors(Arrays.stream(args).map(c -> selectClass(c)).collect(Collectors.toList()))
            // The test jars also carry jqwik (wire fuzzing); the guest runs the JUnit tests only.
            .filters(EngineFilter.includeEngines("junit-jupiter"))
            .build();
    Launcher launcher = LauncherFactory.create();
    SummaryGeneratingListener listener = new SummaryGeneratingListener();
    // An aborted test is one whose assumption does not hold here (it says why): a skip.
    TestExecutionListener aborted =
        new TestExecutionListener() {
          @Override
          public void executionFinished(TestIdentifier id, TestExecutionResult result) {
            if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
              System.out.println(
                  "skipped "
                      + id.getDisplayName()
                      + ": "
                      + result.getThrowable().map(Throwable::getMessage).orElse("assumption"));
            }
          }
        };
    launcher.execute(request, listener, aborted);
    TestExecutionSummary s = listener.getSummary();
    PrintWriter out =
        new PrintWriter(
            new java.io.OutputStreamWriter(System.out, java.nio.charset.StandardCharsets.UTF_8),
            true);
    s.printFailuresTo(out, 30);
    s.printTo(out);
    long failed = s.getTotalFailureCount();
    out.printf(
        "tests=%d passed=%d failed=%d skipped=%d%n",
        s.getTestsFoundCount(),
        s.getTestsSucceededCount(),
        failed,
        s.getTestsSkippedCount() + s.getTestsAbortedCount());
    System.exit(failed == 0 && s.getTestsSucceededCount() > 0 ? 0 : 1);
  }
}
