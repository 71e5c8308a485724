package io.memwire.transfer.tcp;

import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.tcp.ServerHandshake.State;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The serving side of one tcp connection: the software "NIC" that answers one-sided reads. It
 * checks each request against the table of live regions and streams the bytes straight from the
 * registered memory or file mapping (gathering writes, no copy in user space) or, when enabled,
 * from the file by sendfile ({@link FileChannel#transferTo}); application code is never called.
 *
 * <p>Bounded: at most {@link #MAX_QUEUED} responses are queued; beyond that the session stops
 * reading requests until the client drains them. Every decode reads a fixed-size frame only once
 * that many bytes have arrived, and nothing is allocated from a count the peer sent. The input
 * buffer is a heap buffer taken at the first read, so an accepted connection costs no direct
 * memory. A peer that takes no response bytes for {@code writeTimeout} is disconnected (freeing the
 * regions its queued responses pinned), and so is one idle for {@code idleTimeout}.
 *
 * <p>{@link ServerHandshake} runs the handshake and keeps the session's one state ({@code HELLO},
 * {@code AUTH}, {@code SERVING}, {@code CLOSED}); this class keeps the socket, flow control and
 * timeouts; {@link ReadRequestHandler} checks each read request and {@link ResponseQueue} holds and
 * writes the responses. Everything runs on the session's loop except {@link #evict}, the acceptor's
 * compare-and-set on the handshake state.
 */
final class ResponderSession implements EventLoop.Handler {
  private static final Logger LOG = LoggerFactory.getLogger(ResponderSession.class);
  static final int MAX_QUEUED = 1024;
  private static final int IN_BUFFER = Wire.REQUEST_SIZE * 512;

  private final TcpProvider provider;
  private final SocketChannel channel;
  private final String remote;

  /** The peer's address, the unit of the acceptor's fair share of handshakes; null if unknown. */
  private final InetAddress source;

  private final long startedNanos = System.nanoTime();
  private ByteBuffer in; // taken at the first read
  private final ResponseQueue out = new ResponseQueue();
  private final ReadRequestHandler requests;
  private final LongConsumer progress = this::wrote;
  private ByteBuffer control; // handshake bytes waiting to be sent
  private boolean closeAfterFlush;
  private boolean paused;

  /** The handshake and the session's one state. */
  private final ServerHandshake handshake;

  /** True once the session holds one of the provider's serving slots. */
  private boolean admitted;

  /** The loop the session runs on; set before the session is added to the provider's. */
  private volatile EventLoop loop;

  private SelectionKey key;

  /** Last time bytes came in or went out. */
  private long lastActivity = startedNanos;

  /** Last time response bytes went out, or the time something was queued to an empty queue. */
  private long lastWriteProgress = startedNanos;

  ResponderSession(TcpProvider provider, SocketChannel channel) {
    this.provider = provider;
    this.channel = channel;
    String r;
    InetAddress a = null;
    try {
      java.net.SocketAddress sa = channel.getRemoteAddress();
      r = String.valueOf(sa);
      if (sa instanceof InetSocketAddress) {
        a = ((InetSocketAddress) sa).getAddress();
      }
    } catch (IOException e) {
      r = "?";
    }
    this.remote = r;
    this.source = a;
    this.requests = new ReadRequestHandler(provider, r, out);
    this.handshake = new ServerHandshake(provider, this, r);
  }

  void attach(SelectionKey key) {
    this.key = key;
  }

  /** Names the loop the session will run on (before the loop registers it). */
  void runsOn(EventLoop l) {
    loop = l;
  }

  /** When the connection was accepted ({@link System#nanoTime}); readable from any thread. */
  long startedNanos() {
    return startedNanos;
  }

  /** The peer's address (null when it could not be read); readable from any thread. */
  InetAddress source() {
    return source;
  }

  /** Whether the session is still in its handshake; readable from any thread. */
  boolean inHandshake() {
    return handshake.inHandshake();
  }

  /**
   * Ends the session's handshake by eviction if it is still in it: it leaves the provider's books
   * of handshakes at once and its loop closes it. Called on the acceptor's thread.
   *
   * @return false when the session had left its handshake already (authenticated, refused or
   *     closed): it keeps its place
   */
  boolean evict() {
    if (!handshake.leaveHandshake(State.CLOSED)) {
      return false;
    }
    provider.handshakesEvicted.increment();
    LOG.debug("closing {}: handshake evicted for a new connection", remote);
    loop.execute(() -> closeOnLoop(null));
    return true;
  }

  @Override
  public void ready(SelectionKey k) throws IOException {
    if (k.isReadable()) {
      if (in == null) {
        in = ByteBuffer.allocate(IN_BUFFER);
      }
      int n = channel.read(in);
      if (n < 0) {
        closeOnLoop(null);
        return;
      }
      if (n > 0) {
        lastActivity = System.nanoTime();
      }
      parse();
    }
    if (channel.isOpen() && (k.isWritable() || !out.isEmpty() || control != null)) {
      flush();
    }
  }

  private boolean pending() {
    return control != null || !out.isEmpty();
  }

  private void parse() throws IOException {
    boolean wasPending = pending();
    in.flip();
    try {
      while (true) {
        State st = handshake.state();
        if (st == State.CLOSED) {
          break;
        }
        if (st.inHandshake()) {
          if (!handshake.step(in, st)) {
            break;
          }
        } else {
          if (in.remaining() < Wire.REQUEST_SIZE || out.size() >= MAX_QUEUED) {
            break;
          }
          request();
        }
      }
    } finally {
      in.compact();
    }
    if (!wasPending && pending()) {
      lastWriteProgress = System.nanoTime(); // the write clock starts with the first response
    }
    boolean full = out.size() >= MAX_QUEUED;
    if (full != paused) {
      paused = full;
      updateInterest();
    }
  }

  private void request() {
    String violation = requests.handle(in);
    if (violation != null) {
      protocolViolation(violation);
    }
  }

  void protocolViolation(String what) {
    provider.protocolViolations.increment();
    if (provider.violationLogged.compareAndSet(false, true)) {
      LOG.warn(
          "closing tcp transfer connection from {}: {} (further protocol violations are "
              + "counted as protocolViolations and logged at DEBUG)",
          remote,
          what);
    } else {
      LOG.debug("closing tcp transfer connection from {}: {}", remote, what);
    }
    closeOnLoop(null);
  }

  /** Queues handshake bytes to send (called by the handshake). */
  void send(ByteBuffer b) {
    control = control == null ? b : ServerHandshake.concat(control, b);
  }

  /** Closes the session once the queued handshake bytes are sent (a refusal). */
  void closeAfterFlush() {
    closeAfterFlush = true;
  }

  /** Records whether the ended handshake took one of the provider's serving slots. */
  void admitted(boolean slot) {
    admitted = slot;
  }

  private void wrote(long n) {
    if (n > 0) {
      lastWriteProgress = lastActivity = System.nanoTime();
    }
  }

  private void flush() throws IOException {
    if (control != null) {
      wrote(channel.write(control));
      if (control.hasRemaining()) {
        setWriteInterest(true);
        return;
      }
      control = null;
    }
    if (closeAfterFlush) {
      closeOnLoop(null);
      return;
    }
    out.writeTo(channel, progress);
    setWriteInterest(!out.isEmpty());
    if (paused && out.size() < MAX_QUEUED / 2) {
      parse(); // requests already buffered while paused
      if (!out.isEmpty() && !paused) {
        flush();
      }
    }
  }

  private void setWriteInterest(boolean on) {
    int ops = (paused ? 0 : SelectionKey.OP_READ) | (on ? SelectionKey.OP_WRITE : 0);
    if (key != null && key.isValid() && key.interestOps() != ops) {
      key.interestOps(ops);
    }
  }

  private void updateInterest() {
    setWriteInterest(!out.isEmpty() || control != null);
  }

  @Override
  public void tick(long nowNanos) {
    if (!channel.isOpen()) {
      return;
    }
    if (handshake.state() != State.SERVING) { // handshaking, or refused and flushing the answer
      if (nowNanos - startedNanos > provider.handshakeTimeoutNanos()) {
        LOG.debug("closing {}: handshake not completed in time", remote);
        closeOnLoop(null);
      }
      return;
    }
    if (pending()) {
      if (nowNanos - lastWriteProgress > provider.writeTimeoutNanos()) {
        provider.writeTimeouts.increment();
        String what =
            "closing tcp transfer connection from {}: it took no response bytes for "
                + provider.config().writeTimeout().toMillis()
                + " ms ("
                + TransportSettings.WRITE_TIMEOUT.name()
                + "), "
                + out.size()
                + " responses queued";
        if (provider.writeTimeoutLogged.compareAndSet(false, true)) {
          LOG.warn(
              what + "; further ones are counted as writeTimeouts and logged at DEBUG", remote);
        } else {
          LOG.debug(what, remote);
        }
        closeOnLoop(null);
      }
    } else if (nowNanos - lastActivity > provider.idleTimeoutNanos()) {
      provider.idleClosed.increment();
      String what =
          "closing tcp transfer connection from {}: idle for "
              + provider.config().idleTimeout().toMillis()
              + " ms ("
              + TransportSettings.IDLE_TIMEOUT.name()
              + ")";
      if (provider.idleLogged.compareAndSet(false, true)) {
        LOG.info(what + "; further ones are counted as idleClosed and logged at DEBUG", remote);
      } else {
        LOG.debug(what, remote);
      }
      closeOnLoop(null);
    }
  }

  @Override
  public void closeOnLoop(Exception cause) {
    State was = handshake.close();
    if (cause != null && was != State.CLOSED) {
      LOG.debug("tcp transfer connection from {} ended: {}", remote, cause.toString());
    }
    if (key != null) {
      key.cancel();
    }
    try {
      channel.close();
    } catch (IOException e) {
      LOG.debug("close", e);
    }
    out.releaseAll();
    provider.sessions().sessionClosed(this, admitted);
    admitted = false;
  }
}
