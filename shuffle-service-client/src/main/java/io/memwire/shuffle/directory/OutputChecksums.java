package io.memwire.shuffle.directory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Arrays;

/**
 * A map output's checksums as Spark wrote them beside its index file ({@code
 * shuffle_S_M_0.checksum.<ALGO>}): one value per reduce partition over the partition's bytes
 * exactly as in the data file (after compression and encryption), big-endian longs.
 *
 * @param algorithm how the values were computed
 * @param values one per reduce partition; kept, not copied: callers must not change it
 */
public record OutputChecksums(ChecksumAlgorithm algorithm, long[] values) {
  /** Suffix of Spark's checksum file name before the algorithm's name. */
  static final String SUFFIX = ".checksum.";

  public OutputChecksums {
    if (algorithm == null || values == null || values.length == 0) {
      throw new IllegalArgumentException("checksums need an algorithm and at least one value");
    }
  }

  /** The checksum file Spark writes for the index file {@code index} with {@code algorithm}. */
  public static Path fileBeside(Path index, ChecksumAlgorithm algorithm) {
    String name = index.getFileName().toString();
    String base = name.endsWith(".index") ? name.substring(0, name.length() - 6) : name;
    return index.resolveSibling(base + SUFFIX + algorithm.name());
  }

  /**
   * Reads the checksum file Spark wrote beside {@code index} for an output of {@code partitions}
   * reduce partitions, trying each algorithm's name: a regular file (no link followed) of exactly
   * {@code partitions} values. Returns null when there is none such (checksums off, an older
   * writer, another plugin's files) or it cannot be read.
   */
  public static OutputChecksums readBeside(Path index, int partitions) {
    if (partitions < 1 || partitions > DirectorySlot.MAX_METADATA_PARTITIONS) {
      return null;
    }
    for (ChecksumAlgorithm a : ChecksumAlgorithm.values()) {
      Path file = fileBeside(index, a);
      BasicFileAttributes attrs;
      try {
        attrs = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      } catch (IOException e) {
        continue;
      }
      if (!attrs.isRegularFile() || attrs.size() != partitions * 8L) {
        continue;
      }
      OutputChecksums sums = readFile(file, a, partitions);
      if (sums != null) {
        return sums;
      }
    }
    return null;
  }

  /**
   * The algorithm a checksum file's name ends with ({@code <block>.checksum.<ALGO>}), or null when
   * the name is not a checksum file's.
   */
  public static ChecksumAlgorithm algorithmOf(Path file) {
    String name = String.valueOf(file.getFileName());
    int at = name.lastIndexOf(SUFFIX);
    return at < 0 ? null : ChecksumAlgorithm.ofName(name.substring(at + SUFFIX.length()));
  }

  /**
   * Reads Spark's checksum file {@code file} (the algorithm from its name) of {@code partitions}
   * values; null when it is not one, cannot be read or has another length.
   */
  public static OutputChecksums read(Path file, int partitions) {
    ChecksumAlgorithm a = file == null ? null : algorithmOf(file);
    return a == null ? null : readFile(file, a, partitions);
  }

  /**
   * Reads a checksum file of {@code partitions} values of {@code algorithm} (no link followed);
   * null when it cannot be read or has another length.
   */
  public static OutputChecksums readFile(Path file, ChecksumAlgorithm algorithm, int partitions) {
    long[] values = values(file, partitions);
    return values == null ? null : new OutputChecksums(algorithm, values);
  }

  private static long[] values(Path file, int partitions) {
    if (partitions < 1 || partitions > DirectorySlot.MAX_METADATA_PARTITIONS) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate(partitions * 8);
    try (FileChannel ch =
        FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      if (ch.size() != partitions * 8L) {
        return null;
      }
      while (b.hasRemaining()) {
        if (ch.read(b, b.position()) < 0) {
          return null;
        }
      }
    } catch (IOException | UnsupportedOperationException e) {
      return null;
    }
    long[] out = new long[partitions];
    b.flip().asLongBuffer().get(out);
    return out;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OutputChecksums c
        && c.algorithm == algorithm
        && Arrays.equals(c.values, values);
  }

  @Override
  public int hashCode() {
    return algorithm.hashCode() * 31 + Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    return "OutputChecksums{" + algorithm + ", " + values.length + " partitions}";
  }
}
