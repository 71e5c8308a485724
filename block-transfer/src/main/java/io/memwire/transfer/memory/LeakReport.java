package io.memwire.transfer.memory;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;

/**
 * What an allocator still had handed out when it was closed: its path, the live units and their
 * bytes, and each unit's allocation stack when those were recorded. Logged at WARN by {@link
 * MemoryAllocator#close()} and kept by the root ({@link MemoryAllocator#leakReports()}).
 */
public final class LeakReport {
  private final String allocator;
  private final List<MemoryUnit> units;
  private final long bytes;
  private final long reservedBytes;

  LeakReport(String allocator, List<MemoryUnit> units) {
    this.allocator = allocator;
    this.units = List.copyOf(units);
    this.bytes =
        units.stream()
            .filter(u -> u.kind() == MemoryUnit.Kind.PIECE)
            .mapToLong(MemoryUnit::size)
            .sum();
    this.reservedBytes =
        units.stream()
            .filter(u -> u.kind() != MemoryUnit.Kind.PIECE)
            .mapToLong(MemoryUnit::size)
            .sum();
  }

  /** Path of the allocator closed with live units, root first ({@code node/read-pool}). */
  public String allocator() {
    return allocator;
  }

  /** The units still live at close. They stay valid; releasing them later frees them. */
  public List<MemoryUnit> units() {
    return units;
  }

  /** Bytes of the pieces among those units. */
  public long bytes() {
    return bytes;
  }

  /** Bytes of the registered and direct memory among those units. */
  public long reservedBytes() {
    return reservedBytes;
  }

  @Override
  public String toString() {
    StringBuilder b =
        new StringBuilder("allocator '")
            .append(allocator)
            .append("' closed with ")
            .append(units.size())
            .append(" live units (")
            .append(bytes)
            .append(" bytes")
            .append(reservedBytes == 0 ? "" : ", " + reservedBytes + " bytes registered or direct")
            .append(")");
    boolean stacks = false;
    for (MemoryUnit u : units) {
      b.append("\n  ").append(u);
      Throwable at = u.allocationStack();
      if (at != null) {
        stacks = true;
        StringWriter w = new StringWriter();
        at.printStackTrace(new PrintWriter(w));
        b.append("\n    ").append(w.toString().strip().replace("\n", "\n    "));
      }
    }
    if (!stacks && !units.isEmpty()) {
      b.append("\n  (run with -D")
          .append(MemoryAllocator.STACKS_PROPERTY)
          .append("=true to record where each unit was allocated)");
    }
    return b.toString();
  }
}
