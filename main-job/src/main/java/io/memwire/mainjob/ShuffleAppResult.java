package io.memwire.mainjob;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * What one round of {@link ShuffleApp} measured: the figures of its main job, the digests that let
 * two runs be checked equal, the proof that remote bytes went one-sided, and what Memwire's manager
 * did in the small jobs. {@link ShuffleApp} writes it as JSON; {@link MainJob} and the verbs check
 * read it back. Jackson maps it both ways, so the two sides cannot disagree on a key.
 *
 * @param shuffleManager {@code spark.shuffle.manager} of the run
 * @param provider Memwire's transport ({@code spark.shuffle.rdma.provider}), "-" when unset
 * @param readHostLocalDisk {@code spark.shuffle.readHostLocalDisk} of the run
 * @param records records the main job generated
 * @param wallSeconds the main job's wall time
 * @param executorsReadySeconds from the session's start until the executors had registered
 * @param smallColdSeconds the first small job (what a first job pays)
 * @param smallWarmSeconds the median of the later small jobs (0 when none ran)
 * @param resultRows rows of the main job's three results
 * @param resultDigest the main job's three result hashes
 * @param smallDigest the first small job's three result hashes
 * @param ordered whether every sorted result was in key order
 * @param shuffleBytesWritten Spark's shuffle bytes written in the main job
 * @param remoteBytesRead Spark's remote shuffle bytes read in the main job
 * @param localBytesRead Spark's local shuffle bytes read in the main job
 * @param fetchWaitMs Spark's fetch wait in the main job
 * @param recordsRead Spark's shuffle records read in the main job
 * @param managerCounters whether Memwire's manager counters were read (false: Spark's manager ran)
 * @param oneSidedBytes bytes Memwire read one-sided in the main job
 * @param notOneSidedBytes the main job's remote bytes that did not go one-sided
 * @param fallbackBlocks blocks of the main job that went to Spark's own transfer
 * @param allRemoteBytes Spark's remote bytes over every job of the round
 * @param allOneSidedBytes Memwire's one-sided bytes over every job of the round
 * @param allFallbackBlocks fallback blocks over every job of the round
 * @param allFailedBlocks failed blocks over every job of the round
 * @param cold what the first small job made the manager do
 * @param warm what a later small job made it do, averaged over them
 * @param main what the main job made it do
 * @param openConnections Memwire's open connections after the main job
 * @param servingCpuMsPerGiB executor CPU of serving threads per GiB of remote bytes, -1 unmeasured
 * @param transportCpuMsPerGiB executor CPU of all transport threads per GiB, -1 unmeasured
 * @param executorCpuMsPerGiB whole executor JVMs' CPU per GiB, -1 unmeasured
 */
public record ShuffleAppResult(
    String shuffleManager,
    String provider,
    boolean readHostLocalDisk,
    long records,
    double wallSeconds,
    double executorsReadySeconds,
    double smallColdSeconds,
    double smallWarmSeconds,
    long resultRows,
    String resultDigest,
    String smallDigest,
    boolean ordered,
    long shuffleBytesWritten,
    long remoteBytesRead,
    long localBytesRead,
    long fetchWaitMs,
    long recordsRead,
    boolean managerCounters,
    long oneSidedBytes,
    long notOneSidedBytes,
    long fallbackBlocks,
    long allRemoteBytes,
    long allOneSidedBytes,
    long allFallbackBlocks,
    long allFailedBlocks,
    JobCounters cold,
    JobCounters warm,
    JobCounters main,
    long openConnections,
    double servingCpuMsPerGiB,
    double transportCpuMsPerGiB,
    double executorCpuMsPerGiB) {

  // Thread-safe once configured; the default mapping of records is all this needs.
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * What one job (or the average of several) made Memwire's manager do (all zero for Spark's own
   * manager), with Spark's remote bytes and fetch wait and the executors' CPU milliseconds, whole
   * and in the JIT compiler threads, for the same job (-1 when not measurable).
   */
  public record JobCounters(
      long outputsPublished,
      long slotReads,
      long indexReads,
      long indexEntryReads,
      long indexCacheHits,
      long fetchRequests,
      long firstBlockMicros,
      long rdmaBlocks,
      long remoteBytes,
      long fetchWaitMs,
      long publishMicros,
      long executorCpuMs,
      long jitCpuMs) {}

  /** This result as one line of JSON. */
  public String toJson() {
    try {
      return JSON.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write a main-job result as JSON", e);
    }
  }

  /** A result from the JSON {@link #toJson} wrote. */
  public static ShuffleAppResult fromJson(String json) {
    try {
      return JSON.readValue(json, ShuffleAppResult.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not a main-job result: " + e.getOriginalMessage(), e);
    }
  }

  /** Reads a result file {@link #writeTo} wrote. */
  public static ShuffleAppResult read(Path file) throws IOException {
    return fromJson(Files.readString(file));
  }

  /**
   * Writes this result to {@code out} whole or not at all: a launcher may be waiting for the file
   * to appear and reads it at once.
   */
  public void writeTo(Path out) throws IOException {
    Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
    Files.writeString(tmp, toJson() + "\n");
    Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}
