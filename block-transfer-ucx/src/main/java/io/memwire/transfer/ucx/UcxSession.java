package io.memwire.transfer.ucx;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One accepted control connection, on its own daemon thread: the handshake (the peer proves the
 * shared secret before anything else is sent), the UCX listener's port, then the peer's requests
 * for remote keys. Writes (replies on this thread, {@code GONE} from a thread closing a region)
 * share one lock, so a reply handing out a key always reaches the peer before that key's {@code
 * GONE}.
 */
final class UcxSession implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(UcxSession.class);

  private final Socket socket;
  private final byte[] secret;
  private final int ucxPort;
  private final byte[] workerAddress;
  private final UcxRegistrar registrar;
  private final int handshakeMillis;
  private final Consumer<UcxSession> onEnd;
  private final Map<Long, CompletableFuture<Void>> awaitingAck = new ConcurrentHashMap<>();

  @GuardedBy("this")
  private final Set<UcxRegistrar.Region> held = new HashSet<>();

  @GuardedBy("this")
  private DataOutputStream out;

  private final ConcurrentLinkedQueue<Long> gones = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean goneWriter = new AtomicBoolean();

  /** In its handshake (evictable), serving (authenticated), or closed; moves forward only. */
  enum State {
    HANDSHAKE,
    SERVING,
    CLOSED
  }

  private final AtomicReference<State> state = new AtomicReference<>(State.HANDSHAKE);
  private final long startedNanos = System.nanoTime();

  /**
   * The timer's task that evicts this session at its handshake's deadline; cancelled at its end.
   */
  private volatile Future<?> deadline;

  UcxSession(
      Socket socket,
      byte[] secret,
      int ucxPort,
      byte[] workerAddress,
      UcxRegistrar registrar,
      int handshakeMillis,
      Consumer<UcxSession> onEnd) {
    this.socket = socket;
    this.secret = secret;
    this.ucxPort = ucxPort;
    this.workerAddress = workerAddress;
    this.registrar = registrar;
    this.handshakeMillis = handshakeMillis;
    this.onEnd = onEnd;
  }

  SocketAddress peer() {
    return socket.getRemoteSocketAddress();
  }

  /** The peer's address, the unit of the provider's fair share of handshakes. */
  InetAddress source() {
    return socket.getInetAddress();
  }

  long startedNanos() {
    return startedNanos;
  }

  void deadline(Future<?> task) {
    deadline = task;
    if (state.get() != State.HANDSHAKE) {
      task.cancel(false);
    }
  }

  private void cancelDeadline() {
    Future<?> d = deadline;
    if (d != null) {
      d.cancel(false);
    }
  }

  boolean inHandshake() {
    return state.get() == State.HANDSHAKE;
  }

  /** Authenticated and not closed: its peer may connect UCX endpoints to the listener. */
  boolean serving() {
    return state.get() == State.SERVING;
  }

  /**
   * Closes the session if it is still in its handshake (the cap is full, or its whole-handshake
   * deadline passed); false if it authenticated or closed first and keeps what it has.
   */
  boolean evict() {
    if (!state.compareAndSet(State.HANDSHAKE, State.CLOSED)) {
      return false;
    }
    end();
    return true;
  }

  @Override
  public void run() {
    try {
      socket.setTcpNoDelay(true);
      socket.setSoTimeout(handshakeMillis);
      DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
      synchronized (this) {
        out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
      }
      if (!handshake(in)) {
        return;
      }
      socket.setSoTimeout(0);
      while (state.get() == State.SERVING) {
        byte type = in.readByte();
        if (type == UcxControl.KEYS) {
          answerKeys(in);
        } else if (type == UcxControl.GONE_ACK) {
          CompletableFuture<Void> f = awaitingAck.remove(in.readLong());
          if (f != null) {
            f.complete(null);
          }
        } else {
          LOG.warn("closing the ucx control session of {}: unknown frame type {}", peer(), type);
          return;
        }
      }
    } catch (EOFException e) {
      LOG.debug("ucx control session of {} ended", peer());
    } catch (IOException e) {
      if (state.get() != State.CLOSED) {
        LOG.debug("ucx control session of {} failed", peer(), e);
      }
    } finally {
      close();
    }
  }

  private boolean handshake(DataInputStream in) throws IOException {
    int magic = in.readInt();
    short version = in.readShort();
    in.readShort();
    byte[] clientNonce = UcxControl.readBlob(in, 16);
    byte[] serverNonce = UcxControl.nonce();
    boolean badVersion = magic != UcxControl.MAGIC || version != UcxControl.VERSION;
    synchronized (this) {
      out.writeInt(UcxControl.MAGIC);
      out.writeShort(UcxControl.VERSION);
      out.writeByte(badVersion ? UcxControl.STATUS_BAD_VERSION : UcxControl.STATUS_OK);
      out.writeByte(secret != null ? 1 : 0);
      out.write(serverNonce);
      out.write(
          secret != null
              ? UcxControl.proof(secret, "server", clientNonce, serverNonce)
              : new byte[32]);
      out.flush();
    }
    if (badVersion) {
      LOG.warn("refused ucx control connection from {}: not a Memwire ucx peer", peer());
      return false;
    }
    if (secret != null) {
      byte[] theirs = UcxControl.readBlob(in, 32);
      if (!UcxControl.same(theirs, UcxControl.proof(secret, "client", clientNonce, serverNonce))) {
        LOG.warn("refused ucx control connection from {}: authentication failed", peer());
        synchronized (this) {
          UcxControl.writeWelcome(out, UcxControl.STATUS_AUTH_FAILED, 0, null);
        }
        return false;
      }
    }
    if (!state.compareAndSet(State.HANDSHAKE, State.SERVING)) {
      return false; // evicted meanwhile
    }
    cancelDeadline();
    synchronized (this) {
      UcxControl.writeWelcome(out, UcxControl.STATUS_OK, ucxPort, workerAddress);
    }
    return true;
  }

  private void answerKeys(DataInputStream in) throws IOException {
    int n = in.readUnsignedShort();
    if (n == 0 || n > UcxControl.MAX_KEYS) {
      throw new IOException("KEYS with " + n + " handles");
    }
    long[] handles = new long[n];
    for (int i = 0; i < n; i++) {
      handles[i] = in.readLong();
    }
    synchronized (this) {
      out.writeByte(UcxControl.KEYS_REPLY);
      out.writeShort(n);
      for (long h : handles) {
        UcxRegistrar.Region r = registrar.find(h);
        out.writeLong(h);
        if (r != null && r.handTo(this)) {
          held.add(r);
          out.writeByte(UcxControl.KEY_LIVE);
          out.writeLong(r.address());
          out.writeLong(r.length());
          out.writeShort(r.packedKey().length);
          out.write(r.packedKey());
        } else {
          out.writeByte(UcxControl.KEY_UNKNOWN);
          out.writeLong(0);
          out.writeLong(0);
          out.writeShort(0);
        }
      }
      out.flush();
    }
  }

  /**
   * Tells the peer a region it holds the key of is gone; completes once it has dropped the key (or
   * this session ended, so its connection failed and its endpoint is closed).
   */
  CompletableFuture<Void> tellGone(long handle) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    if (state.get() == State.CLOSED) {
      f.complete(null);
      return f;
    }
    awaitingAck.put(handle, f);
    // Written by a thread of this session, never by the closing one: a peer that stops reading
    // fills the socket and would block it. The ack's timeout closes the session, which ends a
    // blocked write.
    gones.add(handle);
    if (goneWriter.compareAndSet(false, true)) {
      Thread t = new Thread(this::writeGones, "memwire-ucx-gone-" + socket.getLocalPort());
      t.setDaemon(true);
      t.start();
    }
    if (state.get() == State.CLOSED) {
      f.complete(null);
    }
    return f;
  }

  /** Writes queued GONEs, flushing once per batch; exits when the queue is empty. */
  private void writeGones() {
    do {
      try {
        Long h;
        while ((h = gones.poll()) != null) {
          synchronized (this) {
            out.writeByte(UcxControl.GONE);
            out.writeLong(h);
            if (gones.isEmpty()) {
              out.flush();
            }
          }
        }
      } catch (IOException e) {
        gones.clear();
        close();
      } finally {
        goneWriter.set(false);
      }
      // A GONE queued after the last poll but before the flag was cleared started no thread.
    } while (!gones.isEmpty() && goneWriter.compareAndSet(false, true));
  }

  /** Ends the session: the peer's connection fails, and no key it holds is awaited any more. */
  void close() {
    if (state.getAndSet(State.CLOSED) != State.CLOSED) {
      end();
    }
  }

  /** Runs once, by whoever moved the state to closed. */
  private void end() {
    cancelDeadline();
    try {
      socket.close();
    } catch (IOException e) {
      LOG.debug("closing control socket", e);
    }
    List<UcxRegistrar.Region> regions;
    synchronized (this) {
      regions = new ArrayList<>(held);
      held.clear();
    }
    for (UcxRegistrar.Region r : regions) {
      r.dropHolder(this);
    }
    awaitingAck.values().forEach(f -> f.complete(null));
    awaitingAck.clear();
    onEnd.accept(this);
  }
}
