package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.RegisteredAllocator;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * What the service holds for one application (attempt): its token, its driver's address (for the
 * liveness probe), a shuffle directory per executor, and the files it took, by shuffle. Ending it
 * closes every directory (deregistering its files and chunks) and deletes its files.
 */
final class Application {
  final String key;
  final Path dir;
  private final byte[] token;
  private volatile InetSocketAddress driver;
  private volatile long lastAliveNanos;
  private volatile long refusedSinceNanos;
  private volatile long nextProbeNanos;
  private final Map<String, ShuffleDirectory> directories = new HashMap<>();
  private final Map<Integer, List<OutputFiles.Linked>> files = new HashMap<>();
  private boolean ended;

  Application(String key, byte[] token, Path dir, InetSocketAddress driver, long nowNanos) {
    this.key = key;
    this.token = token.clone();
    this.dir = dir;
    this.driver = driver;
    this.lastAliveNanos = nowNanos;
  }

  boolean tokenMatches(byte[] presented) {
    return MessageDigest.isEqual(token, presented);
  }

  InetSocketAddress driver() {
    return driver;
  }

  void driver(InetSocketAddress d) {
    driver = d;
  }

  /** What one liveness probe of the driver's RPC port found. */
  enum Probe {
    /** It accepted a TCP connection. */
    ANSWERS,
    /** Its host answered that nothing listens there: the driver process is gone. */
    REFUSED,
    /** No answer in time, or no route: the driver may be gone or cut off. */
    SILENT
  }

  /** Tries one TCP connection to the driver's RPC port within {@code timeoutMs}. */
  Probe probe(int timeoutMs) {
    InetSocketAddress d = driver;
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(d.getHostString(), d.getPort()), timeoutMs);
      return Probe.ANSWERS;
    } catch (ConnectException e) {
      String m = e.getMessage();
      return m != null && m.contains("refused") ? Probe.REFUSED : Probe.SILENT;
    } catch (IOException | IllegalArgumentException | SecurityException e) {
      return Probe.SILENT;
    }
  }

  /** Since when every probe was refused (0: the last one was not); the liveness thread's. */
  long refusedSinceNanos() {
    return refusedSinceNanos;
  }

  void refusedSince(long nanos) {
    refusedSinceNanos = nanos;
  }

  /** When the liveness thread probes this driver next. */
  long nextProbeNanos() {
    return nextProbeNanos;
  }

  void nextProbe(long nanos) {
    nextProbeNanos = nanos;
  }

  long lastAliveNanos() {
    return lastAliveNanos;
  }

  void alive(long nowNanos) {
    lastAliveNanos = nowNanos;
  }

  /** The executor's directory, created on its first output. */
  synchronized ShuffleDirectory directory(
      String executor, TransferNode node, RegisteredAllocator parent) {
    if (ended) {
      throw new IllegalStateException("application " + key + " has ended");
    }
    return directories.computeIfAbsent(
        executor, e -> new ShuffleDirectory(node, parent, key + "/" + e));
  }

  /** Records files published in a directory, so they are deleted with their shuffle. */
  synchronized boolean addFiles(int shuffleId, OutputFiles.Linked linked) {
    if (ended) {
      return false;
    }
    files.computeIfAbsent(shuffleId, s -> new ArrayList<>()).add(linked);
    return true;
  }

  /** Deregisters and deletes one shuffle's outputs of every executor; returns outputs removed. */
  int removeShuffle(int shuffleId) {
    List<ShuffleDirectory> dirs;
    List<OutputFiles.Linked> gone;
    synchronized (this) {
      dirs = new ArrayList<>(directories.values());
      gone = files.remove(shuffleId);
    }
    for (ShuffleDirectory d : dirs) {
      d.unregister(shuffleId);
    }
    if (gone == null) {
      return 0;
    }
    for (OutputFiles.Linked l : gone) {
      OutputFiles.deleteQuietly(l.index());
      OutputFiles.deleteQuietly(l.data());
    }
    return gone.size();
  }

  /** Outputs and bytes of files held now. */
  synchronized long[] held() {
    long outputs = 0;
    long bytes = 0;
    for (List<OutputFiles.Linked> l : files.values()) {
      outputs += l.size();
      for (OutputFiles.Linked f : l) {
        bytes += f.indexLength() + f.dataLength();
      }
    }
    return new long[] {outputs, bytes};
  }

  /**
   * Ends the application: every directory closed, every file deleted. Idempotent: returns true only
   * for the call that ended it.
   */
  boolean end() {
    List<ShuffleDirectory> dirs;
    synchronized (this) {
      if (ended) {
        return false;
      }
      ended = true;
      dirs = new ArrayList<>(directories.values());
      directories.clear();
      files.clear();
    }
    for (ShuffleDirectory d : dirs) {
      d.close();
    }
    deleteTree(dir);
    return true;
  }

  static void deleteTree(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> s = Files.walk(root)) {
      s.sorted(Comparator.reverseOrder()).forEach(OutputFiles::deleteQuietly);
    } catch (IOException ignored) {
      // what could not be listed stays; the next start of the service empties the directory
    }
  }
}
