package io.memwire.flight;

import io.memwire.flight.memory.ArenaMemory;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.memory.LimitExceededException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.ipc.message.ArrowBuffer;

/**
 * Makes a batch's body remotely readable for one lease, and ends that again. Only the batch's own
 * bytes become readable, through regions registered for this lease alone (own keys): a zero-copy
 * producer's buffers in place, or a copy in a block of the producer's arenas. Runs on the
 * producer's thread ({@code putNext}); {@link #end} on whichever thread ends the lease.
 *
 * <p>Every body region is a registered unit of the producer's {@value #ALLOCATOR} allocator (a
 * child of the node's root), whose limit is {@code maxRegisteredBytes}: a lease that would pass it
 * fails as a whole ({@link FallbackReason#LEASE_FAILED}) and nothing of it stays registered. A
 * region leaves those books when the lease ends and closes it. A region owns what keeps its bytes
 * alive (the block of a copy, the Arrow buffers leased in place) and gives it back once the
 * transport no longer reads it: nothing here frees memory by hand.
 */
final class LeaseBodies {
  /** Name of the lease regions' child of the node's registered-memory root. */
  static final String ALLOCATOR = "flight-leases";

  /**
   * A body ready to lease: its regions (this batch's bytes only; each owns the references that keep
   * its bytes alive and gives them back once released) and views of its non-empty buffers' bytes in
   * buffer order (what the body checksum covers).
   */
  record Body(List<MemoryRegion> regions, List<ByteBuffer> views) {
    static final Body EMPTY = new Body(List.of(), List.of());
  }

  /**
   * Test seam: sees a body's buffers (in buffer order) once its checksum was taken (or would have
   * been, with the checksum off), before its descriptor is sent.
   */
  interface Tap {
    void checksummed(List<ByteBuffer> buffers);
  }

  /**
   * A lease ready to describe: its body and guard, and for the BATCH message the regions (this
   * lease's only), the buffers by index in that list, and the guard's reference.
   */
  record Prepared(
      Body body,
      LeaseGuards.Guard guard,
      List<RegionDescriptor> regions,
      List<ServerMessage.BufferRef> refs,
      ServerMessage.Guard guardRef,
      long checksum) {}

  private final ServerResources resources;
  private final Tap tap;

  /**
   * @param resources what the producer's exchanges share
   * @param tap sees each body once its checksum was taken (tests corrupt it there); null: none
   */
  LeaseBodies(ServerResources resources, Tap tap) {
    this.resources = resources;
    this.tap = tap;
  }

  /**
   * CRC32C of a body's buffers in buffer order, read where the client will read them (no copy: the
   * views are direct, which the JDK's CRC32C checksums with the CPU's instruction).
   */
  static long checksum(List<ByteBuffer> views) {
    CRC32C crc = new CRC32C();
    for (ByteBuffer v : views) {
      crc.update(v.duplicate());
    }
    return crc.getValue();
  }

  /**
   * Makes a batch's body readable (in place when {@code zeroCopy} and its buffers are in this
   * producer's memory, else a copy) and issues its guard. On failure nothing stays held.
   */
  Prepared prepare(
      List<ArrowBuf> bufs, List<ArrowBuffer> layout, long bodyLength, boolean zeroCopy) {
    try {
      return prepareOrThrow(bufs, layout, bodyLength, zeroCopy);
    } catch (RuntimeException e) {
      resources.stats().leasesFailed.increment();
      throw e;
    }
  }

  private Prepared prepareOrThrow(
      List<ArrowBuf> bufs, List<ArrowBuffer> layout, long bodyLength, boolean zeroCopy) {
    List<ServerMessage.BufferRef> refs = new ArrayList<>(bufs.size());
    Body body;
    if (bodyLength == 0) {
      for (ArrowBuffer b : layout) {
        refs.add(ServerMessage.BufferRef.empty(b.getOffset()));
      }
      body = Body.EMPTY;
    } else {
      body = zeroCopy ? inPlace(bufs, layout, refs) : null;
      if (body == null) {
        refs.clear();
        body = copy(bufs, layout, bodyLength, refs);
      }
    }
    List<RegionDescriptor> regions = new ArrayList<>();
    Map<MemoryRegion, Integer> regionIndex = new IdentityHashMap<>();
    List<ServerMessage.BufferRef> indexed = new ArrayList<>(refs.size());
    LeaseGuards.Guard guard = null;
    try {
      if (bodyLength > 0) {
        guard = resources.guards().issue();
      }
      for (ServerMessage.BufferRef r : refs) {
        indexed.add(
            r.length == 0
                ? r
                : new ServerMessage.BufferRef(
                    regionIndex(body.regions().get(r.regionIndex), regions, regionIndex),
                    r.regionOffset,
                    r.bodyOffset,
                    r.length));
      }
      ServerMessage.Guard guardRef =
          guard == null
              ? null
              : new ServerMessage.Guard(
                  regionIndex(guard.region(), regions, regionIndex), guard.generation);
      long checksum = ServerMessage.NO_CHECKSUM;
      if (resources.bodyChecksum()) {
        checksum = checksum(body.views());
      }
      if (tap != null) {
        tap.checksummed(body.views());
      }
      return new Prepared(body, guard, regions, indexed, guardRef, checksum);
    } catch (RuntimeException e) {
      var unused = end(guard, body); // its regions give the body back once released
      throw cannotRegister("a lease", e);
    }
  }

