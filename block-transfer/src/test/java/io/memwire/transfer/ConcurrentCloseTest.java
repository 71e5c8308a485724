package io.memwire.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.internal.NanoClock;
import io.memwire.transfer.memory.MemoryAllocator;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.spi.ProviderConnection;
import io.memwire.transfer.spi.ProviderRegistration;
import io.memwire.transfer.spi.TransportProvider;
import io.memwire.transfer.tcp.TcpProvider;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;

/**
 * A node closed by several threads at once runs its close once: the provider is closed once and
 * every registered byte is handed back once.
 */
class ConcurrentCloseTest {
  private static final int CLOSERS = 8;

  /** A tcp provider that counts its closes. */
  private static final class CountingProvider implements TransportProvider {
    final TcpProvider tcp;
    final AtomicInteger closes = new AtomicInteger();

    CountingProvider(TransferConfig config) {
      this.tcp = TcpProvider.open(config);
    }

    @Override
    public ProviderKind kind() {
      return tcp.kind();
    }

    @Override
    public InetSocketAddress localAddress() {
      return tcp.localAddress();
    }

    @Override
    public ProviderRegistration register(
        ByteBuffer buffer, long address, boolean remoteReadable, FileChannel file, long offset) {
      return tcp.register(buffer, address, remoteReadable, file, offset);
    }

    @Override
    public ProviderConnection connect(InetSocketAddress peer) throws TransferException {
      return tcp.connect(peer);
    }

    @Override
    public Map<Metric, Long> counters() {
      return tcp.counters();
    }

    @Override
    public void close() {
      closes.incrementAndGet();
      tcp.close();
    }
  }

  @RepeatedTest(5)
  void aNodeClosedFromSeveralThreadsAtOnceClosesOnce() throws Exception {
    TransferConfig config =
        TransferConfig.builder().provider(ProviderKind.TCP).bindAddress("127.0.0.1").build();
    CountingProvider provider = new CountingProvider(config);
    TransferNode node =
        new TransferNode(config, provider, "test", NanoClock.SYSTEM, ConnectionPool.newTimer());
    MemoryAllocator child = node.memory().newChild("test-units");
    BufferUnit unit = node.allocateRegistered(child, 1 << 16, "a unit");
    unit.release();
    child.close();
    // Left for the close to free: two regions.
    TestRegions.register(node, ByteBuffer.allocateDirect(1 << 16));
    TestRegions.register(node, ByteBuffer.allocateDirect(1 << 16));
    assertEquals(2, node.stats().registeredRegions(), node.stats().toString());
    assertTrue(node.stats().registeredBytes() >= 2 << 16, node.stats().toString());

    CountDownLatch gate = new CountDownLatch(1);
    List<Thread> closers = new ArrayList<>();
    List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int i = 0; i < CLOSERS; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  gate.await();
                  node.close();
                } catch (Throwable e) {
                  failures.add(e);
                }
              },
              "closer-" + i);
      t.start();
      closers.add(t);
    }
    gate.countDown();
    for (Thread t : closers) {
      t.join(TimeUnit.SECONDS.toMillis(30));
      assertFalse(t.isAlive(), t.getName() + " still closing");
    }
    assertEquals(List.of(), failures);
    assertEquals(List.of(), node.memory().leakReports(), "nothing leaked or freed twice");
    assertTrue(node.isClosed());
    assertEquals(1, provider.closes.get(), "the provider is closed once");
    assertEquals(0, node.stats().registeredBytes(), node.stats().toString());
    assertEquals(0, node.stats().registeredRegions(), node.stats().toString());
    node.close();
    assertEquals(1, provider.closes.get(), "a later close does nothing");
  }
}
