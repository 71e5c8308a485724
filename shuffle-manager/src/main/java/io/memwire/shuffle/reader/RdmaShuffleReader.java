package io.memwire.shuffle.reader;

import io.memwire.shuffle.compat.ScalaCollections;
import io.memwire.shuffle.compat.SparkCompat;
import io.memwire.shuffle.directory.DirectoryPointer;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.Aggregator;
import org.apache.spark.InterruptibleIterator;
import org.apache.spark.MapOutputTracker;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.package$;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockFetcherIterator;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.Product2;
import scala.Tuple2;
import scala.Tuple3;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.Seq;

/**
 * Reads one reduce task's blocks: the same steps as Spark's BlockStoreShuffleReader (flow control,
 * local reads, batch fetch, corruption detection, {@code wrapStream}, aggregation, key ordering,
 * interruption, metrics, FetchFailed), with {@link RdmaBlockStoreClient} in place of the block
 * manager's client.
 */
public final class RdmaShuffleReader<K, C> implements ShuffleReader<K, C> {
  private final BaseShuffleHandle<K, ?, C> handle;
  private final Iterator<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>>
      blocksByAddress;
  private final TaskContext context;
  private final ShuffleReadMetricsReporter readMetrics;
  private final boolean shouldBatchFetch;
  private final ReadServices services;

  public RdmaShuffleReader(
      BaseShuffleHandle<K, ?, C> handle,
      Iterator<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>> blocksByAddress,
      TaskContext context,
      ShuffleReadMetricsReporter readMetrics,
      boolean shouldBatchFetch,
      ReadServices services) {
    this.handle = handle;
    this.blocksByAddress = blocksByAddress;
    this.context = context;
    this.readMetrics = readMetrics;
    this.shouldBatchFetch = shouldBatchFetch;
    this.services = services;
  }

