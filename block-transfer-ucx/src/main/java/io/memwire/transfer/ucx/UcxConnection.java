package io.memwire.transfer.ucx;

import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.spi.AbstractProviderConnection;
import io.memwire.transfer.spi.WireRead;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
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
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection to one peer: an authenticated control socket (read by its own daemon thread) and a
 * UCX endpoint on the node's worker, connected to the peer's UCX listener. Everything UCX (the
 * endpoint, the unpacked rkeys, the GETs in flight, the reads waiting for a key) lives on the
 * progress thread; other threads hand work to it.
 */
final class UcxConnection extends AbstractProviderConnection {
  private static final Logger LOG = LoggerFactory.getLogger(UcxConnection.class);
  private static final long CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final UcxProvider provider;
  private final UcxProgressThread progress;
  private final Socket socket;
  private final DataInputStream in;
  private final DataOutputStream out;

  // Progress thread only.
  private UcpEndpoint endpoint;
  private final Map<Long, Key> keys = new HashMap<>();
  private final Map<Long, List<WireRead>> waiting = new HashMap<>();
  private final Set<WireRead> outstanding = Collections.newSetFromMap(new IdentityHashMap<>());

  /** An unpacked remote key and the bounds of the live region it opens. */
  private static final class Key {
    final UcpRemoteKey rkey;
    final long address;
    final long length;
    int inFlight;
    boolean gone;

    Key(UcpRemoteKey rkey, long address, long length) {
      this.rkey = rkey;
      this.address = address;
      this.length = length;
    }
  }

  private UcxConnection(
      UcxProvider provider,
      InetSocketAddress peer,
      Socket socket,
      DataInputStream in,
      DataOutputStream out) {
    super(peer);
    this.provider = provider;
    this.progress = provider.progress();
    this.socket = socket;
    this.in = in;
    this.out = out;
  }

