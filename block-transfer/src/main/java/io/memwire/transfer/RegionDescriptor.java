package io.memwire.transfer;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * Everything a remote reader needs to read one registered segment: the serving node, the remote
 * key, the base address and the length. It is a capability: whoever holds it may read those bytes.
 *
 * <p>Binary encoding, {@value #ENCODED_SIZE} bytes, big-endian:
 *
 * <pre>
 *  0  u8   version (1)
 *  1  u8   provider (1 = tcp, 2 = verbs)
 *  2  u16  node port
 *  4  16B  node IP address (IPv4 as IPv4-mapped IPv6)
 * 20  u32  reserved, 0
 * 24  u64  remote key (verbs: the rkey in the low 32 bits)
 * 32  u64  base address
 * 40  u64  length in bytes
 * </pre>
 */
public final class RegionDescriptor {
  /** Size of {@link #encode(ByteBuffer)}'s output. */
  public static final int ENCODED_SIZE = 48;

  static final byte VERSION = 1;

  private final ProviderKind provider;
  private final InetSocketAddress node;
  private final long key;
  private final long address;
  private final long length;

  public RegionDescriptor(
      ProviderKind provider, InetSocketAddress node, long key, long address, long length) {
    if (provider == ProviderKind.AUTO) {
      throw new IllegalArgumentException("a descriptor names a concrete provider, not auto");
    }
    if (node.isUnresolved()) {
      throw new IllegalArgumentException("descriptor node must be a resolved IP address: " + node);
    }
    if (length <= 0) {
      throw new IllegalArgumentException("descriptor length must be positive: " + length);
    }
    this.provider = Objects.requireNonNull(provider);
    this.node = node;
    this.key = key;
    this.address = address;
    this.length = length;
  }

  public ProviderKind provider() {
    return provider;
  }

  /** The serving node's transfer endpoint. */
  public InetSocketAddress node() {
    return node;
  }

  public long key() {
    return key;
  }

  public long address() {
    return address;
  }

  public long length() {
    return length;
  }

  /** Writes the {@value #ENCODED_SIZE}-byte encoding at the buffer's position and advances it. */
  public void encode(ByteBuffer out) {
    ByteBuffer b = out.duplicate().order(ByteOrder.BIG_ENDIAN);
    b.put(VERSION).put(provider.wireCode()).putShort((short) node.getPort());
    b.put(ipv6Bytes(node.getAddress()));
    b.putInt(0).putLong(key).putLong(address).putLong(length);
    out.position(out.position() + ENCODED_SIZE);
  }

  /** The encoding as a new array. */
  public byte[] toBytes() {
    ByteBuffer b = ByteBuffer.allocate(ENCODED_SIZE);
    encode(b);
    return b.array();
  }

  /**
   * Reads one descriptor at the buffer's position and advances it.
   *
   * @throws IllegalArgumentException when the bytes are not a valid version-1 descriptor
   */
  public static RegionDescriptor decode(ByteBuffer in) {
    if (in.remaining() < ENCODED_SIZE) {
      throw new IllegalArgumentException(
          "region descriptor needs " + ENCODED_SIZE + " bytes, got " + in.remaining());
    }
    ByteBuffer b = in.duplicate().order(ByteOrder.BIG_ENDIAN);
    byte version = b.get();
    if (version != VERSION) {
      throw new IllegalArgumentException("unsupported region descriptor version " + version);
    }
    ProviderKind provider = ProviderKind.fromWireCode(b.get());
    int port = Short.toUnsignedInt(b.getShort());
    byte[] ip = new byte[16];
    b.get(ip);
    b.getInt();
    long key = b.getLong();
    long address = b.getLong();
    long length = b.getLong();
    in.position(in.position() + ENCODED_SIZE);
    InetAddress addr;
    try {
      addr = InetAddress.getByAddress(ip);
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("bad address in region descriptor", e);
    }
    return new RegionDescriptor(provider, new InetSocketAddress(addr, port), key, address, length);
  }

  /** Decodes {@link #toBytes()} output. */
  public static RegionDescriptor fromBytes(byte[] bytes) {
    return decode(ByteBuffer.wrap(bytes));
  }

  static byte[] ipv6Bytes(InetAddress a) {
    byte[] raw = a.getAddress();
    if (raw.length == 16) {
      return raw;
    }
    byte[] mapped = new byte[16];
    mapped[10] = (byte) 0xff;
    mapped[11] = (byte) 0xff;
    System.arraycopy(raw, 0, mapped, 12, 4);
    return mapped;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof RegionDescriptor)) {
      return false;
    }
    RegionDescriptor d = (RegionDescriptor) o;
    return provider == d.provider
        && node.equals(d.node)
        && key == d.key
        && address == d.address
        && length == d.length;
  }

  @Override
  public int hashCode() {
    return Objects.hash(provider, node, key, address, length);
  }

  /** Logs the key abbreviated: it is a capability and need not be copied whole into log files. */
  @Override
  public String toString() {
    String host =
        node.getAddress() instanceof Inet4Address
            ? node.getAddress().getHostAddress()
            : "[" + node.getAddress().getHostAddress() + "]";
    return String.format(
        "%s://%s:%d key=%04x… addr=0x%x len=%d",
        provider, host, node.getPort(), (key >>> 48) & 0xffff, address, length);
  }
}
