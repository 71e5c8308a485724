package io.memwire.transfer.memory;

import io.memwire.transfer.settings.TransportSettings;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The books of registered memory: a root owned by the {@code TransferNode} and one named child per
 * consumer. A child hands out {@link MemoryUnit}s placed by its consumer's own strategy and
 * accounts for them: bytes now, peak bytes and live units, each figure including the child's own
 * children, so the root's figures are the node's totals.
 *
 * <p>Closing an allocator closes its children first (newest first), then checks its own books:
 * units still live are a leak, logged at WARN and recorded as a {@link LeakReport} on the root.
 * Leaked units stay valid (freeing memory a caller still holds would crash the JVM); their release
 * still frees them and updates the books. With {@value #STACKS_PROPERTY}{@code =true} every unit
 * records where it was allocated and leak reports show it.
 *
 * <p>Thread-safe: units are allocated and released on any thread.
 */
public final class RegisteredAllocator implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RegisteredAllocator.class);

  /** The JVM system property that turns allocation stacks on. */
  public static final String STACKS_PROPERTY = TransportSettings.MEMORY_ALLOCATION_STACKS.name();

  private final String name;
  private final RegisteredAllocator parent;
  private final RegisteredAllocator root;
  private final boolean stacks;
  private final List<RegisteredAllocator> children = new CopyOnWriteArrayList<>();
  private final Map<Long, MemoryUnit> live = new ConcurrentHashMap<>();
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicLong peak = new AtomicLong();
  private final AtomicLong units = new AtomicLong();
  private final AtomicLong allocations = new AtomicLong();
  private final List<LeakReport> leaks;
  private volatile boolean closed;

  private RegisteredAllocator(String name, RegisteredAllocator parent, boolean stacks) {
    this.name = name;
    this.parent = parent;
    this.root = parent == null ? this : parent.root;
    this.stacks = stacks;
    this.leaks = parent == null ? new CopyOnWriteArrayList<>() : null;
  }

  /** A root allocator; allocation stacks as {@value #STACKS_PROPERTY} says (off by default). */
  public static RegisteredAllocator root(String name) {
    return root(
        name, TransportSettings.MEMORY_ALLOCATION_STACKS.fromSystemProperties().orElse(false));
  }

  /** A root allocator, recording allocation stacks when {@code allocationStacks}. */
  public static RegisteredAllocator root(String name, boolean allocationStacks) {
    return new RegisteredAllocator(name, null, allocationStacks);
  }

  /**
   * A child for one consumer, named in dumps, stats and leak reports.
   *
   * @throws IllegalStateException when this allocator is closed
   */
  public RegisteredAllocator newChild(String childName) {
    ensureOpen("new child '" + childName + "'");
    RegisteredAllocator c = new RegisteredAllocator(childName, this, stacks);
    children.add(c);
    if (closed) { // lost a race with close(): do not leave a child the close did not see
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
    MemoryUnit u =
        new MemoryUnit(this, size, what, free, stacks ? new Throwable("allocated here") : null);
    live.put(u.id(), u);
    allocations.incrementAndGet();
    for (RegisteredAllocator a = this; a != null; a = a.parent) {
      long now = a.bytes.addAndGet(size);
      a.units.incrementAndGet();
      a.peak.accumulateAndGet(now, Math::max);
    }
    return u;
  }

  void unitFreed(MemoryUnit u) {
    live.remove(u.id());
    for (RegisteredAllocator a = this; a != null; a = a.parent) {
      a.bytes.addAndGet(-u.size());
      a.units.decrementAndGet();
    }
  }

  private void ensureOpen(String what) {
    if (closed) {
      throw new IllegalStateException(what + " refused: allocator '" + path() + "' is closed");
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
  public RegisteredAllocator parent() {
    return parent;
  }

  /** Children, oldest first: open ones, and closed ones that still hold leaked units. */
  public List<RegisteredAllocator> children() {
    return List.copyOf(children);
  }

  /** Whether allocation stacks are recorded. */
  public boolean recordsStacks() {
    return stacks;
  }

  /** Bytes of live units, this allocator's and its children's. */
  public long allocatedBytes() {
    return bytes.get();
  }

  /** Most bytes live at once since this allocator was made (children included). */
  public long peakBytes() {
    return peak.get();
  }

  /** Live units, this allocator's and its children's. */
  public long liveUnits() {
    return units.get();
  }

  /** Units ever allocated directly from this allocator. */
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
    return closed;
  }

  /** Leak reports of every allocator of this tree closed with live units so far (root's list). */
  public List<LeakReport> leakReports() {
    return List.copyOf(root.leaks);
  }

  /** The tree with its figures and every live unit, for logs and debugging. */
  public String toVerboseString() {
    StringBuilder b = new StringBuilder();
    dump(b, "");
    return b.toString();
  }

  private void dump(StringBuilder b, String indent) {
    b.append(indent)
        .append("allocator '")
        .append(name)
        .append("'")
        .append(closed ? " (closed)" : "")
        .append(": ")
        .append(bytes.get())
        .append(" bytes in ")
        .append(units.get())
        .append(" units, peak ")
        .append(peak.get())
        .append(" bytes, ")
        .append(allocations.get())
        .append(" allocations\n");
    for (MemoryUnit u : ownLiveUnits()) {
      b.append(indent).append("  - ").append(u).append('\n');
    }
    for (RegisteredAllocator c : children) {
      c.dump(b, indent + "  ");
    }
  }

  /**
   * Closes the children (newest first), then this allocator: no unit can be allocated from it any
   * more. Units still live are reported (WARN, and {@link #leakReports()}); they stay valid until
   * released. Idempotent.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    List<RegisteredAllocator> kids = new ArrayList<>(children);
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

  @Override
  public String toString() {
    return "RegisteredAllocator{"
        + path()
        + ", "
        + bytes.get()
        + " bytes in "
        + units.get()
        + " units, peak "
        + peak.get()
        + (closed ? ", closed" : "")
        + "}";
  }
}
