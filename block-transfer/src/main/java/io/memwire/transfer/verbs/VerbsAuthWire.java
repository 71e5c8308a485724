package io.memwire.transfer.verbs;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The messages and proofs of the verbs authentication handshake ({@link VerbsAuth} serves it,
 * {@link VerbsAuthClient} runs it): sizes, magic and status codes, the encoding of each message,
 * the HMAC proofs and the nonces.
 *
 * <pre>
 * client -> HELLO      36 B: u32 magic "MWV1" | u16 version (1) | u16 zero | 16 B client nonce
 *                            | client CM address (4 B IPv4, u16 port) | server address (4 B, u16)
 * server -> CHALLENGE  56 B: u32 magic | u16 version | u8 status | u8 zero | 16 B server nonce
 *                            | 32 B HMAC(secret, "memwire-verbs-server" | HELLO | server nonce)
 * client -> AUTH       32 B: HMAC(secret, "memwire-verbs-client" | HELLO | server nonce)
 * server -> WELCOME     8 B: u32 magic | u8 status | 3 B zero
 * status: 0 ok, 1 authentication failed, 2 unsupported version, 3 wrong addresses
 * </pre>
 */
final class VerbsAuthWire {
  static final int MAGIC = 0x4D575631; // "MWV1"
  static final short VERSION = 1;
  static final int HELLO_SIZE = 36;
  static final int CHALLENGE_SIZE = 56;
  static final int AUTH_SIZE = 32;
  static final int WELCOME_SIZE = 8;
  static final int NONCE_SIZE = 16;
  static final byte OK = 0;
  static final byte AUTH_FAILED = 1;
  static final byte BAD_VERSION = 2;
  static final byte BAD_ADDRESS = 3;

  private static final SecureRandom RANDOM = new SecureRandom();

  private VerbsAuthWire() {}

  static byte[] hello(byte[] clientNonce, InetSocketAddress client, InetSocketAddress server) {
    ByteBuffer b = ByteBuffer.allocate(HELLO_SIZE);
    b.putInt(MAGIC).putShort(VERSION).putShort((short) 0).put(clientNonce);
    put(b, client);
    put(b, server);
    return b.array();
  }

  private static void put(ByteBuffer b, InetSocketAddress a) {
    InetAddress ip = a.getAddress();
    b.put(ip instanceof Inet4Address ? ip.getAddress() : new byte[4]);
    b.putShort((short) a.getPort());
  }

  static InetSocketAddress address(ByteBuffer b) {
    byte[] ip = new byte[4];
    b.get(ip);
    int port = Short.toUnsignedInt(b.getShort());
    try {
      return new InetSocketAddress(InetAddress.getByAddress(ip), port);
    } catch (IOException e) {
      return null;
    }
  }

  static byte[] challenge(byte status, byte[] serverNonce, byte[] proof) {
    ByteBuffer b = ByteBuffer.allocate(CHALLENGE_SIZE);
    b.putInt(MAGIC).putShort(VERSION).put(status).put((byte) 0).put(serverNonce).put(proof);
    return b.array();
  }

  static byte[] welcome(byte status) {
    ByteBuffer b = ByteBuffer.allocate(WELCOME_SIZE);
    b.putInt(MAGIC).put(status);
    return b.array();
  }

  static byte[] proof(byte[] secret, String role, byte[] hello, byte[] serverNonce) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(role.getBytes(StandardCharsets.US_ASCII));
      mac.update(hello);
      mac.update(serverNonce);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  static byte[] nonce() {
    byte[] n = new byte[NONCE_SIZE];
    RANDOM.nextBytes(n);
    return n;
  }
}