  private boolean fetchContinuousBlocksInBatch(SparkConf conf, ShuffleDependency<K, ?, C> dep) {
    boolean relocatable = dep.serializer().supportsRelocationOfSerializedObjects();
    boolean compressed = SparkCompat.<Boolean>get(conf, package$.MODULE$.SHUFFLE_COMPRESS());
    boolean concatenation =
        !compressed
            || CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(
                CompressionCodec$.MODULE$.createCodec(conf));
    boolean oldProtocol =
        SparkCompat.<Boolean>get(conf, package$.MODULE$.SHUFFLE_USE_OLD_FETCH_PROTOCOL());
    boolean encryption = SparkCompat.<Boolean>get(conf, package$.MODULE$.IO_ENCRYPTION_ENABLED());
    return shouldBatchFetch && relocatable && concatenation && !oldProtocol && !encryption;
  }

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public Iterator<Product2<K, C>> read() {
    SparkEnv env = SparkEnv.get();
    SparkConf conf = env.conf();
    BlockManager blockManager = env.blockManager();
    MapOutputTracker tracker = env.mapOutputTracker();
    SerializerManager serializerManager = env.serializerManager();
    ShuffleDependency<K, ?, C> dep = handle.dependency();

    // Learn each map output's directory pointer, then give Spark the same blocks again.
    List<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>> groups = new ArrayList<>();
    Map<Long, Route> routes = new HashMap<>();
    while (blocksByAddress.hasNext()) {
      Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>> g = blocksByAddress.next();
      groups.add(g);
      Option<String> topo = g._1().topologyInfo();
      Optional<DirectoryPointer> pointer =
          DirectoryPointer.fromTopologyInfo(topo.isDefined() ? topo.get() : null);
      if (pointer.isEmpty()) {
        continue;
      }
      Iterator<Tuple3<BlockId, Object, Object>> it = g._2().iterator();
      while (it.hasNext()) {
        Tuple3<BlockId, Object, Object> b = it.next();
        if (b._1() instanceof ShuffleBlockId) {
          routes.put(((ShuffleBlockId) b._1()).mapId(), new Route(pointer.get(), (Integer) b._3()));
        }
      }
    }
    RdmaBlockStoreClient client =
        new RdmaBlockStoreClient(
            services, handle.shuffleId(), routes, blockManager.blockStoreClient());

    long maxSizeInFlight =
        SparkCompat.<Long>get(conf, package$.MODULE$.REDUCER_MAX_SIZE_IN_FLIGHT()) * 1024 * 1024;
    // The constructor issues the first requests: post them once it has returned.
    client.holdRequests();
    ShuffleBlockFetcherIterator fetcher;
    try {
      fetcher =
          new ShuffleBlockFetcherIterator(
              context,
              client,
              blockManager,
              tracker,
              ScalaCollections.asScala(groups.iterator()),
              (BlockId id, InputStream in) -> serializerManager.wrapStream(id, in),
              maxSizeInFlight,
              SparkCompat.<Integer>get(conf, package$.MODULE$.REDUCER_MAX_REQS_IN_FLIGHT()),
              SparkCompat.<Integer>get(
                  conf, package$.MODULE$.REDUCER_MAX_BLOCKS_IN_FLIGHT_PER_ADDRESS()),
              SparkCompat.<Long>get(conf, package$.MODULE$.MAX_REMOTE_BLOCK_SIZE_FETCH_TO_MEM()),
              SparkCompat.<Integer>get(conf, package$.MODULE$.SHUFFLE_MAX_ATTEMPTS_ON_NETTY_OOM()),
              SparkCompat.<Boolean>get(conf, package$.MODULE$.SHUFFLE_DETECT_CORRUPT()),
              SparkCompat.<Boolean>get(conf, package$.MODULE$.SHUFFLE_DETECT_CORRUPT_MEMORY()),
              SparkCompat.<Boolean>get(conf, package$.MODULE$.SHUFFLE_CHECKSUM_ENABLED()),
              SparkCompat.<String>get(conf, package$.MODULE$.SHUFFLE_CHECKSUM_ALGORITHM()),
              readMetrics,
              fetchContinuousBlocksInBatch(conf, dep),
              new org.apache.spark.util.SystemClock());
    } finally {
      client.releaseRequests();
    }
    Iterator<Tuple2<BlockId, InputStream>> wrappedStreams = fetcher.toCompletionIterator();

    SerializerInstance serializer = dep.serializer().newInstance();
    Iterator<Tuple2<Object, Object>> records =
        new RecordIterator(wrappedStreams, serializer, client);
    InterruptibleIterator<Tuple2<Object, Object>> interruptible =
        new InterruptibleIterator<>(context, records);

    Iterator<Product2<K, C>> result;
    if (dep.keyOrdering().isDefined()) {
      ExternalSorter sorter;
      if (dep.aggregator().isDefined()) {
        Aggregator agg = dep.aggregator().get();
        if (dep.mapSideCombine()) {
          Aggregator combiners =
              new Aggregator(
                  (scala.Function1) (c -> c), agg.mergeCombiners(), agg.mergeCombiners());
          sorter =
              SparkCompat.newExternalSorter(
                  context, Option.apply(combiners), (Option) dep.keyOrdering(), dep.serializer());
        } else {
          sorter =
              SparkCompat.newExternalSorter(
                  context, Option.apply(agg), (Option) dep.keyOrdering(), dep.serializer());
        }
      } else {
        sorter =
            SparkCompat.newExternalSorter(
                context, Option.empty(), (Option) dep.keyOrdering(), dep.serializer());
      }
      result = sorter.insertAllAndUpdateMetrics((Iterator) interruptible);
    } else if (dep.aggregator().isDefined()) {
      Aggregator agg = dep.aggregator().get();
      if (dep.mapSideCombine()) {
        result = agg.combineCombinersByKey((Iterator) interruptible, context);
      } else {
        result = agg.combineValuesByKey((Iterator) interruptible, context);
      }
    } else {
      result = (Iterator) interruptible;
    }
    if (result instanceof InterruptibleIterator) {
      return result;
    }
    // Aggregation or sorting consumed the first interruptible iterator.
    return new InterruptibleIterator<>(context, result);
  }

  /**
   * Deserializes each block's stream into records, counts them, and merges the read metrics into
   * the task's when the last record has been read (what Spark's flatMap, map and CompletionIterator
   * do).
   */
  private final class RecordIterator extends AbstractIterator<Tuple2<Object, Object>> {
    private final Iterator<Tuple2<BlockId, InputStream>> streams;
    private final SerializerInstance serializer;
    private final RdmaBlockStoreClient client;
    private Iterator<Tuple2<Object, Object>> current; // null before the first block
    private boolean completed;

    RecordIterator(
        Iterator<Tuple2<BlockId, InputStream>> streams,
        SerializerInstance serializer,
        RdmaBlockStoreClient client) {
      this.streams = streams;
      this.serializer = serializer;
      this.client = client;
    }

    @Override
    public boolean hasNext() {
      while (current == null || !current.hasNext()) {
        if (!streams.hasNext()) {
          if (!completed) {
            completed = true;
            context.taskMetrics().mergeShuffleReadMetrics();
          }
          return false;
        }
        // next() may issue further requests (Spark keeps maxBytesInFlight): post them after it.
        InputStream in;
        client.holdRequests();
        try {
          in = streams.next()._2();
        } finally {
          client.releaseRequests();
        }
        current = serializer.deserializeStream(in).asKeyValueIterator();
      }
      return true;
    }

    @Override
    public Tuple2<Object, Object> next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException("no more shuffle records");
      }
      Tuple2<Object, Object> r = current.next();
      readMetrics.incRecordsRead(1);
      return r;
    }
  }
}
