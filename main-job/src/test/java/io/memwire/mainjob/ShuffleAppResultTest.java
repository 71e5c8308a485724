package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The result record ShuffleApp writes and MainJob reads: what is written is what is read. */
class ShuffleAppResultTest {
  @TempDir Path dir;

  /**
   * A Memwire-shaped result with every field set to something distinct, so a field that Jackson
   * dropped or swapped would show.
   */
  static ShuffleAppResult full() {
    return new ShuffleAppResult(
        "io.memwire.shuffle.RdmaShuffleManager",
        "tcp",
        false,
        500_000,
        12.3456789,
        4.5,
        1.25,
        0.75,
        216_000,
        "00000000000000aa-00000000000000bb-ffffffffffffffff",
        "0000000000000001-0000000000000002-0000000000000003",
        true,
        52_000_000,
        26_000_000,
        25_000_000,
        321,
        1_000_000,
        true,
        26_000_000,
        0,
        0,
        27_000_000,
        27_000_000,
        0,
        0,
        new ShuffleAppResult.JobCounters(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28),
        new ShuffleAppResult.JobCounters(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13),
        new ShuffleAppResult.JobCounters(31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43),
        2,
        110.5,
        220.25,
        -1.0);
  }

  /**
   * A result for the launcher's checks: its main job's digest and remote bytes, whether Memwire's
   * counters were read, and what went one-sided (of 9 remote bytes over the round) or fell back.
   */
  static ShuffleAppResult result(
      String digest, long remoteBytes, boolean counters, long allOneSided, long allFallback) {
    ShuffleAppResult.JobCounters none =
        new ShuffleAppResult.JobCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1);
    return new ShuffleAppResult(
        counters ? "io.memwire.shuffle.RdmaShuffleManager" : "sort",
        counters ? "tcp" : "-",
        false,
        10,
        1.0,
        0,
        0,
        0,
        10,
        digest,
        "s",
        true,
        0,
        remoteBytes,
        0,
        0,
        0,
        counters,
        allOneSided,
        0,
        0,
        counters ? 9 : 0,
        allOneSided,
        allFallback,
        0,
        none,
        none,
        none,
        0,
        -1,
        -1,
        -1);
  }

  @Test
  void aResultRoundTripsThroughJson() {
    ShuffleAppResult r = full();
    String json = r.toJson();
    assertEquals(r, ShuffleAppResult.fromJson(json));
    assertFalse(json.contains("\n"), "one line: the application prints it after a tag");
    assertTrue(json.startsWith("{\"shuffleManager\":"), json);
    assertTrue(json.contains("\"resultDigest\":\"00000000000000aa-"), json);
    assertTrue(json.contains("\"warm\":{\"outputsPublished\":1,"), json);
  }

  @Test
  void aResultFileIsReadBackWhole() throws Exception {
    Path out = dir.resolve("result-memwire-tcp-1.json");
    full().writeTo(out);
    assertEquals(full(), ShuffleAppResult.read(out));
    assertFalse(Files.exists(dir.resolve("result-memwire-tcp-1.json.tmp")), "no temporary left");
  }

  @Test
  void somethingElseIsNotAResult() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ShuffleAppResult.fromJson("{\"resultDigest\":\"aa\",\"bogus\":1}"));
    assertTrue(e.getMessage().startsWith("not a main-job result"), e.getMessage());
  }
}
