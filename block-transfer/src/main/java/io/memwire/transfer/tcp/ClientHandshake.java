package io.memwire.transfer.tcp;

import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.settings.TransportSettings;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * The client's connect and handshake for a {@link TcpConnection}: opens the socket, proves the
 * shared secret when there is one, and reads the server's answer, all blocking and bounded by the
 * connect timeout, on the caller's thread (no event loop is involved yet).
 */
final class ClientHandshake {
  private ClientHandshake() {}

  /**
   * Connects and authenticates; the returned channel is non-blocking and ready for a loop.
   *
   * @throws TransferException when the peer cannot be reached in time or refuses the handshake
   */
  static SocketChannel connect(TcpProvider provider, InetSocketAddress peer, long timeoutMs)
      throws TransferException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    SocketChannel ch = null;
    try {
      ch = SocketChannel.open();
      ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
      ch.socket().connect(peer, (int) timeoutMs);
      ch.socket().setSoTimeout((int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
      handshake(provider, peer, ch);
      ch.configureBlocking(false);
      return ch;
    } catch (SocketTimeoutException e) {
      closeQuietly(ch);
      throw new TransferTimeoutException(
          "connect did not complete within " + timeoutMs + " ms", peer);
    } catch (TransferException e) {
      closeQuietly(ch);
      throw e;
    } catch (IOException e) {
      closeQuietly(ch);
      throw new TransferConnectionException("cannot connect: " + e.getMessage(), peer, e);
    }
  }

  private static void handshake(TcpProvider provider, InetSocketAddress peer, SocketChannel ch)
      throws IOException, TransferException {
    byte[] secret = provider.secret();
    byte[] clientNonce = Handshake.nonce();
    OutputStream os = ch.socket().getOutputStream();
    DataInputStream is = new DataInputStream(ch.socket().getInputStream());
    os.write(Handshake.hello(secret != null, clientNonce).array());
    os.flush();
    byte[] challenge = new byte[Handshake.CHALLENGE_SIZE];
    is.readFully(challenge);
    ByteBuffer c = ByteBuffer.wrap(challenge);
    if (c.getInt() != Handshake.MAGIC) {
      throw new TransferConnectionException(
          "peer is not a Memwire tcp transfer endpoint", peer, null);
    }
    c.getShort();
    byte status = c.get();
    boolean authRequired = c.get() != 0;
    byte[] serverNonce = new byte[Handshake.NONCE_SIZE];
    c.get(serverNonce);
    byte[] serverProof = new byte[32];
    c.get(serverProof);
    if (status == Handshake.STATUS_BAD_VERSION) {
      throw new TransferConnectionException(
          "peer does not speak protocol version " + Handshake.VERSION, peer, null);
    }
    if (status == Handshake.STATUS_BUSY) {
      throw busy(peer);
    }
    if (status != Handshake.STATUS_OK) {
      throw new TransferConnectionException(
          "peer refused the handshake with status " + status, peer, null);
    }
    if (authRequired && secret == null) {
      throw new TransferConnectionException(
          "peer requires authentication and this node has no shared secret ("
              + TransportSettings.AUTH_SECRET.name()
              + ")",
          peer,
          null);
    }
    if (!authRequired && secret != null) {
      throw new TransferConnectionException(
          "peer does not authenticate but this node requires it ("
              + TransportSettings.AUTH_SECRET.name()
              + " is set)",
          peer,
          null);
    }
    if (authRequired) {
      if (!Handshake.same(serverProof, Handshake.serverProof(secret, clientNonce, serverNonce))) {
        throw new TransferConnectionException(
            "peer failed to prove the shared secret: authentication failed", peer, null);
      }
      os.write(Handshake.clientProof(secret, serverNonce, clientNonce));
      os.flush();
    }
    byte[] welcome = new byte[Handshake.WELCOME_SIZE];
    is.readFully(welcome);
    ByteBuffer w = ByteBuffer.wrap(welcome);
    int magic = w.getInt();
    byte welcomeStatus = w.get();
    if (magic == Handshake.MAGIC && welcomeStatus == Handshake.STATUS_BUSY) {
      throw busy(peer);
    }
    if (magic != Handshake.MAGIC || welcomeStatus != Handshake.STATUS_OK) {
      throw new TransferConnectionException(
          "peer refused the connection: authentication failed", peer, null);
    }
  }

  private static TransferConnectionException busy(InetSocketAddress peer) {
    return new TransferConnectionException(
        "peer refused the connection: it serves its limit of connections ("
            + TransportSettings.MAX_CONNECTIONS.name()
            + "), or "
            + "of connections still in their handshake",
        peer,
        null);
  }

  static void closeQuietly(SocketChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException ignored) {
        // nothing to do
      }
    }
  }
}
