package io.memwire.transfer.spi;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * Which unauthenticated handshake a node closes when it is at its cap of connections still in their
 * handshake and a new one arrives: the oldest of the source address holding the most handshakes,
 * the newcomer counted. Peers at one address that connect and never authenticate, however fast they
 * reconnect, so push out only their own handshakes, never a peer authenticating from another
 * address; only when every handshake comes from a different address does the oldest of all go. One
 * policy for every provider's handshake port (tcp's responder, verbs' authentication port, ucx's
 * control port). A peer sharing the attacker's address is not protected.
 */
public final class HandshakeEviction {
  private HandshakeEviction() {}

  /** Stands for the address of peers whose address could not be read. */
  private static final Object UNKNOWN = new Object();

  /**
   * The handshake to close for a newcomer from {@code newcomer} (null: unknown), or null when
   * {@code open} is empty.
   *
   * @param open the handshakes in progress (only those: the caller leaves out ended ones)
   * @param source a handshake's peer address (null: unknown)
   * @param startedNanos when a handshake started, on one monotonic clock
   */
  public static <T> T victim(
      Iterable<T> open,
      InetAddress newcomer,
      Function<T, InetAddress> source,
      ToLongFunction<T> startedNanos) {
    Map<Object, Integer> perSource = new HashMap<>();
    perSource.merge(key(newcomer), 1, Integer::sum);
    for (T h : open) {
      perSource.merge(key(source.apply(h)), 1, Integer::sum);
    }
    Object heaviest = null;
    int most = 0;
    for (Map.Entry<Object, Integer> e : perSource.entrySet()) {
      if (e.getValue() > most) {
        most = e.getValue();
        heaviest = e.getKey();
      }
    }
    T victim = null;
    T oldest = null;
    for (T h : open) {
      if (oldest == null || startedNanos.applyAsLong(h) - startedNanos.applyAsLong(oldest) < 0) {
        oldest = h;
      }
      if ((most == 1 || key(source.apply(h)).equals(heaviest))
          && (victim == null
              || startedNanos.applyAsLong(h) - startedNanos.applyAsLong(victim) < 0)) {
        victim = h;
      }
    }
    // None from the heaviest address is open when it is the newcomer's and ties another's.
    return victim != null ? victim : oldest;
  }

  private static Object key(InetAddress a) {
    return a == null ? UNKNOWN : a;
  }
}