  /**
   * Revokes the guard and closes the body's regions; each gives its memory back once the transport
   * no longer touches it, and the future completes after the last of them.
   */
  CompletableFuture<Void> end(LeaseGuards.Guard guard, Body body) {
    if (guard != null) {
      resources.guards().revoke(guard);
    }
    CompletableFuture<?>[] released = new CompletableFuture<?>[body.regions().size()];
    for (int i = 0; i < released.length; i++) {
      MemoryRegion r = body.regions().get(i);
      r.close();
      released[i] = r.released();
    }
    return CompletableFuture.allOf(released);
  }

  /**
   * Leases a zero-copy producer's buffers where they are: each run of adjacent buffers is
   * registered as a region of its own, so the client reaches these bytes and nothing around them.
   * Null (nothing held) when a buffer is not in this producer's memory: then it is copied. Refs
   * name regions by their index in the returned body's list.
   */
  Body inPlace(List<ArrowBuf> bufs, List<ArrowBuffer> layout, List<ServerMessage.BufferRef> refs) {
    ArenaMemory memory = resources.memory();
    Integer[] order = new Integer[bufs.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
      long n = bufs.get(i).readableBytes();
      if (n > 0 && memory.locate(bufs.get(i).memoryAddress(), n) == null) {
        return null;
      }
    }
    Arrays.sort(
        order, (x, y) -> Long.compare(bufs.get(x).memoryAddress(), bufs.get(y).memoryAddress()));
    // Runs of buffers whose bytes touch or overlap: {start, end} and the run of each buffer.
    List<long[]> runs = new ArrayList<>();
    int[] runOf = new int[bufs.size()];
    for (int i : order) {
      long n = bufs.get(i).readableBytes();
      if (n == 0) {
        runOf[i] = -1;
        continue;
      }
      long start = bufs.get(i).memoryAddress();
      long[] last = runs.isEmpty() ? null : runs.get(runs.size() - 1);
      if (last != null
          && start <= last[1]
          && memory.locate(last[0], Math.max(last[1], start + n) - last[0]) != null) {
        last[1] = Math.max(last[1], start + n);
      } else {
        runs.add(new long[] {start, start + n});
      }
      runOf[i] = runs.size() - 1;
    }
    // The producer promised not to touch these buffers again: each run's region holds a
    // reference on its buffers and gives it back once the transport no longer reads them.
    List<List<ArrowBuf>> held = new ArrayList<>(runs.size());
    for (int r = 0; r < runs.size(); r++) {
      held.add(new ArrayList<>());
    }
    for (int i = 0; i < bufs.size(); i++) {
      if (runOf[i] >= 0) {
        held.get(runOf[i]).add(bufs.get(i));
      }
    }
    List<MemoryRegion> regions = new ArrayList<>(runs.size());
    try {
      for (int r = 0; r < runs.size(); r++) {
        long[] run = runs.get(r);
        ByteBuffer bytes = memory.locate(run[0], run[1] - run[0]).slice(run[1] - run[0]);
        List<ArrowBuf> own = held.get(r);
        own.forEach(b -> b.getReferenceManager().retain());
        regions.add(register(bytes, () -> own.forEach(b -> b.getReferenceManager().release())));
      }
    } catch (RuntimeException e) {
      regions.forEach(MemoryRegion::close);
      throw cannotRegister("a lease", e);
    }
    List<ByteBuffer> views = new ArrayList<>(bufs.size());
    for (int i = 0; i < bufs.size(); i++) {
      ArrowBuf b = bufs.get(i);
      long n = b.readableBytes();
      if (n == 0) {
        refs.add(ServerMessage.BufferRef.empty(layout.get(i).getOffset()));
        continue;
      }
      views.add(MemoryUtil.directBuffer(b.memoryAddress(), Math.toIntExact(n)));
      refs.add(
          new ServerMessage.BufferRef(
              runOf[i], b.memoryAddress() - runs.get(runOf[i])[0], layout.get(i).getOffset(), n));
    }
    resources.stats().batchesInPlace.increment();
    return new Body(regions, views);
  }

