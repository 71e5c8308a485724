package io.memwire.flight;

/**
 * What the pump thread of an RDMA exchange hands its consumer (the caller of {@link
 * RdmaSource#next()}), in stream order. Exactly one thread produces events and one consumes them;
 * {@link End} or {@link Failed} is the last event of a stream.
 */
sealed interface StreamEvent {
  /** A batch whose reads were started; its {@link Pull#done} says when its body is here. */
  record Batch(Pull pull) implements StreamEvent {}

  /** A metadata-only message of the producer ({@code putMetadata}). */
  record Metadata(byte[] bytes) implements StreamEvent {}

  /** The server's END arrived and every batch was read and freed. */
  record End() implements StreamEvent {}

  /** The exchange failed; {@code cause} says how. */
  record Failed(Throwable cause) implements StreamEvent {}
}
