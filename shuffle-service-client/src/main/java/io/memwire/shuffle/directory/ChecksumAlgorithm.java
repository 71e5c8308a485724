package io.memwire.shuffle.directory;

import java.util.zip.Adler32;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;

/**
 * The checksum algorithms Spark offers for its shuffle checksum files ({@code
 * spark.shuffle.checksum.algorithm}: ADLER32 and CRC32 since 3.2, CRC32C since 4.0), with the code
 * a directory slot carries. Each is the JDK's implementation, the one Spark uses, so a value
 * computed here over a partition's bytes equals the one Spark wrote.
 */
public enum ChecksumAlgorithm {
  ADLER32(1),
  CRC32(2),
  CRC32C(3);

  private final int code;

  ChecksumAlgorithm(int code) {
    this.code = code;
  }

  /** The code a directory slot carries for this algorithm. */
  public int code() {
    return code;
  }

  /** A new checksum of this algorithm (not thread-safe: one per computation). */
  public Checksum newChecksum() {
    return switch (this) {
      case ADLER32 -> new Adler32();
      case CRC32 -> new CRC32();
      case CRC32C -> new CRC32C();
    };
  }

  /** The algorithm of a slot's code, or null when the code is unknown. */
  public static ChecksumAlgorithm ofCode(int code) {
    for (ChecksumAlgorithm a : values()) {
      if (a.code == code) {
        return a;
      }
    }
    return null;
  }

  /** The algorithm Spark names {@code name} (case-insensitive), or null when it is not one. */
  public static ChecksumAlgorithm ofName(String name) {
    for (ChecksumAlgorithm a : values()) {
      if (a.name().equalsIgnoreCase(name)) {
        return a;
      }
    }
    return null;
  }
}
