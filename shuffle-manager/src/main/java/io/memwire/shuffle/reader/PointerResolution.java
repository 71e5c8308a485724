package io.memwire.shuffle.reader;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ResolveClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * Service mode: re-resolves directory pointers that died with a shuffle service restart. A read
 * from a service-held output that fails (dead region key, or the service gone for a moment) has its
 * pointer sent once to the service's resolve port on the pointer's own address ({@link
 * ResolveClient}, authenticated with the application's token); the answer is the chunk that
 * replaced it, and the blocks are read again from there, one-sided. One request per pointer per
 * executor: concurrent and later tasks share its result, and later tasks start from the new pointer
 * ({@link #current}). A failed resolution stays failed for this executor, so a pointer costs at
 * most one request. Thread-safe.
 */
public final class PointerResolution {
  /** Sends one RESOLVE and waits for its answer: {@link ResolveClient} outside tests. */
  @FunctionalInterface
  interface Asker {
    DirectoryPointer ask(InetSocketAddress service, int shuffleId, DirectoryPointer old)
        throws IOException;
  }

  private final int port;
  private final Asker asker;

  private record Key(int shuffleId, DirectoryPointer old) {}

  private final Map<Key, CompletableFuture<DirectoryPointer>> known = new ConcurrentHashMap<>();

  /**
   * @param application the application's id as its executors register it with the services
   * @param token the application's token
   * @param port the services' resolve port ({@code memwire.shuffle.service.resolvePort})
   * @param timeout how long one resolution may take in all (the service may be restarting)
   */
  public PointerResolution(String application, byte[] token, int port, Duration timeout) {
    this(port, resolveClient(application, token.clone(), timeout));
  }

  /** A resolution that sends its requests through {@code asker} (a fake in unit tests). */
  PointerResolution(int port, Asker asker) {
    this.port = port;
    this.asker = asker;
  }

  private static Asker resolveClient(String application, byte[] token, Duration timeout) {
    return (service, shuffleId, old) ->
        ResolveClient.resolve(service, application, token, shuffleId, old, timeout);
  }

  /** The pointer {@code p} was resolved to (following later restarts), or {@code p}. */
  DirectoryPointer current(int shuffleId, DirectoryPointer p) {
    DirectoryPointer now = p;
    for (int i = 0; i < 8; i++) { // a chain of restarts, bounded
      CompletableFuture<DirectoryPointer> f = known.get(new Key(shuffleId, now));
      if (f == null || !f.isDone() || f.isCompletedExceptionally()) {
        return now;
      }
      now = f.join();
    }
    return now;
  }

  /**
   * The pointer that replaced {@code old}: the one request for it is sent on {@code threads} (it
   * blocks) the first time; every caller shares its future.
   *
   * @param fresh set to true for the one caller whose call sent the request
   */
  CompletableFuture<DirectoryPointer> resolve(
      int shuffleId, DirectoryPointer old, Executor threads, boolean[] fresh) {
    return known.computeIfAbsent(
        new Key(shuffleId, old),
        k -> {
          fresh[0] = true;
          InetSocketAddress service = new InetSocketAddress(old.region().node().getAddress(), port);
          return CompletableFuture.supplyAsync(
              () -> {
                try {
                  DirectoryPointer p = asker.ask(service, shuffleId, old);
                  if (p.chunk() != old.chunk()) {
                    throw new IOException(
                        "the service answered chunk " + p.chunk() + " for chunk " + old.chunk());
                  }
                  return p;
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              },
              threads);
        });
  }
}
