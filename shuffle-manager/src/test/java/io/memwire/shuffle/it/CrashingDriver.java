package io.memwire.shuffle.it;

import io.memwire.shuffle.RdmaShuffleManager;
import io.memwire.shuffle.dataio.MemwireShuffleDataIO;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * A Spark application in service mode ({@code local[2]}: the driver is its own executor) that runs
 * one shuffle, prints {@code READY <keys>} and then waits to be killed: what {@link
 * DriverCrashTest} crashes. Argument: the shuffle service's socket.
 */
public final class CrashingDriver {
  private CrashingDriver() {}

  public static void main(String[] args) throws Exception {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("memwire-crashing-driver")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.bindAddress", "127.0.0.1")
            .set("spark.shuffle.manager", RdmaShuffleManager.class.getName())
            .set(MemwireShuffleDataIO.PLUGIN_KEY, MemwireShuffleDataIO.CLASS_NAME)
            .set("spark.shuffle.rdma.service.socket", args[0])
            .set("spark.shuffle.rdma.provider", "tcp")
            .set("spark.shuffle.rdma.bindAddress", "127.0.0.1");
    JavaSparkContext jsc = new JavaSparkContext(conf);
    List<Integer> data = IntStream.range(0, 20_000).boxed().toList();
    long keys =
        jsc.parallelize(data, 4)
            .mapToPair(x -> new Tuple2<>(x % 101, 1L))
            .reduceByKey(Long::sum, 3)
            .count();
    System.out.println("READY " + keys);
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
