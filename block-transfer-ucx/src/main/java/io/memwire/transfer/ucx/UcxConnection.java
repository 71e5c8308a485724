package io.memwire.transfer.ucx;

import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.spi.AbstractProviderConnection;
import io.memwire.transfer.spi.WireRead;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.UcxException;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection to one peer: a UCX endpoint on the node's worker, connected to the peer's UCX
 * listener, through which it posts one-sided GETs and completes them; the remote keys it needs come
 * over an authenticated control connection ({@link UcxControlLink}) and are kept in {@link
 * UcxRemoteKeys}. Everything UCX (the endpoint, the unpacked rkeys, the GETs in flight, the reads
 * waiting for a key) lives on the progress thread; other threads hand work to it.
 */
final class UcxConnection extends AbstractProviderConnection {
  private static final Logger LOG = LoggerFactory.getLogger(UcxConnection.class);
  private static final long CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final UcxProvider provider;
  private final UcxProgressThread progress;
  private final UcxControlLink link;

  // Progress thread only.
  private UcpEndpoint endpoint;
  private final UcxRemoteKeys keys;
  private final Map<Long, List<WireRead>> waiting = new HashMap<>();
  private final Set<WireRead> outstanding = Collections.newSetFromMap(new IdentityHashMap<>());

  private UcxConnection(UcxProvider provider, InetSocketAddress peer, UcxControlLink link) {
    super(peer);
    this.provider = provider;
    this.progress = provider.progress();
    this.link = link;
    this.keys = new UcxRemoteKeys(link::ackGone);
  }

  /** Connects, authenticates, creates the endpoint; blocks at most the connect timeout. */
  static UcxConnection open(
      UcxProvider provider, InetSocketAddress peer, int timeoutMillis, byte[] secret)
      throws TransferException {
    UcxControlLink link = null;
    try {
      link = UcxControlLink.connect(peer, timeoutMillis, secret);
      UcxClientHandshake.Welcome w = link.welcome();
      UcxConnection c = new UcxConnection(provider, peer, link);
      c.createEndpoint(
          new InetSocketAddress(link.peerAddress(), w.ucxPort()), w.workerAddress(), timeoutMillis);
      link.start(c.new LinkEvents());
      return c;
    } catch (IOException | RuntimeException | TimeoutException e) {
      if (link != null) {
        link.close();
      }
      if (e instanceof SocketTimeoutException || e instanceof TimeoutException) {
        throw new TransferTimeoutException(
            "ucx: " + peer + " did not complete the connection within " + timeoutMillis + " ms",
            peer);
      }
      throw new TransferConnectionException(
          "ucx: cannot connect to " + peer + ": " + e.getMessage(), peer, e);
    }
  }