  /**
   * Copies the batch into a block at its IPC layout and registers exactly its body bytes as a
   * region of its own. The gaps between buffers are zeroed: the block may have held another batch,
   * and the region must show this batch's bytes only.
   */
  Body copy(
      List<ArrowBuf> bufs,
      List<ArrowBuffer> layout,
      long bodyLength,
      List<ServerMessage.BufferRef> refs) {
    ArenaMemory.Block block;
    try {
      block = resources.memory().allocate(bodyLength, resources.leaseTimeout());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw CallStatus.CANCELLED
          .withDescription("interrupted waiting for registered memory")
          .toRuntimeException();
    } catch (RuntimeException e) {
      // The data plane, not the data, failed: the reason lets an auto client retry over DoGet.
      throw FallbackReason.LEASE_FAILED.error(
          CallStatus.UNAVAILABLE,
          "server data plane cannot "
              + "lease a body of "
              + bodyLength
              + " bytes: "
              + e.getMessage(),
          e);
    }
    long written = 0;
    List<ByteBuffer> views = new ArrayList<>(bufs.size());
    for (int i = 0; i < bufs.size(); i++) {
      ArrowBuf b = bufs.get(i);
      long n = b.readableBytes();
      long off = layout.get(i).getOffset();
      if (n > 0) {
        if (off > written) {
          MemoryUtil.setMemory(block.address() + written, off - written, (byte) 0);
        }
        MemoryUtil.copyMemory(b.memoryAddress(), block.address() + off, n);
        written = Math.max(written, off + n);
        refs.add(new ServerMessage.BufferRef(0, off, off, n));
        views.add(MemoryUtil.directBuffer(block.address() + off, Math.toIntExact(n)));
      } else {
        refs.add(ServerMessage.BufferRef.empty(off));
      }
    }
    if (bodyLength > written) {
      MemoryUtil.setMemory(block.address() + written, bodyLength - written, (byte) 0);
    }
    MemoryRegion region;
    try {
      region = register(block.slice(0, bodyLength), block::release); // the region owns the block
    } catch (RuntimeException e) {
      throw cannotRegister("a body of " + bodyLength + " bytes", e);
    }
    resources.stats().batchesCopied.increment();
    return new Body(List.of(region), views);
  }

  /**
   * Registers a lease's bytes on the lease regions' books (within their limit); the region owns
   * {@code release}, which gives those bytes back once it is released, or at once on failure.
   */
  private MemoryRegion register(ByteBuffer bytes, Runnable release) {
    return resources.node().register(bytes, resources.leaseRegions(), release);
  }

  /** The region's index in the BATCH message's region list, adding it on first use. */
  private static int regionIndex(
      MemoryRegion region, List<RegionDescriptor> regions, Map<MemoryRegion, Integer> index) {
    Integer i = index.get(region);
    if (i == null) {
      if (region.descriptors().size() != 1) {
        throw new IllegalStateException(
            "a lease region of "
                + region.length()
                + " bytes spans several segments (maxSegmentSize); bodies must fit one segment");
      }
      i = regions.size();
      regions.add(region.descriptors().get(0));
      index.put(region, i);
    }
    return i;
  }

  /** The data plane, not the data, failed: an auto client may retry over DoGet. */
  private RuntimeException cannotRegister(String what, RuntimeException e) {
    return FallbackReason.LEASE_FAILED.error(
        CallStatus.UNAVAILABLE, "server data plane cannot register " + what + ": " + why(e), e);
  }

  /** The failure in words; the lease limit's refusal names its setting. */
  private String why(RuntimeException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof LimitExceededException l && l.allocator() == resources.leaseRegions()) {
        return "the regions of live leases would pass "
            + FlightSettings.MAX_REGISTERED_BYTES.name(FlightSettings.SERVER_PREFIX)
            + "="
            + l.limit()
            + " ("
            + l.reserved()
            + " bytes registered, "
            + l.requested()
            + " more asked)";
      }
    }
    return e.getMessage();
  }
}