  /** Connects, authenticates, creates the endpoint; blocks at most the connect timeout. */
  static UcxConnection open(
      UcxProvider provider, InetSocketAddress peer, int timeoutMillis, byte[] secret)
      throws TransferException {
    Socket s = new Socket();
    try {
      s.setTcpNoDelay(true);
      s.connect(peer, timeoutMillis);
      s.setSoTimeout(timeoutMillis);
      DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
      UcxClientHandshake.Welcome w = UcxClientHandshake.run(in, out, secret);
      s.setSoTimeout(0);
      UcxConnection c = new UcxConnection(provider, peer, s, in, out);
      c.createEndpoint(
          new InetSocketAddress(s.getInetAddress(), w.ucxPort()), w.workerAddress(), timeoutMillis);
      c.startReader();
      return c;
    } catch (IOException | RuntimeException | TimeoutException e) {
      closeQuietly(s);
      if (e instanceof java.net.SocketTimeoutException || e instanceof TimeoutException) {
        throw new io.memwire.transfer.TransferTimeoutException(
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

  private void startReader() {
    Thread t = new Thread(this::readControl, "memwire-ucx-control-" + peer().getPort());
    t.setDaemon(true);
    t.start();
  }

  /** The control socket's reader: key replies and GONEs go to the progress thread. */
  private void readControl() {
    try {
      while (true) {
        byte type = in.readByte();
        if (type == UcxControl.KEYS_REPLY) {
          int n = in.readUnsignedShort();
          List<long[]> meta = new ArrayList<>(n);
          List<byte[]> packed = new ArrayList<>(n);
          for (int i = 0; i < n; i++) {
            long handle = in.readLong();
            long status = in.readByte();
            long address = in.readLong();
            long length = in.readLong();
            meta.add(new long[] {handle, status, address, length});
            packed.add(UcxControl.readBlob(in, in.readUnsignedShort()));
          }
          progress.execute(() -> onKeys(meta, packed));
        } else if (type == UcxControl.GONE) {
          long handle = in.readLong();
          progress.execute(() -> onGone(handle));
        } else {
          throw new IOException("unknown control frame type " + type);
        }
      }
    } catch (IOException e) {
      fail(
          new TransferConnectionException(
              "ucx: the control connection to " + peer() + " ended: " + e.getMessage(), peer(), e));
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
      Key k = keys.get(r.remoteKey());
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
      try {
        List<Long> handles = new ArrayList<>(ask);
        for (int from = 0; from < handles.size(); from += UcxControl.MAX_KEYS) {
          List<Long> part =
              handles.subList(from, Math.min(handles.size(), from + UcxControl.MAX_KEYS));
          synchronized (out) {
            out.writeByte(UcxControl.KEYS);
            out.writeShort(part.size());
            for (long h : part) {
              out.writeLong(h);
            }
            out.flush();
          }
        }
      } catch (IOException e) {
        fail(new TransferConnectionException("ucx: cannot ask " + peer() + " for keys", peer(), e));
      }
    }
  }

  private void onKeys(List<long[]> meta, List<byte[]> packed) {
    for (int i = 0; i < meta.size(); i++) {
      long[] m = meta.get(i);
      if (!isOpen() || endpoint == null) {
        // Failed meanwhile: the reads stay in waiting, where the queued quiesce hands them back.
        return;
      }
      List<WireRead> rs = waiting.remove(m[0]);
      if (m[1] != UcxControl.KEY_LIVE) {
        for (WireRead r : rs != null ? rs : List.<WireRead>of()) {
          r.fail(
              new RemoteAccessException(
                  RemoteAccessException.Reason.UNKNOWN_KEY,
                  "no live region has key 0x" + Long.toHexString(m[0]),
                  r.source(),
                  peer()));
        }
        continue;
      }
      Key k = keys.get(m[0]);
      if (k == null) {
        ByteBuffer b = ByteBuffer.allocateDirect(packed.get(i).length);
        b.put(packed.get(i)).flip();
        try {
          k = new Key(endpoint.unpackRemoteKey(b), m[2], m[3]);
        } catch (UcxException e) {
          fail(new TransferConnectionException("ucx: cannot unpack a key of " + peer(), peer(), e));
          return;
        }
        UcxResources.REMOTE_KEYS.incrementAndGet();
        keys.put(m[0], k);
      }
      for (WireRead r : rs != null ? rs : List.<WireRead>of()) {
        get(r, k);
      }
    }
  }

  private void get(WireRead r, Key k) {
    long from = r.remoteAddress();
    if (from < k.address || from + r.length() > k.address + k.length) {
      r.fail(
          new RemoteAccessException(
              RemoteAccessException.Reason.OUT_OF_BOUNDS,
              r.length() + " bytes at 0x" + Long.toHexString(from) + " are not inside the region",
              r.source(),
              peer()));
      return;
    }
    outstanding.add(r);
    k.inFlight++;
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

  private void done(WireRead r, Key k, String error) {
    if (!outstanding.remove(r)) {
      return; // handed back by quiesce: failed there
    }
    k.inFlight--;
    if (k.gone && k.inFlight == 0) {
      destroy(k);
    }
    if (error == null) {
      r.complete();
    } else {
      outstanding.add(r); // held: fails with the connection, after the endpoint is closed
      fail(
          new TransferConnectionException(
              "ucx: a GET from " + peer() + " failed: " + error, peer(), null));
    }
  }

  private void onGone(long handle) {
    Key k = keys.remove(handle);
    if (k == null) {
      ack(handle);
    } else if (k.inFlight == 0) {
      destroy(k);
      ack(handle);
    } else {
      k.gone = true;
      keysGone.put(k, handle);
    }
  }

  private final Map<Key, Long> keysGone = new IdentityHashMap<>();

  private void destroy(Key k) {
    k.rkey.close();
    UcxResources.REMOTE_KEYS.decrementAndGet();
    Long h = keysGone.remove(k);
    if (h != null) {
      ack(h);
    }
  }

  private void ack(long handle) {
    try {
      synchronized (out) {
        out.writeByte(UcxControl.GONE_ACK);
        out.writeLong(handle);
        out.flush();
      }
    } catch (IOException e) {
      fail(new TransferConnectionException("ucx: control connection lost", peer(), e));
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
      closeQuietly(socket);
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
    for (Key k : keys.values()) {
      k.rkey.close();
      UcxResources.REMOTE_KEYS.decrementAndGet();
    }
    keys.clear();
    for (Key k : keysGone.keySet()) {
      k.rkey.close();
      UcxResources.REMOTE_KEYS.decrementAndGet();
    }
    keysGone.clear();
    closeQuietly(socket);
    provider.forget(this);
    LOG.debug("ucx connection to {} closed: {}", peer(), cause.getMessage());
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      LOG.debug("closing a control socket", e);
    }
  }
}
