package io.memwire.shuffle.service;

import static io.memwire.shuffle.service.ServiceFixture.readPartition;
import static io.memwire.shuffle.service.ServiceFixture.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.directory.ChunkLayout;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.shuffle.protocol.ServiceException;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Re-resolving a pointer from before a restart (RESOLVE on the resolve port): the old pointer leads
 * to the same bytes under the new keys, across more than one restart; a request not made with the
 * pointer's application token, or naming another application, is refused with a clear error; a
 * pointer whose output was not taken back (its file changed) resolves to nothing that names it.
 */
class ResolveTest {
  private static final String APP = "app-resolve";
  private static final String OTHER = "app-other";

  @TempDir Path root;
  private ServerSocket driver;
  private TransferNode reader;
  private RestartingService restarting;
  private ShuffleService service;

  @BeforeEach
  void start() throws IOException {
    driver = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    reader = ServiceFixture.reader();
    restarting = new RestartingService(root, new String[0], driver.getLocalPort());
  }

  @AfterEach
  void stop() throws IOException {
    restarting.close();
    driver.close();
    reader.close();
  }

  private void startService() throws IOException {
    service = restarting.start();
  }

  private ServiceClient executor(String app, int tokenSeed) throws IOException {
    return restarting.executor(app, tokenSeed);
  }

  private DirectoryPointer resolve(String app, int tokenSeed, int shuffleId, DirectoryPointer old)
      throws IOException {
    return restarting.resolve(app, tokenSeed, shuffleId, old);
  }

  private void restart() throws IOException {
    service = restarting.restart();
  }

  /** The slot of {@code mapIndex} in a chunk, or null when it holds none. */
  private DirectorySlot slot(DirectoryPointer p, int mapIndex) throws Exception {
    return DirectorySlot.read(
        ByteBuffer.wrap(
            ServiceFixture.read(reader, p.region(), p.slotOffset(mapIndex), DirectorySlot.SIZE)));
  }