  /**
   * Connects the endpoint: by socket address to the peer's UCX listener where UCX offers RDMA, so
   * UCX wires it up through rdma_cm (worker-address endpoints need a UD wire-up, which fails on
   * some RoCE setups: rxe at its default GID), else to the peer's worker address ({@link
   * UcxProvider#connectsBySocketAddress}). Waits for a flush, which completes once the endpoint is
   * connected, so a peer UCX cannot reach fails here, within the connect timeout, rather than at
   * the first GET.
   */
  private void createEndpoint(InetSocketAddress ucxAddress, byte[] workerAddress, int timeoutMillis)
      throws IOException, TimeoutException {
    ByteBuffer addr = ByteBuffer.allocateDirect(workerAddress.length);
    addr.put(workerAddress).flip();
    CompletableFuture<Void> connected = new CompletableFuture<>();
    progress.call(
        () -> {
          UcpEndpointParams params =
              (provider.connectsBySocketAddress()
                      ? new UcpEndpointParams().setSocketAddress(ucxAddress)
                      : new UcpEndpointParams().setUcpAddress(addr))
                  .setName("memwire-ucx-" + peer())
                  .setErrorHandler(
                      (ep, status, msg) -> {
                        connected.completeExceptionally(
                            new IOException("UCX could not reach " + ucxAddress + ": " + msg));
                        fail(
                            new TransferConnectionException(
                                "ucx: UCX reports the peer failed: " + msg, peer(), null));
                      });
          if (provider.peerErrorHandling()) {
            params.setPeerErrorHandlingMode();
          }
          endpoint = progress.worker().newEndpoint(params);
          UcxResources.ENDPOINTS.incrementAndGet();
          UcpRequest unused =
              endpoint.flushNonBlocking(
                  new UcxCallback() {
                    @Override
                    public void onSuccess(UcpRequest request) {
                      connected.complete(null);
                    }

                    @Override
                    public void onError(int status, String message) {
                      connected.completeExceptionally(
                          new IOException("UCX could not reach " + ucxAddress + ": " + message));
                    }
                  });
          return null;
        });
    try {
      connected.get(timeoutMillis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      close();
      throw new IOException("interrupted while connecting to " + ucxAddress, e);
    } catch (ExecutionException e) {
      close();
      throw new IOException(e.getCause().getMessage(), e.getCause());
    } catch (TimeoutException e) {
      close();
      throw new TimeoutException("UCX did not connect to " + ucxAddress);
    }
  }

  /** The control link's events: key replies and GONEs go to the progress thread. */
  private final class LinkEvents implements UcxControlLink.Listener {
    @Override
    public void onKeys(List<UcxControlLink.KeyReply> replies) {
      progress.execute(() -> UcxConnection.this.onKeys(replies));
    }

    @Override
    public void onGone(long handle) {
      progress.execute(() -> keys.gone(handle));
    }

    @Override
    public void onEnd(String what, IOException cause) {
      fail(new TransferConnectionException(what, peer(), cause));
    }
  }

  @Override
  public void post(List<WireRead> reads) {
    progress.execute(() -> postHere(reads));
  }

  private void postHere(List<WireRead> reads) {
    if (!isOpen() || endpoint == null) {
      reject(reads);
      return;
    }
    Set<Long> ask = new LinkedHashSet<>();
    for (WireRead r : reads) {
      UcxRemoteKeys.Key k = keys.find(r.remoteKey());
      if (k != null) {
        get(r, k);
      } else {
        List<WireRead> w = waiting.get(r.remoteKey());
        if (w == null) {
          waiting.put(r.remoteKey(), w = new ArrayList<>());
          ask.add(r.remoteKey());
        }
        w.add(r);
      }
    }
    if (!ask.isEmpty()) {
      link.askKeys(new ArrayList<>(ask));
    }
  }

  private void onKeys(List<UcxControlLink.KeyReply> replies) {
    for (UcxControlLink.KeyReply reply : replies) {
      if (!isOpen() || endpoint == null) {
        // Failed meanwhile: the reads stay in waiting, where the queued quiesce hands them back.
        return;
      }
      List<WireRead> rs = waiting.remove(reply.handle());
      if (!reply.live()) {
        for (WireRead r : rs != null ? rs : List.<WireRead>of()) {
          r.fail(
              new RemoteAccessException(
                  RemoteAccessException.Reason.UNKNOWN_KEY,
                  "no live region has key 0x" + Long.toHexString(reply.handle()),
                  r.source(),
                  peer()));
        }
        continue;
      }
      UcxRemoteKeys.Key k = keys.find(reply.handle());
      if (k == null) {
        ByteBuffer b = ByteBuffer.allocateDirect(reply.packedKey().length);
        b.put(reply.packedKey()).flip();
        try {
          k =
              keys.add(
                  reply.handle(), endpoint.unpackRemoteKey(b), reply.address(), reply.length());
        } catch (UcxException e) {
          fail(new TransferConnectionException("ucx: cannot unpack a key of " + peer(), peer(), e));
          return;
        }
      }
      for (WireRead r : rs != null ? rs : List.<WireRead>of()) {
        get(r, k);
      }
    }
  }

  private void get(WireRead r, UcxRemoteKeys.Key k) {
    long from = r.remoteAddress();
    if (!k.covers(from, r.length())) {
      r.fail(
          new RemoteAccessException(
              RemoteAccessException.Reason.OUT_OF_BOUNDS,
              r.length() + " bytes at 0x" + Long.toHexString(from) + " are not inside the region",
              r.source(),
              peer()));
      return;
    }
    outstanding.add(r);
    keys.getStarted(k);
    try {
      UcpRequest unused =
          endpoint.getNonBlocking(
              from,
              k.rkey,
              r.destinationAddress(),
              r.length(),
              new UcxCallback() {
                @Override
                public void onSuccess(UcpRequest request) {
                  done(r, k, null);
                }

                @Override
                public void onError(int status, String message) {
                  done(r, k, message);
                }
              });
    } catch (UcxException e) {
      done(r, k, e.getMessage());
    }
  }

  private void done(WireRead r, UcxRemoteKeys.Key k, String error) {
    if (!outstanding.remove(r)) {
      return; // handed back by quiesce: failed there
    }
    keys.getEnded(k);
    if (error == null) {
      r.complete();
    } else {
      outstanding.add(r); // held: fails with the connection, after the endpoint is closed
      fail(
          new TransferConnectionException(
              "ucx: a GET from " + peer() + " failed: " + error, peer(), null));
    }
  }

  @Override
  public boolean servesInPostOrder() {
    return false;
  }

  @Override
  protected boolean onProviderThread() {
    return progress.onThread();
  }

  /** Always stops on the progress thread, outside any UCX callback (progress is not reentrant). */
  @Override
  protected CompletableFuture<List<WireRead>> stop(TransferException cause) {
    CompletableFuture<List<WireRead>> f = new CompletableFuture<>();
    if (!progress.isAlive()) {
      link.close();
      f.complete(List.of());
      return f;
    }
    progress.execute(
        () -> {
          List<WireRead> held = new ArrayList<>();
          try {
            quiesce(cause, held);
          } finally {
            f.complete(held);
          }
        });
    return f;
  }

  /**
   * Hands back every read, force-closes the endpoint (waiting for it, bounded), then destroys the
   * keys and only then closes the control connection: its end is what lets the peer unmap regions
   * this side held keys of.
   */
  @Override
  protected void quiesce(TransferException cause, List<WireRead> held) {
    held.addAll(outstanding);
    outstanding.clear();
    waiting.values().forEach(held::addAll);
    waiting.clear();
    if (endpoint != null) {
      try {
        UcpRequest close = endpoint.closeNonBlockingForce();
        long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
        while (!close.isCompleted() && System.nanoTime() < deadline) {
          progress.progressOnce();
        }
        if (!close.isCompleted()) {
          LOG.warn("ucx: the endpoint to {} did not close within 10 s", peer());
        }
      } catch (UcxException e) {
        LOG.debug("closing the endpoint to {}", peer(), e);
      }
      endpoint = null;
      UcxResources.ENDPOINTS.decrementAndGet();
    }
    keys.destroyAll();
    link.close();
    provider.forget(this);
    LOG.debug("ucx connection to {} closed: {}", peer(), cause.getMessage());
  }
}
