package io.memwire.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import io.memwire.transfer.TransferTimeoutException;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A serving JVM killed mid-batch: every read ends (bytes complete, or a connection error), none
 * hangs, and the client node returns every UCX object. Over UCX's tcp the endpoint's peer-error
 * callback or the control connection reports it; over shared memory the control connection alone.
 */
class UcxPeerCrashTest {
  @BeforeAll
  static void ucxLoads() {
    UcxTestSupport.assumeUcx();
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "posix,sysv,cma"})
  void aKilledPeerFailsEveryReadAndNothingHangs(String transports) throws Exception {
    List<String> cmd =
        List.of(
            new File(System.getProperty("java.home"), "bin/java").getPath(),
            "-cp",
            System.getProperty("java.class.path"),
            UcxServingChild.class.getName(),
            transports);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().put("UCX_ERROR_SIGNALS", "");
    Process child = pb.start();
    try {
      BufferedReader in =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      CompletableFuture<String> ready =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  String l;
                  while ((l = in.readLine()) != null) {
                    if (l.startsWith("READY ")) {
                      return l.substring(6);
                    }
                  }
                  return null;
                } catch (java.io.IOException e) {
                  return null;
                }
              });
      String line = ready.get(60, TimeUnit.SECONDS);
      assertTrue(line != null, "the child did not start");
      RemoteRegion region = RemoteRegion.fromBytes(Base64.getDecoder().decode(line));
      try (TransferNode client =
          TransferNode.start(
              TransferConfig.builder()
                  .provider(ProviderKind.UCX)
                  .bindAddress("127.0.0.1")
                  .set("ucxTransports", transports)
                  .readTimeout(Duration.ofSeconds(20))
                  .maxOutstandingRequests(2)
                  .maxTransferSize(64 << 10)
                  .build())) {
        var c = client.connection(region.node());
        TransferBuffer first = c.read(ReadRequest.of(region, 0, 1000)).get(60, TimeUnit.SECONDS);
        byte[] want = new byte[1000];
        System.arraycopy(UcxServingChild.data(), 0, want, 0, 1000);
        byte[] got = new byte[1000];
        first.nioBuffer().get(got);
        first.release();
        assertArrayEquals(want, got);

        List<ReadRequest> reqs = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
          reqs.add(ReadRequest.of(region, 0, UcxServingChild.SIZE));
        }
        ReadBatch batch = c.read(reqs);
        child.destroyForcibly();
        int failed = 0;
        for (CompletableFuture<TransferBuffer> f : batch.results()) {
          try {
            f.get(60, TimeUnit.SECONDS).release();
          } catch (ExecutionException e) {
            assertTrue(
                e.getCause() instanceof TransferConnectionException
                    || e.getCause() instanceof TransferTimeoutException,
                "unexpected " + e.getCause());
            failed++;
          }
        }
        assertTrue(failed > 0, "killing the peer mid-batch failed some reads");
        long start = System.nanoTime();
        try {
          client
              .connection(region.node())
              .read(ReadRequest.of(region, 0, 10))
              .get(60, TimeUnit.SECONDS);
        } catch (TransferException | ExecutionException e) {
          // refused: the peer is gone
        }
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "no hang");
      }
      assertTrue(UcxResources.allReleased(), UcxResources.describe());
    } finally {
      child.destroyForcibly();
      child.waitFor(30, TimeUnit.SECONDS);
    }
  }
}
