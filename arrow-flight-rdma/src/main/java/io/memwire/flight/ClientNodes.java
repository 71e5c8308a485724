package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.flight.memory.ArenaMemory;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.Map;

/**
 * The transfer nodes of one {@link RdmaFlightClient}, one per provider, each started on first use
 * with the registered landing memory its streams read bodies into. A provider that failed to start
 * is remembered and not tried again.
 */
final class ClientNodes {
  private final TransferConfig transferConfig;
  private final long arenaSize;
  private final long maxRegisteredBytes;

  @GuardedBy("this")
  private final Map<ProviderKind, TransferNode> nodes = new EnumMap<>(ProviderKind.class);

  @GuardedBy("this")
  private final Map<ProviderKind, ArenaMemory> memories = new EnumMap<>(ProviderKind.class);

  @GuardedBy("this")
  private final Map<ProviderKind, String> unavailable = new EnumMap<>(ProviderKind.class);

  /**
   * @param transferConfig settings of every node; the provider is set per node
   * @param arenaSize bytes per landing arena
   * @param maxRegisteredBytes most bytes the landing arenas of one node take
   */
  ClientNodes(TransferConfig transferConfig, long arenaSize, long maxRegisteredBytes) {
    this.transferConfig = transferConfig;
    this.arenaSize = arenaSize;
    this.maxRegisteredBytes = maxRegisteredBytes;
  }

  /** The node for a provider, started on first use; a failure to start is remembered. */
  synchronized TransferNode node(ProviderKind provider) {
    TransferNode n = nodes.get(provider);
    if (n != null) {
      return n;
    }
    String failed = unavailable.get(provider);
    if (failed != null) {
      throw new IllegalStateException(failed);
    }
    try {
      n = TransferNode.start(transferConfig.toBuilder().provider(provider).build());
    } catch (RuntimeException e) {
      unavailable.put(provider, e.getMessage());
      throw e;
    }
    nodes.put(provider, n);
    if (n.provider() != provider) {
      nodes.put(n.provider(), n);
    }
    memories.put(
        n.provider(),
        new ArenaMemory(
            n, arenaSize, maxRegisteredBytes, "flight client memory on " + n.localAddress()));
    return n;
  }

  /** The landing memory of a started node's provider. */
  synchronized ArenaMemory memory(ProviderKind provider) {
    return memories.get(provider);
  }

  /** Closes every landing memory, then every node. */
  synchronized void close() {
    for (ArenaMemory m : memories.values()) {
      m.close();
    }
    for (TransferNode n : new HashSet<>(nodes.values())) {
      n.close();
    }
  }
}
