package io.memwire.transfer.ucx;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The ucx provider's control connection (TCP, big-endian), which carries what must not cross before
 * the peer is authenticated: where to connect the UCX endpoint and the packed remote keys.
 *
 * <pre>
 * client HELLO      24 B: u32 "MWU1" | u16 version (2) | u16 0 | 16B client nonce
 * server CHALLENGE  56 B: u32 magic | u16 version | u8 status (0 ok, 2 bad version)
 *                         | u8 authRequired | 16B server nonce | 32B server proof
 * client AUTH       32 B: client proof (only when authRequired)
 * server WELCOME         u32 magic | u8 status (0 ok, 1 auth failed, 3 at limit) | 3B 0
 *                         | u16 UCX listener port | u32 n | n B UCX worker address
 *                         (status 0 only; the client connects its endpoint to the control
 *                         connection's address at that port, or, when its transports are all
 *                         shared memory, which UCX cannot wire up by socket address, to the
 *                         worker address)
 * then frames:
 * client KEYS            u8 1 | u16 n | n x u64 handle
 * server KEYS_REPLY      u8 2 | u16 n | n x (u64 handle | u8 status (0 live, 1 unknown)
 *                         | u64 address | u64 length | u16 m | m B packed rkey)
 * server GONE            u8 3 | u64 handle         (a region the client holds a key of closed)
 * client GONE_ACK        u8 4 | u64 handle         (its key destroyed, no GET of it in flight)
 * </pre>
 *
 * Proofs are HMAC-SHA256 under the shared secret over a role label and both nonces.
 */
final class UcxControl {
  static final int MAGIC = 0x4d575531; // "MWU1"

  /**
   * 2: WELCOME carries the UCX listener's port too, and endpoints connect by socket address (UCX's
   * rdma_cm or tcp connection manager); 1 sent only a worker address, whose wire-up needs UD on
   * RDMA.
   */
  static final short VERSION = 2;

  static final byte KEYS = 1;
  static final byte KEYS_REPLY = 2;
  static final byte GONE = 3;
  static final byte GONE_ACK = 4;
  static final byte STATUS_OK = 0;
  static final byte STATUS_AUTH_FAILED = 1;
  static final byte STATUS_BAD_VERSION = 2;
  static final byte STATUS_AT_LIMIT = 3;
  static final byte KEY_LIVE = 0;
  static final byte KEY_UNKNOWN = 1;

  /** Most handles in one KEYS request; more are sent as further requests. */
  static final int MAX_KEYS = 1024;

  /** Largest packed rkey or worker address accepted. */
  static final int MAX_BLOB = 64 << 10;

  private static final SecureRandom RANDOM = new SecureRandom();

  private UcxControl() {}

  static byte[] nonce() {
    byte[] n = new byte[16];
    RANDOM.nextBytes(n);
    return n;
  }

  static byte[] proof(byte[] secret, String role, byte[] clientNonce, byte[] serverNonce) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(("memwire-ucx-" + role).getBytes(StandardCharsets.US_ASCII));
      mac.update(clientNonce);
      mac.update(serverNonce);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  static boolean same(byte[] a, byte[] b) {
    return MessageDigest.isEqual(a, b);
  }

  static byte[] readBlob(DataInputStream in, int length) throws IOException {
    if (length < 0 || length > MAX_BLOB) {
      throw new IOException("control frame field of " + length + " bytes");
    }
    byte[] b = new byte[length];
    in.readFully(b);
    return b;
  }

  static void writeWelcome(DataOutputStream out, byte status, int ucxPort, byte[] workerAddress)
      throws IOException {
    out.writeInt(MAGIC);
    out.writeByte(status);
    out.write(new byte[3]);
    if (status == STATUS_OK) {
      out.writeShort(ucxPort);
      out.writeInt(workerAddress.length);
      out.write(workerAddress);
    }
    out.flush();
  }
}
