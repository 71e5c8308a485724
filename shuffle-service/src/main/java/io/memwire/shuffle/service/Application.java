package io.memwire.shuffle.service;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.memory.MemoryAllocator;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the service holds for one application (attempt) of one local user: its token, its driver's
 * address (resolved once at registration: the only address the liveness probe ever connects to), a
 * shuffle directory per executor, and the output held in each (executor, shuffle, map index) slot.
 * Its files' regions are units of its {@link #memory} node of the service's {@link ByteQuotas}, its
 * directories children of that node. Ending it closes every directory (deregistering its files and
 * chunks) and deletes its files.
 */
final class Application {
  private static final Logger LOG = LoggerFactory.getLogger(Application.class);

  /** Applications are keyed by the registering user and the id: users never share an entry. */
  record Key(UserPrincipal user, String id) {
    @Override
    public String toString() {
      return id + " (user " + user.getName() + ")";
    }
  }

  /** One held map output: the files the service linked and where reducers find its slot. */
  record Held(long mapId, OutputFiles.Linked files, DirectoryPointer pointer) {}

  private record Slot(String executor, int shuffleId, int mapIndex) {}

  final Key key;
  final Path dir;

  /** Its node of the byte quotas: its files' regions and its directories' chunks. */
  final MemoryAllocator memory;

  private final byte[] token;
  private final InetSocketAddress driver;
  private final String driverHost;
  private volatile long lastAliveNanos;
  private volatile long refusedSinceNanos;
  private volatile long nextProbeNanos;

  @GuardedBy("this")
  private final Map<String, ShuffleDirectory> directories = new HashMap<>();

  @GuardedBy("this")
  private final Map<Slot, Held> outputs = new HashMap<>();

  @GuardedBy("this")
  private boolean ended;

  /**
   * @param driver the driver's address, resolved from {@code driverHost} as registered
   * @param memory its node of the byte quotas ({@link ByteQuotas#open})
   */
  Application(
      Key key,
      byte[] token,
      Path dir,
      InetSocketAddress driver,
      String driverHost,
      MemoryAllocator memory,
      long nowNanos) {
    this.key = key;
    this.memory = memory;
    this.token = token.clone();
    this.dir = dir;
    this.driver = driver;
    this.driverHost = driverHost;
    this.lastAliveNanos = nowNanos;
  }

  /** What the recovery store keeps of this application. */
  RecoveryRecords.AppRecord record() {
    return new RecoveryRecords.AppRecord(
        key.user().getName(),
        key.id(),
        token.clone(),
        driverHost,
        driver.getPort(),
        dir.getFileName().toString());
  }

  /** The MAC of a RESOLVE request's signed bytes under this application's token. */
  byte[] resolveMac(java.nio.ByteBuffer signed) {
    return io.memwire.shuffle.protocol.ResolveClient.mac(token, signed);
  }

  /** True once the application has ended (its outputs are gone). */
  synchronized boolean ended() {
    return ended;
  }

  /**
   * The pointer of the directory chunk of {@code executor}'s {@code shuffleId} that holds map
   * indexes of {@code chunk}, or null when no output of it is held now.
   */
  synchronized DirectoryPointer pointer(String executor, int shuffleId, int chunk) {
    for (Map.Entry<Slot, Held> e : outputs.entrySet()) {
      Slot s = e.getKey();
      // the chunk the directory put the slot in: its slots per chunk depend on the inline entries
      if (s.executor().equals(executor)
          && s.shuffleId() == shuffleId
          && e.getValue().pointer().chunk() == chunk) {
        return e.getValue().pointer();
      }
    }
    return null;
  }

  boolean tokenMatches(byte[] presented) {
    return MessageDigest.isEqual(token, presented);
  }

  /** The driver's RPC address, resolved when the application registered. */
  InetSocketAddress driver() {
    return driver;
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

  /** The executor's directory, created on its first output as a child of {@link #memory}. */
  synchronized ShuffleDirectory directory(String executor, Registrar node) {
    if (ended) {
      throw new IllegalStateException("application " + key + " has ended");
    }
    return directories.computeIfAbsent(
        executor, e -> new ShuffleDirectory(node, memory, "directory " + e));
  }

  /** Bytes of its directories' chunks now. */
  synchronized long directoryBytes() {
    long bytes = 0;
    for (ShuffleDirectory d : directories.values()) {
      bytes += d.allocator().allocatedBytes();
    }
    return bytes;
  }

  /** The output held in one slot, or null. */
  synchronized Held held(String executor, int shuffleId, int mapIndex) {
    return outputs.get(new Slot(executor, shuffleId, mapIndex));
  }

  /**
   * Records the output now published in a slot (its directory already names it).
   *
   * @return the output it replaced (its files are the caller's to delete), or null
   * @throws IllegalStateException when the application has ended meanwhile
   */
  synchronized Held put(String executor, int shuffleId, int mapIndex, Held h) {
    if (ended) {
      throw new IllegalStateException("application " + key + " has ended");
    }
    return outputs.put(new Slot(executor, shuffleId, mapIndex), h);
  }

  /** Deregisters one shuffle's outputs of every executor; returns what it held (to delete). */
  List<Held> removeShuffle(int shuffleId) {
    List<ShuffleDirectory> dirs;
    List<Held> gone = new ArrayList<>();
    synchronized (this) {
      dirs = new ArrayList<>(directories.values());
      outputs
          .entrySet()
          .removeIf(
              e -> {
                if (e.getKey().shuffleId() == shuffleId) {
                  gone.add(e.getValue());
                  return true;
                }
                return false;
              });
    }
    for (ShuffleDirectory d : dirs) {
      d.unregister(shuffleId);
    }
    return gone;
  }

  /** Outputs and bytes of files held now. */
  synchronized long[] held() {
    long bytes = 0;
    for (Held h : outputs.values()) {
      bytes += h.files().bytes();
    }
    return new long[] {outputs.size(), bytes};
  }

  /**
   * Ends the application: every directory closed, every file deleted. Returns what it held (for the
   * quotas), or null when another call ended it already.
   */
  List<Held> end() {
    return end(true);
  }

  /**
   * Ends the application in this process: every directory closed (its regions deregistered), and
   * its files deleted when {@code deleteFiles}, else kept for the next run to recover. Returns what
   * it held, or null when another call ended it already.
   */
  List<Held> end(boolean deleteFiles) {
    List<ShuffleDirectory> dirs;
    List<Held> gone;
    synchronized (this) {
      if (ended) {
        return null;
      }
      ended = true;
      dirs = new ArrayList<>(directories.values());
      directories.clear();
      gone = new ArrayList<>(outputs.values());
      outputs.clear();
    }
    for (ShuffleDirectory d : dirs) {
      d.close();
    }
    if (!deleteFiles) {
      return gone;
    }
    try {
      TrustedPaths.deleteTree(dir);
    } catch (IOException e) {
      // what could not be deleted stays; the next start of the service empties the directory
      LOG.warn("could not delete every file of {} in {}: {}", key, dir, e.toString());
    }
    return gone;
  }

  /** Deletes the files of outputs no longer held. */
  static void deleteFiles(List<Held> gone) {
    for (Held h : gone) {
      OutputFiles.deleteQuietly(h.files().index());
      OutputFiles.deleteQuietly(h.files().data());
    }
  }
}
