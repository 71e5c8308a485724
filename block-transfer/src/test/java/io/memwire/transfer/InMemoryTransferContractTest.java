package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The contract suite on the in-memory provider: the test double meets the same contract as the tcp
 * and verbs providers, so tests built on it exercise real behaviour.
 */
class InMemoryTransferContractTest extends TransferContractTest {
  private final InMemoryTransport transport = new InMemoryTransport();

  @Override
  protected TransferConfigBuilder baseConfig() {
    return TransferConfig.builder();
  }

  @Override
  protected TransferNode startNode(TransferConfig config) {
    return transport.start(config);
  }

  /**
   * This transport may serve reads in any order, so an after read must wait for the body's
   * completions (as with verbs): while a body read is held, it is not even posted.
   */
  @Test
  void anAfterReadIsPostedOnlyOnceTheBodyReadsCompleted() throws Exception {
    byte[] data = random(new Random(23), 64 << 10);
    TransferNode server = node();
    TransferNode client = node();
    MemoryRegion body = TestRegions.register(server, direct(data));
    ByteBuffer wordMemory = direct(new byte[8]);
    MemoryRegion word = TestRegions.register(server, wordMemory);
    long bodyKey = body.descriptors().get(0).key();
    transport.script(
        r ->
            r.remoteKey() == bodyKey
                ? InMemoryTransport.Action.hold()
                : InMemoryTransport.Action.serve());
    ReadBatch batch =
        client
            .connection(server.localAddress())
            .read(
                List.of(
                    ReadRequest.of(body.remote(), 0, 1000),
                    ReadRequest.of(body.remote(), 1000, 2000)),
                ReadRequest.of(word.remote(), 0, 8));
    List<InMemoryTransport.PostedRead> held = transport.awaitHeld(2, Duration.ofSeconds(10));
    assertEquals(2, transport.posted(), "the after read waits for the body");
    wordMemory.putLong(0, 42);
    held.forEach(InMemoryTransport.PostedRead::serve);
    TransferBuffer after = await(batch.result(2));
    try {
      assertEquals(42, after.nioBuffer().order(ByteOrder.BIG_ENDIAN).getLong(0));
    } finally {
      after.release();
    }
    for (int i = 0; i < 2; i++) {
      await(batch.result(i)).release();
    }
    assertEquals(3, transport.posted());
  }

  @AfterEach
  void closeTransport() {
    transport.close();
  }
}
