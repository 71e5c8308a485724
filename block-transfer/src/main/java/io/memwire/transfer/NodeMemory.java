package io.memwire.transfer;

import io.memwire.transfer.internal.MemoryAccess;
import io.memwire.transfer.memory.LimitExceededException;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.memory.MemoryUnit;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's registered memory, kept on one set of books: the root allocator (its limit is {@code
 * registrationBudget}) and the consumers' children under it. Every registration is a {@link
 * MemoryUnit.Kind#REGISTERED} unit reserved there before the provider sees the memory: a region (on
 * the allocator its caller named), a buffer from {@link NodeBuffers}, a read-pool slab or dedicated
 * destination. Closing the node closes every region found on the books.
 */
final class NodeMemory {
  private static final Logger LOG = LoggerFactory.getLogger(TransferNode.class);

  private final TransferConfig config;
  private final TransportProvider provider;
  private final Counters counters;
  private final MemoryAllocator root;
  private final NodeBuffers buffers;

  NodeMemory(TransferConfig config, TransportProvider provider, Counters counters) {
    this.config = config;
    this.provider = provider;
    this.counters = counters;
    this.root =
        MemoryAllocator.root(
            "node@"
                + provider.localAddress().getHostString()
                + ":"
                + provider.localAddress().getPort(),
            config.registrationBudget());
    this.buffers = new NodeBuffers(this, config, provider);
  }

  MemoryAllocator root() {
    return root;
  }

  /** The buffers this node hands out, reserved on these books. */
  NodeBuffers buffers() {
    return buffers;
  }

  /**
   * Reserves {@code bytes} on {@code account} and its parents; a limit that would be passed fails
   * as a {@link RegistrationException} (the root's with the budget's own message).
   */
  MemoryUnit reserve(
      MemoryAllocator account, long bytes, MemoryUnit.Kind kind, String what, Runnable free) {
    checkOwn(account);
    try {
      return account.reserve(bytes, kind, what, free);
    } catch (LimitExceededException e) {
      if (e.allocator() != root) {
        throw new RegistrationException(e.getMessage(), e);
      }
      throw new RegistrationException(
          "registration budget exhausted: "
              + e.reserved()
              + " bytes registered + "
              + bytes
              + " requested > "
              + TransportSettings.REGISTRATION_BUDGET.name()
              + "="
              + config.registrationBudget()
              + "; raise the budget (and ulimit -l for verbs) or "
              + "close regions",
          e);
    }
  }

  private void checkOwn(MemoryAllocator account) {
    MemoryAllocator a = account;
    while (a.parent() != null) {
      a = a.parent();
    }
    if (a != root) {
      throw new IllegalArgumentException(
          "allocator '" + account.path() + "' is not one of this node's (" + root.name() + ")");
    }
  }

  /**
   * Registers the bytes between a direct buffer's position and limit, on {@code account}; the
   * region owns {@code release}, which runs once it is released, or before this throws.
   */
  MemoryRegion register(ByteBuffer direct, MemoryAllocator account, Runnable release) {
    try {
      return registerInPlace(direct, account, release);
    } catch (RuntimeException e) {
      try {
        release.run();
      } catch (RuntimeException r) {
        e.addSuppressed(r);
      }
      throw e;
    }
  }

  private MemoryRegion registerInPlace(
      ByteBuffer direct, MemoryAllocator account, Runnable release) {
    if (!direct.isDirect()) {
      throw new RegistrationException(
          "only direct buffers can be registered, got a heap buffer of "
              + direct.remaining()
              + " bytes; allocate it with ByteBuffer.allocateDirect");
    }
    if (!direct.hasRemaining()) {
      throw new RegistrationException("cannot register an empty buffer");
    }
    long length = direct.remaining();
    Runnable[] onFree = {() -> {}};
    MemoryUnit unit =
        reserve(account, length, MemoryUnit.Kind.REGISTERED, "region", () -> onFree[0].run());
    MemoryRegion r;
    try {
      r = registerBuffer(direct, unit, release);
    } catch (RuntimeException e) {
      unit.release();
      throw e;
    }
    onFree[0] = () -> release(r);
    unit.ownedBy(r);
    return r;
  }

  /**
   * Segments over the buffer's remaining bytes, the region owning {@code release} (may be null); a
   * failure deregisters what was registered.
   */
  MemoryRegion registerBuffer(ByteBuffer direct, MemoryUnit unit, Runnable release) {
    ByteBuffer range = direct.slice();
    long base = MemoryAccess.address(direct) + direct.position();
    long length = range.remaining();
    List<MemoryRegion.Segment> segments = new ArrayList<>();
    try {
      for (long off = 0; off < length; off += config.maxSegmentSize()) {
        int n = (int) Math.min(config.maxSegmentSize(), length - off);
        ByteBuffer piece = range.duplicate().position((int) off).limit((int) off + n).slice();
        ProviderRegistration reg = provider.register(piece, base + off, true, null, 0);
        segments.add(new MemoryRegion.Segment(piece, base + off, reg, false));
      }
    } catch (RuntimeException e) {
      undo(segments);
      throw e;
    }
    return track(new MemoryRegion(this, segments, remoteOf(segments), null, null, unit, release));
  }

