package io.memwire.transfer.tcp;

import io.memwire.transfer.settings.TransportSettings;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
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
 */
final class ResponderSession implements EventLoop.Handler {
  private static final Logger LOG = LoggerFactory.getLogger(ResponderSession.class);
  static final int MAX_QUEUED = 1024;
  private static final int IN_BUFFER = Wire.REQUEST_SIZE * 512;
  private static final int GATHER = 64;

  private enum State {
    HELLO,
    AUTH,
    SERVING,
    CLOSED
  }

  /** One queued response. */
  private static final class Response {
    final ByteBuffer header;
    final ByteBuffer body;
    final RegionTable.Entry entry;
    final FileChannel file;
    long filePosition;
    long fileRemaining;

    Response(ByteBuffer header, ByteBuffer body, RegionTable.Entry entry) {
      this.header = header;
      this.body = body;
      this.entry = entry;
      this.file = null;
    }

    Response(ByteBuffer header, RegionTable.Entry entry, long position, long length) {
      this.header = header;
      this.body = null;
      this.entry = entry;
      this.file = entry.file;
      this.filePosition = position;
      this.fileRemaining = length;
    }

    boolean done() {
      return !header.hasRemaining() && (body == null || !body.hasRemaining()) && fileRemaining == 0;
    }
  }

  private final TcpProvider provider;
  private final SocketChannel channel;
  private final String remote;
  private final long startedNanos = System.nanoTime();
  private ByteBuffer in; // taken at the first read
  private final ArrayDeque<Response> out = new ArrayDeque<>();
  private final ByteBuffer[] gather = new ByteBuffer[GATHER];
  private ByteBuffer control; // handshake bytes waiting to be sent
  private boolean closeAfterFlush;
  private boolean paused;
  private State state = State.HELLO;

  /** True once the session holds one of the provider's serving slots. */
  private boolean admitted;

  private SelectionKey key;
  private byte[] clientNonce;
  private byte[] serverNonce;

  /** Last time bytes came in or went out. */
  private long lastActivity = startedNanos;

  /** Last time response bytes went out, or the time something was queued to an empty queue. */
  private long lastWriteProgress = startedNanos;

  ResponderSession(TcpProvider provider, SocketChannel channel) {
    this.provider = provider;
    this.channel = channel;
    String r;
    try {
      r = String.valueOf(channel.getRemoteAddress());
    } catch (IOException e) {
      r = "?";
    }
    this.remote = r;
  }

