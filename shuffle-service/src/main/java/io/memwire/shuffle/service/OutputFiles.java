package io.memwire.shuffle.service;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Takes ownership of one map output's files for the service: checks that they are what an executor
 * of the registered user wrote (regular files named {@code shuffle_S_M_0.index/.data}, owned by
 * that user), hard-links them into the service's directory, and checks the linked index against the
 * linked data file (P+1 non-decreasing offsets from 0 to the data length), so what the service
 * registers is exactly what it validated. Spark replaces output files by renaming, never rewrites
 * them, so a link keeps the bytes the executor finished with after the executor deletes its names.
 */
final class OutputFiles {
  /** Largest index accepted (a million partitions). */
  static final long MAX_INDEX_BYTES = 8L * (1 << 20) + 8;

  /** The linked files: the index, and the data file or null when there is none. */
  record Linked(Path index, Path data, long indexLength, long dataLength) {}

  private OutputFiles() {}

  /**
   * Links a map output's files into {@code targetDir} after checking them.
   *
   * @param data the data file, or null when the output has none
   * @param owner the user the files must belong to (the registered executor's)
   * @throws OutputRefused when a check fails or the files cannot be linked (the message says which)
   */
  static Linked take(int shuffleId, long mapId, Path index, Path data, Path targetDir, String owner)
      throws OutputRefused {
    String base = "shuffle_" + shuffleId + "_" + mapId + "_0";
    check(index, base + ".index", owner);
    if (data != null) {
      check(data, base + ".data", owner);
    }
    Path linkedIndex = targetDir.resolve(base + ".index");
    Path linkedData = data == null ? null : targetDir.resolve(base + ".data");
    try {
      Files.createDirectories(targetDir);
      link(linkedIndex, index);
      if (data != null) {
        link(linkedData, data);
      }
      long dataLength = data == null ? 0 : Files.size(linkedData);
      long indexLength = Files.size(linkedIndex);
      checkIndex(linkedIndex, indexLength, dataLength);
      return new Linked(linkedIndex, linkedData, indexLength, dataLength);
    } catch (IOException | OutputRefused e) {
      deleteQuietly(linkedIndex);
      deleteQuietly(linkedData);
      if (e instanceof OutputRefused) {
        throw (OutputRefused) e;
      }
      String why = e.getMessage();
      if (e instanceof FileSystemException && why != null && why.contains("cross-device")) {
        why =
            "the output is on another filesystem than the service's directory "
                + targetDir
                + " (put "
                + ServiceConfig.PREFIX
                + ServiceConfig.DIR.name()
                + " on the filesystem of spark.local.dir)";
      }
      throw new OutputRefused("cannot take " + index + ": " + why);
    }
  }

  private static void check(Path file, String expectedName, String owner) throws OutputRefused {
    if (!file.isAbsolute() || !file.normalize().equals(file)) {
      throw new OutputRefused(file + " is not an absolute, normalized path");
    }
    if (!expectedName.equals(String.valueOf(file.getFileName()))) {
      throw new OutputRefused(file + " is not named " + expectedName);
    }
    if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
      throw new OutputRefused(file + " is not a regular file (or is a symbolic link)");
    }
    try {
      String fileOwner = Files.getOwner(file, LinkOption.NOFOLLOW_LINKS).getName();
      if (!fileOwner.equals(owner)) {
        throw new OutputRefused(file + " belongs to " + fileOwner + ", not to " + owner);
      }
    } catch (IOException e) {
      throw new OutputRefused("cannot read the owner of " + file + ": " + e.getMessage());
    }
  }

  private static void link(Path link, Path existing) throws IOException {
    Files.deleteIfExists(link); // a re-published map id replaces the earlier attempt's link
    Files.createLink(link, existing);
  }

  private static void checkIndex(Path index, long indexLength, long dataLength)
      throws IOException, OutputRefused {
    if (indexLength < 16 || indexLength % 8 != 0 || indexLength > MAX_INDEX_BYTES) {
      throw new OutputRefused(
          "index file of " + indexLength + " bytes is not 8 x (partitions + 1) bytes");
    }
    ByteBuffer b = ByteBuffer.allocate((int) indexLength).order(ByteOrder.BIG_ENDIAN);
    try (FileChannel ch = FileChannel.open(index, StandardOpenOption.READ)) {
      while (b.hasRemaining()) {
        if (ch.read(b) < 0) {
          throw new OutputRefused("index file shrank while being read");
        }
      }
    }
    b.flip();
    long previous = b.getLong();
    if (previous != 0) {
      throw new OutputRefused("index file does not start at offset 0");
    }
    while (b.hasRemaining()) {
      long next = b.getLong();
      if (next < previous) {
        throw new OutputRefused("index offsets decrease (" + previous + " then " + next + ")");
      }
      previous = next;
    }
    if (previous != dataLength) {
      throw new OutputRefused(
          "index ends at " + previous + " but the data file has " + dataLength + " bytes");
    }
  }

  static void deleteQuietly(Path p) {
    if (p != null) {
      try {
        Files.deleteIfExists(p);
      } catch (IOException ignored) {
        // best effort: the application's directory is removed as a whole later
      }
    }
  }

  /** A map output the service will not take; the message goes back to the executor. */
  static final class OutputRefused extends Exception {
    private static final long serialVersionUID = 1L;

    OutputRefused(String message) {
      super(message);
    }
  }
}
