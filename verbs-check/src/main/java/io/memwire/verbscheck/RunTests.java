package io.memwire.verbscheck;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.PrintWriter;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.junit.platform.launcher.EngineFilter;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs JUnit 5 test classes given by name (the guest has no Maven) and exits 0 only when at least
 * one test ran and none failed or was aborted. Prints JUnit's summary and one line {@code
 * tests=N passed=N failed=N skipped=N}.
 */
public final class RunTests {
  private RunTests() {}

  public static void main(String[] args) {
    if (args.length == 0) {
      System.err.println("usage: RunTests CLASS...");
      System.exit(2);
    }
    LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
        .selectors(Arrays.stream(args).map(c -> selectClass(c)).collect(Collectors.toList()))
        // The test jars also carry jqwik (wire fuzzing); the guest runs the JUnit tests only.
        .filters(EngineFilter.includeEngines("junit-jupiter"))
        .build();
    Launcher launcher = LauncherFactory.create();
    SummaryGeneratingListener listener = new SummaryGeneratingListener();
    launcher.execute(request, listener);
    TestExecutionSummary s = listener.getSummary();
    PrintWriter out = new PrintWriter(System.out, true);
    s.printFailuresTo(out, 30);
    s.printTo(out);
    long failed = s.getTotalFailureCount() + s.getTestsAbortedCount();
    out.printf("tests=%d passed=%d failed=%d skipped=%d%n", s.getTestsFoundCount(),
        s.getTestsSucceededCount(), failed, s.getTestsSkippedCount());
    System.exit(failed == 0 && s.getTestsSucceededCount() > 0 ? 0 : 1);
  }
}
