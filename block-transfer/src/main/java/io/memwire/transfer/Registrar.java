package io.memwire.transfer;

import io.memwire.transfer.memory.MemoryAllocator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * What a consumer of registered memory needs of a {@link TransferNode}, and nothing else: the root
 * of the node's books, and registrations and allocations, each a unit on the books of a named
 * account (one of the node's allocators). Shuffle directories, map output publishers, the shuffle
 * service's intake and Flight's memory take a {@code Registrar}, not the node.
 */
public interface Registrar {
  /**
   * The root of this node's registered-memory books. Every consumer of registered memory takes a
   * named child ({@code newChild}) and hands out reference-counted units from it; the node closes
   * the root last, reporting any child or unit still live.
   */
  MemoryAllocator memory();

  /**
   * Registers, in place, the bytes between a direct buffer's position and limit for remote reads:
   * memory the caller holds a reference on (an Arrow buffer, a slice of a unit), its bytes one unit
   * on the books of {@code account} (one of this node's allocators), reserved against its limit and
   * every parent's, all or nothing. The region takes that reference over: {@code release} runs
   * once, when the transport no longer touches the memory (before {@link MemoryRegion#released()}
   * completes, on the thread releasing the region), or before this method throws. The caller never
   * frees the memory itself; memory it only wants served comes from {@link #allocateRegistered}.
   *
   * @param release gives back the caller's reference (a {@code ByteBuffer.allocateDirect} buffer,
   *     which the region keeps reachable, needs none: {@code () -> {}})
   * @throws RegistrationException for a heap buffer or an empty range
   * @throws RegistrationException also when a limit on the way would be passed
   */
  MemoryRegion register(ByteBuffer direct, MemoryAllocator account, Runnable release);

  /**
   * Maps {@code [offset, offset + length)} of a file read-only and registers it for remote reads,
   * its bytes one unit on the books of {@code account} (one of this node's allocators), reserved
   * there and in every parent, all or nothing; ranges over the maximum segment size become several
   * segments. Closing the region returns the unit.
   *
   * @throws IOException when the file cannot be opened or mapped
   * @throws IllegalArgumentException when the range is empty or outside the file, or {@code
   *     account} is not this node's
   * @throws RegistrationException when a limit on the way would be passed (nothing is registered or
   *     mapped; the message names the allocator, or the budget for the root's)
   */
  MemoryRegion register(Path file, long offset, long length, MemoryAllocator account)
      throws IOException;

  /**
   * {@code size} bytes of page-aligned direct memory registered for remote reads as one region,
   * owned by one unit of {@code account} (one of this node's allocators): its bytes are reserved
   * there and in every parent, all or nothing. The last {@link BufferUnit#release()} closes the
   * region and frees the memory once the region is released.
   *
   * @param what what the memory holds, for dumps and leak reports
   * @throws RegistrationException when a limit would be passed (the budget's message for the
   *     root's) or the provider refuses the memory
   */
  BufferUnit allocateRegistered(MemoryAllocator account, int size, String what);

  /**
   * {@code size} bytes of page-aligned direct memory that is not registered (a consumer registers
   * slices of it itself), owned by one unit of {@code account}: reserved against the limits below
   * the root (the root's is the registration budget) and freed at the last release.
   *
   * @throws RegistrationException when a limit would be passed
   */
  BufferUnit allocateDirect(MemoryAllocator account, int size, String what);
}
