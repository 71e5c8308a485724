package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.UserPrincipal;

/**
 * Takes ownership of one map output's files for the service, checking what it uses rather than what
 * a path named a moment earlier:
 *
 * <ol>
 *   <li>each file is looked up without following a link at any component of its path ({@link
 *       TrustedPaths#lookup}): a regular file named {@code shuffle_S_M_0.index/.data} owned by the
 *       connecting user;
 *   <li>it is hard-linked into the service's private directory;
 *   <li>the linked inode, which nobody but the service can reach by that name, must be the one
 *       looked up (same device and inode), still a regular file of that user, with exactly two
 *       names (the executor's and the service's);
 *   <li>the index is read through the link and checked against the data file's length (P+1
 *       non-decreasing offsets from 0 to the data length).
 * </ol>
 *
 * A swap of the file or of any directory above it between the steps makes the inodes differ, and
 * the output is refused; what the service registers and serves is the inode it checked. Spark
 * replaces output files by renaming, never rewrites them, so a link keeps the bytes the executor
 * finished with after the executor deletes its names.
 */
final class OutputFiles {
  /** Largest index accepted (a million partitions). */
  static final long MAX_INDEX_BYTES = 8L * (1 << 20) + 8;

  /**
   * The linked files: the index, and the data file or null when there is none, with what the
   * service saw of each once it had checked them (the data's check is null without a data file).
   */
  record Linked(
      Path index,
      Path data,
      long indexLength,
      long dataLength,
      FileCheck indexCheck,
      FileCheck dataCheck) {
    long bytes() {
      return indexLength + dataLength;
    }
  }

  private OutputFiles() {}

