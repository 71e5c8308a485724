package io.memwire.transfer;

/** The contract suite on the tcp provider (runs everywhere, CI included). */
class TcpTransferContractTest extends TransferContractTest {
  @Override
  protected TransferConfigBuilder baseConfig() {
    return TransferConfig.builder().provider(ProviderKind.TCP).bindAddress("127.0.0.1");
  }
}
