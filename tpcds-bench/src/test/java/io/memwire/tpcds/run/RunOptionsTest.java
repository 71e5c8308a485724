package io.memwire.tpcds.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class RunOptionsTest {
  @Test
  void defaultsCompareSortWithTheRdmaManagerOverTcp() {
    RunOptions o = RunOptions.parse();
    assertNull(o.master());
    assertEquals(1.0, o.scale());
    assertEquals(
        List.of("sort", "rdma-tcp"), o.configs().stream().map(ShuffleConfig::name).toList());
    assertEquals("sort", o.configs().get(0).manager());
    assertEquals(ShuffleConfig.RDMA_MANAGER, o.configs().get(1).manager());
    assertEquals("tcp", o.configs().get(1).provider());
    assertFalse(o.noBroadcast());
    assertEquals(1, o.sessions());
    assertEquals(4, RunOptions.parse("--sessions", "4").sessions());
  }

  @Test
  void noBroadcastSetsBothThresholdsOnEveryConfiguration() {
    RunOptions o = RunOptions.parse("--no-broadcast", "--conf", "spark.sql.shuffle.partitions=8");
    for (ShuffleConfig c : o.effectiveConfigs()) {
      assertEquals("-1", c.sparkConf().get("spark.sql.autoBroadcastJoinThreshold"));
      assertEquals("-1", c.sparkConf().get("spark.sql.adaptive.autoBroadcastJoinThreshold"));
      assertEquals("8", c.sparkConf().get("spark.sql.shuffle.partitions"));
    }
  }

  @Test
  void inlineConfigurationsNameAnyManagerClass() {
    List<ShuffleConfig> configs =
        ShuffleConfig.parseList("sort,rdma-tcp,big{manager=com.example.M;spark.a=1;spark.b=x=y}");
    ShuffleConfig big = configs.get(2);
    assertEquals("big", big.name());
    assertEquals("com.example.M", big.manager());
    assertEquals("1", big.sparkConf().get("spark.a"));
    assertEquals("x=y", big.sparkConf().get("spark.b"));
  }

  @Test
  void badArgumentsNameTheOption() {
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse("--scale", "x"))
            .getMessage()
            .contains("--scale"));
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse("--iterations", "0"))
            .getMessage()
            .contains("--iterations"));
    assertEquals(
        "--sessions must be >= 1, got 0",
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse("--sessions", "0"))
            .getMessage());
    assertTrue(
        assertThrows(
                IllegalArgumentException.class, () -> RunOptions.parse("--configs", "sort,nope"))
            .getMessage()
            .contains("nope"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class, () -> RunOptions.parse("--configs", "sort,sort"))
            .getMessage()
            .contains("twice"));
    String many =
        String.join(
            ",",
            java.util.stream.IntStream.range(0, 21)
                .mapToObj(i -> "c" + i + "{manager=sort}")
                .toList());
    assertEquals(
        "--configs names 21 configurations, at most 20 run side by side",
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse("--configs", many))
            .getMessage());
    assertTrue(
        assertThrows(
                IllegalArgumentException.class, () -> RunOptions.parse("--configs", "x{spark.a=1}"))
            .getMessage()
            .contains("no manager"));
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse("--frobnicate", "1"))
            .getMessage()
            .contains("--frobnicate"));
    assertThrows(RunOptions.HelpRequested.class, () -> RunOptions.parse("--help"));
  }
}
