package io.memwire.shuffle.reader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.memwire.shuffle.ShuffleCounters.FallbackCause;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.RegionDescriptor;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** One decision per fetch request: which blocks go where, in the order Spark asked. */
class FetchPlannerTest {
  private static final InetSocketAddress NODE = new InetSocketAddress("127.0.0.1", 7000);
  private static final Peer PEER = new Peer("map-host", 7337, "exec-1");
  private static final int SHUFFLE = 2;

  private static DirectoryPointer pointer(ProviderKind kind, long key) {
    return new DirectoryPointer(
        0, RemoteRegion.of(new RegionDescriptor(kind, NODE, key, 4096, 1 << 16)));
  }

  private static final DirectoryPointer TCP = pointer(ProviderKind.TCP, 1);
  private static final DirectoryPointer VERBS = pointer(ProviderKind.VERBS, 2);

  /** Map 1 and 2 on tcp, map 3 on verbs, map 4 without a pointer. */
  private static final Map<Long, Route> ROUTES =
      Map.of(1L, new Route(TCP, 0), 2L, new Route(TCP, 1), 3L, new Route(VERBS, 2));

  private static List<String> ids(List<Wanted> ws) {
    return ws.stream().map(Wanted::id).toList();
  }

  @Test
  void blocksAreSplitOnceByWhereTheyAreReadFromAndGroupedByMapOutputInRequestOrder() {
    FetchPlanner planner = new FetchPlanner(SHUFFLE, ROUTES, ProviderKind.TCP, null, null);
    FetchPlan plan =
        planner.plan(
            PEER,
            new String[] {
              "shuffle_2_2_0",
              "shuffle_2_1_0",
              "shuffle_2_4_0", // no pointer
              "shuffle_2_2_1",
              "shuffle_2_1_3_5", // a batch block
              "shuffle_2_3_0", // served over verbs
              "shuffle_9_1_0", // another shuffle
              "rdd_1_1"
            },
            false);
    assertEquals(PEER, plan.peer());
    assertEquals(FetchPlan.Mode.MEMORY, plan.mode());
    assertFalse(plan.secondChance());
    assertEquals(2, plan.oneSided().size());
    assertEquals(new Route(TCP, 1), plan.oneSided().get(0).route());
    assertEquals(List.of("shuffle_2_2_0", "shuffle_2_2_1"), ids(plan.oneSided().get(0).blocks()));
    assertEquals(List.of("shuffle_2_1_0", "shuffle_2_1_3_5"), ids(plan.oneSided().get(1).blocks()));
    Wanted batch = plan.oneSided().get(1).blocks().get(1);
    assertTrue(batch.batch());
    assertEquals(3, batch.start());
    assertEquals(5, batch.end());

    FetchPlan.ToSpark spark = plan.toSpark();
    assertEquals(
        List.of("shuffle_2_4_0", "shuffle_2_3_0", "shuffle_9_1_0", "rdd_1_1"), spark.ids());
    // One hand-over, under the cause of the last block that needed one.
    assertEquals(FallbackCause.NO_DIRECTORY, spark.cause());
    assertTrue(spark.log());
  }

  @Test
  void delegatedReadsGoToSparkWholeAndUnlogged() {
    FetchPlanner planner = new FetchPlanner(SHUFFLE, ROUTES, null, FallbackCause.ENCRYPTION, null);
    FetchPlan plan = planner.plan(PEER, new String[] {"shuffle_2_1_0", "shuffle_2_4_0"}, true);
    assertEquals(FetchPlan.Mode.DISK, plan.mode());
    assertEquals(List.of(), plan.oneSided());
    assertEquals(List.of("shuffle_2_1_0", "shuffle_2_4_0"), plan.toSpark().ids());
    assertEquals(FallbackCause.ENCRYPTION, plan.toSpark().cause());
    assertFalse(plan.toSpark().log());
    assertNull(planner.oneSided("shuffle_2_1_0"), "a diagnosis goes to Spark too");
  }

  @Test
  void inServiceModeFailedReadsGetASecondChanceAndMovedPointersAreFollowed() {
    DirectoryPointer moved = pointer(ProviderKind.TCP, 5);
    PointerResolution resolution =
        new PointerResolution(
            7340,
            (service, shuffleId, old) -> {
              if (old.equals(TCP)) {
                return moved;
              }
              throw new IOException("unknown");
            });
    var unused = resolution.resolve(SHUFFLE, TCP, Runnable::run, new boolean[1]);
    FetchPlanner planner = new FetchPlanner(SHUFFLE, ROUTES, ProviderKind.TCP, null, resolution);
    FetchPlan plan = planner.plan(PEER, new String[] {"shuffle_2_1_0", "shuffle_2_3_0"}, false);
    assertTrue(plan.secondChance());
    assertEquals(new Route(moved, 0), plan.oneSided().get(0).route());
    assertEquals(FallbackCause.PROVIDER_MISMATCH, plan.toSpark().cause());
    assertEquals(new Route(moved, 0), planner.oneSided("shuffle_2_1_0").route());
    assertEquals(
        List.of(new MapBlocks(new Route(moved, 0), List.of(planner.oneSided("shuffle_2_1_0")))),
        planner.single(PEER, planner.oneSided("shuffle_2_1_0")).oneSided());
  }
}
