package io.memwire.transfer.internal;

/**
 * The one clock every timeout of block-transfer is decided on (read timeouts, the idle reaper, peer
 * back-offs, the verbs admission window): monotonic nanoseconds, compared only by difference.
 * Injected through constructors, so a test drives all of them with one fake clock.
 */
@FunctionalInterface
public interface NanoClock {
  /** The clock of production code. */
  NanoClock SYSTEM = System::nanoTime;

  /** Now, in nanoseconds of this clock (arbitrary origin; compare by difference only). */
  long nanoTime();
}
