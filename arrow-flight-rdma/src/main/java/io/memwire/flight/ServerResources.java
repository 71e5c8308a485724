package io.memwire.flight;

import io.memwire.flight.memory.ArenaMemory;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.memory.MemoryAllocator;
import java.time.Duration;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.compression.CompressionCodec;

/**
 * What every RDMA exchange of one {@link RdmaFlightProducer} shares: the wrapped producer, the
 * transfer node and memory bodies are leased from, the lease guards, the counters and the limits
 * from the builder. Owned (and closed) by the producer.
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
    boolean bodyChecksum,
    LeaseBodies.Tap bodyTap) {}
