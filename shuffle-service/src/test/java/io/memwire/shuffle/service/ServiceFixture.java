package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.protocol.Frames;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.testing.Await;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Map outputs written the way Spark writes them, a reader node, and waiting on conditions. */
final class ServiceFixture {
  private ServiceFixture() {}

  /** Service settings for a test: its socket and directory under {@code root}, tcp on loopback. */
  static Map<String, String> conf(Path root, String... extra) {
    Map<String, String> m = new HashMap<>();
    m.put(ServiceSettings.PREFIX + "socket", root.resolve("s/service.sock").toString());
    m.put(ServiceSettings.PREFIX + "dir", root.resolve("outputs").toString());
    m.put(ServiceSettings.TRANSFER_PREFIX + "provider", "tcp");
    m.put(ServiceSettings.TRANSFER_PREFIX + "bindAddress", "127.0.0.1");
    // extra entries override the defaults above
    for (int i = 0; i + 1 < extra.length; i += 2) {
      m.put(extra[i], extra[i + 1]);
    }
    return m;
  }

  static TransferNode reader() {
    return TransferNode.start(
        TransferConfig.builder()
            .provider(io.memwire.transfer.ProviderKind.TCP)
            .bindAddress("127.0.0.1")
            .build());
  }

  /** One written map output: its files and the bytes of each partition. */
  record Output(Path index, Path data, byte[][] partitions) {}

  /**
   * Writes shuffle_S_M_0.index/.data with {@code partitions} random partitions into {@code dir}.
   */
  static Output write(Path dir, int shuffleId, long mapId, int partitions, long seed)
      throws IOException {
    Files.createDirectories(dir);
    Random r = new Random(seed);
    byte[][] parts = new byte[partitions][];
    ByteBuffer index = ByteBuffer.allocate(8 * (partitions + 1)).order(ByteOrder.BIG_ENDIAN);
    long offset = 0;
    index.putLong(0);
    ByteBuffer data = ByteBuffer.allocate(partitions * 3000);
    for (int p = 0; p < partitions; p++) {
      parts[p] = new byte[p % 3 == 2 ? 0 : 100 + r.nextInt(2900)];
      r.nextBytes(parts[p]);
      data.put(parts[p]);
      offset += parts[p].length;
      index.putLong(offset);
    }
    String base = "shuffle_" + shuffleId + "_" + mapId + "_0";
    Path i = dir.resolve(base + ".index");
    Path d = dir.resolve(base + ".data");
    Files.write(i, index.array());
    Files.write(d, java.util.Arrays.copyOf(data.array(), data.position()));
    return new Output(i, d, parts);
  }

  static ServiceClient client(Path socket, String app, String exec, byte[] token, int driverPort)
      throws IOException {
    return ServiceClient.connect(
        socket,
        new ServiceClient.Registration(app, exec, token, "127.0.0.1", driverPort),
        Duration.ofSeconds(10));
  }

  static byte[] token(int seed) {
    byte[] t = new byte[32];
    new Random(seed).nextBytes(t);
    return t;
  }

  /** Reads {@code length} bytes at {@code offset} of a remote region; the caller owns nothing. */
  static byte[] read(TransferNode reader, RemoteRegion region, long offset, int length)
      throws Exception {
    InetSocketAddress peer = region.node();
    TransferBuffer b =
        reader
            .connection(peer)
            .read(ReadRequest.of(region, offset, length))
            .get(30, TimeUnit.SECONDS);
    try {
      byte[] out = new byte[length];
      b.nioBuffer().get(out);
      return out;
    } finally {
      b.release();
    }
  }

  /** Reads partition {@code p} the way a reducer does: slot, then index entries, then data. */
  static byte[] readPartition(TransferNode reader, DirectoryPointer pointer, int mapIndex, int p)
      throws Exception {
    byte[] slotBytes =
        read(reader, pointer.region(), pointer.slotOffset(mapIndex), DirectorySlot.SIZE);
    DirectorySlot slot = DirectorySlot.read(ByteBuffer.wrap(slotBytes));
    if (slot == null) {
      throw new AssertionError("no slot for map index " + mapIndex);
    }
    ByteBuffer entries = ByteBuffer.wrap(read(reader, slot.index(), 8L * p, 16));
    long start = entries.getLong();
    long end = entries.getLong();
    if (end == start) {
      return new byte[0];
    }
    return read(reader, slot.data(), start, (int) (end - start));
  }

