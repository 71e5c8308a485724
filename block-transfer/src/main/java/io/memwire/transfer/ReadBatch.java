package io.memwire.transfer;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The futures of a batch posted with {@link Connection#read(List)}: one per request, in request
 * order, and one for the whole batch. A batch from {@link Connection#read(List, ReadRequest)} has
 * the {@code after} read's future last. Each successful future hands its caller a {@link
 * TransferBuffer} to release.
 */
public final class ReadBatch {
  private final List<CompletableFuture<TransferBuffer>> results;
  private final CompletableFuture<Void> all;

  ReadBatch(List<CompletableFuture<TransferBuffer>> results) {
    this.results = List.copyOf(results);
    this.all = CompletableFuture.allOf(results.toArray(new CompletableFuture<?>[0]));
  }

  public List<CompletableFuture<TransferBuffer>> results() {
    return results;
  }

  public CompletableFuture<TransferBuffer> result(int i) {
    return results.get(i);
  }

  /** Completes when every request has; exceptionally if any failed. */
  public CompletableFuture<Void> all() {
    return all;
  }

  public int size() {
    return results.size();
  }
}
