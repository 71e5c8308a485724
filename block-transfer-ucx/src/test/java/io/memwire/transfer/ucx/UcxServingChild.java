package io.memwire.transfer.ucx;

import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.TestRegions;
import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.TransferNode;
import java.nio.ByteBuffer;
import java.util.Base64;

/**
 * A ucx node serving one region in a child JVM, for {@link UcxPeerCrashTest}: prints {@code READY
 * <base64 RemoteRegion>} and serves until it is killed.
 */
public final class UcxServingChild {
  static final int SIZE = 8 << 20;

  private UcxServingChild() {}

  static byte[] data() {
    byte[] d = new byte[SIZE];
    new java.util.Random(SIZE).nextBytes(d);
    return d;
  }

  public static void main(String[] args) throws Exception {
    TransferNode node =
        TransferNode.start(
            TransferConfig.builder()
                .provider(ProviderKind.UCX)
                .bindAddress("127.0.0.1")
                .set("ucxTransports", args[0])
                .build());
    ByteBuffer b = ByteBuffer.allocateDirect(SIZE);
    b.put(data()).flip();
    MemoryRegion r = TestRegions.register(node, b);
    System.out.println("READY " + Base64.getEncoder().encodeToString(r.remote().toBytes()));
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
