package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.settings.TransportSettings;
import io.memwire.transfer.testing.Await;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A file region whose file is truncated while it is registered (what a local user can do to its own
 * map output after handing it to the node's shuffle service). The read that meets the missing bytes
 * fails at once on either serving path, where sendfile would send nothing until writeTimeout and
 * the mapping would fault; later reads of that region are refused as FILE_SHRUNK, other regions
 * stay readable, and the region still deregisters and unmaps.
 */
class TcpTruncatedFileTest {
  private static final int FILE = 2 << 20;
  private static final String KEY = TransportSettings.TCP_SENDFILE_MIN_BYTES.name();

  @ParameterizedTest(name = "sendfileMinBytes={0}")
  @ValueSource(strings = {"0", "2147483647"})
  void readsOfATruncatedFileFailAtOnceAndOtherRegionsAreServed(
      String sendfileMinBytes, @TempDir Path dir) throws Exception {
    byte[] data = new byte[FILE];
    new Random(FILE).nextBytes(data);
    Path shrinking = Files.write(dir.resolve("shrinking.data"), data);
    Path intact = Files.write(dir.resolve("intact.data"), data);
    TransferNode server = startWithSendfileMin(sendfileMinBytes);
    try (server;
        TransferNode reader = start()) {
      MemoryRegion shrunk = server.register(shrinking, 0, FILE, server.memory());
      MemoryRegion other = server.register(intact, 0, FILE, server.memory());
      assertArrayEquals(slice(data, 1 << 20, 512 << 10), read(reader, server, shrunk, 1 << 20));

      try (FileChannel ch = FileChannel.open(shrinking, StandardOpenOption.WRITE)) {
        ch.truncate(4096);
      }
      // Both timeouts are far beyond the wait below: only the responder noticing ends this read.
      ExecutionException first =
          assertThrows(ExecutionException.class, () -> read(reader, server, shrunk, 1 << 20));
      assertInstanceOf(TransferException.class, first.getCause(), first.toString());

      ExecutionException later =
          assertThrows(ExecutionException.class, () -> read(reader, server, shrunk, 0));
      RemoteAccessException refused =
          assertInstanceOf(RemoteAccessException.class, later.getCause(), later.toString());
      assertEquals(RemoteAccessException.Reason.FILE_SHRUNK, refused.reason());

      assertArrayEquals(slice(data, 1 << 20, 512 << 10), read(reader, server, other, 1 << 20));
      shrunk.close();
      other.close();
      // A region is unmapped once the last response that pinned it is dropped, on the serving
      // loop: the failed connection's may still be on their way out.
      Await.until(
          "every region deregistered and unmapped",
          Duration.ofSeconds(10),
          () -> server.stats().registeredRegions() == 0 && server.stats().mappedSegments() == 0);
    }
  }

  /** Reads 512 KiB at {@code offset} of {@code region}; waits 30 s, far below both timeouts. */
  private static byte[] read(TransferNode reader, TransferNode server, MemoryRegion r, long offset)
      throws Exception {
    TransferBuffer b =
        reader
            .connection(server.localAddress())
            .read(List.of(ReadRequest.of(r.remote(), offset, 512 << 10)))
            .result(0)
            .get(30, TimeUnit.SECONDS);
    try {
      byte[] got = new byte[b.nioBuffer().remaining()];
      b.nioBuffer().get(got);
      return got;
    } finally {
      b.release();
    }
  }

  private static byte[] slice(byte[] data, int offset, int length) {
    return Arrays.copyOfRange(data, offset, offset + length);
  }

  private static TransferNode startWithSendfileMin(String value) {
    String old = System.getProperty(KEY);
    System.setProperty(KEY, value);
    try {
      return start();
    } finally {
      if (old == null) {
        System.clearProperty(KEY);
      } else {
        System.setProperty(KEY, old);
      }
    }
  }

  private static TransferNode start() {
    return TransferNode.start(
        TransferConfig.builder()
            .provider(ProviderKind.TCP)
            .bindAddress("127.0.0.1")
            .readTimeout(Duration.ofMinutes(10))
            .writeTimeout(Duration.ofMinutes(10))
            .build());
  }
}
