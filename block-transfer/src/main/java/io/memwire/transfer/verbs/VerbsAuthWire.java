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
 * The messages and proofs of the verbs handshake over TCP on the serving node's port ({@link
 * VerbsAuth} serves it, {@link VerbsAuthClient} runs it): sizes, magic and status codes, the
 * encoding of each message, the HMAC proofs and the nonces. With a secret it authenticates both
 * sides; on a node without one it only hands over the node's MTUs (an "open" CHALLENGE, then the
 * WELCOME at once), so a connecting node learns the serving port's MTU in every configuration
 * (DiSNI cannot read rdma_cm private data).
 *
 * <pre>
 * client -> HELLO      36 B: u32 magic "MWV1" | u16 version (1) | u16 zero | 16 B client nonce
 *                            | client CM address (4 B IPv4, u16 port) | server address (4 B, u16)
 * server -> CHALLENGE  56 B: u32 magic | u16 version | u8 status | u8 flags | 16 B server nonce
 *                            | 32 B HMAC(secret, "memwire-verbs-server" | HELLO | server nonce)
 *                            flags: bit 0 OPEN (no secret here: no proof, no AUTH, the WELCOME
 *                            follows at once); 0 from nodes before it, which all had a secret
 * client -> AUTH       32 B: HMAC(secret, "memwire-verbs-client" | HELLO | server nonce)
 *                            (only when the CHALLENGE is not OPEN)
 * server -> WELCOME     8 B: u32 magic | u8 status | u8 active RDMA MTU (ibv_mtu code: 1 = 256 ..
 *                            5 = 4096, 0 unknown) | u16 MTU of the serving interface (0 unknown)
 *                            (zeros from nodes before the MTUs were added: unknown)
 * status: 0 ok, 1 authentication failed, 2 unsupported version, 3 wrong addresses
 * </pre>
 *
 * The version stays 1: every field added took bytes that were zero, and zero means "not known", so
 * older nodes and newer ones still understand each other.
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

  /** CHALLENGE flag: the serving node has no secret; its WELCOME follows without an AUTH. */
  static final byte OPEN = 1;

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

  static byte[] challenge(byte status, byte flags, byte[] serverNonce, byte[] proof) {
    ByteBuffer b = ByteBuffer.allocate(CHALLENGE_SIZE);
    b.putInt(MAGIC).putShort(VERSION).put(status).put(flags).put(serverNonce).put(proof);
    return b.array();
  }

  /** A WELCOME naming the serving port's MTUs ({@link PortMtu#UNKNOWN} when a refusal). */
  static byte[] welcome(byte status, PortMtu mtu) {
    ByteBuffer b = ByteBuffer.allocate(WELCOME_SIZE);
    b.putInt(MAGIC).put(status);
    mtu.put(b);
    return b.array();
  }

  /** What a WELCOME says: its status and the serving port's MTUs. */
  record Welcome(byte status, PortMtu mtu) {}

  /** Decodes a WELCOME; null when its magic is wrong. */
  static Welcome welcome(byte[] message) {
    ByteBuffer b = ByteBuffer.wrap(message);
    if (b.getInt() != MAGIC) {
      return null;
    }
    byte status = b.get();
    return new Welcome(status, PortMtu.get(b));
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
