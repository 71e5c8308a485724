package io.memwire.shuffle.reader;

import io.memwire.transfer.Connection;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.TransferBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A fetch request's connection to its peer, as the stages use it: each read (or batch) posted is
 * timed, its latency (post to completion) recorded in the peer's histogram when it ends well.
 * Posting throws what the connection throws (a RuntimeException when it is closed or broken).
 */
final class PeerLink {
  private final Connection connection;
  private final String execId;
  private final ReadMetrics metrics;

  PeerLink(Connection connection, String execId, ReadMetrics metrics) {
    this.connection = connection;
    this.execId = execId;
    this.metrics = metrics;
  }

  /** The executor whose outputs this link reads. */
  String execId() {
    return execId;
  }

  ReadBatch read(List<ReadRequest> requests) {
    ReadBatch batch = connection.read(requests);
    var unused = timed(batch.all());
    return batch;
  }

  CompletableFuture<TransferBuffer> read(ReadRequest request) {
    return timed(connection.read(request));
  }

  private <T> CompletableFuture<T> timed(CompletableFuture<T> read) {
    long posted = System.nanoTime();
    var unused =
        read.whenComplete(
            (ok, err) -> {
              if (err == null) {
                metrics.readLatency(execId, (System.nanoTime() - posted) / 1000);
              }
            });
    return read;
  }
}
