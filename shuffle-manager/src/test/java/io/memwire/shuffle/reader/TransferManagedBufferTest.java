package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.InMemoryTransport;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferNode;
import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Spark's contract for {@link ManagedBuffer#convertToNetty()}: the caller owns the Netty object, so
 * the pooled memory must stay valid after the {@code ManagedBuffer} is released and go back to the
 * pool once, when the Netty object is released.
 */
class TransferManagedBufferTest {
  private InMemoryTransport transport;
  private TransferNode server;
  private TransferNode client;
  private MemoryRegion region;

  @BeforeEach
  void setUp() {
    transport = new InMemoryTransport();
    server = transport.start();
    client = transport.start();
    ByteBuffer mem = ByteBuffer.allocateDirect(8192);
    for (int i = 0; i < mem.capacity(); i++) {
      mem.put(i, (byte) (i * 13 + 1));
    }
    region = TestRegions.register(server, mem);
  }

  @AfterEach
  void tearDown() {
    client.close();
    server.close();
    transport.close();
  }

  private TransferBuffer readBlock() throws Exception {
    return client
        .connection(server.localAddress())
        .read(ReadRequest.of(region.remote(), 100, 5000))
        .get(30, TimeUnit.SECONDS);
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void theNettyObjectOwnsAReferenceUntilItIsReleased(boolean forSsl) throws Exception {
    ManagedBuffer managed = new TransferManagedBuffer(readBlock());
    Function<ManagedBuffer, Object> convert =
        forSsl ? m -> uncheckedSsl(m) : m -> uncheckedPlain(m);
    ByteBuf netty = (ByteBuf) convert.apply(managed);
    assertEquals(1, client.bufferPool().outstandingBuffers());

    managed.release(); // Spark's owner is done; Netty is still sending
    assertEquals(
        1,
        client.bufferPool().outstandingBuffers(),
        "the pool took the memory back while Netty still holds it");
    assertEquals(5000, netty.readableBytes());
    for (int i = 0; i < 5000; i++) {
      assertEquals((byte) ((100 + i) * 13 + 1), netty.getByte(i), "byte " + i);
    }

    assertTrue(netty.release(), "the Netty object's release is its last");
    assertEquals(0, client.bufferPool().outstandingBuffers());
    assertThrows(IllegalReferenceCountException.class, netty::release);
    assertEquals(0, client.bufferPool().outstandingBuffers(), "returned exactly once");
  }

  private static Object uncheckedPlain(ManagedBuffer m) {
    try {
      return m.convertToNetty();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static Object uncheckedSsl(ManagedBuffer m) {
    try {
      // Called on the class: Spark 3.5's ManagedBuffer has no convertToNettyForSsl.
      return ((TransferManagedBuffer) m).convertToNettyForSsl();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
