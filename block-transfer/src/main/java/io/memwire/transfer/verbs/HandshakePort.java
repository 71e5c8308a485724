package io.memwire.transfer.verbs;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConfigException;
import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import io.memwire.transfer.settings.FabricSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The verbs node's TCP handshake port ({@link VerbsAuth}, on the node's port number in the TCP port
 * space): with {@code authSecret} set it authenticates peers, and only connect requests announced
 * by a successful handshake get a queue pair; without it it only tells a connecting peer this
 * node's MTUs, so it refuses a path MTU this node cannot send in. Absent when its socket is not
 * bound (an iWARP device's RDMA CM owns the TCP port, so a secret is refused there).
 *
 * <p>Threads: made, started and closed by the {@link VerbsProvider} (its constructor and close);
 * {@link VerbsAuth} answers on its own thread; {@link #putCounters} reads adders from any thread.
 */
final class HandshakePort {
  // The provider's logger, so its start lines keep their category.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  /** Null when the socket is not bound. */
  private final VerbsAuth auth;

  /** Whether {@link #auth} authenticates (a secret is set). */
  private final boolean authenticating;

  /** Whether MTUs are told and asked without a secret ({@code mtuHandshake}). */
  private final boolean mtuHandshake;

  private HandshakePort(VerbsAuth auth, boolean authenticating, boolean mtuHandshake) {
    this.auth = auth;
    this.authenticating = authenticating;
    this.mtuHandshake = mtuHandshake;
  }

  /** Verbs authentication needs the TCP port that an iWARP device's RDMA CM takes. */
  static void refuseAuthOnIwarp(VerbsProbe.Binding binding, boolean iwarp, byte[] secret) {
    if (secret != null && iwarp) {
      throw new TransferConfigException(
          TransferConfig.AUTH_SECRET
              + " is set, but "
              + binding.device().name()
              + " is an iWARP device, whose RDMA CM uses the TCP port "
              + "verbs authentication needs; use provider=tcp with a secret, or RoCE/InfiniBand");
    }
  }

  /**
   * The port on {@code node}'s bound socket (not started), or one without a handshake when the
   * socket is not bound.
   */
  static HandshakePort open(
      TransferConfig config,
      VerbsProbe.Binding binding,
      byte[] secret,
      NodeResources node,
      InetSocketAddress localAddress,
      int id) {
    VerbsAuth auth =
        node.authSocket == null ? null : newAuth(config, binding, secret, node, localAddress, id);
    return new HandshakePort(auth, secret != null, config.mtuHandshake());
  }

  private static VerbsAuth newAuth(
      TransferConfig config,
      VerbsProbe.Binding binding,
      byte[] secret,
      NodeResources node,
      InetSocketAddress localAddress,
      int id) {
    try {
      return new VerbsAuth(
          secret,
          () -> PortMtu.of(binding),
          node.authSocket,
          localAddress,
          config.connectTimeout().toNanos(),
          (int) Math.min(5000, config.connectTimeout().toMillis()),
          NanoClock.SYSTEM,
          "memwire-verbs-" + id + "-auth");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open a selector for verbs authentication", e);
    }
  }

  /** What the acceptor asks to admit a connect request: null when peers do not authenticate. */
  VerbsAuth admissions() {
    return authenticating ? auth : null;
  }

  void start() {
    if (auth != null) {
      auth.start();
    }
  }

  /** Logs what the port does, on the provider's start. */
  void logStarted(InetSocketAddress localAddress, int port) {
    if (authenticating) {
      LOG.info(
          "verbs provider on {}: {} is set, so peers authenticate over TCP port {} before "
              + "connecting; unannounced RDMA connect requests are refused",
          localAddress,
          TransferConfig.AUTH_SECRET,
          port);
    } else if (auth != null) {
      LOG.info(
          "verbs provider on {}: peers ask TCP port {} for this node's MTUs before connecting"
              + " (no {}: nothing else is checked there)",
          localAddress,
          localAddress.getPort(),
          TransferConfig.AUTH_SECRET);
    } else if (!mtuHandshake) {
      LOG.info(
          "verbs provider on {}: {}=false, so no TCP port tells peers this node's MTUs and peers'"
              + " are not asked: an MTU mismatch shows as stalled reads",
          localAddress,
          FabricSettings.MTU_HANDSHAKE.name());
    }
  }

  /** The authentication counters, when peers authenticate. */
  void putCounters(Map<Metric, Long> m) {
    if (authenticating) {
      m.put(TransportMetrics.VERBS_AUTH_ACCEPTED, auth.proofsAccepted.sum());
      m.put(TransportMetrics.VERBS_AUTH_REJECTED, auth.proofsRejected.sum());
      m.put(TransportMetrics.VERBS_AUTH_REFUSED_REQUESTS, auth.requestsRefused.sum());
    }
  }

  /** Stops answering handshakes (joins the thread) and closes the socket. */
  void close() {
    if (auth != null) {
      auth.close();
    }
  }
}
