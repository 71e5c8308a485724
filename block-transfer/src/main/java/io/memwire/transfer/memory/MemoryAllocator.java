package io.memwire.transfer.memory;

import io.memwire.transfer.settings.TransportSettings;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The books of registered memory: a root owned by the {@code TransferNode} and one named child per
 * consumer. A child hands out {@link MemoryUnit}s placed by its consumer's own strategy and
 * accounts for them: bytes now, peak bytes and live units, each figure including the child's own
 * children, so the root's figures are the node's totals.
 *
 * <p>The memory those pieces are carved from is on the books too: every registration (a region, a
 * pool slab) is a {@link MemoryUnit.Kind#REGISTERED} unit, and direct memory a consumer does not
 * register as a whole is a {@link MemoryUnit.Kind#DIRECT} one. They count in {@link
 * #registeredBytes()} and {@link #directBytes()}, not in the figures of pieces, and are {@linkplain
 * #reserve reserved} against limits: an allocator's limit caps its registered plus direct bytes
 * (children included), a root's caps its registered bytes only (it is the node's registration
 * budget). A reservation is all or nothing: it is taken in this allocator, then in each parent, and
 * rolled back when any of them would pass its limit.
 *
 * <p>Closing an allocator closes its children first (newest first), then checks its own books:
 * units still live are a leak, logged at WARN and recorded as a {@link LeakReport} on the root.
 * Leaked units stay valid (freeing memory a caller still holds would crash the JVM); their release
 * still frees them and updates the books. An owner whose units end on other threads (regions
 * released by the provider) closes with {@link #closeWhenReleased()}: its last release closes it.
 * With {@value #STACKS_PROPERTY}{@code =true} every unit records where it was allocated and leak
 * reports show it.
 *
 * <p>Thread-safe: units are allocated and released on any thread.
 */
public final class MemoryAllocator implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(MemoryAllocator.class);

  /** The JVM system property that turns allocation stacks on. */
  public static final String STACKS_PROPERTY = TransportSettings.MEMORY_ALLOCATION_STACKS.name();

  private final String name;
  private final MemoryAllocator parent;
  private final MemoryAllocator root;
  private final boolean stacks;
  private final List<MemoryAllocator> children = new CopyOnWriteArrayList<>();
  private final Map<Long, MemoryUnit> live = new ConcurrentHashMap<>();
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicLong peak = new AtomicLong();
  private final AtomicLong units = new AtomicLong();
  private final AtomicLong allocations = new AtomicLong();
  private final List<LeakReport> leaks;
  private final long limit;

  /** Bytes held against {@link #limit}: registered plus direct, or registered only at a root. */
  private final AtomicLong reserved = new AtomicLong();

  private final AtomicLong registered = new AtomicLong();
  private final AtomicLong direct = new AtomicLong();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** Set by {@link #closeWhenReleased}: no new units, and the last release closes. */
  private volatile boolean draining;

  private MemoryAllocator(String name, MemoryAllocator parent, boolean stacks, long limit) {
    if (limit < 0) {
      throw new IllegalArgumentException("limit of '" + name + "' must be >= 0, got " + limit);
    }
    this.name = name;
    this.parent = parent;
    this.root = parent == null ? this : parent.root;
    this.stacks = stacks;
    this.limit = limit;
    this.leaks = parent == null ? new CopyOnWriteArrayList<>() : null;
  }

  /** A root allocator; allocation stacks as {@value #STACKS_PROPERTY} says (off by default). */
  public static MemoryAllocator root(String name) {
    return root(name, Long.MAX_VALUE);
  }

  /**
   * A root allocator whose registered bytes never pass {@code limit}; allocation stacks as {@value
   * #STACKS_PROPERTY} says.
   */
  public static MemoryAllocator root(String name, long limit) {
    return root(
        name,
        limit,
        TransportSettings.MEMORY_ALLOCATION_STACKS.fromSystemProperties().orElse(false));
  }

  /** A root allocator, recording allocation stacks when {@code allocationStacks}. */
  public static MemoryAllocator root(String name, boolean allocationStacks) {
    return root(name, Long.MAX_VALUE, allocationStacks);
  }

  /** A root allocator with a limit on its registered bytes. */
  public static MemoryAllocator root(String name, long limit, boolean allocationStacks) {
    return new MemoryAllocator(name, null, allocationStacks, limit);
  }

  /**
   * A child for one consumer, named in dumps, stats and leak reports.
   *
   * @throws IllegalStateException when this allocator is closed
   */
  public MemoryAllocator newChild(String childName) {
    return newChild(childName, Long.MAX_VALUE);
  }

  /**
   * A child whose registered plus direct bytes (its children's included) never pass {@code limit}.
   *
   * @throws IllegalStateException when this allocator is closed
   */
  public MemoryAllocator newChild(String childName, long limit) {
    ensureOpen("new child '" + childName + "'");
    MemoryAllocator c = new MemoryAllocator(childName, this, stacks, limit);
    children.add(c);
    if (closed.get()) { // lost a race with close(): do not leave a child the close did not see
      children.remove(c);
      throw new IllegalStateException("allocator '" + path() + "' is closed");
    }
    return c;
  }

  /**
   * Puts a unit of {@code size} bytes, placed by the caller's strategy, on the books with a
   * reference count of 1. {@code free} runs once, on the thread of the last release.
   *
   * @param what what the unit holds, for dumps and leak reports
   * @throws IllegalStateException when this allocator is closed
   */
  public MemoryUnit allocate(long size, String what, Runnable free) {
    if (size < 0) {
      throw new IllegalArgumentException("unit size must be >= 0, got " + size);
    }
    ensureOpen("allocation of " + size + " bytes (" + what + ")");
    MemoryUnit u = newUnit(size, MemoryUnit.Kind.PIECE, what, free);
    allocations.incrementAndGet();
    for (MemoryAllocator a = this; a != null; a = a.parent) {
      long now = a.bytes.addAndGet(size);
      a.units.incrementAndGet();
      a.peak.accumulateAndGet(now, Math::max);
    }
    return u;
  }

  /**
   * Puts registered or direct memory of {@code size} bytes on the books, reserving it in this
   * allocator and then in each parent: all or nothing. {@code free} runs once, on the thread of the
   * last release (which gives the reservation back first).
   *
   * @param kind {@link MemoryUnit.Kind#REGISTERED} or {@link MemoryUnit.Kind#DIRECT}
   * @throws LimitExceededException when an allocator on the way would pass its limit; then nothing
   *     is reserved anywhere
   * @throws IllegalStateException when this allocator is closed
   */
  public MemoryUnit reserve(long size, MemoryUnit.Kind kind, String what, Runnable free) {
    if (size < 0) {
      throw new IllegalArgumentException("unit size must be >= 0, got " + size);
    }
    if (kind == MemoryUnit.Kind.PIECE) {
      throw new IllegalArgumentException("reserve() takes registered or direct memory, not pieces");
    }
    ensureOpen("reservation of " + size + " bytes (" + what + ")");
    for (MemoryAllocator a = this; a != null; a = a.parent) {
      if (!a.tryReserve(size, kind)) {
        long held = a.reserved.get();
        for (MemoryAllocator b = this; b != a; b = b.parent) {
          b.unreserve(size, kind);
        }
        throw new LimitExceededException(a, held, size, a.limit);
      }
    }
    return newUnit(size, kind, what, free);
  }

  private MemoryUnit newUnit(long size, MemoryUnit.Kind kind, String what, Runnable free) {
    MemoryUnit u =
        new MemoryUnit(
            this, size, kind, what, free, stacks ? new Throwable("allocated here") : null);
    live.put(u.id(), u);
    return u;
  }

  /** A root's limit is the registration budget: direct memory is counted there, not capped. */
  private boolean capped(MemoryUnit.Kind kind) {
    return kind == MemoryUnit.Kind.REGISTERED || parent != null;
  }

  private boolean tryReserve(long size, MemoryUnit.Kind kind) {
    if (capped(kind)) {
      long now;
      do {
        now = reserved.get();
        if (size > limit - now) {
          return false;
        }
      } while (!reserved.compareAndSet(now, now + size));
    }
    (kind == MemoryUnit.Kind.REGISTERED ? registered : direct).addAndGet(size);
    return true;
  }

  private void unreserve(long size, MemoryUnit.Kind kind) {
    if (capped(kind)) {
      reserved.addAndGet(-size);
    }
    (kind == MemoryUnit.Kind.REGISTERED ? registered : direct).addAndGet(-size);
  }

  void unitFreed(MemoryUnit u) {
    live.remove(u.id());
    for (MemoryAllocator a = this; a != null; a = a.parent) {
      if (u.kind() == MemoryUnit.Kind.PIECE) {
        a.bytes.addAndGet(-u.size());
        a.units.decrementAndGet();
      } else {
        a.unreserve(u.size(), u.kind());
      }
    }
    if (draining && live.isEmpty()) {
      close();
    }
  }

  private void ensureOpen(String what) {
    if (closed.get() || draining) {
      throw new IllegalStateException(
          what + " refused: allocator '" + path() + "' is " + (draining ? "closing" : "closed"));
    }
  }

  public String name() {
    return name;
  }

  /** Names from the root down to this allocator, separated by {@code /}. */
  public String path() {
    return parent == null ? name : parent.path() + "/" + name;
  }

  /** The parent; null for a root. */
  public MemoryAllocator parent() {
    return parent;
  }

  /** Children, oldest first: open ones, and closed ones that still hold leaked units. */
  public List<MemoryAllocator> children() {
    return List.copyOf(children);
  }

  /** Whether allocation stacks are recorded. */
  public boolean recordsStacks() {
    return stacks;
  }

  /** Most bytes this allocator may reserve ({@link Long#MAX_VALUE}: no limit). */
  public long limit() {
    return limit;
  }

  /**
   * Whether reserving {@code more} bytes keeps this allocator within its own limit now (its parents
   * are not asked). Only a caller that alone reserves here gets a lasting answer.
   */
  public boolean withinLimit(long more) {
    return more <= limit - reserved.get();
  }

  /**
   * Bytes of live {@link MemoryUnit.Kind#REGISTERED} units, this allocator's and its children's.
   */
  public long registeredBytes() {
    return registered.get();
  }

  /** Bytes of live {@link MemoryUnit.Kind#DIRECT} units, this allocator's and its children's. */
  public long directBytes() {
    return direct.get();
  }

  /** Bytes of live pieces, this allocator's and its children's. */
  public long allocatedBytes() {
    return bytes.get();
  }

  /** Most bytes live at once since this allocator was made (children included). */
  public long peakBytes() {
    return peak.get();
  }

  /** Live pieces, this allocator's and its children's. */
  public long liveUnits() {
    return units.get();
  }

  /** Pieces ever allocated directly from this allocator. */
  public long allocations() {
    return allocations.get();
  }

  /** The live units on this allocator's own books (not its children's), oldest first. */
  public List<MemoryUnit> ownLiveUnits() {
    List<MemoryUnit> l = new ArrayList<>(live.values());
    l.sort(Comparator.comparingLong(MemoryUnit::id));
    return l;
  }

  public boolean isClosed() {
    return closed.get();
  }

  /** Leak reports of every allocator of this tree closed with live units so far (root's list). */
  public List<LeakReport> leakReports() {
    return List.copyOf(root.leaks);
  }

  /** The tree with its figures and every live unit, for logs and debugging. */
  public String toVerboseString() {
    return AllocatorDump.of(this);
  }

  /**
   * Closes the children (newest first), then this allocator: no unit can be allocated from it any
   * more. Units still live are reported (WARN, and {@link #leakReports()}); they stay valid until
   * released. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    List<MemoryAllocator> kids = new ArrayList<>(children);
    for (int i = kids.size() - 1; i >= 0; i--) {
      kids.get(i).close();
    }
    List<MemoryUnit> left = ownLiveUnits();
    if (!left.isEmpty()) {
      LeakReport r = new LeakReport(path(), left);
      root.leaks.add(r);
      LOG.warn("registered memory leak: {}", r);
    }
    if (parent != null && left.isEmpty()) {
      parent.children.remove(this); // a leaking child stays in the parent's dump
    }
  }

  /**
   * Closes this allocator once no unit of its own books is live: at once when none is, else on the
   * thread whose release takes the last one off the books. Units that end on other threads (regions
   * released by the provider) thus end in the order their references say, and the books close after
   * them, with nothing to report. From now on it takes no new unit or child. A unit never released
   * keeps it open until a parent's close reports it. Idempotent.
   */
  public void closeWhenReleased() {
    draining = true;
    if (live.isEmpty()) {
      close();
    }
  }

  @Override
  public String toString() {
    return "MemoryAllocator{"
        + path()
        + ", "
        + bytes.get()
        + " bytes in "
        + units.get()
        + " units, peak "
        + peak.get()
        + ", registered "
        + registered.get()
        + ", direct "
        + direct.get()
        + (closed.get() ? ", closed" : "")
        + "}";
  }
}
