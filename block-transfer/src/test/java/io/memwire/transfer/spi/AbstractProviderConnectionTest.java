package io.memwire.transfer.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.TransferConnectionException;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferTimeoutException;
import io.memwire.transfer.testing.Await;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The shared lifecycle rule: the first failure wins; reads fail once, after the quiesce. */
class AbstractProviderConnectionTest {
  private static final InetSocketAddress PEER =
      new InetSocketAddress(InetAddress.getLoopbackAddress(), 9);
  private static final Duration WAIT = Duration.ofSeconds(20);

  /** A read that counts how often it ended and keeps the cause. */
  private static final class CountingRead extends WireRead {
    final AtomicInteger ends = new AtomicInteger();
    volatile TransferException cause;

    CountingRead() {
      super(
          new RegionDescriptor(ProviderKind.TCP, PEER, 1, 4096, 8192),
          4096,
          16,
          ByteBuffer.allocateDirect(16),
          0,
          0);
    }

    @Override
    protected void onComplete() {
      ends.incrementAndGet();
    }

    @Override
    protected void onFail(TransferException c) {
      cause = c;
      ends.incrementAndGet();
    }
  }

  /** Holds posted reads; its quiesce blocks until the test lets it go. */
  private static final class Held extends AbstractProviderConnection {
    final List<WireRead> holding = new ArrayList<>();
    final CountDownLatch quiescing = new CountDownLatch(1);
    final CountDownLatch mayFinish = new CountDownLatch(1);
    final AtomicInteger quiesces = new AtomicInteger();

    Held() {
      super(PEER);
    }

    @Override
    public boolean servesInPostOrder() {
      return false;
    }

    @Override
    public void post(List<WireRead> reads) {
      boolean rejected;
      synchronized (this) {
        rejected = !isOpen();
        if (!rejected) {
          holding.addAll(reads);
        }
      }
      if (rejected) {
        reject(reads);
      }
    }

    @Override
    protected void quiesce(TransferException cause, List<WireRead> held) {
      quiesces.incrementAndGet();
      quiescing.countDown();
      try {
        assertTrue(mayFinish.await(WAIT.toSeconds(), TimeUnit.SECONDS));
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      synchronized (this) {
        held.addAll(holding);
        holding.clear();
      }
    }
  }

  @Test
  void readsFailOnceWithTheFirstCauseOnlyAfterTheQuiesceAndLaterCallersWaitForIt()
      throws Exception {
    Held c = new Held();
    CountingRead r1 = new CountingRead();
    CountingRead r2 = new CountingRead();
    c.post(List.of(r1, r2));
    assertEquals(AbstractProviderConnection.State.OPEN, c.state());

    TransferTimeoutException first = new TransferTimeoutException("first", PEER);
    Thread a = new Thread(() -> c.fail(first), "first-failer");
    a.start();
    assertTrue(c.quiescing.await(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertEquals(AbstractProviderConnection.State.FAILING, c.state());
    assertFalse(c.isOpen());
    assertSame(first, c.failure());
    assertEquals(0, r1.ends.get(), "no read may fail before the provider has quiesced");

    CountingRead late = new CountingRead();
    c.post(List.of(late));
    assertEquals(1, late.ends.get(), "a read posted after the failure fails at once");
    assertSame(first, late.cause);

    Thread b =
        new Thread(
            () -> c.fail(new TransferConnectionException("second", PEER, null)), "second-failer");
    b.start();
    Await.until(
        () -> "the second caller did not wait for the first: " + b.getState(),
        WAIT,
        () -> b.getState() == Thread.State.TIMED_WAITING);

    c.mayFinish.countDown();
    a.join(WAIT.toMillis());
    b.join(WAIT.toMillis());
    assertFalse(a.isAlive() || b.isAlive());
    assertEquals(AbstractProviderConnection.State.FAILED, c.state());
    assertEquals(1, c.quiesces.get());
    for (CountingRead r : List.of(r1, r2)) {
      assertEquals(1, r.ends.get());
      assertSame(first, r.cause, "every read sees the first cause");
      assertFalse(r.fail(new TransferConnectionException("again", PEER, null)));
      assertFalse(r.complete());
      assertEquals(1, r.ends.get(), "a read ends exactly once");
    }
    c.close(); // idempotent, returns at once
    assertSame(first, c.failure());
  }

  @org.junit.jupiter.api.RepeatedTest(5)
  void closedFromSeveralThreadsAtOnceItQuiescesOnceAndEachReadEndsOnce() throws Exception {
    Held c = new Held();
    c.mayFinish.countDown();
    CountingRead r = new CountingRead();
    c.post(List.of(r));
    CountDownLatch gate = new CountDownLatch(1);
    List<Thread> closers = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  gate.await();
                } catch (InterruptedException e) {
                  return;
                }
                c.close();
              },
              "closer-" + i);
      t.start();
      closers.add(t);
    }
    gate.countDown();
    for (Thread t : closers) {
      t.join(WAIT.toMillis());
      assertFalse(t.isAlive(), t.getName() + " still closing");
    }
    assertEquals(1, c.quiesces.get(), "the quiesce ran once");
    assertEquals(AbstractProviderConnection.State.FAILED, c.state());
    assertEquals(1, r.ends.get(), "the read ended once");
  }
}