  /** Maps a file range read-only and registers it, on {@code account}. */
  MemoryRegion register(Path file, long offset, long length, MemoryAllocator account)
      throws IOException {
    if (offset < 0 || length <= 0) {
      throw new IllegalArgumentException(
          "file range must have offset >= 0 and length > 0: offset="
              + offset
              + " length="
              + length);
    }
    FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
    List<MemoryRegion.Segment> segments = new ArrayList<>();
    Runnable[] onFree = {() -> {}};
    MemoryUnit unit = null;
    try {
      long size = ch.size();
      if (offset > size - length) {
        throw new IllegalArgumentException(
            "range ["
                + offset
                + ", +"
                + length
                + ") lies outside "
                + file
                + " of "
                + size
                + " bytes");
      }
      unit =
          reserve(
              account,
              length,
              MemoryUnit.Kind.REGISTERED,
              "region of " + file,
              () -> onFree[0].run());
      for (long off = 0; off < length; off += config.maxSegmentSize()) {
        int n = (int) Math.min(config.maxSegmentSize(), length - off);
        MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_ONLY, offset + off, n);
        counters.mappedSegments.incrementAndGet();
        counters.mappedBytes.addAndGet(n);
        long address = MemoryAccess.address(map);
        ProviderRegistration reg;
        try {
          reg = provider.registerFile(map, address, file, ch, offset + off);
        } catch (RuntimeException e) {
          unmap(map);
          throw e;
        }
        segments.add(new MemoryRegion.Segment(map, address, reg, true));
      }
    } catch (IOException | RuntimeException e) {
      undo(segments);
      if (unit != null) {
        unit.release();
      }
      if (segments.isEmpty()) {
        ch.close();
      }
      throw e;
    }
    MemoryRegion r =
        track(new MemoryRegion(this, segments, remoteOf(segments), file, ch, unit, null));
    onFree[0] = () -> release(r);
    unit.ownedBy(r);
    return r;
  }

  /**
   * Registers a read pool slab as a destination; its bytes are reserved by the caller (the pool's
   * slab unit), who frees the memory.
   */
  ProviderRegistration registerDestination(ByteBuffer memory, long address) {
    return provider.register(memory, address, false, null, 0);
  }

  /** A region over segments the provider registered in its own allocation, tracked. */
  MemoryRegion adopt(List<MemoryRegion.Segment> segments) {
    return track(new MemoryRegion(this, segments, remoteOf(segments), null, null, null, null));
  }

  private RemoteRegion remoteOf(List<MemoryRegion.Segment> segments) {
    List<RegionDescriptor> ds = new ArrayList<>(segments.size());
    for (MemoryRegion.Segment s : segments) {
      // The provider's address, not the buffer's: a provider may serve a private pinned copy
      // (verbs on kernels that cannot pin read-only file mappings).
      ds.add(
          new RegionDescriptor(
              provider.kind(),
              provider.localAddress(),
              s.registration.remoteKey(),
              s.registration.address(),
              s.registration.length()));
    }
    return new RemoteRegion(ds);
  }

  private MemoryRegion track(MemoryRegion r) {
    counters.registeredRegions.incrementAndGet();
    LOG.debug("registered {}", r);
    return r;
  }

  private void undo(List<MemoryRegion.Segment> segments) {
    for (MemoryRegion.Segment s : segments) {
      s.registration.deregister(s.mapped ? () -> unmap(s.memory) : () -> {});
    }
  }

  private void unmap(ByteBuffer mapping) {
    MemoryAccess.free(mapping);
    counters.mappedSegments.decrementAndGet();
    counters.mappedBytes.addAndGet(-mapping.capacity());
  }

  /** Deregisters a closed region's segments; called once per region, by its close. */
  void release(MemoryRegion region) {
    List<MemoryRegion.Segment> segs = region.segments();
    AtomicInteger left = new AtomicInteger(segs.size());
    for (MemoryRegion.Segment s : segs) {
      s.registration.deregister(
          () -> {
            if (s.mapped) {
              unmap(s.memory);
            }
            if (left.decrementAndGet() == 0) {
              if (region.channel() != null) {
                try {
                  region.channel().close();
                } catch (IOException e) {
                  LOG.debug("closing {} failed", region.file(), e);
                }
              }
              region.markReleased();
            }
          });
    }
    counters.registeredRegions.decrementAndGet();
    LOG.debug("deregistered {}", region);
  }

  /** Closes every region on the books (the node is closing). */
  void closeRegions() {
    List<MemoryRegion> open = new ArrayList<>();
    collectRegions(root, open);
    open.forEach(MemoryRegion::close);
  }

  private static void collectRegions(MemoryAllocator a, List<MemoryRegion> into) {
    for (MemoryUnit u : a.ownLiveUnits()) {
      if (u.owner() instanceof MemoryRegion r) {
        into.add(r);
      }
    }
    for (MemoryAllocator c : a.children()) {
      collectRegions(c, into);
    }
  }
}
