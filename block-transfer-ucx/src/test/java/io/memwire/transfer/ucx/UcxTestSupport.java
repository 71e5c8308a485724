package io.memwire.transfer.ucx;

import io.memwire.transfer.TransferConfig;
import io.memwire.transfer.spi.TransportProvider;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/** What tests outside this package need to know of the provider's internals. */
public final class UcxTestSupport {
  private UcxTestSupport() {}

  /** Skips the calling test, with the reason, when UCX cannot be loaded here. */
  public static void assumeUcx() {
    var why = UcxLibrary.load();
    Assumptions.assumeTrue(why.isEmpty(), () -> "ucx not available: " + why.orElse(""));
  }

  /** Opens a ucx provider directly, for tests that build a node on it. */
  public static TransportProvider open(TransferConfig config) {
    return UcxStart.open(config);
  }

  /**
   * Holds {@code provider}'s progress thread in a task until the returned action runs: its worker
   * does not progress meanwhile (nothing it would serve in software is served).
   */
  public static Runnable holdProgress(TransportProvider provider) throws InterruptedException {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    ((UcxProvider) provider)
        .progress()
        .execute(
            () -> {
              held.countDown();
              try {
                if (!resume.await(5, TimeUnit.MINUTES)) {
                  throw new IllegalStateException("progress held for 5 minutes");
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    if (!held.await(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the progress thread did not take the holding task");
    }
    return resume::countDown;
  }

  /** UCX contexts closing providers left alive because owners held memory UCX allocated. */
  public static long leftMapped() {
    return UcxResources.LEFT_MAPPED.get();
  }

  public static boolean allReleased() {
    return UcxResources.allReleased();
  }

  public static String describe() {
    return UcxResources.describe();
  }
}
