package io.memwire.transfer.memory;

/**
 * {@link MemoryAllocator#toVerboseString()}: an allocator tree with its figures and every live
 * unit, one line each, children indented under their parent.
 */
final class AllocatorDump {
  private AllocatorDump() {}

  static String of(MemoryAllocator a) {
    StringBuilder b = new StringBuilder();
    dump(a, b, "");
    return b.toString();
  }

  private static void dump(MemoryAllocator a, StringBuilder b, String indent) {
    b.append(indent)
        .append("allocator '")
        .append(a.name())
        .append("'")
        .append(a.isClosed() ? " (closed)" : "")
        .append(": ")
        .append(a.allocatedBytes())
        .append(" bytes in ")
        .append(a.liveUnits())
        .append(" units, peak ")
        .append(a.peakBytes())
        .append(" bytes, ")
        .append(a.allocations())
        .append(" allocations");
    long registered = a.registeredBytes();
    long direct = a.directBytes();
    if (registered != 0 || direct != 0 || a.limit() != Long.MAX_VALUE) {
      b.append("; registered ").append(registered).append(" bytes, direct ");
      b.append(direct).append(" bytes");
      if (a.limit() != Long.MAX_VALUE) {
        b.append(", limit ").append(a.limit());
      }
    }
    b.append('\n');
    for (MemoryUnit u : a.ownLiveUnits()) {
      b.append(indent).append("  - ").append(u).append('\n');
    }
    for (MemoryAllocator c : a.children()) {
      dump(c, b, indent + "  ");
    }
  }
}
