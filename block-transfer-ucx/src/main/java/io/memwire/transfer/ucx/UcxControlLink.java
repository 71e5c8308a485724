package io.memwire.transfer.ucx;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connecting side of a ucx control connection ({@link UcxControl}; {@link UcxSession} is the
 * accepting side): the socket, its handshake, then a daemon thread ({@code memwire-ucx-control-P})
 * reading the peer's key replies and {@code GONE}s, and another ({@code
 * memwire-ucx-control-write-P}) writing this side's {@code KEYS} and {@code GONE_ACK} frames in the
 * order they were queued. The progress thread asks for keys and acknowledges; it must never block
 * on the peer's socket, which a peer that stops reading fills. It knows nothing of UCX: what it
 * reads goes to a {@link Listener}.
 */
final class UcxControlLink {
  private static final Logger LOG = LoggerFactory.getLogger(UcxControlLink.class);

  /** What the peer sends, handed on by the link's reading thread. */
  interface Listener {
    /** A {@code KEYS_REPLY}: one entry per handle asked for, in the order asked. */
    void onKeys(List<KeyReply> replies);

    /** A {@code GONE}: the region with this handle closed. */
    void onGone(long handle);

    /** The connection ended or broke ({@code what} says how); nothing more comes. */
    void onEnd(String what, IOException cause);
  }

  /** One entry of a {@code KEYS_REPLY}: a live region's bounds and packed rkey, or unknown. */
  record KeyReply(long handle, boolean live, long address, long length, byte[] packedKey) {}

  private final InetSocketAddress peer;
  private final Socket socket;
  private final DataInputStream in; // the reading thread only, after the handshake
  private final DataOutputStream out; // the writing thread only, after the handshake
  private final UcxClientHandshake.Welcome welcome;

  /** Frames for the writing thread, which alone uses {@link #out} after the handshake. */
  private final LinkedBlockingQueue<byte[]> frames = new LinkedBlockingQueue<>();

  /** Queued by {@link #close}: the writing thread stops there. */
  private static final byte[] END = new byte[0];

  private volatile boolean closed;

  private UcxControlLink(
      InetSocketAddress peer,
      Socket socket,
      DataInputStream in,
      DataOutputStream out,
      UcxClientHandshake.Welcome welcome) {
    this.peer = peer;
    this.socket = socket;
    this.in = in;
    this.out = out;
    this.welcome = welcome;
  }

  /**
   * Connects to {@code peer}'s control port and runs the handshake, each step within {@code
   * timeoutMillis}; the socket is closed when this throws.
   *
   * @throws IOException naming why ({@link java.net.SocketTimeoutException} when too slow)
   */
  static UcxControlLink connect(InetSocketAddress peer, int timeoutMillis, byte[] secret)
      throws IOException {
    Socket s = new Socket();
    try {
      s.setTcpNoDelay(true);
      s.connect(peer, timeoutMillis);
      s.setSoTimeout(timeoutMillis);
      DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
      UcxClientHandshake.Welcome w = UcxClientHandshake.run(in, out, secret);
      s.setSoTimeout(0);
      return new UcxControlLink(peer, s, in, out, w);
    } catch (IOException | RuntimeException e) {
      closeQuietly(s);
      throw e;
    }
  }

  /** What the peer's WELCOME said: its UCX listener's port and its worker's address. */
  UcxClientHandshake.Welcome welcome() {
    return welcome;
  }

  /** The peer's address as this socket reached it: the host of its UCX listener. */
  InetAddress peerAddress() {
    return socket.getInetAddress();
  }

  /** Starts reading the peer's frames into {@code listener}, and writing queued frames. */
  void start(Listener listener) {
    Thread r = new Thread(() -> read(listener), "memwire-ucx-control-" + peer.getPort());
    r.setDaemon(true);
    r.start();
    Thread w = new Thread(() -> write(listener), "memwire-ucx-control-write-" + peer.getPort());
    w.setDaemon(true);
    w.start();
  }

  private void read(Listener listener) {
    try {
      while (true) {
        byte type = in.readByte();
        if (type == UcxControl.KEYS_REPLY) {
          int n = in.readUnsignedShort();
          List<KeyReply> replies = new ArrayList<>(n);
          for (int i = 0; i < n; i++) {
            long handle = in.readLong();
            byte status = in.readByte();
            long address = in.readLong();
            long length = in.readLong();
            byte[] packed = UcxControl.readBlob(in, in.readUnsignedShort());
            replies.add(
                new KeyReply(handle, status == UcxControl.KEY_LIVE, address, length, packed));
          }
          listener.onKeys(replies);
        } else if (type == UcxControl.GONE) {
          listener.onGone(in.readLong());
        } else {
          throw new IOException("unknown control frame type " + type);
        }
      }
    } catch (IOException e) {
      if (!closed) { // closed here: the connection is failing already
        listener.onEnd("ucx: the control connection to " + peer + " ended: " + e.getMessage(), e);
      }
    }
  }

  /**
   * Asks the peer for the packed rkeys of {@code handles}, {@link UcxControl#MAX_KEYS} per frame.
   * Queues the frames and returns: the writing thread sends them.
   */
  void askKeys(List<Long> handles) {
    for (int from = 0; from < handles.size(); from += UcxControl.MAX_KEYS) {
      List<Long> part = handles.subList(from, Math.min(handles.size(), from + UcxControl.MAX_KEYS));
      ByteBuffer f = ByteBuffer.allocate(3 + Long.BYTES * part.size());
      f.put(UcxControl.KEYS).putShort((short) part.size());
      for (long h : part) {
        f.putLong(h);
      }
      frames.add(f.array());
    }
  }

  /**
   * Tells the peer this side destroyed the rkey of {@code handle}, with no GET of it in flight.
   * Queues the frame and returns.
   */
  void ackGone(long handle) {
    frames.add(
        ByteBuffer.allocate(1 + Long.BYTES).put(UcxControl.GONE_ACK).putLong(handle).array());
  }

  /** Writes what is queued, one flush per batch taken, until closed or the socket fails. */
  private void write(Listener listener) {
    byte type = 0; // of the last frame written: names what failed
    try {
      while (true) {
        byte[] f = frames.take();
        do {
          if (f == END) {
            return;
          }
          type = f[0];
          out.write(f);
        } while ((f = frames.poll()) != null);
        out.flush();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      if (!closed) {
        listener.onEnd(
            type == UcxControl.KEYS
                ? "ucx: cannot ask " + peer + " for keys"
                : "ucx: control connection lost",
            e);
      }
    }
  }

  /** Closes the socket: both threads end (a write blocked on a peer that stopped reading too). */
  void close() {
    closed = true;
    frames.add(END);
    closeQuietly(socket);
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      LOG.debug("closing a control socket", e);
    }
  }
}
