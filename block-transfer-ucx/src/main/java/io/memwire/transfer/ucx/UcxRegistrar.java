package io.memwire.transfer.ucx;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.spi.ProviderRegistration;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's UCX memory registrations. Each remotely readable one gets a random 64-bit handle, the
 * key its region descriptors carry; a peer exchanges handles for packed rkeys over its
 * authenticated control session ({@link UcxSession}), and only for live regions. Closing a region
 * first stops answering for it, then tells every session that took its rkey ({@code GONE}) and
 * waits for each to drop it (bounded by the read timeout, after which that session is closed), and
 * only then unmaps the memory in UCX and lets the caller free it: UCX's software GET (tcp, and file
 * mappings over shared memory) copies from the address without a check of its own.
 */
final class UcxRegistrar {
  private static final Logger LOG = LoggerFactory.getLogger(UcxRegistrar.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final UcxProgressThread progress;
  private final Duration ackTimeout;
  private final Map<Long, Region> live = new ConcurrentHashMap<>();
  private final Set<Region> all = ConcurrentHashMap.newKeySet();

  UcxRegistrar(UcxProgressThread progress, Duration ackTimeout) {
    this.progress = progress;
    this.ackTimeout = ackTimeout;
  }

  /** One registration. */
  final class Region implements ProviderRegistration {
    private final long handle;
    private final long address;
    private final int length;
    private final UcpMemory memory;
    private final byte[] packedKey;
    private final Runnable release;

    /** Memory UCX allocated: deregistering stops serving it, {@link #freeAllocation} unmaps it. */
    private final boolean allocated;

    @GuardedBy("this")
    private final Set<UcxSession> holders = new HashSet<>();

    @GuardedBy("this")
    private boolean open = true;

    Region(
        long handle,
        long address,
        int length,
        UcpMemory memory,
        byte[] packedKey,
        Runnable release,
        boolean allocated) {
      this.handle = handle;
      this.address = address;
      this.length = length;
      this.memory = memory;
      this.packedKey = packedKey;
      this.release = release;
      this.allocated = allocated;
    }

    /** Unregisters, then frees what the registration served from (a mapping or copy of its own). */
    private void free() {
      try {
        if (memory != null) {
          memory.deregister();
          UcxResources.MEMORY.decrementAndGet();
        }
        if (allocated) {
          allocations.remove(address, this);
        }
      } finally {
        if (release != null) {
          release.run();
        }
      }
    }

    @Override
    public long remoteKey() {
      return handle;
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

    long handle() {
      return handle;
    }

    byte[] packedKey() {
      return packedKey;
    }

    /** Records {@code s} as holding this region's rkey; false once the region is closed. */
    synchronized boolean handTo(UcxSession s) {
      if (!open) {
        return false;
      }
      holders.add(s);
      return true;
    }

    synchronized void dropHolder(UcxSession s) {
      holders.remove(s);
    }

    @Override
    public void deregister(Runnable onQuiesced) {
      List<UcxSession> told;
      synchronized (this) {
        if (!open) {
          return;
        }
        open = false;
        told = new ArrayList<>(holders);
        holders.clear();
      }
      live.remove(handle);
      List<CompletableFuture<Void>> acks = new ArrayList<>();
      for (UcxSession s : told) {
        CompletableFuture<Void> ack = s.tellGone(handle);
        acks.add(
            ack.orTimeout(ackTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .exceptionally(
                    e -> {
                      LOG.warn(
                          "peer {} did not drop the key of a closed region within {}; closing its"
                              + " session",
                          s.peer(),
                          ackTimeout);
                      s.close();
                      return null;
                    }));
      }
      var unused =
          CompletableFuture.allOf(acks.toArray(new CompletableFuture<?>[0]))
              .whenComplete((v, e) -> progress.execute(() -> unmap(onQuiesced)));
    }

    private void unmap(Runnable onQuiesced) {
      try {
        if (!allocated && all.remove(this)) {
          free();
        }
      } finally {
        // Not on the progress thread: what the caller chained on it may take a lock whose holder
        // waits for this thread (Flight's lease guards register under their lock): a deadlock.
        try {
          released.execute(onQuiesced);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
          onQuiesced.run(); // the provider closed: nothing waits for this thread any more
        }
      }
    }
  }

  /**
   * Memory UCX allocated ({@link #allocate}) by address. A region registered by address inside it
   * is served with its key rather than mapped again: UCX 1.13 reads a mapping inside its own
   * allocation one-sided only until the first such mapping is unmapped, and from then on emulates
   * every GET of that memory on this worker.
   */
  private final ConcurrentSkipListMap<Long, Region> allocations = new ConcurrentSkipListMap<>();

  /** The live allocation holding all of {@code [address, address + length)}, or null. */
  private Region allocationHolding(long address, long length) {
    Map.Entry<Long, Region> e = allocations.floorEntry(address);
    if (e == null) {
      return null;
    }
    Region a = e.getValue();
    return address - a.address + length <= a.length && all.contains(a) ? a : null;
  }

  /**
   * Unmaps memory UCX allocated ({@link #allocate}), on the progress thread, once its owner is done
   * with it; a no-op when the provider's close unmapped it already.
   */
  void freeAllocation(Region r) {
    progress.execute(
        () -> {
          if (all.remove(r)) {
            r.free();
          }
        });
  }

  /**
   * Has UCX allocate and register {@code length} bytes ({@code memoryMap} with {@code allocate}):
   * memory of UCX's own, which its shared-memory transports let a peer read without this process,
   * as they do regions registered inside it (memory registered by address elsewhere is read only
   * while this worker progresses). Only a {@code remoteReadable} one gets a handle served to peers.
   */
  Region allocate(int length, boolean remoteReadable) {
    Region r =
        progress.call(
            () -> {
              UcpMemory m =
                  map(new UcpMemMapParams().allocate().setLength(length), "allocate", length);
              // Packed also when not served as a whole: regions registered inside it use it.
              byte[] packed = packedKey(m);
              long handle = remoteReadable ? newHandle() : 0;
              Region reg = new Region(handle, m.getAddress(), length, m, packed, null, true);
              all.add(reg);
              return reg;
            },
            REGISTER_SECONDS);
    allocations.put(r.address, r);
    if (remoteReadable) {
      live.put(r.handle, r);
    }
    return r;
  }

  /** Longest wait for one registration on the progress thread (it pins every page). */
  private static final long REGISTER_SECONDS = 600;

  /** Registers {@code buffer} (whole capacity) on the progress thread. */
  Region register(ByteBuffer buffer, long address, boolean remoteReadable) {
    return register(buffer, address, remoteReadable, null);
  }

  /**
   * Registers {@code buffer}; {@code release} (or null) runs after it is unregistered, to free
   * memory the registration owns.
   */
  Region register(ByteBuffer buffer, long address, boolean remoteReadable, Runnable release) {
    ByteBuffer whole = buffer.duplicate().clear();
    Region holder = remoteReadable ? allocationHolding(address, whole.capacity()) : null;
    if (holder != null) {
      // A handle of its own, bounds of its own, the allocation's key: nothing to map or unmap.
      Region sub =
          new Region(
              newHandle(), address, whole.capacity(), null, holder.packedKey, release, false);
      all.add(sub);
      live.put(sub.handle, sub);
      return sub;
    }
    Region r =
        progress.call(
            () -> {
              UcpMemory m =
                  map(
                      new UcpMemMapParams().setAddress(address).setLength(whole.capacity()),
                      "register",
                      whole.capacity());
              byte[] packed = remoteReadable ? packedKey(m) : new byte[0];
              long handle = remoteReadable ? newHandle() : 0;
              Region reg = new Region(handle, address, whole.capacity(), m, packed, release, false);
              all.add(reg);
              return reg;
            },
            REGISTER_SECONDS);
    if (remoteReadable) {
      live.put(r.handle, r);
    }
    return r;
  }

  /** {@code memoryMap} on the progress thread, counted; a refusal as a RegistrationException. */
  private UcpMemory map(UcpMemMapParams params, String what, long length) {
    UcpMemory m;
    try {
      m = progress.context().memoryMap(params);
    } catch (RuntimeException e) {
      throw new RegistrationException(
          "UCX could not " + what + " " + length + " bytes: " + e.getMessage(), e);
    }
    UcxResources.MEMORY.incrementAndGet();
    return m;
  }

  private static byte[] packedKey(UcpMemory m) {
    ByteBuffer k = m.getRemoteKeyBuffer();
    byte[] packed = new byte[k.remaining()];
    k.get(packed);
    return packed;
  }

  private long newHandle() {
    long h;
    do {
      h = RANDOM.nextLong();
    } while (h == 0 || live.containsKey(h));
    return h;
  }

  /** The live region with this handle, or null. */
  Region find(long handle) {
    return live.get(handle);
  }

  /** Runs deregistration callbacks, off the progress thread, in order; a daemon thread. */
  private final java.util.concurrent.ExecutorService released =
      java.util.concurrent.Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "memwire-ucx-released");
            t.setDaemon(true);
            return t;
          });

  /**
   * Unmaps what is still registered (at provider close; the caller frees nothing after this),
   * except memory UCX allocated that its owner still holds: unmapped, any later touch of it would
   * kill the JVM, so it stays mapped, a leak the node's books report.
   *
   * @return how many allocations stay mapped (the context must then stay too)
   */
  int closeAll() {
    int held = 0;
    for (Region r : new ArrayList<>(all)) {
      live.remove(r.handle);
      if (r.allocated) {
        held++;
        all.remove(r);
        UcxResources.MEMORY.decrementAndGet();
        continue;
      }
      progress.call(
          () -> {
            if (all.remove(r)) {
              r.free();
            }
            return null;
          });
    }
    if (held > 0) {
      LOG.warn(
          "ucx: {} allocations of UCX memory still held by their owners at close are left mapped,"
              + " and the UCX context with them (a leak: the node's memory books name the units)",
          held);
    }
    // The callbacks of regions closed before: run, then the thread ends.
    released.shutdown();
    try {
      if (!released.awaitTermination(10, TimeUnit.SECONDS)) {
        LOG.warn("ucx: deregistration callbacks still running 10 s after close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return held;
  }

  int registered() {
    return all.size();
  }
}
