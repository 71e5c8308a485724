package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ServiceException;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.ManualTime;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The reader's re-resolve logic in memory, with a fake resolve port: one request per pointer (one
 * per chunk) per executor, shared by every asker; a pointer that does not resolve sends its blocks
 * to Spark (or fails them with fallback off) and is never asked for again. Requests run on a {@link
 * ManualTime} scheduler where the test decides when they happen; no sockets, no sleeps.
 */
class ReresolveTest {
  private static final InetSocketAddress MAP_NODE = new InetSocketAddress("127.0.0.7", 7000);
  private static final int RESOLVE_PORT = 7340;
  private static final int SHUFFLE = 3;

  private final ManualTime time = new ManualTime();
  private final List<DirectoryPointer> asked = new CopyOnWriteArrayList<>();
  private final List<InetSocketAddress> askedAt = new CopyOnWriteArrayList<>();
  private final Map<DirectoryPointer, Object> answers = new ConcurrentHashMap<>();
  private final ShuffleCounters counters = new ShuffleCounters();
  private ReadServices services;

  @AfterEach
  void close() {
    if (services != null) {
      services.close();
    }
  }

  private static DirectoryPointer pointer(int chunk, long key) {
    return new DirectoryPointer(
        chunk,
        RemoteRegion.of(new RegionDescriptor(ProviderKind.TCP, MAP_NODE, key, 4096, 1 << 16)));
  }

  /** The fake resolve port: answers what {@link #answers} holds for a pointer, counting asks. */
  private PointerResolution resolution() {
    return new PointerResolution(
        RESOLVE_PORT,
        (service, shuffleId, old) -> {
          asked.add(old);
          askedAt.add(service);
          Object a = answers.get(old);
          if (a instanceof IOException e) {
            throw e;
          }
          if (a == null) {
            throw new IOException("nothing listens on " + service);
          }
          return (DirectoryPointer) a;
        });
  }

  @Test
  void concurrentAskersShareOneRequestAndLaterTasksStartFromTheNewPointer() throws Exception {
    DirectoryPointer old = pointer(0, 1);
    DirectoryPointer now = pointer(0, 2);
    answers.put(old, now);
    PointerResolution r = resolution();
    boolean[] first = {false};
    boolean[] second = {false};
    CompletableFuture<DirectoryPointer> a = r.resolve(SHUFFLE, old, time.scheduler(), first);
    CompletableFuture<DirectoryPointer> b = r.resolve(SHUFFLE, old, time.scheduler(), second);
    assertSame(a, b, "the second asker waits for the first one's request");
    assertTrue(first[0]);
    assertFalse(second[0], "only the asker that sent the request counts it");
    assertFalse(a.isDone());
    assertEquals(old, r.current(SHUFFLE, old), "nothing known before the answer");

    assertEquals(1, time.runDue(), "one request");
    assertEquals(now, a.get());
    assertEquals(List.of(old), asked);
    assertEquals(List.of(new InetSocketAddress(MAP_NODE.getAddress(), RESOLVE_PORT)), askedAt);
    assertEquals(now, r.current(SHUFFLE, old));

    boolean[] later = {false};
    assertSame(a, r.resolve(SHUFFLE, old, time.scheduler(), later), "later tasks: no request");
    assertFalse(later[0]);
    assertEquals(0, time.runDue());
    assertEquals(1, asked.size());
  }

  @Test
  void eachChunkIsResolvedOnceAndChainsOfRestartsAreFollowed() throws Exception {
    DirectoryPointer c0 = pointer(0, 1);
    DirectoryPointer c1 = pointer(1, 1);
    DirectoryPointer c0b = pointer(0, 2);
    DirectoryPointer c0c = pointer(0, 3);
    answers.put(c0, c0b);
    answers.put(c1, pointer(1, 2));
    answers.put(c0b, c0c); // a second restart
    PointerResolution r = resolution();
    CompletableFuture<DirectoryPointer> f0 =
        r.resolve(SHUFFLE, c0, time.scheduler(), new boolean[1]);
    CompletableFuture<DirectoryPointer> f1 =
        r.resolve(SHUFFLE, c1, time.scheduler(), new boolean[1]);
    // Another shuffle's pointer with the same bytes is its own key.
    CompletableFuture<DirectoryPointer> other =
        r.resolve(SHUFFLE + 1, c0, time.scheduler(), new boolean[1]);
    assertEquals(3, time.runDue(), "one request per shuffle and chunk");
    assertEquals(c0b, f0.get());
    assertEquals(pointer(1, 2), f1.get());
    assertEquals(c0b, other.get());
    CompletableFuture<DirectoryPointer> again =
        r.resolve(SHUFFLE, c0b, time.scheduler(), new boolean[1]);
    assertEquals(1, time.runDue());
    assertEquals(c0c, again.get());
    assertEquals(c0c, r.current(SHUFFLE, c0), "the old pointer leads to the newest one");
    assertEquals(pointer(1, 2), r.current(SHUFFLE, c1));
    assertEquals(4, asked.size());
  }

