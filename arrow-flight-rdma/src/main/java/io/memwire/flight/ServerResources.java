package io.memwire.flight;

import io.memwire.flight.memory.ArenaMemory;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryAllocator;
import java.time.Duration;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.compression.CompressionCodec;
import org.apache.arrow.vector.compression.CompressionUtil;
import org.apache.arrow.vector.compression.NoCompressionCodec;

/**
 * What every RDMA exchange of one {@link RdmaFlightProducer} shares: the wrapped producer, the
 * transfer node and memory bodies are leased from, the lease guards, the counters and the limits
 * from the builder. Built from the producer's options by {@link #open}, released by {@link #close}
 * once the producer's exchanges have ended.
 *
 * @param delegate the wrapped producer, asked for each exchange's stream
 * @param node the caller's transfer node, where lease regions are registered
 * @param allocator the small allocator data-plane messages are encoded in
 * @param memory the arenas copied bodies are leased from (not remotely readable)
 * @param leaseRegions the books of every lease's body regions ({@value LeaseBodies#ALLOCATOR}),
 *     whose limit caps the bytes registered for live leases
 * @param guards the guard words of the live leases
 * @param stats the producer's counters
 * @param codec body compression
 * @param leaseTimeout how long a lease may wait for the client's FREE
 * @param maxWindowBatches cap on a client's credit window, in batches
 * @param maxWindowBytes cap on a client's credit window, in bytes
 * @param maxExchanges most exchanges served at once
 * @param bodyChecksum whether each leased body's CRC32C goes into its BATCH message
 * @param bodyTap test seam: sees each body's bytes once its checksum was taken (null: none)
 */
record ServerResources(
    FlightProducer delegate,
    TransferNode node,
    BufferAllocator allocator,
    ArenaMemory memory,
    MemoryAllocator leaseRegions,
    LeaseGuards guards,
    ServerStats stats,
    CompressionCodec codec,
    Duration leaseTimeout,
    int maxWindowBatches,
    long maxWindowBytes,
    int maxExchanges,
    boolean bodyChecksum,
    LeaseBodies.Tap bodyTap) {

  /**
   * Takes what the producer built by {@code b} leases from: a message allocator under the caller's,
   * the arenas (not remotely readable: each lease registers only its own bytes), the lease books
   * and the guard words.
   */
  static ServerResources open(RdmaFlightProducer.Builder b) {
    TransferNode node = b.node;
    BufferAllocator allocator =
        b.allocator.newChildAllocator("memwire-flight-producer", 0, Long.MAX_VALUE);
    CompressionCodec codec =
        b.compression == CompressionUtil.CodecType.NO_COMPRESSION
            ? NoCompressionCodec.INSTANCE
            : CommonsCompressionFactory.INSTANCE.createCodec(b.compression);
    ArenaMemory memory =
        new ArenaMemory(
            node,
            b.arenaSize,
            b.maxRegisteredBytes,
            "flight producer memory on " + node.localAddress(),
            false);
    // Apart, same limit: a zero-copy producer may lease the same buffers to many clients at once.
    MemoryAllocator leaseRegions =
        node.memory().newChild(LeaseBodies.ALLOCATOR, b.maxRegisteredBytes);
    return new ServerResources(
        b.delegate,
        node,
        allocator,
        memory,
        leaseRegions,
        new LeaseGuards(node),
        new ServerStats(),
        codec,
        b.leaseTimeout,
        b.maxWindowBatches,
        b.maxWindowBytes,
        b.maxExchanges,
        b.bodyChecksum,
        b.bodyTap);
  }

  /**
   * Closes the guards, then the lease books (a region still on them is reported as a leak), frees
   * the arenas and the message allocator. The wrapped producer and the node stay open.
   */
  void close() {
    guards.close();
    leaseRegions.close();
    memory.close();
    allocator.close();
  }
}