  void attach(SelectionKey key) {
    this.key = key;
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
      while (state != State.CLOSED) {
        if (state == State.HELLO) {
          if (in.remaining() < Handshake.HELLO_SIZE) {
            break;
          }
          hello();
        } else if (state == State.AUTH) {
          if (in.remaining() < Handshake.AUTH_SIZE) {
            break;
          }
          auth();
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

  private void hello() {
    int magic = in.getInt();
    short version = in.getShort();
    in.getShort(); // client flags: whether it has a secret; the server's own setting decides
    clientNonce = new byte[Handshake.NONCE_SIZE];
    in.get(clientNonce);
    if (magic != Handshake.MAGIC) {
      protocolViolation("bad handshake magic 0x" + Integer.toHexString(magic));
      return;
    }
    serverNonce = Handshake.nonce();
    if (version != Handshake.VERSION) {
      send(Handshake.challenge(Handshake.STATUS_BAD_VERSION, false, serverNonce, null));
      closeAfterFlush = true;
      state = State.CLOSED;
      LOG.debug("refused {}: protocol version {}", remote, version);
      return;
    }
    byte[] secret = provider.secret();
    if (secret == null) {
      admitted = provider.admitServing();
      send(
          concat(
              Handshake.challenge(Handshake.STATUS_OK, false, serverNonce, null),
              Handshake.welcome(admitted ? Handshake.STATUS_OK : Handshake.STATUS_BUSY)));
      if (admitted) {
        state = State.SERVING;
      } else {
        closeAfterFlush = true;
        state = State.CLOSED;
      }
    } else {
      send(
          Handshake.challenge(
              Handshake.STATUS_OK,
              true,
              serverNonce,
              Handshake.serverProof(secret, clientNonce, serverNonce)));
      state = State.AUTH;
    }
  }

  private void auth() {
    byte[] proof = new byte[Handshake.AUTH_SIZE];
    in.get(proof);
    byte[] expected = Handshake.clientProof(provider.secret(), serverNonce, clientNonce);
    if (Handshake.same(proof, expected)) {
      // Only an authenticated peer takes a serving slot; one still in its handshake counts
      // against the provider's small handshake cap instead.
      admitted = provider.admitServing();
      if (admitted) {
        send(Handshake.welcome(Handshake.STATUS_OK));
        state = State.SERVING;
      } else {
        send(Handshake.welcome(Handshake.STATUS_BUSY));
        closeAfterFlush = true;
        state = State.CLOSED;
      }
    } else {
      provider.authFailures.increment();
      if (provider.authFailureLogged.compareAndSet(false, true)) {
        LOG.warn(
            "refused tcp transfer client {}: authentication failed (further ones are "
                + "counted as authFailures and logged at DEBUG)",
            remote);
      } else {
        LOG.debug("refused tcp transfer client {}: authentication failed", remote);
      }
      send(Handshake.welcome(Handshake.STATUS_AUTH_FAILED));
      closeAfterFlush = true;
      state = State.CLOSED;
    }
  }

  private void request() {
    byte type = in.get();
    in.get();
    in.getShort();
    long length = Integer.toUnsignedLong(in.getInt());
    long id = in.getLong();
    long rkey = in.getLong();
    long address = in.getLong();
    if (type != Wire.TYPE_READ) {
      protocolViolation("unknown request type " + type);
      return;
    }
    if (length > Wire.MAX_READ_LENGTH) {
      protocolViolation(
          "read of " + length + " bytes exceeds the frame limit " + Wire.MAX_READ_LENGTH);
      return;
    }
    if (length == 0) {
      error(id, Wire.STATUS_INVALID_REQUEST, "zero-length read");
      return;
    }
    RegionTable.Entry e = provider.table().lookup(rkey);
    if (e == null) {
      if (provider.table().wasClosed(rkey)) {
        error(id, Wire.STATUS_REGION_CLOSED, "region was closed");
      } else {
        error(id, Wire.STATUS_UNKNOWN_KEY, "no live region has this key");
      }
      return;
    }
    // Modular difference: any offset in [0, length - read] names bytes inside the region, and
    // nothing else does, whatever the two addresses are (no overflow can sneak past).
    long offset = address - e.address;
    if (offset < 0 || offset > e.length - length) {
      error(
          id,
          Wire.STATUS_OUT_OF_BOUNDS,
          "read [0x"
              + Long.toHexString(address)
              + ", +"
              + length
              + ") is outside the region [0x"
              + Long.toHexString(e.address)
              + ", +"
              + e.length
              + ")");
      return;
    }
    if (!e.acquire()) {
      error(id, Wire.STATUS_REGION_CLOSED, "region was closed");
      return;
    }
    ByteBuffer header = header(Wire.TYPE_DATA, Wire.STATUS_OK, (int) length, id);
    if (e.file != null && length >= provider.sendfileMinBytes()) {
      out.add(new Response(header, e, e.fileOffset + offset, length));
    } else {
      ByteBuffer body = e.memory.duplicate();
      body.limit((int) (offset + length)).position((int) offset);
      out.add(new Response(header, body, e));
    }
    provider.servedReads.increment();
    provider.servedBytes.add(length);
  }

  private void error(long id, byte status, String message) {
    byte[] msg = message.getBytes(StandardCharsets.UTF_8);
    int len = Math.min(msg.length, Wire.MAX_ERROR_LENGTH);
    out.add(
        new Response(header(Wire.TYPE_ERROR, status, len, id), ByteBuffer.wrap(msg, 0, len), null));
    provider.servedErrors.increment();
    LOG.debug("refused a read from {}: {}", remote, message);
  }

  private static ByteBuffer header(byte type, byte status, int length, long id) {
    ByteBuffer h = ByteBuffer.allocate(Wire.RESPONSE_HEADER_SIZE);
    h.put(type).put(status).putShort((short) 0).putInt(length).putLong(id);
    return h.flip();
  }

  private void protocolViolation(String what) {
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

  private void send(ByteBuffer b) {
    control = control == null ? b : concat(control, b);
  }

  private static ByteBuffer concat(ByteBuffer a, ByteBuffer b) {
    ByteBuffer c = ByteBuffer.allocate(a.remaining() + b.remaining());
    return c.put(a).put(b).flip();
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
    while (!out.isEmpty()) {
      Response head = out.peek();
      if (head.file != null) {
        if (head.header.hasRemaining()) {
          int n = channel.write(head.header);
          wrote(n);
          if (n == 0) {
            break;
          }
        }
        if (head.header.hasRemaining()) {
          break;
        }
        long n = head.file.transferTo(head.filePosition, head.fileRemaining, channel);
        wrote(n);
        head.filePosition += n;
        head.fileRemaining -= n;
        if (head.fileRemaining > 0) {
          break;
        }
        finish(out.poll());
        continue;
      }
      int count = 0;
      for (Response r : out) {
        if (r.file != null || count > GATHER - 2) {
          break;
        }
        gather[count++] = r.header;
        gather[count++] = r.body;
      }
      wrote(channel.write(gather, 0, count));
      java.util.Arrays.fill(gather, 0, count, null);
      boolean progressed = false;
      while (!out.isEmpty() && out.peek().file == null && out.peek().done()) {
        finish(out.poll());
        progressed = true;
      }
      if (!out.isEmpty() && out.peek().file == null && !out.peek().done()) {
        break;
      }
      if (!progressed && !out.isEmpty() && out.peek().file == null) {
        break;
      }
    }
    setWriteInterest(!out.isEmpty());
    if (paused && out.size() < MAX_QUEUED / 2) {
      parse(); // requests already buffered while paused
      if (!out.isEmpty() && !paused) {
        flush();
      }
    }
  }

  private void finish(Response r) {
    if (r.entry != null) {
      r.entry.release();
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
    if (state != State.SERVING) { // handshaking, or refused and flushing the answer
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
    if (cause != null && state != State.CLOSED) {
      LOG.debug("tcp transfer connection from {} ended: {}", remote, cause.toString());
    }
    state = State.CLOSED;
    if (key != null) {
      key.cancel();
    }
    try {
      channel.close();
    } catch (IOException e) {
      LOG.debug("close", e);
    }
    Response r;
    while ((r = out.poll()) != null) {
      finish(r);
    }
    provider.sessionClosed(this, admitted);
    admitted = false;
  }
}
