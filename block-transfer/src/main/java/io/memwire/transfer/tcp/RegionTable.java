package io.memwire.transfer.tcp;

import io.memwire.transfer.spi.ProviderRegistration;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.security.SecureRandom;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The live regions a tcp node serves, by remote key. Keys are 64 random bits, so a key cannot be
 * guessed from another. Each entry counts the responses currently reading it: deregistration takes
 * it out of the table at once and frees its memory only after the last such response is written.
 */
final class RegionTable {
  private static final Logger LOG = LoggerFactory.getLogger(RegionTable.class);
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int DEAD = 1 << 30;
  private static final int TOMBSTONES = 4096;

  private final Map<Long, Entry> live = new ConcurrentHashMap<>();

  /** Recently closed keys, so a late read is told "closed" rather than "unknown key". */
  private final Map<Long, Boolean> closed =
      Collections.synchronizedMap(
          new LinkedHashMap<>(16, 0.75f, false) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
              return size() > TOMBSTONES;
            }
          });

  /** A registered region; also the provider registration handed to the node. */
  final class Entry implements ProviderRegistration {
    final long key;
    final long address;
    final int length;

    /** Read-only view of the memory, position 0 = {@link #address}. */
    final ByteBuffer memory;

    final FileChannel file;
    final long fileOffset;
    final boolean remote;
    private final AtomicInteger state = new AtomicInteger();
    private volatile Runnable onQuiesced;
    private volatile boolean shrunk;

    Entry(long key, ByteBuffer memory, long address, boolean remote, FileChannel file, long off) {
      this.key = key;
      this.address = address;
      this.length = memory.capacity();
      this.memory = memory.duplicate().clear().asReadOnlyBuffer();
      this.remote = remote;
      this.file = file;
      this.fileOffset = off;
    }

    /** Pins the memory for one response; false once deregistered. */
    boolean acquire() {
      while (true) {
        int s = state.get();
        if ((s & DEAD) != 0) {
          return false;
        }
        if (state.compareAndSet(s, s + 1)) {
          return true;
        }
      }
    }

    void release() {
      if (state.decrementAndGet() == DEAD) {
        onQuiesced.run();
      }
    }

    /** Whether the region's file was found shorter than the region: its reads are refused. */
    boolean shrunk() {
      return shrunk;
    }

    /**
     * Checks whether the region's file is now shorter than the region (someone with write access
     * truncated it while it was registered). Its missing bytes can be neither sent by sendfile
     * (which then sends nothing, forever) nor read from the mapping (the kernel faults), so callers
     * check after a send stalled or failed; the common path pays no stat.
     *
     * @return true when the file is short; from then on {@link #shrunk()} is true too
     */
    boolean checkShrunk() {
      if (shrunk || file == null) {
        return shrunk;
      }
      long size;
      try {
        size = file.size();
      } catch (IOException e) {
        return false; // the channel closed: the region is being deregistered
      }
      if (size < fileOffset + length) {
        shrunk = true;
        LOG.warn(
            "the file under region {} was truncated to {} bytes while registered (the region ends"
                + " at byte {} of it): its reads are refused",
            Long.toHexString(key),
            size,
            fileOffset + length);
      }
      return shrunk;
    }

    /** The error a send of this region's bytes fails with once {@link #checkShrunk()} is true. */
    IOException shrunkError(Throwable cause) {
      return new IOException(
          "region "
              + Long.toHexString(key)
              + ": its file was truncated while the region was served; the connection carried part"
              + " of a response and is closed",
          cause);
    }

    @Override
    public long remoteKey() {
      return key;
    }

    @Override
    public long localKey() {
      return 0;
    }

    @Override
    public long address() {
      return address;
    }

    @Override
    public int length() {
      return length;
    }

    @Override
    public void deregister(Runnable quiesced) {
      if (remote && live.remove(key, this)) {
        closed.put(key, Boolean.TRUE);
      }
      onQuiesced = quiesced;
      int before;
      do {
        before = state.get();
        if ((before & DEAD) != 0) {
          return; // already deregistered
        }
      } while (!state.compareAndSet(before, before | DEAD));
      if (before == 0) {
        quiesced.run();
      }
    }
  }

  Entry register(ByteBuffer memory, long address, boolean remote, FileChannel file, long off) {
    if (!remote) {
      return new Entry(0, memory, address, false, file, off);
    }
    while (true) {
      long key = RANDOM.nextLong();
      if (key == 0 || live.containsKey(key) || closed.containsKey(key)) {
        continue;
      }
      Entry e = new Entry(key, memory, address, true, file, off);
      if (live.putIfAbsent(key, e) == null) {
        return e;
      }
    }
  }

  Entry lookup(long key) {
    return live.get(key);
  }

  boolean wasClosed(long key) {
    return closed.containsKey(key);
  }

  int size() {
    return live.size();
  }
}
