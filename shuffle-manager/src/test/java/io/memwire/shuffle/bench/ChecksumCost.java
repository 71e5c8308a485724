package io.memwire.shuffle.bench;

import io.memwire.shuffle.directory.ChecksumAlgorithm;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.zip.Checksum;

/**
 * The CPU block verification adds per GiB, on this thread, in the two ways Memwire checks bytes: a
 * one-sided read's destination buffer (direct memory, the checksum's intrinsic or native code over
 * the buffer in hand: what {@code BlockChecksum.Verifier} does) and a block Spark reads from this
 * executor's own files ({@code LocalBlockCheck}: the block's bytes read a second time from the page
 * cache through Spark's stream into a heap array, then checksummed; and, for comparison, the same
 * over a mapping of the file). Each algorithm Spark offers; rounds interleaved; median, min and max
 * of CPU ms per GiB.
 *
 * <pre>java -cp ... io.memwire.shuffle.bench.ChecksumCost [MiB per round, 256] [rounds, 9]</pre>
 */
public final class ChecksumCost {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final int PARTITION = 64 * 1024; // a typical shuffle block's size order

  private ChecksumCost() {}

  public static void main(String[] args) throws IOException {
    int mib = args.length > 0 ? Integer.parseInt(args[0]) : 256;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 9;
    long bytes = (long) mib << 20;
    byte[] random = new byte[1 << 20];
    new Random(7).nextBytes(random);
    // 64 MiB, larger than the caches: the bytes come from memory, as a landed read's mostly do.
    ByteBuffer direct = ByteBuffer.allocateDirect(64 << 20);
    while (direct.hasRemaining()) {
      direct.put(random);
    }
    direct.flip();
    Path file = Files.createTempFile("memwire-checksum-cost", ".data");
    try {
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
        for (long at = 0; at < bytes; at += random.length) {
          ch.write(ByteBuffer.wrap(random), at);
        }
      }
      System.out.printf(
          "checksum cost: %d MiB per round, %d rounds, partitions of %d KiB, CPU ms per GiB"
              + " (median [min-max])%n",
          mib, rounds, PARTITION / 1024);
      for (ChecksumAlgorithm a : ChecksumAlgorithm.values()) {
        List<Double> oneSided = new ArrayList<>();
        List<Double> localStream = new ArrayList<>();
        List<Double> localMapped = new ArrayList<>();
        List<Double> readOnly = new ArrayList<>();
        for (int r = 0; r < rounds + 1; r++) {
          double d = perGiB(bytes, () -> directBuffers(a, direct, bytes));
          double s = perGiB(bytes, () -> stream(a, file, true));
          double m = perGiB(bytes, () -> mapped(a, file));
          double o = perGiB(bytes, () -> stream(a, file, false));
          if (r > 0) { // the first round warms the code up
            oneSided.add(d);
            localStream.add(s);
            localMapped.add(m);
            readOnly.add(o);
          }
        }
        System.out.printf(
            "%-8s one-sided buffer %s; local block re-read + check %s (the re-read alone %s);"
                + " over a mapping %s%n",
            a, spread(oneSided), spread(localStream), spread(readOnly), spread(localMapped));
      }
    } finally {
      Files.deleteIfExists(file);
    }
  }

  private interface Work {
    long run() throws IOException;
  }

  private static long sink;

  private static double perGiB(long bytes, Work w) throws IOException {
    long t0 = THREADS.getCurrentThreadCpuTime();
    sink += w.run();
    long ns = THREADS.getCurrentThreadCpuTime() - t0;
    return ns / 1e6 / (bytes / (double) (1L << 30));
  }

  /** As a one-sided read's check: partitions of a direct buffer, no copy. */
  private static long directBuffers(ChecksumAlgorithm a, ByteBuffer buf, long bytes) {
    long x = 0;
    Checksum c = a.newChecksum();
    for (long done = 0; done < bytes; done += buf.capacity()) {
      for (int at = 0; at < buf.capacity(); at += PARTITION) {
        ByteBuffer part = buf.duplicate();
        part.position(at).limit(at + PARTITION);
        c.reset();
        c.update(part);
        x ^= c.getValue();
      }
    }
    return x;
  }

  /** As LocalBlockCheck: a stream over the file into a 64 KiB heap array, checked or not. */
  private static long stream(ChecksumAlgorithm a, Path file, boolean check) throws IOException {
    byte[] buf = new byte[64 * 1024];
    Checksum c = a.newChecksum();
    long x = 0;
    try (InputStream in = Files.newInputStream(file)) {
      int n;
      while ((n = in.read(buf)) > 0) {
        if (check) {
          c.reset();
          c.update(buf, 0, n);
          x ^= c.getValue();
        } else {
          x ^= buf[0];
        }
      }
    }
    return x;
  }

  /** The same bytes over a read-only mapping of the file, no copy. */
  private static long mapped(ChecksumAlgorithm a, Path file) throws IOException {
    Checksum c = a.newChecksum();
    long x = 0;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      for (long at = 0; at < size; at += 1 << 30) {
        MappedByteBuffer m =
            ch.map(FileChannel.MapMode.READ_ONLY, at, Math.min(1 << 30, size - at));
        for (int p = 0; p < m.capacity(); p += PARTITION) {
          ByteBuffer part = m.duplicate();
          part.position(p).limit(Math.min(m.capacity(), p + PARTITION));
          c.reset();
          c.update(part);
          x ^= c.getValue();
        }
      }
    }
    return x;
  }

  private static String spread(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    Collections.sort(s);
    return String.format("%.0f [%.0f-%.0f]", s.get(s.size() / 2), s.get(0), s.get(s.size() - 1));
  }
}
