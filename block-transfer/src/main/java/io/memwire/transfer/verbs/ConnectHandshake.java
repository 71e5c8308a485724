package io.memwire.transfer.verbs;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.fabric.FabricDiagnosis;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The TCP handshake a connecting node does with the serving node before its rdma_cm connect
 * request, and the check on its answer: authentication with the shared secret, else the open
 * handshake that only asks for the peer's MTUs (bounded, and skipped for a while for a peer whose
 * port stayed silent); then a refusal to connect when this node's path MTU exceeds the serving
 * port's. Used by {@link ClientQueuePairs}; safe for concurrent connects.
 */
final class ConnectHandshake {
  // The provider's logger name, so these messages read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  /**
   * The open handshake may take half of what is left of the connect timeout, and at least this,
   * before a connect goes ahead without the peer's MTU: a slow peer (an emulated guest took over 2
   * s) must still be asked, a silent port must not eat the whole timeout.
   */
  static final long OPEN_HANDSHAKE_MIN_MS = 2000;

  /** How long a peer whose port did not answer the open handshake is not asked again. */
  private static final long SILENT_PEER_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final TransferConfig config;
  private final VerbsProbe.Binding binding;

  /** The shared secret peers authenticate with, or null. */
  private final byte[] secret;

  /** Peers whose port did not answer the open handshake -> when to ask again (nanoTime). */
  private final Map<InetSocketAddress, Long> silentPeers = new ConcurrentHashMap<>();

  private final AtomicBoolean mtuRefusalLogged = new AtomicBoolean();

  ConnectHandshake(TransferConfig config, VerbsProbe.Binding binding, byte[] secret) {
    this.config = config;
    this.binding = binding;
    this.secret = secret;
  }

  /**
   * The TCP handshake with the serving node before the connect request: authentication with a
   * secret, else the open one (bounded by {@link #openHandshakeBound}; a peer that does not answer
   * it is not asked again for {@link #SILENT_PEER_NANOS}). Either tells the peer's MTUs.
   */
  PortMtu exchange(SocketAddress own, InetSocketAddress peer, long deadline)
      throws TransferException {
    if (secret != null) {
      if (!(own instanceof InetSocketAddress)) {
        throw new TransferConnectionException(
            "the RDMA CM id has no source address to " + "announce for authentication", peer, null);
      }
      return VerbsAuthClient.authenticate(secret, (InetSocketAddress) own, peer, deadline);
    }
    Long quietUntil = silentPeers.get(peer);
    if (!config.mtuHandshake()
        || binding.device().isIwarp() // the peer's TCP port is its RDMA CM's; no such MTU trap
        || !(own instanceof InetSocketAddress)
        || (quietUntil != null && System.nanoTime() - quietUntil < 0)) {
      return PortMtu.UNKNOWN;
    }
    PortMtu m =
        VerbsAuthClient.query(
            (InetSocketAddress) own, peer, openHandshakeBound(System.nanoTime(), deadline));
    if (m == null) {
      if (silentPeers.size() >= 1024) {
        silentPeers.clear();
      }
      silentPeers.put(peer, System.nanoTime() + SILENT_PEER_NANOS);
      LOG.debug("{} did not answer the open verbs handshake: its MTU is not known", peer);
      return PortMtu.UNKNOWN;
    }
    silentPeers.remove(peer);
    return m;
  }

  /**
   * Refuses to connect when this node's path MTU (its port's active MTU: over rdma_cm both queue
   * pairs take the connecting side's) exceeds the serving port's, in which it could not send its
   * read responses: the reads would stall with no error.
   */
  void refuseLargerPathMtu(InetSocketAddress peer, PortMtu peerMtu)
      throws TransferConnectionException {
    FabricDiagnosis.Finding f =
        PortMtu.of(binding).refusal(binding.device().name(), binding.port().number(), peerMtu);
    if (!f.found()) {
      return;
    }
    if (mtuRefusalLogged.compareAndSet(false, true)) {
      LOG.warn("refused to connect to {}: {}", peer, f.message());
    } else {
      LOG.debug("refused to connect to {}: {}", peer, f.message());
    }
    throw new TransferConnectionException(f.message(), peer, null);
  }

  /** When the open handshake gives up, for a connect that must end by {@code deadline}. */
  static long openHandshakeBound(long now, long deadline) {
    long half =
        Math.max(TimeUnit.MILLISECONDS.toNanos(OPEN_HANDSHAKE_MIN_MS), (deadline - now) / 2);
    return deadline - (now + half) < 0 ? deadline : now + half;
  }
}
