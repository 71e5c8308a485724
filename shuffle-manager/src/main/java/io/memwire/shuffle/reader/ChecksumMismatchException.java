package io.memwire.shuffle.reader;

import java.io.IOException;

/**
 * A block whose bytes did not match the checksum Spark stored for them, on its read and on the
 * re-read from the same region: the stored bytes are wrong (the data file, or its checksum file,
 * changed after the map wrote them), so the block fails as a fetch failure and Spark reruns the
 * map. Its message names the block, the partition, the stored and the found value, and the cause.
 */
final class ChecksumMismatchException extends IOException {
  private static final long serialVersionUID = 1L;

  private ChecksumMismatchException(String message) {
    super(message);
  }

  /** A block that did not match on its first read and whose re-read failed ({@code why}). */
  static ChecksumMismatchException unconfirmed(
      LocatedBlock b, String execId, BlockChecksum.Mismatch first, String why) {
    return new ChecksumMismatchException(
        "checksum mismatch in block "
            + b.block().id()
            + " (reduce partition "
            + first.reduceId()
            + " of map output "
            + b.block().mapId()
            + " on executor "
            + execId
            + "): expected "
            + b.checksum().algorithm()
            + " "
            + first.expected()
            + ", found "
            + first.found()
            + "; the re-read failed ("
            + why
            + "), cause unknown");
  }

  ChecksumMismatchException(
      LocatedBlock b, String execId, BlockChecksum.Mismatch first, BlockChecksum.Mismatch second) {
    super(
        "checksum mismatch in block "
            + b.block().id()
            + " (reduce partition "
            + second.reduceId()
            + " of map output "
            + b.block().mapId()
            + " on executor "
            + execId
            + "): expected "
            + b.checksum().algorithm()
            + " "
            + second.expected()
            + ", found "
            + second.found()
            + (first.found() == second.found()
                ? " on both reads"
                : " (first read " + first.found() + ")")
            + "; cause: disk (the stored bytes are wrong: the data file or its checksum file changed"
            + " after the map wrote them)");
  }
}
