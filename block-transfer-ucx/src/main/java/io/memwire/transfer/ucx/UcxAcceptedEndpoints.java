package io.memwire.transfer.ucx;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpConnectionRequest;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The endpoints UCX's listener makes for peers that connect by socket address, and each one's
 * source address. A request is accepted only from an address with an authenticated control session,
 * and no more endpoints from it than it has sessions: the endpoint itself opens nothing (remote
 * keys travel only on authenticated control connections), but unauthenticated peers must not pile
 * endpoints up. An endpoint goes when its peer fails, when the last session from its address ends,
 * or when the provider closes. Confined to the progress thread.
 */
final class UcxAcceptedEndpoints {
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);

  private final UcxProgressThread progress;
  private final boolean peerErrorHandling;
  private final Set<UcxSession> sessions;
  private final BooleanSupplier closed;
  private final Map<UcpEndpoint, InetAddress> accepted = new IdentityHashMap<>();

  /**
   * @param sessions the provider's live control sessions (a concurrent set)
   * @param closed whether the provider is closing
   */
  UcxAcceptedEndpoints(
      UcxProgressThread progress,
      boolean peerErrorHandling,
      Set<UcxSession> sessions,
      BooleanSupplier closed) {
    this.progress = progress;
    this.peerErrorHandling = peerErrorHandling;
    this.sessions = sessions;
    this.closed = closed;
  }

  /** A peer connects an endpoint to the UCX listener (progress thread). */
  void onConnectionRequest(UcpConnectionRequest req) {
    InetAddress from = req.getClientAddress().getAddress();
    long sessionsFrom = authenticatedFrom(from);
    long endpointsFrom = accepted.values().stream().filter(from::equals).count();
    if (closed.getAsBoolean() || endpointsFrom >= sessionsFrom) {
      LOG.warn(
          "ucx: rejected a UCX connection from {}: {} authenticated control sessions from it, {}"
              + " endpoints",
          req.getClientAddress(),
          sessionsFrom,
          endpointsFrom);
      req.reject();
      return;
    }
    UcpEndpoint[] ep = new UcpEndpoint[1];
    UcpEndpointParams params =
        new UcpEndpointParams()
            .setConnectionRequest(req)
            .setErrorHandler(
                (e, status, msg) -> {
                  // The peer closed or failed: free it after this callback returns.
                  LOG.debug("ucx: the endpoint from {} ended: {}", from, msg);
                  progress.execute(() -> close(ep[0]));
                });
    if (peerErrorHandling) {
      params.setPeerErrorHandlingMode();
    }
    try {
      ep[0] = progress.worker().newEndpoint(params);
    } catch (UcxException e) {
      LOG.warn("ucx: cannot accept the UCX connection from {}", req.getClientAddress(), e);
      return;
    }
    UcxResources.ENDPOINTS.incrementAndGet();
    accepted.put(ep[0], from);
  }

  private long authenticatedFrom(InetAddress from) {
    return sessions.stream().filter(x -> x.serving() && from.equals(x.source())).count();
  }

  /** Closes an accepted endpoint once (force: its peer is gone or going). */
  private void close(UcpEndpoint ep) {
    if (ep == null || accepted.remove(ep) == null) {
      return;
    }
    try {
      UcpRequest unused = ep.closeNonBlockingForce();
    } catch (UcxException e) {
      LOG.debug("closing an accepted endpoint", e);
    }
    UcxResources.ENDPOINTS.decrementAndGet();
  }

  /**
   * A control session from {@code from} ended (any thread): when none is left from that address,
   * the endpoints accepted from it go too (a peer that vanished without UCX noticing).
   */
  void sessionEnded(InetAddress from) {
    if (authenticatedFrom(from) == 0 && progress.isAlive()) {
      progress.execute(
          () -> {
            if (authenticatedFrom(from) == 0) {
              for (UcpEndpoint ep : new ArrayList<>(accepted.keySet())) {
                if (from.equals(accepted.get(ep))) {
                  close(ep);
                }
              }
            }
          });
    }
  }

  /** Closes every accepted endpoint (progress thread; the provider closes). */
  void closeAll() {
    for (UcpEndpoint ep : new ArrayList<>(accepted.keySet())) {
      close(ep);
    }
  }
}