  /**
   * Links a map output's files into {@code targetDir} (private to the service) after checking them.
   *
   * @param data the data file, or null when the output has none
   * @param owner the user the files must belong to (the connected executor's peer credentials)
   * @param linkId makes the link names unique in {@code targetDir}
   * @throws OutputRefused when a check fails or the files cannot be linked (the message says which)
   */
  static Linked take(
      int shuffleId,
      long mapId,
      Path index,
      Path data,
      Path targetDir,
      UserPrincipal owner,
      long linkId)
      throws OutputRefused {
    String base = "shuffle_" + shuffleId + "_" + mapId + "_0";
    PosixFileAttributes indexSeen = check(index, base + ".index", owner);
    PosixFileAttributes dataSeen = data == null ? null : check(data, base + ".data", owner);
    Path linkedIndex = targetDir.resolve(base + "-" + linkId + ".index");
    Path linkedData = data == null ? null : targetDir.resolve(base + "-" + linkId + ".data");
    try {
      Files.createDirectories(targetDir);
      Files.createLink(linkedIndex, index);
      checkLinked(linkedIndex, index, indexSeen, owner);
      if (data != null) {
        Files.createLink(linkedData, data);
        checkLinked(linkedData, data, dataSeen, owner);
      }
      long dataLength = 0;
      if (data != null) {
        try (FileChannel ch = FileChannel.open(linkedData, StandardOpenOption.READ)) {
          dataLength = ch.size();
        }
      }
      long indexLength = checkIndex(linkedIndex, dataLength);
      return new Linked(
          linkedIndex,
          linkedData,
          indexLength,
          dataLength,
          FileCheck.of(attributes(linkedIndex)),
          data == null ? null : FileCheck.of(attributes(linkedData)));
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
                + ServiceSettings.PREFIX
                + ServiceSettings.DIR.name()
                + " on the filesystem of spark.local.dir)";
      }
      throw new OutputRefused("cannot take " + index + ": " + why);
    }
  }

  /**
   * Spark's checksums of an output whose index has {@code indexLength} bytes, read from the
   * checksum file the executor named ({@code file}: {@code shuffle_S_M_0.checksum.<ALGO>}, null for
   * none) the way the output's files are taken: looked up without links, owned by {@code owner},
   * linked into {@code targetDir}, the link checked, read through it and deleted. Null when there
   * is none (checksums off, an older writer), it is too wide ({@link
   * DirectorySlot#MAX_METADATA_PARTITIONS}), or a check fails: the output is then served
   * unverified.
   */
  static OutputChecksums checksums(
      Path file,
      int shuffleId,
      long mapId,
      long indexLength,
      Path targetDir,
      UserPrincipal owner,
      long linkId) {
    long partitions = indexLength / 8 - 1;
    ChecksumAlgorithm algorithm = file == null ? null : OutputChecksums.algorithmOf(file);
    if (algorithm == null || partitions < 1 || partitions > DirectorySlot.MAX_METADATA_PARTITIONS) {
      return null;
    }
    PosixFileAttributes seen;
    try {
      seen =
          check(
              file,
              "shuffle_" + shuffleId + "_" + mapId + "_0.checksum." + algorithm.name(),
              owner);
    } catch (OutputRefused e) {
      return null; // not the output's checksum file, or not the user's: served unverified
    }
    if (seen.size() != partitions * 8) {
      return null;
    }
    Path link = targetDir.resolve(linkId + "-" + file.getFileName());
    try {
      Files.createLink(link, file);
      checkLinked(link, file, seen, owner);
      return OutputChecksums.readFile(link, algorithm, (int) partitions);
    } catch (IOException | OutputRefused e) {
      return null;
    } finally {
      deleteQuietly(link);
    }
  }

  private static PosixFileAttributes check(Path file, String expectedName, UserPrincipal owner)
      throws OutputRefused {
    if (!file.isAbsolute() || !file.normalize().equals(file)) {
      throw new OutputRefused(file + " is not an absolute, normalized path");
    }
    if (!expectedName.equals(String.valueOf(file.getFileName()))) {
      throw new OutputRefused(file + " is not named " + expectedName);
    }
    PosixFileAttributes a;
    try {
      a = TrustedPaths.lookup(file);
    } catch (IOException e) {
      throw new OutputRefused("cannot take " + file + ": " + e.getMessage());
    }
    if (!a.isRegularFile()) {
      throw new OutputRefused(file + " is not a regular file (or is a symbolic link)");
    }
    if (!owner.equals(a.owner())) {
      throw new OutputRefused(
          file + " belongs to " + TrustedPaths.ownerName(a) + ", not to " + owner.getName());
    }
    return a;
  }

  /** The service's own link must name the inode checked, unchanged in kind and owner. */
  private static void checkLinked(
      Path link, Path named, PosixFileAttributes seen, UserPrincipal owner)
      throws IOException, OutputRefused {
    PosixFileAttributes a =
        Files.readAttributes(link, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (a.fileKey() == null || !a.fileKey().equals(seen.fileKey())) {
      throw new OutputRefused(
          named + " was replaced while the service took it (another file is there now)");
    }
    if (!a.isRegularFile() || !owner.equals(a.owner())) {
      throw new OutputRefused(named + " changed owner or kind while the service took it");
    }
    int links = (Integer) Files.getAttribute(link, "unix:nlink", LinkOption.NOFOLLOW_LINKS);
    if (links != 2) {
      throw new OutputRefused(
          named + " has " + (links - 1) + " names besides the service's; expected exactly one");
    }
  }

  private static PosixFileAttributes attributes(Path link) throws IOException {
    return Files.readAttributes(link, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
  }

  /** Reads the index through the service's link and checks it; returns its length. */
  static long checkIndex(Path index, long dataLength) throws IOException, OutputRefused {
    try (FileChannel ch =
        FileChannel.open(index, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      long indexLength = ch.size();
      if (indexLength < 16 || indexLength % 8 != 0 || indexLength > MAX_INDEX_BYTES) {
        throw new OutputRefused(
            "index file of " + indexLength + " bytes is not 8 x (partitions + 1) bytes");
      }
      ByteBuffer b = ByteBuffer.allocate((int) indexLength).order(ByteOrder.BIG_ENDIAN);
      while (b.hasRemaining()) {
        if (ch.read(b) < 0) {
          throw new OutputRefused("index file shrank while being read");
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
      return indexLength;
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
