package io.memwire.shuffle.writer;

import io.memwire.shuffle.ShuffleCounters;
import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.protocol.ServiceClient;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.memory.MemoryAllocator;
import java.io.File;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockManagerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Makes a finished map output readable one-sided and points its MapStatus location at it. In
 * service mode the output goes to the node's shuffle service first, which takes its files and
 * publishes them in its own directory; otherwise, or when the service refuses or does not answer,
 * this executor registers the index and data files as read-only memory regions and records them in
 * its own shuffle directory. When that is impossible too (registration budget exhausted, mapping
 * failed, too many segments) the output stays with Spark's own transfer, if fallback is allowed.
 *
 * <p>Runs on the map task's thread, and for outputs migrated here on the thread Spark delivers the
 * migrated files on ({@link io.memwire.shuffle.migration.MigratedOutputs}).
 */
public final class MapOutputPublisher {
  private static final Logger LOG = LoggerFactory.getLogger(MapOutputPublisher.class);

  /** Allocator (a child of the node's root) the output files' regions are booked on. */
  public static final String ALLOCATOR = "map-outputs";

  private final Registrar node;
  private final MemoryAllocator outputs;
  private final ShuffleDirectory directory;
  private final IndexShuffleBlockResolver resolver;
  private final boolean fallback;
  private final ShuffleCounters counters;
  private final ServiceLink service;
  private final AtomicBoolean warned = new AtomicBoolean();

  /** Spark's checksum algorithm when its checksums are on, else null. */
  private volatile String checksumAlgorithm;

  private final AtomicBoolean serviceWarned = new AtomicBoolean();

  /** Shuffles already said to be read one-sided unverified (too wide for a metadata region). */
  private final java.util.Set<Integer> saidUnverified =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  /**
   * @param service the link to the node's shuffle service, or null when outputs are served by this
   *     executor
   */
  public MapOutputPublisher(
      Registrar node,
      ShuffleDirectory directory,
      IndexShuffleBlockResolver resolver,
      boolean fallback,
      ShuffleCounters counters,
      ServiceLink service) {
    this.service = service;
    this.node = node;
    this.outputs = node.memory().newChild(ALLOCATOR);
    this.directory = directory;
    this.resolver = resolver;
    this.fallback = fallback;
    this.counters = counters;
  }

  /**
   * Publishes one output and points its MapStatus at it.
   *
   * @throws IllegalStateException when it cannot be published and fallback is disabled
   */
  /** The allocator this executor's own output regions are booked on, for stats and tests. */
  public MemoryAllocator outputs() {
    return outputs;
  }

  /** Spark's {@code spark.shuffle.checksum.algorithm} when checksums are on, else null. */
  public void checksums(String algorithm) {
    this.checksumAlgorithm = algorithm;
  }

  public void publish(int shuffleId, long mapId, int mapIndex, MapStatus status) {
    long start = System.nanoTime();
    try {
      DirectoryPointer pointer = register(shuffleId, mapId, mapIndex, !fallback);
      if (pointer != null) {
        pointTo(status, pointer);
      }
    } finally {
      counters.publishMicros.add((System.nanoTime() - start) / 1000);
    }
  }

  /**
   * Publishes an output that Spark migrated to this executor off a decommissioned one. Unlike a map
   * task's output, one that cannot be published is not an error here: Spark's own location for it
   * stays valid.
   *
   * @return the pointer to publish with the output's new location, or null when it stays without
   */
  public DirectoryPointer publishMigrated(int shuffleId, long mapId, int mapIndex) {
    return register(shuffleId, mapId, mapIndex, false);
  }

  /** The location {@code loc} carrying {@code pointer} after Spark's own topology information. */
  public static BlockManagerId withPointer(BlockManagerId loc, DirectoryPointer pointer) {
    String original = loc.topologyInfo().isDefined() ? loc.topologyInfo().get() : null;
    return BlockManagerId.apply(
        loc.executorId(), loc.host(), loc.port(), Option.apply(pointer.toTopologyInfo(original)));
  }

