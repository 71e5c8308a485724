package io.memwire.transfer.ucx;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Live UCX objects of this process, counted where they are created and freed, so tests can check
 * that closed nodes return every one.
 */
final class UcxResources {
  static final AtomicLong CONTEXTS = new AtomicLong();
  static final AtomicLong WORKERS = new AtomicLong();
  static final AtomicLong MEMORY = new AtomicLong();
  static final AtomicLong REMOTE_KEYS = new AtomicLong();
  static final AtomicLong ENDPOINTS = new AtomicLong();
  static final AtomicLong LISTENERS = new AtomicLong();

  /**
   * UCX contexts a closing provider left alive, with their allocations mapped, because owners still
   * held memory UCX allocated (leaks the node's books report; not counted in {@link #MEMORY} and
   * {@link #CONTEXTS} any more).
   */
  static final AtomicLong LEFT_MAPPED = new AtomicLong();

  private UcxResources() {}

  /** All counts, for messages. */
  static String describe() {
    return "contexts="
        + CONTEXTS.get()
        + " workers="
        + WORKERS.get()
        + " memory="
        + MEMORY.get()
        + " remoteKeys="
        + REMOTE_KEYS.get()
        + " endpoints="
        + ENDPOINTS.get()
        + " listeners="
        + LISTENERS.get()
        + " leftMapped="
        + LEFT_MAPPED.get();
  }

  static boolean allReleased() {
    return CONTEXTS.get() == 0
        && WORKERS.get() == 0
        && MEMORY.get() == 0
        && REMOTE_KEYS.get() == 0
        && ENDPOINTS.get() == 0
        && LISTENERS.get() == 0;
  }
}
