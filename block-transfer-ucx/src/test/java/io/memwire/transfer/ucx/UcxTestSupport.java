package io.memwire.transfer.ucx;

import org.junit.jupiter.api.Assumptions;

/** What tests outside this package need to know of the provider's internals. */
public final class UcxTestSupport {
  private UcxTestSupport() {}

  /** Skips the calling test, with the reason, when UCX cannot be loaded here. */
  public static void assumeUcx() {
    var why = UcxLibrary.load();
    Assumptions.assumeTrue(why.isEmpty(), () -> "ucx not available: " + why.orElse(""));
  }

  public static boolean allReleased() {
    return UcxResources.allReleased();
  }

  public static String describe() {
    return UcxResources.describe();
  }
}
