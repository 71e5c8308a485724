package io.memwire.transfer.spi;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * What a transport must offer so {@link io.memwire.transfer.TransferNode} can run one-sided reads
 * over it. Everything above this interface (regions, splitting, flow control, timeouts, the buffer
 * pool, counters) is shared; a provider only registers memory, opens connections and moves bytes.
 *
 * <p>Implementations: {@code io.memwire.transfer.tcp.TcpProvider} and {@code
 * io.memwire.transfer.verbs.VerbsProvider}.
 */
public interface TransportProvider extends AutoCloseable {

  /** tcp or verbs. */
  io.memwire.transfer.ProviderKind kind();

  /** The address peers connect to and region descriptors carry. */
  InetSocketAddress localAddress();

  /**
   * Registers {@code buffer} (direct, whole capacity from its address). {@code remoteReadable}
   * regions are served to peers (never writable remotely); the others are local read destinations.
   * {@code file} and {@code fileOffset} describe the file a read-only mapping came from, or are
   * null/0, so a provider may serve it from the file instead (sendfile).
   */
  ProviderRegistration register(
      ByteBuffer buffer, long address, boolean remoteReadable, FileChannel file, long fileOffset);

  /**
   * Registers a read-only mapping of {@code [fileOffset, fileOffset + capacity)} of {@code file}
   * (opened as {@code channel}) for remote reads. A provider may serve the file's bytes another way
   * (a different mapping, sendfile); {@link ProviderRegistration#address()} says where the served
   * bytes live. The default registers the mapping itself.
   */
  default ProviderRegistration registerFile(
      ByteBuffer mapping,
      long address,
      java.nio.file.Path file,
      FileChannel channel,
      long fileOffset) {
    return register(mapping, address, true, channel, fileOffset);
  }

  /**
   * Allocates {@code length} bytes of page-aligned memory, when this provider serves memory it
   * allocates better than the node's direct memory; empty (the default, tcp and verbs) lets the
   * node allocate direct memory as usual. {@code remoteReadable}: the whole memory is one region
   * for remote reads ({@code allocateRegistered}); otherwise its consumer registers slices of it
   * itself ({@code allocateDirect}) and the allocation has no registration of its own to hand out.
   * The node has reserved the bytes on its books before asking, and calls {@link
   * ProviderAllocation#free()} once they are done with: after the region over them is released, or
   * at the last release of unregistered memory (its slices' regions released before).
   */
  default java.util.Optional<ProviderAllocation> allocate(int length, boolean remoteReadable) {
    return java.util.Optional.empty();
  }

  /** Opens a connection; blocks at most the configured connect timeout. */
  ProviderConnection connect(InetSocketAddress peer) throws TransferException;

  /** Reads one connection may have in flight because of the device (Integer.MAX_VALUE: none). */
  default int maxReadsInFlightPerConnection() {
    return Integer.MAX_VALUE;
  }

  /**
   * Provider-specific counters (for example reads served by a tcp responder), keyed by their
   * declarations in {@link io.memwire.transfer.metrics.TransportMetrics}.
   */
  default java.util.Map<io.memwire.transfer.metrics.Metric, Long> counters() {
    return java.util.Map.of();
  }

  /** Stops serving, closes every connection and frees every provider resource. */
  @Override
  void close();

  /** Convenience for messages. */
  default String describe() {
    ProviderKind k = kind();
    return k + " on " + localAddress();
  }
}
