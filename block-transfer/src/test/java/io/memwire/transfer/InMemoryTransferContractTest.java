package io.memwire.transfer;

import org.junit.jupiter.api.AfterEach;

/**
 * The contract suite on the in-memory provider: the test double meets the same contract as the
 * tcp and verbs providers, so tests built on it exercise real behaviour.
 */
class InMemoryTransferContractTest extends TransferContractTest {
  private final InMemoryTransport transport = new InMemoryTransport();

  @Override
  protected TransferConfig.Builder baseConfig() {
    return TransferConfig.builder();
  }

  @Override
  protected TransferNode startNode(TransferConfig config) {
    return transport.start(config);
  }

  @AfterEach
  void closeTransport() {
    transport.close();
  }
}
