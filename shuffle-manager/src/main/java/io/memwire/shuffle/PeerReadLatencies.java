package io.memwire.shuffle;

import com.codahale.metrics.Histogram;
import com.codahale.metrics.SlidingTimeWindowArrayReservoir;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * Latency of one-sided reads by peer executor: one histogram (microseconds from posting a batch of
 * reads to that peer until the whole batch completed) per peer. The number of peers tracked is
 * bounded by {@link #MAX_PEERS}; reads from further peers are recorded under {@link #OTHER}, so the
 * number of metrics stays bounded with dynamic allocation.
 */
public final class PeerReadLatencies {
  /** Most peers with a histogram of their own. */
  public static final int MAX_PEERS = 32;

  /** The histogram of reads from peers beyond {@link #MAX_PEERS}. */
  public static final String OTHER = "other";

  /** Samples older than this leave the histograms (what a scrape interval usually covers). */
  static final long WINDOW_SECONDS = 300;

  private final Map<String, Histogram> byPeer = new ConcurrentHashMap<>();
  private final CopyOnWriteArrayList<BiConsumer<String, Histogram>> listeners =
      new CopyOnWriteArrayList<>();

  /** Records one batch's latency for a peer (an executor id). */
  public void record(String peer, long micros) {
    histogram(peer).update(micros);
  }

  private Histogram histogram(String peer) {
    Histogram h = byPeer.get(peer);
    if (h != null) {
      return h;
    }
    String key = byPeer.size() >= MAX_PEERS ? OTHER : peer;
    boolean[] created = new boolean[1];
    h =
        byPeer.computeIfAbsent(
            key,
            k -> {
              created[0] = true;
              return new Histogram(
                  new SlidingTimeWindowArrayReservoir(WINDOW_SECONDS, TimeUnit.SECONDS));
            });
    if (created[0]) {
      for (BiConsumer<String, Histogram> l : listeners) {
        l.accept(key, h);
      }
    }
    return h;
  }

  /**
   * Calls {@code listener} for every histogram now and for each one created later (the metrics
   * plugin registers them in Spark's registry this way).
   */
  public void onHistogram(BiConsumer<String, Histogram> listener) {
    listeners.add(listener);
    byPeer.forEach(listener);
  }

  /** The histograms by peer (a copy). */
  public Map<String, Histogram> histograms() {
    return Collections.unmodifiableMap(new LinkedHashMap<>(byPeer));
  }
}
