package io.memwire.flight;

import io.memwire.flight.wire.ServerMessage;
import java.util.function.BooleanSupplier;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one RDMA exchange writes to its client over gRPC: the schema, each data-plane message as app
 * metadata, and the end. Every write to the gRPC listener is made under one lock, and nothing is
 * written once the session has ended: {@link #send} checks that under the lock, and the session
 * moves to ENDED under it ({@link #end}). The lock is taken before the session's monitor, never
 * inside it.
 */
final class ExchangeWriter {
  private static final Logger LOG = LoggerFactory.getLogger(ExchangeWriter.class);

  private final FlightProducer.ServerStreamListener grpc;

  private final BufferAllocator allocator;
  private final BooleanSupplier sessionEnded;

  /** Serializes calls of {@link #grpc}; taken before the session's monitor, never inside it. */
  private final Object lock = new Object();

  /**
   * @param grpc the DoExchange's listener towards the client
   * @param allocator where messages are encoded (Flight takes each buffer over)
   * @param sessionEnded whether the session is in a terminal state (read under the lock)
   */
  ExchangeWriter(
      FlightProducer.ServerStreamListener grpc,
      BufferAllocator allocator,
      BooleanSupplier sessionEnded) {
    this.grpc = grpc;
    this.allocator = allocator;
    this.sessionEnded = sessionEnded;
  }

  /** Sends the schema and dictionaries, as a plain DoGet would. */
  void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {
    synchronized (lock) {
      grpc.start(root, dictionaries, option);
    }
  }

  /** Sends one data-plane message; dropped once the session has ended. */
  void send(ServerMessage m) {
    ArrowBuf buf = allocator.buffer(m.encodedSize());
    try {
      m.encode(buf.nioBuffer(0, m.encodedSize()));
      buf.writerIndex(m.encodedSize());
      synchronized (lock) {
        if (sessionEnded.getAsBoolean()) {
          buf.close();
          return;
        }
        grpc.putMetadata(buf); // Flight takes ownership of buf
      }
    } catch (RuntimeException e) {
      if (buf.getReferenceManager().getRefCount() > 0) {
        buf.close();
      }
      throw e;
    }
  }

  /**
   * Ends the stream towards the client, completed ({@code error == null}) or with the error, when
   * {@code moveToEnded}, run under this writer's lock, moved the session to ENDED; false (nothing
   * written) when the session had ended before.
   */
  boolean end(Throwable error, BooleanSupplier moveToEnded) {
    synchronized (lock) {
      if (!moveToEnded.getAsBoolean()) {
        return false;
      }
      try {
        if (error == null) {
          grpc.completed();
        } else {
          grpc.error(error);
        }
      } catch (RuntimeException e) {
        LOG.debug("ending the exchange failed", e);
      }
      return true;
    }
  }

  boolean isCancelled() {
    return grpc.isCancelled();
  }

  boolean isReady() {
    return grpc.isReady();
  }

  void setOnReadyHandler(Runnable handler) {
    grpc.setOnReadyHandler(handler);
  }

  void setOnCancelHandler(Runnable handler) {
    grpc.setOnCancelHandler(handler);
  }
}
