package io.memwire.transfer.verbs;

import static io.memwire.transfer.verbs.VerbsAuthWire.AUTH_FAILED;
import static io.memwire.transfer.verbs.VerbsAuthWire.CHALLENGE_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.MAGIC;
import static io.memwire.transfer.verbs.VerbsAuthWire.NONCE_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.OK;
import static io.memwire.transfer.verbs.VerbsAuthWire.OPEN;
import static io.memwire.transfer.verbs.VerbsAuthWire.VERSION;
import static io.memwire.transfer.verbs.VerbsAuthWire.WELCOME_SIZE;
import static io.memwire.transfer.verbs.VerbsAuthWire.hello;
import static io.memwire.transfer.verbs.VerbsAuthWire.nonce;
import static io.memwire.transfer.verbs.VerbsAuthWire.proof;

import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.settings.TransportSettings;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.concurrent.TimeUnit;

/**
 * The connecting side of the verbs handshake: before its RDMA CM connect request, a node proves
 * itself to the serving node's {@link VerbsAuth} over TCP ({@link VerbsAuthWire} has the messages),
 * or, without a secret, only asks the serving node for its port MTUs. Either way it learns them
 * from the WELCOME.
 */
final class VerbsAuthClient {
  private VerbsAuthClient() {}

  /**
   * Proves this node to the serving node at {@code server} (its node address) and announces that
   * the connect request will come from {@code ownCm}; checks the server's proof.
   *
   * @return the serving port's MTUs ({@link PortMtu#UNKNOWN} from a node that does not send them)
   * @throws TransferConnectionException when either side's proof fails or the server refuses
   * @throws TransferTimeoutException when the exchange does not finish by {@code deadlineNanos}
   */
  static PortMtu authenticate(
      byte[] secret, InetSocketAddress ownCm, InetSocketAddress server, long deadlineNanos)
      throws TransferException {
    long leftMs = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
    if (leftMs <= 0) {
      throw new TransferTimeoutException("no time left for verbs authentication", server);
    }
    try {
      return exchange(secret, ownCm, server, deadlineNanos);
    } catch (TransferConnectionException e) {
      throw e; // what the peer answered, said already
    } catch (SocketTimeoutException e) {
      throw new TransferTimeoutException(
          "verbs authentication did not finish within the " + "connect timeout", server);
    } catch (IOException e) {
      throw new TransferConnectionException(
          "verbs authentication with the peer's TCP port "
              + server.getPort()
              + " failed: "
              + e.getMessage()
              + " (does the peer have "
              + TransportSettings.AUTH_SECRET.name()
              + " set? a verbs node with a secret listens for it on its port)",
          server,
          e);
    }
  }

  /**
   * Without a secret: asks the serving node at {@code server} for its port MTUs within {@code
   * deadlineNanos}. Null when the port does not answer the handshake (a node from before the open
   * handshake, none listening, a firewall, out of time): the connection goes ahead as before.
   *
   * @return the serving port's MTUs ({@link PortMtu#UNKNOWN} when it does not know them), or null
   * @throws TransferConnectionException when the peer demands authentication (it has a secret)
   */
  static PortMtu query(InetSocketAddress ownCm, InetSocketAddress server, long deadlineNanos)
      throws TransferConnectionException {
    if (deadlineNanos - System.nanoTime() <= 0) {
      return null;
    }
    try {
      return exchange(null, ownCm, server, deadlineNanos);
    } catch (TransferConnectionException e) {
      throw e;
    } catch (IOException e) {
      return null;
    }
  }

  /**
   * One handshake; I/O failures and a peer that does not speak it are IOExceptions, what the peer
   * answered in the protocol a TransferConnectionException.
   */
  private static PortMtu exchange(
      byte[] secret, InetSocketAddress ownCm, InetSocketAddress server, long deadlineNanos)
      throws IOException, TransferConnectionException {
    long leftMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
    try (Socket s = new Socket()) {
      // From the RDMA address, which the server checks against the announced CM address.
      s.bind(new InetSocketAddress(ownCm.getAddress(), 0));
      s.connect(server, (int) Math.min(Integer.MAX_VALUE, leftMs));
      s.setSoTimeout(
          (int)
              Math.max(
                  1,
                  Math.min(
                      Integer.MAX_VALUE,
                      TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()))));
      s.setTcpNoDelay(true);
      DataInputStream in = new DataInputStream(s.getInputStream());
      OutputStream out = s.getOutputStream();
      byte[] hello = hello(nonce(), ownCm, server);
      out.write(hello);
      out.flush();
      byte[] challenge = new byte[CHALLENGE_SIZE];
      in.readFully(challenge);
      ByteBuffer c = ByteBuffer.wrap(challenge);
      if (c.getInt() != MAGIC || c.getShort() != VERSION) {
        throw new IOException(
            "the peer's TCP port "
                + server.getPort()
                + " does not speak Memwire's verbs handshake (version "
                + VERSION
                + ")");
      }
      byte status = c.get();
      boolean open = (c.get() & OPEN) != 0;
      byte[] serverNonce = new byte[NONCE_SIZE];
      c.get(serverNonce);
      byte[] serverProof = new byte[32];
      c.get(serverProof);
      if (status != OK) {
        if (secret == null) {
          throw new IOException("the peer refused the verbs handshake (status " + status + ")");
        }
        throw new TransferConnectionException(
            "the peer refused verbs authentication (status " + status + ")", server, null);
      }
      if (secret == null && !open) {
        throw new TransferConnectionException(
            "the peer requires verbs authentication ("
                + TransportSettings.AUTH_SECRET.name()
                + " is set there, not here): set the same secret on both nodes",
            server,
            null);
      }
      if (secret != null && open) {
        throw new TransferConnectionException(
            "verbs authentication failed: the peer has no "
                + TransportSettings.AUTH_SECRET.name()
                + " (its port answers without a proof) while this node has one: set the same"
                + " secret on both nodes",
            server,
            null);
      }
      if (secret != null) {
        if (!MessageDigest.isEqual(
            serverProof, proof(secret, "memwire-verbs-server", hello, serverNonce))) {
          throw new TransferConnectionException(
              "verbs authentication failed: the peer could not prove it knows "
                  + TransportSettings.AUTH_SECRET.name(),
              server,
              null);
        }
        out.write(proof(secret, "memwire-verbs-client", hello, serverNonce));
        out.flush();
      }
      byte[] message = new byte[WELCOME_SIZE];
      in.readFully(message);
      VerbsAuthWire.Welcome w = VerbsAuthWire.welcome(message);
      if (w == null) {
        if (secret == null) {
          throw new IOException("bad verbs handshake reply");
        }
        throw new TransferConnectionException("bad verbs authentication reply", server, null);
      }
      if (w.status() == AUTH_FAILED) {
        throw new TransferConnectionException(
            "verbs authentication failed: the peer rejected "
                + "this node's proof ("
                + TransportSettings.AUTH_SECRET.name()
                + " differs)",
            server,
            null);
      }
      if (w.status() != OK) {
        throw new TransferConnectionException(
            "the peer refused verbs authentication (status "
                + w.status()
                + ": addresses do not match, or too many pending connections)",
            server,
            null);
      }
      return w.mtu();
    }
  }
}
