package io.memwire.tpcds.worker;

import io.memwire.localcluster.LocalSparkCluster;
import io.memwire.localcluster.ProcessLines;
import io.memwire.tpcds.worker.WorkerMessages.Request;
import io.memwire.tpcds.worker.WorkerMessages.Response;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The benchmark's handle on one {@link QueryWorker} child process: starts it, sends requests, waits
 * for each response with a deadline, and stops it together with its executor processes. The
 * worker's log (stderr and stray stdout) goes to a file.
 */
public final class WorkerProcess implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerProcess.class);
  private static final Duration QUIT_TIMEOUT = Duration.ofSeconds(60);

  private final String name;
  private final Process process;
  private final Path logFile;
  private final Writer requests;
  private final BlockingQueue<Response> responses = new LinkedBlockingQueue<>();
  private final Thread reader;
  private final Consumer<String> progress;
  private ClusterInfo info;
  private boolean closed;

  private WorkerProcess(String name, Process process, Path logFile, Consumer<String> progress) {
    this.name = name;
    this.progress = progress;
    this.process = process;
    this.logFile = logFile;
    this.requests =
        new BufferedWriter(
            new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
    this.reader =
        ProcessLines.follow(process, "tpcds-worker-" + name, this::readResponse, this::outputEnded);
  }

  /**
   * Starts a worker for {@code spec} and waits until its cluster is up.
   *
   * @param classPath the worker's (and the local cluster's executors') class path
   * @param driverMemoryMb the worker JVM's heap
   * @param logFile where the worker's output goes
   * @param progress receives the worker's progress lines (e.g. each generated table)
   */
  public static WorkerProcess start(
      WorkerSpec spec,
      String classPath,
      int driverMemoryMb,
      Path logFile,
      Duration startTimeout,
      Consumer<String> progress)
      throws IOException, TimeoutException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx" + driverMemoryMb + "m");
    command.addAll(LocalSparkCluster.driverJvmOptions());
    command.add("-Dlog4j2.configurationFile=memwire-tpcds-log4j2.properties");
    command.add("-cp");
    command.add(classPath);
    command.add(QueryWorker.class.getName());
    command.add(WorkerMessages.JSON.writeValueAsString(spec));
    Files.createDirectories(logFile.getParent());
    Process process =
        new ProcessBuilder(command)
            .redirectError(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
            .start();
    LOG.info(
        "Started worker {} (pid {}) for configuration {}",
        spec.configName(),
        process.pid(),
        spec.configName());
    WorkerProcess worker = new WorkerProcess(spec.configName(), process, logFile, progress);
    try {
      Response ready = worker.await(startTimeout, "start");
      worker.info = ready.cluster();
    } catch (TimeoutException | RuntimeException e) {
      worker.close();
      throw e;
    }
    return worker;
  }

  /**
   * The class path of this JVM as a launcher would pass it on (surefire hides it in its own
   * property).
   */
  public static String currentClassPath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
  }

  /** The configuration name. */
  public String name() {
    return name;
  }

  /** The worker's cluster, as it reported when ready. */
  public ClusterInfo info() {
    return info;
  }

  /**
   * Whether the worker process still runs (and was not closed): a failed request left it usable.
   */
  public boolean isAlive() {
    return !closed && process.isAlive();
  }

  /** The worker's log file. */
  public Path logFile() {
    return logFile;
  }

  /**
   * Sends {@code request} and returns the successful response.
   *
   * @throws WorkerException when the worker reports an error or dies
   * @throws TimeoutException when no response arrives within {@code timeout} (the worker is then
   *     stopped)
   */
  public Response call(Request request, Duration timeout) throws IOException, TimeoutException {
    if (closed) {
      throw new IllegalStateException("worker " + name + " is closed");
    }
    requests.write(WorkerMessages.JSON.writeValueAsString(request));
    requests.write('\n');
    requests.flush();
    try {
      return await(timeout, request.op() + (request.query() == null ? "" : " " + request.query()));
    } catch (TimeoutException e) {
      close();
      throw e;
    }
  }

  private Response await(Duration timeout, String what) throws TimeoutException {
    Response response;
    try {
      response = responses.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for worker " + name, e);
    }
    if (response == null) {
      throw new TimeoutException(
          "worker "
              + name
              + ": no answer to "
              + what
              + " within "
              + timeout.toSeconds()
              + " s (log: "
              + logFile
              + ")");
    }
    if (!response.ok()) {
      throw new WorkerException(
          "worker " + name + ": " + response.error() + " (log: " + logFile + ")");
    }
    return response;
  }

  private void readResponse(String line) throws IOException {
    if (line.startsWith(WorkerMessages.PROGRESS_PREFIX)) {
      progress.accept(line.substring(WorkerMessages.PROGRESS_PREFIX.length()));
    } else if (line.startsWith(WorkerMessages.PREFIX)) {
      responses.add(
          WorkerMessages.JSON.readValue(
              line.substring(WorkerMessages.PREFIX.length()), Response.class));
    } else {
      Files.writeString(
          logFile,
          line + System.lineSeparator(),
          StandardCharsets.UTF_8,
          StandardOpenOption.APPEND);
    }
  }

  private void outputEnded(IOException failure) {
    if (failure != null) {
      LOG.debug("Reading worker {} stopped", name, failure);
    }
    // Wake up a caller waiting for an answer that will never come.
    responses.add(Response.failed("process exited" + exitDescription()));
  }

  private String exitDescription() {
    try {
      if (process.waitFor(5, TimeUnit.SECONDS)) {
        return " with status " + process.exitValue();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return "";
  }

  /**
   * Asks the worker to stop its cluster and exit; kills it and its executors when it does not in
   * time.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<ProcessHandle> children = process.descendants().toList();
    try {
      if (process.isAlive()) {
        requests.write(WorkerMessages.JSON.writeValueAsString(Request.quit()));
        requests.write('\n');
        requests.flush();
        requests.close();
      }
    } catch (IOException e) {
      LOG.debug("Worker {} did not take the quit request", name, e);
    }
    try {
      if (!process.waitFor(QUIT_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        LOG.warn("Worker {} did not exit within {} s; killing it", name, QUIT_TIMEOUT.toSeconds());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (ProcessHandle child : children) {
      child.destroyForcibly();
    }
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
      reader.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A worker reported a failure or died. */
  public static final class WorkerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** A failure described by {@code message}. */
    public WorkerException(String message) {
      super(message);
    }
  }
}
