package io.memwire.shuffle.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Local clients that send garbage, registered or not, and outputs that are not theirs: the service
 * answers with an error or closes that connection, never hangs, never serves what it should not,
 * and keeps serving everyone else. Random frames use a fixed seed.
 */
class HostileClientsTest {
  @TempDir Path root;

  @Test
  void randomFramesNeverHurtTheServiceOrItsOtherClients() throws Exception {
    Random r = new Random(20261201);
    ExecutorService io = Executors.newSingleThreadExecutor();
    try (ServerSocket driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        ShuffleService service =
            ShuffleService.start(ServiceConfig.fromProperties(ServiceFixture.conf(root)));
        TransferNode reader = ServiceFixture.reader()) {
      for (int i = 0; i < 300; i++) {
        boolean registered = i % 2 == 1;
        byte type = (byte) (r.nextInt(6) == 0 ? r.nextInt(256) : 1 + r.nextInt(4));
        byte[] body = new byte[r.nextInt(i % 10 == 0 ? 3000 : 60)];
        r.nextBytes(body);
        Future<?> f =
            io.submit(
                () -> {
                  attack(service, registered, driver.getLocalPort(), type, body, r.nextInt(3));
                  return null;
                });
        f.get(20, TimeUnit.SECONDS); // never a hang
      }
      ServiceFixture.Output good = ServiceFixture.write(root.resolve("e1"), 2, 7, 5, 1);
      try (ServiceClient c =
          ServiceFixture.client(
              service.socket(), "app-good", "1", ServiceFixture.token(1), driver.getLocalPort())) {
        DirectoryPointer p = c.publish(2, 0, 7, good.index(), good.data());
        for (int part = 0; part < 5; part++) {
          assertArrayEquals(
              good.partitions()[part], ServiceFixture.readPartition(reader, p, 0, part));
        }
        assertEquals(1L, c.stats().get("outputsHeld"), "garbage registered nothing");
      }
    } finally {
      io.shutdownNow();
      assertTrue(io.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  /** One connection: optionally a valid REGISTER, then one frame of the given type and body. */
  private static void attack(
      ShuffleService service, boolean registered, int driverPort, byte type, byte[] body, int cut)
      throws IOException {
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(service.socket()));
      if (registered) {
        ByteBuffer reg =
            new ServiceProtocol.Out(ServiceProtocol.REGISTER)
                .u16(ServiceProtocol.VERSION)
                .str("app-hostile")
                .str("9")
                .bytes(ServiceFixture.token(9))
                .str("127.0.0.1")
                .u16(driverPort)
                .frame();
        ch.write(reg);
        readAnswer(ch);
      }
      ByteBuffer frame = ByteBuffer.allocate(5 + body.length);
      frame.putInt(1 + body.length).put(type).put(body).flip();
      if (cut == 0) {
        frame.limit(frame.limit() - Math.min(body.length, 3)); // a frame that never completes
      }
      try {
        ch.write(frame);
      } catch (IOException closedAlready) {
        return;
      }
      if (cut == 0) {
        return; // close mid-frame
      }
      readAnswer(ch);
    }
  }

  private static void readAnswer(SocketChannel ch) throws IOException {
    ByteBuffer head = ByteBuffer.allocate(5);
    while (head.hasRemaining()) {
      if (ch.read(head) < 0) {
        return; // closed: a fine answer to garbage
      }
    }
    int len = head.getInt(0);
    assertTrue(len >= 1 && len <= ServiceProtocol.MAX_FRAME, "answer length " + len);
    ByteBuffer rest = ByteBuffer.allocate(len - 1);
    while (rest.hasRemaining() && ch.read(rest) >= 0) {
      // read the whole answer
    }
  }

  @Test
  void outputsOfOtherUsersOrOutsideTheShuffleAreRefused() throws Exception {
    try (ServerSocket driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        ShuffleService service =
            ShuffleService.start(ServiceConfig.fromProperties(ServiceFixture.conf(root)));
        ServiceClient c =
            ServiceFixture.client(
                service.socket(), "app-x", "1", ServiceFixture.token(2), driver.getLocalPort())) {
      try (ServiceFixture.Raw raw =
          new ServiceFixture.Raw(service.socket())
              .register("app-x", "2", ServiceFixture.token(2), driver.getLocalPort())) {
        for (String path :
            new String[] {
              "/etc/passwd", "/etc/shuffle_1_1_0.index", "/proc/self/shuffle_1_1_0.index"
            }) {
          String e = ServiceFixture.error(raw.publish(1, 0, 1, path, null));
          assertTrue(e.startsWith(ServiceProtocol.E_BAD_OUTPUT + ": "), path + ": " + e);
        }
      }
      assertEquals(0L, c.stats().get("outputsHeld"));
      assertEquals(0L, c.stats().get("node.registeredRegions"), "nothing registered");
    }
  }
}
