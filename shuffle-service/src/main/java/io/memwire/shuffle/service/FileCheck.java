package io.memwire.shuffle.service;

import java.nio.file.attribute.PosixFileAttributes;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the service saw of one linked file when it took it (device, inode, size, modification time),
 * kept in the recovery store so a restarted service serves that file again only if the same inode,
 * unchanged in size and time, is still under its name.
 *
 * @param device the file's device number, or -1 when the platform does not tell it
 * @param inode the file's inode number, or -1 when the platform does not tell it
 */
record FileCheck(long device, long inode, long size, long mtimeNanos) {
  /** The JDK's Unix file key prints as {@code (dev=<hex>,ino=<decimal>)}. */
  private static final Pattern UNIX_KEY = Pattern.compile("\\(dev=([0-9a-f]+),ino=([0-9]+)\\)");

  /** The check of a file from attributes read without following links. */
  static FileCheck of(PosixFileAttributes a) {
    long dev = -1;
    long ino = -1;
    Matcher m = UNIX_KEY.matcher(String.valueOf(a.fileKey()));
    if (m.matches()) {
      dev = Long.parseUnsignedLong(m.group(1), 16);
      ino = Long.parseLong(m.group(2));
    }
    return new FileCheck(dev, ino, a.size(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS));
  }

  /**
   * True when {@code now} is the file this check saw: a known device and inode, both equal, and the
   * same size and modification time.
   */
  boolean sameAs(FileCheck now) {
    return device >= 0
        && inode >= 0
        && device == now.device
        && inode == now.inode
        && size == now.size
        && mtimeNanos == now.mtimeNanos;
  }
}
