package io.memwire.transfer.ucx;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * The connecting side of the ucx control handshake ({@link UcxControl}; {@link UcxSession} is the
 * accepting side): nothing but the protocol's version and the proofs is sent before the peer has
 * proven it knows the shared secret.
 */
final class UcxClientHandshake {
  private UcxClientHandshake() {}

  /** What an accepted peer sends: its UCX listener's port and its worker's address. */
  record Welcome(int ucxPort, byte[] workerAddress) {}

  /**
   * Runs the handshake on a connected control socket's streams: protocol version, mutual HMAC proof
   * of {@code secret} (when either side has one), then the peer's WELCOME.
   *
   * @throws IOException naming why the peer was not accepted
   */
  static Welcome run(DataInputStream in, DataOutputStream out, byte[] secret) throws IOException {
    byte[] clientNonce = UcxControl.nonce();
    out.writeInt(UcxControl.MAGIC);
    out.writeShort(UcxControl.VERSION);
    out.writeShort(0);
    out.write(clientNonce);
    out.flush();
    if (in.readInt() != UcxControl.MAGIC || in.readShort() != UcxControl.VERSION) {
      throw new IOException("the peer is not a Memwire ucx node");
    }
    byte status = in.readByte();
    boolean authRequired = in.readByte() != 0;
    byte[] serverNonce = UcxControl.readBlob(in, 16);
    byte[] serverProof = UcxControl.readBlob(in, 32);
    if (status != UcxControl.STATUS_OK) {
      throw new IOException("the peer refused the protocol version (status " + status + ")");
    }
    if (secret == null && authRequired) {
      throw new IOException("the peer requires authSecret and this node has none");
    }
    if (secret != null) {
      if (!authRequired
          || !UcxControl.same(
              serverProof, UcxControl.proof(secret, "server", clientNonce, serverNonce))) {
        throw new IOException("the peer did not prove knowledge of authSecret");
      }
      out.write(UcxControl.proof(secret, "client", clientNonce, serverNonce));
      out.flush();
    }
    if (in.readInt() != UcxControl.MAGIC) {
      throw new IOException("malformed WELCOME");
    }
    byte welcome = in.readByte();
    in.readFully(new byte[3]);
    if (welcome != UcxControl.STATUS_OK) {
      throw new IOException(
          welcome == UcxControl.STATUS_AUTH_FAILED
              ? "authentication failed (authSecret differs)"
              : "refused (status " + welcome + ")");
    }
    int port = in.readUnsignedShort();
    return new Welcome(port, UcxControl.readBlob(in, in.readInt()));
  }
}
