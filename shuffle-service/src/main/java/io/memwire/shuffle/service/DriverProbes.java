package io.memwire.shuffle.service;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Probes drivers' RPC ports all at once: one non-blocking TCP connect per address, every one
 * bounded by the same timeout, so a round takes at most that timeout however many drivers are
 * silent. The addresses are the ones applications registered (resolved then); nothing else is ever
 * probed.
 */
final class DriverProbes {
  /** What one probe found. */
  enum Result {
    /** It accepted a TCP connection. */
    ANSWERS,
    /** Its host answered that nothing listens there: the driver process is gone. */
    REFUSED,
    /** No answer in time, or no route: the driver may be gone or cut off. */
    SILENT
  }

  private DriverProbes() {}

  /** Probes every address concurrently; returns within about {@code timeoutMs}. */
  static <T> Map<T, Result> probe(Map<T, InetSocketAddress> targets, long timeoutMs)
      throws IOException {
    Map<T, Result> results = new HashMap<>();
    try (Selector selector = Selector.open()) {
      for (Map.Entry<T, InetSocketAddress> t : targets.entrySet()) {
        if (t.getValue().isUnresolved()) {
          results.put(t.getKey(), Result.SILENT);
          continue;
        }
        SocketChannel ch = SocketChannel.open();
        try {
          ch.configureBlocking(false);
          if (ch.connect(t.getValue())) {
            results.put(t.getKey(), Result.ANSWERS);
            ch.close();
          } else {
            ch.register(selector, SelectionKey.OP_CONNECT, t.getKey());
          }
        } catch (IOException | RuntimeException e) {
          results.put(t.getKey(), classify(e));
          ch.close();
        }
      }
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
      while (!selector.keys().isEmpty()) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
          break;
        }
        selector.select(left);
        for (SelectionKey k : selector.selectedKeys()) {
          @SuppressWarnings("unchecked")
          T target = (T) k.attachment();
          SocketChannel ch = (SocketChannel) k.channel();
          try {
            ch.finishConnect();
            results.put(target, Result.ANSWERS);
          } catch (IOException | RuntimeException e) {
            results.put(target, classify(e));
          } finally {
            k.cancel();
            ch.close();
          }
        }
        selector.selectedKeys().clear();
      }
      for (SelectionKey k : List.copyOf(selector.keys())) {
        @SuppressWarnings("unchecked")
        T target = (T) k.attachment();
        results.putIfAbsent(target, Result.SILENT);
        k.channel().close();
      }
    }
    return results;
  }

  private static Result classify(Exception e) {
    String m = e.getMessage();
    return e instanceof ConnectException && m != null && m.contains("refused")
        ? Result.REFUSED
        : Result.SILENT;
  }
}
