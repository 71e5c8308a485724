package io.memwire.transfer;

import io.memwire.transfer.internal.MemoryAccess;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import io.memwire.transfer.spi.ProviderAllocation;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Optional;

/**
 * The page-aligned direct buffers a node hands out as {@link BufferUnit}s: served (registered for
 * remote reads as one region), read destinations (registered, no remote key), or plain direct
 * memory. Each is one unit reserved on its caller's allocator, on the books of {@link NodeMemory},
 * before any memory is taken; the provider's own memory is used when it offers some, else the
 * node's. The unit's last release frees the memory, once its region (if any) is released.
 */
final class NodeBuffers {
  private static final int PAGE = 4096;

  private final NodeMemory nodeMemory;
  private final TransferConfig config;
  private final TransportProvider provider;

  NodeBuffers(NodeMemory nodeMemory, TransferConfig config, TransportProvider provider) {
    this.nodeMemory = nodeMemory;
    this.config = config;
    this.provider = provider;
  }

  /**
   * Page-aligned direct memory registered for remote reads as one region, owned by one unit of
   * {@code account}: its last release closes the region and frees the memory once the region is
   * released.
   */
  BufferUnit allocateRegistered(MemoryAllocator account, int size, String what) {
    return allocate(account, size, what, Use.SERVED);
  }

  /** Page-aligned direct memory, not registered, owned by one unit of {@code account}. */
  BufferUnit allocateDirect(MemoryAllocator account, int size, String what) {
    return allocate(account, size, what, Use.DIRECT);
  }

  /** Page-aligned direct memory registered as a read destination (no remote key). */
  BufferUnit allocateDestination(MemoryAllocator account, int size, String what) {
    return allocate(account, size, what, Use.DESTINATION);
  }

  private enum Use {
    SERVED,
    DESTINATION,
    DIRECT
  }

  private BufferUnit allocate(MemoryAllocator account, int size, String what, Use use) {
    if (size <= 0) {
      throw new IllegalArgumentException(what + ": size must be > 0, got " + size);
    }
    MemoryUnit.Kind kind = use == Use.DIRECT ? MemoryUnit.Kind.DIRECT : MemoryUnit.Kind.REGISTERED;
    Runnable[] onFree = {() -> {}};
    MemoryUnit unit = nodeMemory.reserve(account, size, kind, what, () -> onFree[0].run());
    if (use == Use.DIRECT || (use == Use.SERVED && size <= config.maxSegmentSize())) {
      Optional<ProviderAllocation> own;
      try {
        own = provider.allocate(size, use == Use.SERVED);
      } catch (RuntimeException | OutOfMemoryError e) {
        unit.release();
        throw e;
      }
      if (own.isPresent()) {
        return providers(own.get(), unit, onFree);
      }
    }
    ByteBuffer allocation;
    try {
      // Room for a page-aligned start and a whole number of pages after it.
      allocation = ByteBuffer.allocateDirect((size + PAGE - 1) / PAGE * PAGE + PAGE);
    } catch (OutOfMemoryError e) {
      unit.release();
      throw e;
    }
    ByteBuffer memory = allocation.alignedSlice(PAGE).limit(size).slice();
    long address = MemoryAccess.address(memory);
    MemoryRegion region = null;
    ProviderRegistration destination = null;
    try {
      if (use == Use.SERVED) {
        region = nodeMemory.registerBuffer(memory, null, null);
        unit.ownedBy(region);
      } else if (use == Use.DESTINATION) {
        destination = provider.register(memory, address, false, null, 0);
      }
    } catch (RuntimeException e) {
      unit.release();
      MemoryAccess.free(allocation);
      throw e;
    }
    MemoryRegion r = region;
    ProviderRegistration d = destination;
    onFree[0] =
        switch (use) {
          case SERVED ->
              () -> {
                r.close();
                r.whenReleased(() -> MemoryAccess.free(allocation));
              };
          case DESTINATION -> () -> d.deregister(() -> MemoryAccess.free(allocation));
          case DIRECT -> () -> MemoryAccess.free(allocation);
        };
    return new BufferUnit(memory, address, unit, region, destination);
  }

  /**
   * A buffer over memory the provider allocated: registered, one region of one segment whose memory
   * the provider frees once the region is released, as the node frees its own; or not, its memory
   * freed at the last release.
   */
  private BufferUnit providers(ProviderAllocation own, MemoryUnit unit, Runnable[] onFree) {
    ByteBuffer memory = own.memory();
    if (own.registration() == null) {
      onFree[0] = own::free;
      return new BufferUnit(memory, own.address(), unit, null, null);
    }
    List<MemoryRegion.Segment> segments =
        List.of(new MemoryRegion.Segment(memory, own.address(), own.registration(), false));
    MemoryRegion region = nodeMemory.adopt(segments);
    unit.ownedBy(region);
    onFree[0] =
        () -> {
          region.close();
          region.whenReleased(own::free);
        };
    return new BufferUnit(memory, own.address(), unit, region, null);
  }
}
