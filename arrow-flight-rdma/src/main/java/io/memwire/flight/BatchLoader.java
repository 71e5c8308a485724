package io.memwire.flight;

import io.memwire.flight.memory.ArenaMemory;
import java.io.IOException;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;

/**
 * The consumer-side root of an {@link RdmaSource}: loads a batch whose reads have ended into the
 * stream's {@link VectorSchemaRoot} (the registered body wrapped as an Arrow buffer of the caller's
 * allocator, no copy) and keeps the latest application metadata. Used by the consumer thread only.
 */
final class BatchLoader {
  private final BufferAllocator allocator;
  private final ClientStats stats;
  private final FlightStream reader;
  private VectorSchemaRoot root;
  private VectorLoader loader;
  private ArrowBuf latestMetadata;

  /**
   * @param allocator the caller's allocator: holds the root and the wrapped bodies
   * @param stats counts batches and body bytes loaded
   * @param reader the exchange's reader, whose schema the root takes
   */
  BatchLoader(BufferAllocator allocator, ClientStats stats, FlightStream reader) {
    this.allocator = allocator;
    this.stats = stats;
    this.reader = reader;
  }

  /** Loads a batch whose reads have ended; its block goes to the root's buffers. */
  void load(Pull p) {
    ArrowBuf body;
    ArenaMemory.Block block = p.takeBlock();
    if (block == null) {
      body = allocator.getEmpty();
    } else {
      try {
        body = allocator.wrapForeignAllocation(new BlockAllocation(block, p.bodyLength));
      } catch (RuntimeException e) {
        block.release();
        throw FallbackReason.CLIENT_MEMORY.error(
            CallStatus.RESOURCE_EXHAUSTED,
            "cannot account " + "a body of " + p.bodyLength + " bytes: " + e.getMessage(),
            e);
      }
    }
    ArrowRecordBatch batch;
    try {
      batch = MessageSerializer.deserializeRecordBatch(p.header, body); // takes over body
    } catch (IOException | RuntimeException e) {
      body.getReferenceManager().release();
      throw FallbackReason.PROTOCOL.error(
          CallStatus.INTERNAL,
          "bad record batch header in " + "batch " + p.seq + ": " + e.getMessage(),
          e);
    }
    try {
      root.clear();
      loader.load(batch);
    } finally {
      batch.close();
    }
    setLatest(p.appMetadata);
    stats.batchesOneSided.increment();
    stats.bodyBytesOneSided.add(p.bodyLength);
  }

  /** Hands out a metadata-only message: the root is empty, its bytes are the latest metadata. */
  void loadMetadata(byte[] bytes) {
    setLatest(bytes);
    root.clear();
  }

  /** The root, created with the reader's schema on first use. */
  VectorSchemaRoot root() {
    if (root == null) {
      root = VectorSchemaRoot.create(reader.getSchema(), allocator);
      loader = new VectorLoader(root, CommonsCompressionFactory.INSTANCE);
    }
    return root;
  }

  ArrowBuf latestMetadata() {
    return latestMetadata;
  }

  private void setLatest(byte[] bytes) {
    if (latestMetadata != null) {
      latestMetadata.close();
      latestMetadata = null;
    }
    if (bytes != null) {
      latestMetadata = allocator.buffer(bytes.length);
      latestMetadata.setBytes(0, bytes);
      latestMetadata.writerIndex(bytes.length);
    }
  }

  /** Closes the root (when made) and the latest metadata. */
  void close() {
    if (root != null) {
      root.close();
    }
    setLatest(null);
  }
}