  @Test
  void aStalePointerResolvesToTheSameBytesAfterEachRestart() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec"), 0, 10, 5, 1);
    ServiceFixture.Output b = write(root.resolve("exec"), 0, 11, 4, 2);
    DirectoryPointer old;
    try (ServiceClient c = executor(APP, 7)) {
      old = c.publish(0, 0, 10, a.index(), a.data());
      assertEquals(old, c.publish(0, 1, 11, b.index(), b.data()), "one chunk");
    }
    restart();
    assertThrows(Exception.class, () -> readPartition(reader, old, 0, 1), "old keys are dead");
    DirectoryPointer now = resolve(APP, 7, 0, old);
    assertNotEquals(old, now);
    for (int part = 0; part < 5; part++) {
      assertArrayEquals(a.partitions()[part], readPartition(reader, now, 0, part));
    }
    assertArrayEquals(b.partitions()[3], readPartition(reader, now, 1, 3));
    assertEquals(1L, service.stats().get("pointersResolved"));
    // A reader that slept through two restarts still finds its output.
    restart();
    DirectoryPointer later = resolve(APP, 7, 0, old);
    assertNotEquals(now, later);
    assertArrayEquals(a.partitions()[1], readPartition(reader, later, 0, 1));
    assertEquals(later, resolve(APP, 7, 0, now));
  }

  /**
   * A chunk of slots with inline entries holds fewer than 1024 map indexes (819 with 4 entries), so
   * map 900 lies in chunk 1: its old pointer must resolve to that chunk, not be looked for in chunk
   * 0 of 1024 headers.
   */
  @Test
  void aPointerToAChunkOfInlineSlotsResolves() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec"), 0, 900, 3, 1);
    DirectoryPointer old;
    try (ServiceClient c = executor(APP, 7)) {
      old = c.publish(0, 900, 900, a.index(), a.data());
    }
    assertEquals(4, old.entries(), "3 partitions: 4 index entries inline");
    assertEquals(900 / ChunkLayout.slotsPerChunk(4), old.chunk());
    assertEquals(1, old.chunk());
    restart();
    DirectoryPointer now = resolve(APP, 7, 0, old);
    assertEquals(1, now.chunk());
    for (int part = 0; part < 3; part++) {
      assertArrayEquals(a.partitions()[part], readPartition(reader, now, 900, part));
    }
    assertEquals(1L, service.stats().get("pointersResolved"));
  }

  /**
   * The resolve port is reachable from every node: peers that connect and send nothing, or a frame
   * header a byte at a time, must not keep a reader out. Twice the connection cap of them are open
   * while a reader resolves its pointer within its 5 s deadline; a silent one is closed once
   * frameTimeout (2 s here) has passed.
   */
  @Test
  void silentAndSlowPeersDoNotKeepAReaderOut() throws Exception {
    restarting =
        new RestartingService(
            root,
            new String[] {ServiceSettings.PREFIX + "frameTimeout", "2s"},
            driver.getLocalPort());
    startService();
    ServiceFixture.Output a = write(root.resolve("exec"), 0, 10, 5, 1);
    DirectoryPointer old;
    try (ServiceClient c = executor(APP, 7)) {
      old = c.publish(0, 0, 10, a.index(), a.data());
    }
    restart();
    List<Socket> peers = new ArrayList<>();
    try {
      for (int i = 0; i < 2 * RequestLoop.MAX_CONNECTIONS; i++) {
        Socket s = new Socket(old.region().node().getAddress(), service.resolvePort());
        if (i % 2 == 0) {
          s.getOutputStream().write(new byte[] {0, 0}); // half a frame length
        }
        peers.add(s);
      }
      DirectoryPointer now = resolve(APP, 7, 0, old);
      assertArrayEquals(a.partitions()[4], readPartition(reader, now, 0, 4));
      Socket last = peers.get(peers.size() - 1);
      last.setSoTimeout(10_000);
      assertEquals(-1, last.getInputStream().read(), "a silent peer is closed, unanswered");
    } finally {
      for (Socket s : peers) {
        s.close();
      }
    }
  }

  @Test
  void aPointerResolvesOnlyForItsOwnApplicationsToken() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec"), 0, 10, 5, 1);
    ServiceFixture.Output o = write(root.resolve("other"), 0, 20, 5, 3);
    DirectoryPointer pa;
    try (ServiceClient c = executor(APP, 7);
        ServiceClient other = executor(OTHER, 9)) {
      pa = c.publish(0, 0, 10, a.index(), a.data());
      other.publish(0, 0, 20, o.index(), o.data());
    }
    restart();
    ServiceException wrong = assertThrows(ServiceException.class, () -> resolve(APP, 8, 0, pa));
    assertEquals(ServiceProtocol.E_DENIED, wrong.code());
    assertTrue(wrong.getMessage().contains("not authenticated"), wrong.getMessage());
    // Application B's id and token on A's pointer: B's token is not A's.
    ServiceException b = assertThrows(ServiceException.class, () -> resolve(OTHER, 9, 0, pa));
    assertEquals(ServiceProtocol.E_DENIED, b.code());
    assertTrue(b.getMessage().contains("not authenticated"), b.getMessage());
    // A's token naming another application id or shuffle: refused too.
    ServiceException named = assertThrows(ServiceException.class, () -> resolve(OTHER, 7, 0, pa));
    assertTrue(named.getMessage().contains("another application"), named.getMessage());
    assertThrows(ServiceException.class, () -> resolve(APP, 7, 1, pa));
    Map<String, Long> stats = service.stats();
    assertEquals(0L, stats.get("pointersResolved"), stats.toString());
    assertEquals(4L, stats.get("pointerResolvesRefused"), stats.toString());
    assertArrayEquals(a.partitions()[2], readPartition(reader, resolve(APP, 7, 0, pa), 0, 2));
  }

  private Path linkOf(String base, String suffix) throws IOException {
    try (Stream<Path> s = Files.walk(root.resolve("outputs"))) {
      return s.filter(p -> p.getFileName().toString().startsWith(base + "-"))
          .filter(p -> p.getFileName().toString().endsWith(suffix))
          .findFirst()
          .orElseThrow();
    }
  }

  @Test
  void aPointerOfAChangedOutputNeverLeadsToItsBytes() throws Exception {
    startService();
    ServiceFixture.Output a = write(root.resolve("exec"), 0, 10, 5, 1);
    ServiceFixture.Output b = write(root.resolve("exec"), 0, 11, 4, 2);
    ServiceFixture.Output c1 = write(root.resolve("exec"), 1, 12, 4, 3);
    DirectoryPointer shared;
    DirectoryPointer alone;
    try (ServiceClient c = executor(APP, 7)) {
      shared = c.publish(0, 0, 10, a.index(), a.data());
      c.publish(0, 1, 11, b.index(), b.data());
      alone = c.publish(1, 0, 12, c1.index(), c1.data());
    }
    service.close();
    Files.write(linkOf("shuffle_0_11_0", ".data"), new byte[] {1}, StandardOpenOption.APPEND);
    Files.write(linkOf("shuffle_1_12_0", ".data"), new byte[] {1}, StandardOpenOption.APPEND);
    startService();
    assertEquals(2L, service.stats().get("recoveryDropped.changed"));
    // Alone in its chunk: nothing was taken back under that pointer.
    ServiceException gone = assertThrows(ServiceException.class, () -> resolve(APP, 7, 1, alone));
    assertEquals(ServiceProtocol.E_NOT_FOUND, gone.code(), gone.getMessage());
    // Sharing a chunk with a recovered output: the chunk resolves, but no slot names map 11, so a
    // reader (which checks the map id) gets a fetch failure, never other bytes.
    DirectoryPointer now = resolve(APP, 7, 0, shared);
    assertEquals(10L, slot(now, 0).mapId());
    DirectorySlot s = slot(now, 1);
    assertTrue(s == null || s.mapId() != 11, String.valueOf(s));
  }
}
