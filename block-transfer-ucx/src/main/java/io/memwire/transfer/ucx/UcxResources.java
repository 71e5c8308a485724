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
        + LISTENERS.get();
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
