package io.memwire.flight;

import io.memwire.flight.wire.ServerMessage;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.ArrowBuffer;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageSerializer;

/**
 * The stream listener the wrapped producer writes to in an RDMA exchange, as it would in a DoGet.
 * Each {@code putNext} becomes a lease: wait for the client's credit, make the batch's body
 * readable ({@link LeaseBodies}), add it to the session's window and describe it in one BATCH
 * message. The producer's end and failure go to the {@link ServerSession}, which ends the exchange
 * once the client has read what was leased.
 */
final class LeasingListener implements FlightProducer.ServerStreamListener {
  private final ServerSession session;
  private final SessionMonitor monitor;
  private final ExchangeWriter writer;
  private final LeaseBodies bodies;
  private final ServerResources resources;
  private final long leaseTimeoutNanos;

  private volatile boolean zeroCopy;
  private VectorUnloader unloader;
  private IpcOption option = IpcOption.DEFAULT;

  LeasingListener(
      ServerSession session,
      SessionMonitor monitor,
      ExchangeWriter writer,
      LeaseBodies bodies,
      ServerResources resources) {
    this.session = session;
    this.monitor = monitor;
    this.writer = writer;
    this.bodies = bodies;
    this.resources = resources;
    this.leaseTimeoutNanos = resources.leaseTimeout().toNanos();
  }

  @Override
  public boolean isCancelled() {
    return monitor.isEnded() || writer.isCancelled();
  }

  @Override
  public void setOnCancelHandler(Runnable handler) {
    session.setOnCancel(handler);
  }

  @Override
  public boolean isReady() {
    return monitor.hasCredit() && writer.isReady();
  }

  @Override
  public void setOnReadyHandler(Runnable handler) {
    session.setOnReady(handler);
    writer.setOnReadyHandler(handler);
  }

  @Override
  public void setUseZeroCopy(boolean enabled) {
    this.zeroCopy = enabled;
  }

  @Override
  public void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {
    writer.start(root, dictionaries, option);
    this.option = option;
    this.unloader = new VectorUnloader(root, true, resources.codec(), true);
  }

  @Override
  public void putNext() {
    putNext(null);
  }

  @Override
  public void putNext(ArrowBuf metadata) {
    try {
      if (unloader == null) {
        throw CallStatus.INTERNAL
            .withDescription("Stream was not started, call start()")
            .toRuntimeException();
      }
      if (isCancelled()) {
        return;
      }
      byte[] appMetadata = bytesOf(metadata);
      try (ArrowRecordBatch batch = unloader.getRecordBatch()) {
        lease(batch, appMetadata);
      }
    } finally {
      if (metadata != null) {
        metadata.close();
      }
    }
  }

  private void lease(ArrowRecordBatch batch, byte[] appMetadata) {
    ByteBuffer fb = MessageSerializer.serializeMetadata(batch, option);
    byte[] header = new byte[fb.remaining()];
    fb.get(header);
    long bodyLength = batch.computeBodyLength();
    List<ArrowBuf> bufs = batch.getBuffers();
    List<ArrowBuffer> layout = batch.getBuffersLayout();
    if (!session.awaitCredit(bodyLength)) {
      return;
    }
    LeaseBodies.Prepared lease = bodies.prepare(bufs, layout, bodyLength, zeroCopy);
    long seq = monitor.addLease(bodyLength, lease.guard(), lease.body());
    if (seq < 0) {
      // Ended while the body was prepared: release it here, outside the session's monitor.
      var unused = bodies.end(lease.guard(), lease.body());
      return;
    }
    resources.stats().bodyBytes.add(bodyLength);
    writer.send(
        ServerMessage.batch(
            seq,
            (int) Math.min(Integer.MAX_VALUE, leaseTimeoutNanos / 1_000_000),
            header,
            bodyLength,
            lease.regions(),
            lease.refs(),
            appMetadata,
            lease.guardRef(),
            lease.checksum()));
  }

  @Override
  public void putMetadata(ArrowBuf metadata) {
    try {
      if (isCancelled()) {
        return;
      }
      writer.send(ServerMessage.metadata(monitor.nextSeq(), bytesOf(metadata)));
    } finally {
      if (metadata != null) {
        metadata.close();
      }
    }
  }

  @Override
  public void error(Throwable ex) {
    monitor.producerFailed(ex);
  }

  @Override
  public void completed() {
    session.producerCompleted(zeroCopy);
  }

  private static byte[] bytesOf(ArrowBuf b) {
    if (b == null || b.readableBytes() == 0) {
      return null;
    }
    byte[] out = new byte[(int) b.readableBytes()];
    b.getBytes(b.readerIndex(), out);
    return out;
  }
}