  @Test
  void anAnswerForAnotherChunkIsAFailure() {
    DirectoryPointer old = pointer(0, 1);
    answers.put(old, pointer(5, 2));
    PointerResolution r = resolution();
    CompletableFuture<DirectoryPointer> f =
        r.resolve(SHUFFLE, old, time.scheduler(), new boolean[1]);
    time.runDue();
    ExecutionException e = assertThrows(ExecutionException.class, f::get);
    assertTrue(e.getCause().getMessage().contains("chunk 5 for chunk 0"), e.getCause().toString());
    assertEquals(old, r.current(SHUFFLE, old));
  }

  @Test
  void aRefusedResolutionStaysFailedAndIsNeverAskedAgain() {
    DirectoryPointer old = pointer(0, 1);
    answers.put(old, new ServiceException(ServiceProtocol.E_DENIED, "not authenticated"));
    PointerResolution r = resolution();
    CompletableFuture<DirectoryPointer> f =
        r.resolve(SHUFFLE, old, time.scheduler(), new boolean[1]);
    time.runDue();
    assertTrue(f.isCompletedExceptionally());
    for (int task = 0; task < 100; task++) {
      boolean[] fresh = {false};
      assertSame(f, r.resolve(SHUFFLE, old, time.scheduler(), fresh));
      assertFalse(fresh[0]);
    }
    assertEquals(0, time.runDue(), "no second request");
    assertEquals(1, asked.size());
    assertEquals(old, r.current(SHUFFLE, old), "readers keep the old pointer and fall back");
  }

  // --- Reresolve: what the reader does with the answer ---

  private final RecordingSpark spark = new RecordingSpark();

  /** A fetch request's run whose plan gives failed reads a second chance (service mode). */
  private FetchRun reresolve(boolean fallbackAllowed) {
    services = new ReadServices(null, 8, 1 << 20, fallbackAllowed, 0, counters);
    services.resolveWith(resolution());
    FetchPlan plan =
        new FetchPlan(
            new Peer("map-host", 7337, "exec-1"), FetchPlan.Mode.MEMORY, null, List.of(), true);
    return new FetchRun(services, SHUFFLE, spark, plan, spark.listener, null);
  }

  private static List<Wanted> blocks(DirectoryPointer p, int... reduceIds) {
    List<Wanted> ws = new ArrayList<>();
    for (int r : reduceIds) {
      ws.add(new Wanted("shuffle_" + SHUFFLE + "_5_" + r, 5, new Route(p, 0), r, r + 1, false));
    }
    return ws;
  }

  private void awaitEnds() {
    spark.awaitEnded(4);
    assertEquals(Map.of(), spark.ok, "nothing is read");
  }

  @Test
  void refusedPointersOfTwoTasksCostOneRequestAndTheirBlocksGoToSpark() throws Exception {
    DirectoryPointer old = pointer(0, 1);
    answers.put(old, new ServiceException(ServiceProtocol.E_DENIED, "not authenticated"));
    FetchRun retry = reresolve(true);
    retry.leave(blocks(old, 0, 1), FallbackCause.READ, "dead key", true);
    retry.leave(blocks(old, 2, 3), FallbackCause.READ, "dead key", true);
    awaitEnds();
    assertEquals(1, asked.size(), "no retry storm: " + asked);
    assertEquals(
        4, spark.handedOver.stream().mapToInt(List::size).sum(), spark.handedOver.toString());
    assertEquals(Map.of(), spark.failed);
    assertEquals(1, counters.reresolveFailures.sum(), "counted once, by the asker that sent it");
    assertEquals(0, counters.pointersReresolved.sum());
    assertEquals(4, counters.fallbackBlocks(FallbackCause.READ));
  }

  @Test
  void withFallbackOffAnUnresolvedPointerFailsItsBlocksWithTheReason() throws Exception {
    DirectoryPointer old = pointer(0, 1); // no answer: nothing listens on the resolve port
    FetchRun retry = reresolve(false);
    retry.leave(blocks(old, 0, 1, 2, 3), FallbackCause.READ, "dead key", true);
    awaitEnds();
    assertEquals(List.of(), spark.handedOver);
    assertEquals(4, spark.failed.size());
    Throwable e = spark.failed.get("shuffle_" + SHUFFLE + "_5_0");
    assertInstanceOf(IOException.class, e);
    assertTrue(e.getMessage().contains("its pointer was not re-resolved"), e.getMessage());
    assertTrue(e.getMessage().contains("nothing listens"), e.getMessage());
    assertEquals(1, asked.size());
    assertEquals(4, counters.failedBlocks.sum());
  }

  @Test
  void aPointerResolvedToItselfIsNotReadAgain() throws Exception {
    DirectoryPointer old = pointer(0, 1);
    answers.put(old, old);
    FetchRun retry = reresolve(true);
    retry.leave(blocks(old, 0, 1, 2, 3), FallbackCause.CONNECT, "connect failed", true);
    awaitEnds();
    assertEquals(4, spark.handedOver.stream().mapToInt(List::size).sum());
    assertEquals(1, counters.pointersReresolved.sum(), "the service did answer");
    assertEquals(4, counters.fallbackBlocks(FallbackCause.CONNECT));
  }
}
