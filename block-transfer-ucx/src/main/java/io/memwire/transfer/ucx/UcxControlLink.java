package io.memwire.transfer.ucx;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connecting side of a ucx control connection ({@link UcxControl}; {@link UcxSession} is the
 * accepting side): the socket, its handshake, then a daemon thread ({@code memwire-ucx-control-P})
 * reading the peer's key replies and {@code GONE}s, and this side's {@code KEYS} and {@code
 * GONE_ACK} frames. It knows nothing of UCX: what it reads goes to a {@link Listener}.
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
  private final DataInputStream in;
  private final DataOutputStream out;
  private final UcxClientHandshake.Welcome welcome;

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

  /** Starts reading the peer's frames into {@code listener}. */
  void start(Listener listener) {
    Thread t = new Thread(() -> read(listener), "memwire-ucx-control-" + peer.getPort());
    t.setDaemon(true);
    t.start();
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
      listener.onEnd("ucx: the control connection to " + peer + " ended: " + e.getMessage(), e);
    }
  }

  /**
   * Asks the peer for the packed rkeys of {@code handles}, {@link UcxControl#MAX_KEYS} per frame.
   */
  void askKeys(List<Long> handles) throws IOException {
    for (int from = 0; from < handles.size(); from += UcxControl.MAX_KEYS) {
      List<Long> part = handles.subList(from, Math.min(handles.size(), from + UcxControl.MAX_KEYS));
      synchronized (out) {
        out.writeByte(UcxControl.KEYS);
        out.writeShort(part.size());
        for (long h : part) {
          out.writeLong(h);
        }
        out.flush();
      }
    }
  }

  /** Tells the peer this side destroyed the rkey of {@code handle}, with no GET of it in flight. */
  void ackGone(long handle) throws IOException {
    synchronized (out) {
      out.writeByte(UcxControl.GONE_ACK);
      out.writeLong(handle);
      out.flush();
    }
  }

  /** Closes the socket: the reading thread ends. */
  void close() {
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