  private DirectoryPointer register(int shuffleId, long mapId, int mapIndex, boolean mustPublish) {
    File indexFile = resolver.getIndexFile(shuffleId, mapId, Option.empty());
    File dataFile = resolver.getDataFile(shuffleId, mapId);
    if (service != null) {
      DirectoryPointer pointer = toService(shuffleId, mapId, mapIndex, indexFile, dataFile);
      if (pointer != null) {
        counters.outputsPublished.increment();
        return pointer;
      }
    }
    MemoryRegion index = null;
    MemoryRegion data = null;
    try {
      index = node.register(indexFile.toPath(), 0, indexFile.length(), outputs);
      long dataLength = dataFile.exists() ? dataFile.length() : 0;
      if (dataLength > 0) {
        data = node.register(dataFile.toPath(), 0, dataLength, outputs);
      }
      if (!DirectorySlot.fits(index.remote(), data == null ? null : data.remote())) {
        throw new RegistrationException(
            "data file of "
                + dataLength
                + " bytes needs "
                + data.descriptors().size()
                + " segments, more than a directory slot holds; raise "
                + "spark.shuffle.rdma.maxSegmentSize");
      }
    } catch (IOException | RuntimeException e) {
      if (data != null) {
        data.close();
      }
      if (index != null) {
        index.close();
      }
      notPublished(shuffleId, mapId, e, mustPublish);
      return null;
    }
    // Reads the index file (just written, in the page cache) to keep its entries inline.
    DirectoryPointer pointer =
        directory.publish(
            shuffleId,
            mapIndex,
            mapId,
            index,
            data,
            OutputChecksums.read(checksumFile(shuffleId, mapId), partitions(indexFile)));
    counters.outputsPublished.increment();
    return pointer;
  }

  /**
   * Spark's checksum file of an output (in another of the block manager's subdirectories than the
   * index: Spark places files by their name's hash), or null when checksums are off.
   */
  private java.nio.file.Path checksumFile(int shuffleId, long mapId) {
    if (checksumAlgorithm == null) {
      return null;
    }
    File f = resolver.getChecksumFile(shuffleId, mapId, checksumAlgorithm, Option.empty());
    if (!f.isFile()) {
      return null;
    }
    long partitions = f.length() / 8;
    if (partitions > DirectorySlot.MAX_METADATA_PARTITIONS && saidUnverified.add(shuffleId)) {
      LOG.info(
          "shuffle {} has {} reduce partitions, more than the {} whose checksums travel in a"
              + " metadata region: its blocks are read one-sided unverified (counted as"
              + " checksumUnverifiedBlocks); Spark's local reads of them are still checked",
          shuffleId,
          partitions,
          DirectorySlot.MAX_METADATA_PARTITIONS);
    }
    return f.toPath();
  }

  private static int partitions(File index) {
    return (int) Math.max(0, Math.min(index.length() / 8 - 1, Integer.MAX_VALUE));
  }

  private DirectoryPointer toService(
      int shuffleId, long mapId, int mapIndex, File indexFile, File dataFile) {
    ServiceClient client = service.client();
    if (client == null) {
      return null;
    }
    DirectoryPointer pointer;
    try {
      pointer =
          client.publish(
              shuffleId,
              mapIndex,
              mapId,
              indexFile.toPath(),
              dataFile.exists() ? dataFile.toPath() : null,
              checksumFile(shuffleId, mapId));
    } catch (IOException e) {
      counters.serviceErrors.increment();
      if (serviceWarned.compareAndSet(false, true)) {
        LOG.warn(
            "the shuffle service on {} did not take output {} of shuffle {} ({}); this executor "
                + "serves such outputs itself, and they are lost with it",
            service.socket(),
            mapId,
            shuffleId,
            e.getMessage());
      } else {
        LOG.debug("shuffle service did not take output {}: {}", mapId, e.getMessage());
      }
      return null;
    }
    counters.outputsToService.increment();
    return pointer;
  }

  private static void pointTo(MapStatus status, DirectoryPointer pointer) {
    status.updateLocation(withPointer(status.location(), pointer));
  }

  private void notPublished(int shuffleId, long mapId, Exception e, boolean mustPublish) {
    if (mustPublish) {
      throw new IllegalStateException(
          "cannot register map output "
              + mapId
              + " of shuffle "
              + shuffleId
              + " for one-sided reads and spark.shuffle.rdma.fallback=false: "
              + e.getMessage(),
          e);
    }
    counters.outputsServedByFallback.increment();
    if (warned.compareAndSet(false, true)) {
      LOG.warn(
          "map outputs from now on may be served by Spark's own transfer: cannot register "
              + "output {} of shuffle {}: {}",
          mapId,
          shuffleId,
          e.getMessage());
    } else {
      LOG.debug(
          "output {} of shuffle {} served by Spark's transfer: {}",
          mapId,
          shuffleId,
          e.getMessage());
    }
  }
}
