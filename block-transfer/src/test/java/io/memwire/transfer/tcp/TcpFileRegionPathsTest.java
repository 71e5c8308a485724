package io.memwire.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.settings.TransportSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A file region's reads go out by sendfile from {@code memwire.tcp.sendfileMinBytes} on and from
 * the mapping below it: both give the file's bytes at any offset, mixed in one pipelined batch, and
 * the counter says which path each read took.
 */
class TcpFileRegionPathsTest {
  private static final int FILE = 3 << 20;
  private static final String KEY = TransportSettings.TCP_SENDFILE_MIN_BYTES.name();

  /** (offset, length) reads: tiny, unaligned, around the default threshold, the whole file. */
  private static final long[][] READS = {
    {0, 1},
    {4095, 3},
    {12345, (256 << 10) - 1},
    {1 << 20, 256 << 10},
    {7, (1 << 20) + 13},
    {FILE - 100, 100},
    {0, FILE}
  };

  @ParameterizedTest(name = "sendfileMinBytes={0}")
  @CsvSource({"0, 7", ", 3", "2147483647, 0"})
  void bothPathsServeTheFilesBytes(String property, int sendfileReads, @TempDir Path dir)
      throws Exception {
    byte[] data = new byte[FILE];
    new Random(FILE).nextBytes(data);
    Path file = Files.write(dir.resolve("shuffle.data"), data);
    String old = System.getProperty(KEY);
    TransferNode server;
    if (property == null) {
      System.clearProperty(KEY);
    } else {
      System.setProperty(KEY, property);
    }
    try {
      server = start();
    } finally {
      if (old == null) {
        System.clearProperty(KEY);
      } else {
        System.setProperty(KEY, old);
      }
    }
    try (server;
        TransferNode reader = start();
        MemoryRegion region = server.register(file, 0, FILE, server.memory())) {
      List<ReadRequest> reqs = new ArrayList<>();
      for (long[] r : READS) {
        reqs.add(ReadRequest.of(region.remote(), r[0], (int) r[1]));
      }
      ReadBatch batch = reader.connection(server.localAddress()).read(reqs);
      for (int i = 0; i < READS.length; i++) {
        TransferBuffer b = batch.result(i).get(30, TimeUnit.SECONDS);
        byte[] got = new byte[(int) READS[i][1]];
        b.nioBuffer().get(got);
        b.release();
        byte[] want = new byte[got.length];
        System.arraycopy(data, (int) READS[i][0], want, 0, want.length);
        assertArrayEquals(want, got, "read " + READS[i][0] + "+" + READS[i][1]);
      }
      assertEquals((long) READS.length, server.stats().asMap().get("servedReads"));
      assertEquals((long) sendfileReads, server.stats().asMap().get("sendfileReads"));
    }
  }

  /** A node whose reads go out whole (no piece splits them below the file's size). */
  private static TransferNode start() {
    return TransferNode.start(
        TransferConfig.builder()
            .provider(ProviderKind.TCP)
            .bindAddress("127.0.0.1")
            .maxTransferSize(4 << 20)
            .build());
  }
}
