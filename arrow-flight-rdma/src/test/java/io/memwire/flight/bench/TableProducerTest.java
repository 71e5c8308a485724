package io.memwire.flight.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.flight.DataPlane;
import io.memwire.flight.RdmaFlightClient;
import io.memwire.flight.RdmaFlightProducer;
import io.memwire.flight.RdmaFlightStream;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.junit.jupiter.api.Test;

/**
 * The benchmark's in-place producer: its table lives in the wrapper's registered memory, every
 * batch is leased in place (none copied), several streams share the same table buffers, the bytes
 * equal what plain DoGet sends for the same ticket, and every allocator and the registered memory
 * end with nothing outstanding.
 */
class TableProducerTest {
  private static final int ROWS = 4096;
  private static final int BATCHES = 40; // more than the table holds: it is served round robin

  @Test
  void tableInRegisteredMemoryIsLeasedInPlaceAndEqualsDoGet() throws Exception {
    try (RootAllocator root = new RootAllocator();
        TransferNode node =
            TransferNode.start(TransferConfig.builder().provider(ProviderKind.TCP).build())) {
      BufferAllocator serverAlloc = root.newChildAllocator("server", 0, Long.MAX_VALUE);
      BufferAllocator clientAlloc = root.newChildAllocator("client", 0, Long.MAX_VALUE);
      FlightBench.TableProducer table = new FlightBench.TableProducer();
      RdmaFlightProducer rdma =
          RdmaFlightProducer.builder(table, node, serverAlloc)
              .registeredMemory(16L << 20, 256L << 20)
              .build();
      BufferAllocator tableAlloc = rdma.memory().newRootAllocator(Long.MAX_VALUE);
      table.allocator(tableAlloc);
      FlightServer plain =
          FlightServer.builder(serverAlloc, Location.forGrpcInsecure("127.0.0.1", 0), table)
              .build()
              .start();
      FlightServer wrapped =
          FlightServer.builder(serverAlloc, Location.forGrpcInsecure("127.0.0.1", 0), rdma)
              .build()
              .start();
      FlightClient plainClient =
          FlightClient.builder(clientAlloc, Location.forGrpcInsecure("127.0.0.1", plain.getPort()))
              .build();
      FlightClient wrappedClient =
          FlightClient.builder(
                  clientAlloc, Location.forGrpcInsecure("127.0.0.1", wrapped.getPort()))
              .build();
      RdmaFlightClient rdmaClient =
          RdmaFlightClient.builder(wrappedClient, clientAlloc)
              .dataPlane(DataPlane.TCP)
              .window(4, 1L << 30)
              .transferConfig(TransferConfig.builder().provider(ProviderKind.TCP).build())
              .registeredMemory(16L << 20, 256L << 20)
              .build();
      Ticket ticket = new Ticket((ROWS + ":" + BATCHES).getBytes(StandardCharsets.UTF_8));

      List<CompletableFuture<Integer>> streams = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        streams.add(
            CompletableFuture.supplyAsync(
                () -> {
                  try (FlightStream expected = plainClient.getStream(ticket);
                      RdmaFlightStream actual = rdmaClient.getStream(ticket)) {
                    return compare(expected, actual);
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                }));
      }
      for (CompletableFuture<Integer> s : streams) {
        assertEquals(BATCHES, s.get(60, TimeUnit.SECONDS));
      }
      assertEquals(3L * BATCHES, rdma.stats().get("batchesInPlace"), "" + rdma.stats());
      assertEquals(0L, rdma.stats().get("batchesCopied"));

      rdmaClient.close();
      wrappedClient.close();
      plainClient.close();
      wrapped.shutdown();
      plain.shutdown();
      wrapped.awaitTermination(10, TimeUnit.SECONDS);
      plain.awaitTermination(10, TimeUnit.SECONDS);
      assertEquals(0L, rdma.stats().get("leasedBatches"));
      assertTrue(rdma.memory().outstandingBlocks() > 0, "the table itself is registered memory");
      table.close();
      assertEquals(0, tableAlloc.getAllocatedMemory(), tableAlloc.toVerboseString());
      tableAlloc.close();
      assertEquals(0, rdma.memory().outstandingBlocks(), "no block outlives the table");
      assertEquals(0, rdma.memory().allocatedBytesNow());
      rdma.close();
      assertEquals(0, clientAlloc.getAllocatedMemory(), clientAlloc.toVerboseString());
      assertEquals(0, serverAlloc.getAllocatedMemory(), serverAlloc.toVerboseString());
      clientAlloc.close();
      serverAlloc.close();
    }
  }

  private static int compare(FlightStream expected, RdmaFlightStream actual) {
    int n = 0;
    while (expected.next()) {
      assertTrue(actual.next(), "RDMA stream ended early at batch " + n);
      VectorSchemaRoot e = expected.getRoot();
      VectorSchemaRoot a = actual.getRoot();
      assertEquals(e.getRowCount(), a.getRowCount());
      for (int c = 0; c < e.getFieldVectors().size(); c++) {
        assertTrue(
            VectorEqualsVisitor.vectorEquals(e.getVector(c), a.getVector(c)),
            "batch " + n + " column " + c);
      }
      n++;
    }
    assertTrue(!actual.next(), "RDMA stream has more batches than DoGet");
    return n;
  }
}
