package io.memwire.transfer.tcp;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Connection set-up of the tcp provider, with optional mutual authentication by a shared secret
 * that never crosses the wire (HMAC-SHA256 over both sides' random nonces):
 *
 * <pre>
 * client -> HELLO      24 B: u32 magic "MWT1" | u16 version (1) | u16 flags (bit 0: client has a secret)
 *                            | 16 B client nonce
 * server -> CHALLENGE  56 B: u32 magic | u16 version | u8 status (0 ok, 2 unsupported version,
 *                            3 at its connection limit: the server closes after it)
 *                            | u8 flags (bit 0: authentication required) | 16 B server nonce
 *                            | 32 B server proof = HMAC(secret, "memwire-server" | client nonce | server nonce), or zeros
 * client -> AUTH       32 B: client proof = HMAC(secret, "memwire-client" | server nonce | client nonce)
 *                            (only when authentication is required)
 * server -> WELCOME     8 B: u32 magic | u8 status (0 ok, 1 authentication failed, 3 at its
 *                            limit of served connections: the server closes after it) | 3 B zero
 * </pre>
 *
 * Both sides must agree: a client with a secret refuses a server that does not prove it, and a
 * server with a secret refuses a client that cannot.
 */
final class Handshake {
  static final int MAGIC = 0x4D575431; // "MWT1"
  static final short VERSION = 1;
  static final int HELLO_SIZE = 24;
  static final int CHALLENGE_SIZE = 56;
  static final int AUTH_SIZE = 32;
  static final int WELCOME_SIZE = 8;
  static final int NONCE_SIZE = 16;
  static final byte STATUS_OK = 0;
  static final byte STATUS_AUTH_FAILED = 1;
  static final byte STATUS_BAD_VERSION = 2;
  static final byte STATUS_BUSY = 3;

  private static final SecureRandom RANDOM = new SecureRandom();

  private Handshake() {}

  static byte[] nonce() {
    byte[] n = new byte[NONCE_SIZE];
    RANDOM.nextBytes(n);
    return n;
  }

  static byte[] proof(byte[] secret, String role, byte[] first, byte[] second) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(role.getBytes(StandardCharsets.US_ASCII));
      mac.update(first);
      mac.update(second);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  static byte[] serverProof(byte[] secret, byte[] clientNonce, byte[] serverNonce) {
    return proof(secret, "memwire-server", clientNonce, serverNonce);
  }

  static byte[] clientProof(byte[] secret, byte[] serverNonce, byte[] clientNonce) {
    return proof(secret, "memwire-client", serverNonce, clientNonce);
  }

  static boolean same(byte[] a, byte[] b) {
    return MessageDigest.isEqual(a, b);
  }

  static ByteBuffer hello(boolean hasSecret, byte[] clientNonce) {
    ByteBuffer b = ByteBuffer.allocate(HELLO_SIZE);
    b.putInt(MAGIC).putShort(VERSION).putShort((short) (hasSecret ? 1 : 0)).put(clientNonce);
    return b.flip();
  }

  static ByteBuffer challenge(byte status, boolean authRequired, byte[] serverNonce, byte[] proof) {
    ByteBuffer b = ByteBuffer.allocate(CHALLENGE_SIZE);
    b.putInt(MAGIC).putShort(VERSION).put(status).put((byte) (authRequired ? 1 : 0));
    b.put(serverNonce).put(proof == null ? new byte[32] : proof);
    return b.flip();
  }

  static ByteBuffer welcome(byte status) {
    ByteBuffer b = ByteBuffer.allocate(WELCOME_SIZE);
    b.putInt(MAGIC).put(status).put((byte) 0).putShort((short) 0);
    return b.flip();
  }
}
