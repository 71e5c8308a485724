package io.memwire.transfer;

import io.memwire.transfer.memory.MemoryUnit;
import io.memwire.transfer.spi.ProviderRegistration;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.LoggerFactory;

/**
 * Memory registered for one-sided remote reads: direct memory (the node's own, or a caller's
 * registered in place, whose release the region owns), or a read-only mapping of a file range.
 * Peers read it through {@link #remote()}; {@link #close()} deregisters it (reads arriving
 * afterwards fail with a remote access error) and unmaps what was mapped once the transport no
 * longer touches it.
 *
 * <p>A file range longer than the node's maximum segment size is registered as several segments;
 * {@link RemoteRegion} hides that from readers.
 *
 * <p>A region is on its node's books as a registered unit: of the allocator it was registered on,
 * or of the {@link BufferUnit} it belongs to.
 */
public final class MemoryRegion implements AutoCloseable {

  /** One registered piece. */
  static final class Segment {
    final ByteBuffer memory;
    final long address;
    final ProviderRegistration registration;
    final boolean mapped;

    Segment(ByteBuffer memory, long address, ProviderRegistration registration, boolean mapped) {
      this.memory = memory;
      this.address = address;
      this.registration = registration;
      this.mapped = mapped;
    }
  }

  private final NodeMemory memory;
  private final MemoryUnit unit;
  private final List<Segment> segments;
  private final RemoteRegion remote;
  private final Path file;
  private final FileChannel channel;
  private final long length;

  /**
   * What gives back the memory under a region registered in place; runs before {@link #released}.
   */
  private final Runnable release;

  private final AtomicBoolean open = new AtomicBoolean(true);
  private final CompletableFuture<Void> released = new CompletableFuture<>();

  /**
   * {@code unit} is the region's own registered unit, null when a {@link BufferUnit} owns it;
   * {@code release}, when not null, gives back the memory under it once the transport no longer
   * touches it.
   */
  MemoryRegion(
      NodeMemory memory,
      List<Segment> segments,
      RemoteRegion remote,
      Path file,
      FileChannel ch,
      MemoryUnit unit,
      Runnable release) {
    this.memory = memory;
    this.unit = unit;
    this.release = release;
    this.segments = Collections.unmodifiableList(new ArrayList<>(segments));
    this.remote = remote;
    this.file = file;
    this.channel = ch;
    this.length = remote.length();
  }

  /** What a peer needs to read this region: send it to the reader. */
  public RemoteRegion remote() {
    return remote;
  }

  /** The descriptors of the segments, in order (usually one). */
  public List<RegionDescriptor> descriptors() {
    return remote.segments();
  }

  public long length() {
    return length;
  }

  public boolean isFileBacked() {
    return file != null;
  }

  /** The file this region maps, or null. */
  public Path file() {
    return file;
  }

  public boolean isOpen() {
    return open.get();
  }

  List<Segment> segments() {
    return segments;
  }

  /** The books of the node it is registered with. */
  NodeMemory memory() {
    return memory;
  }

  /**
   * Completes once the region is closed and the transport will never touch its memory again
   * (mappings are unmapped by then, and the memory of a region registered in place was given back
   * by the release action it owns).
   */
  public CompletableFuture<Void> released() {
    return released;
  }

  /**
   * Runs {@code action} once the region is {@link #released()} (at once if it is), on the thread
   * that releases it. A failure of the action is logged, never lost in an unobserved future.
   * (Memory under a region registered in place is given back by the release action the region
   * owns.)
   */
  public void whenReleased(Runnable action) {
    var unused = released.thenRun(() -> runLogged(action)); // released never fails
  }

  private static void runLogged(Runnable action) {
    try {
      action.run();
    } catch (RuntimeException e) {
      LoggerFactory.getLogger(MemoryRegion.class)
          .warn("an action after a region's release failed", e);
    }
  }

  void markReleased() {
    if (release != null) {
      runLogged(release);
    }
    released.complete(null);
  }

  /** Deregisters every segment and unmaps file mappings; idempotent. */
  @Override
  public void close() {
    if (open.compareAndSet(true, false)) {
      if (unit != null) {
        unit.release(); // off the books; its free action deregisters
      } else {
        memory.release(this);
      }
    }
  }

  FileChannel channel() {
    return channel;
  }

  @Override
  public String toString() {
    return "MemoryRegion{"
        + (file != null ? file + ", " : "")
        + length
        + " bytes, "
        + (open.get() ? "open" : "closed")
        + ", "
        + remote
        + "}";
  }
}