  /**
   * A connection that speaks the protocol directly, without {@link ServiceClient}'s own checks and
   * path resolution: what a hostile local process can send.
   */
  static final class Raw implements AutoCloseable {
    final java.nio.channels.SocketChannel channel;

    Raw(Path socket) throws IOException {
      channel = java.nio.channels.SocketChannel.open(java.net.StandardProtocolFamily.UNIX);
      channel.connect(java.net.UnixDomainSocketAddress.of(socket));
    }

    /** Sends one frame and reads the answer (null when the service closed the connection). */
    ServiceProtocol.In call(ServiceProtocol.Out frame) throws IOException {
      Frames.write(channel, frame);
      return Frames.read(channel);
    }

    /** Registers; fails unless the service answers OK. */
    Raw register(String app, String exec, byte[] token, int driverPort) throws IOException {
      ServiceProtocol.In r =
          call(
              new ServiceProtocol.Out(ServiceProtocol.REGISTER)
                  .u16(ServiceProtocol.VERSION)
                  .str(app)
                  .str(exec)
                  .bytes(token)
                  .str("127.0.0.1")
                  .u16(driverPort));
      if (r == null || r.type() != ServiceProtocol.OK) {
        throw new AssertionError("registration refused: " + (r == null ? "closed" : r.u8()));
      }
      return this;
    }

    /** Publishes the paths exactly as given; returns the answer. */
    ServiceProtocol.In publish(int shuffle, int mapIndex, long mapId, String index, String data)
        throws IOException {
      return call(
          new ServiceProtocol.Out(ServiceProtocol.PUBLISH)
              .i32(shuffle)
              .i32(mapIndex)
              .i64(mapId)
              .str(index)
              .str(data == null ? "" : data)
              .str(""));
    }

    @Override
    public void close() throws IOException {
      channel.close();
    }
  }

  /** The directory pointer a PUBLISH answer carries; fails on an error. */
  static DirectoryPointer pointer(ServiceProtocol.In answer) throws IOException {
    if (answer == null || answer.type() != ServiceProtocol.OK) {
      throw new AssertionError("refused: " + error(answer));
    }
    int chunk = answer.i32();
    int entries = answer.i32();
    int layout = answer.u8();
    boolean checksums =
        (layout & (ServiceProtocol.LAYOUT_CHECKSUMS | ServiceProtocol.LAYOUT_METADATA)) != 0;
    return new DirectoryPointer(chunk, entries, checksums, RemoteRegion.decode(answer.rest()));
  }

  /** The error an answer carries, as "code: message"; fails on an OK answer. */
  static String error(ServiceProtocol.In answer) throws IOException {
    if (answer == null) {
      throw new AssertionError("the service closed the connection instead of answering");
    }
    if (answer.type() != ServiceProtocol.ERROR) {
      throw new AssertionError("expected an error, got frame type " + answer.type());
    }
    return answer.u8() + ": " + answer.str();
  }

  /**
   * A loopback port whose accept queue is full, so new connections to it are dropped: a driver that
   * does not answer. Null when this kernel accepts past the backlog (no silent port here).
   */
  static SilentPort silentPort() throws IOException {
    java.net.ServerSocket server =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
    java.util.List<java.net.Socket> queued = new java.util.ArrayList<>();
    SilentPort port = new SilentPort(server, queued);
    for (int i = 0; i < 16; i++) {
      java.net.Socket q = new java.net.Socket();
      queued.add(q);
      try {
        q.connect(server.getLocalSocketAddress(), 300);
      } catch (java.net.SocketTimeoutException e) {
        return port;
      }
    }
    port.close();
    return null;
  }

  /** A port that does not answer, with the connections that fill its queue. */
  record SilentPort(java.net.ServerSocket server, java.util.List<java.net.Socket> queued)
      implements AutoCloseable {
    int port() {
      return server.getLocalPort();
    }

    @Override
    public void close() throws IOException {
      for (java.net.Socket q : queued) {
        q.close();
      }
      server.close();
    }
  }

  /** Waits for {@code condition} until the deadline, polling; fails with {@code what}. */
  static void await(Duration deadline, BooleanSupplier condition, String what)
      throws InterruptedException {
    Await.until(what, deadline, condition);
  }
}
