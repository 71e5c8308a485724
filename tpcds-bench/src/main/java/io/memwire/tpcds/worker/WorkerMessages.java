package io.memwire.tpcds.worker;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.memwire.tpcds.data.DataSetInfo;

/**
 * The line protocol between the benchmark and its query workers: one JSON request per line on the
 * worker's stdin, one JSON response per line on its stdout prefixed with {@link #PREFIX}, progress
 * text prefixed with {@link #PROGRESS_PREFIX} (anything else on stdout is log output).
 */
public final class WorkerMessages {
  /** Marks a protocol line on a worker's stdout. */
  public static final String PREFIX = "@@memwire ";

  /** Marks a progress line (plain text, e.g. a generated table) on a worker's stdout. */
  public static final String PROGRESS_PREFIX = "@@memwire-progress ";

  /** The JSON mapper both sides use. */
  public static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  private WorkerMessages() {}

  /** Operations a worker understands. */
  public enum Op {
    /** Generate the data set, or reuse the cached one. */
    GENERATE,
    /** Register the data set's tables as views. */
    LOAD,
    /** Run one query. */
    RUN,
    /** Stop the cluster and exit. */
    QUIT
  }

  /** A request; fields not used by {@code op} are null. */
  public record Request(
      Op op, String query, String sql, Double scale, String dataDir, Long costPerChunk) {
    /** Generate or reuse the data set for {@code scale} under {@code dataDir}. */
    public static Request generate(double scale, String dataDir, long costPerChunk) {
      return new Request(Op.GENERATE, null, null, scale, dataDir, costPerChunk);
    }

    /** Register the tables of the data set directory {@code dataSetDir}. */
    public static Request load(String dataSetDir) {
      return new Request(Op.LOAD, null, null, null, dataSetDir, null);
    }

    /** Run {@code sql} as query {@code query}. */
    public static Request run(String query, String sql) {
      return new Request(Op.RUN, query, sql, null, null, null);
    }

    /** Shut down. */
    public static Request quit() {
      return new Request(Op.QUIT, null, null, null, null, null);
    }
  }

  /**
   * A response; exactly one of the payload fields is set when {@code ok}, {@code error} otherwise.
   */
  public record Response(
      boolean ok, String error, ClusterInfo cluster, DataSetInfo dataSet, QueryRun run) {
    static Response ready(ClusterInfo info) {
      return new Response(true, null, info, null, null);
    }

    static Response done() {
      return new Response(true, null, null, null, null);
    }

    static Response failed(String error) {
      return new Response(false, error, null, null, null);
    }
  }
}
