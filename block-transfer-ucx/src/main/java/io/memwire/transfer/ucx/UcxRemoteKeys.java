package io.memwire.transfer.ucx;

import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;
import org.openucx.jucx.ucp.UcpRemoteKey;

/**
 * The remote keys one connection unpacked from its peer, each with the bounds of the live region it
 * opens and its GETs in flight. A key whose region the peer closed ({@code GONE}) is destroyed at
 * once, or after its last GET in flight, and only then acknowledged: the peer unmaps the region
 * only when nothing here can read it any more. Confined to the progress thread.
 */
final class UcxRemoteKeys {
  /** An unpacked remote key and the bounds of the live region it opens. */
  static final class Key {
    final long handle;
    final UcpRemoteKey rkey;
    final long address;
    final long length;
    private int inFlight;

    private Key(long handle, UcpRemoteKey rkey, long address, long length) {
      this.handle = handle;
      this.rkey = rkey;
      this.address = address;
      this.length = length;
    }

    /** Whether {@code length} bytes at {@code from} lie inside the region. */
    boolean covers(long from, long length) {
      return from >= address && from + length <= address + this.length;
    }
  }

  private final Map<Long, Key> keys = new HashMap<>();

  /** Keys the peer reported gone while GETs of them were in flight: destroyed after the last. */
  private final Set<Key> gone = Collections.newSetFromMap(new IdentityHashMap<>());

  private final LongConsumer ack;

  /**
   * @param ack tells the peer a key is destroyed with no GET of it in flight ({@code GONE_ACK})
   */
  UcxRemoteKeys(LongConsumer ack) {
    this.ack = ack;
  }

  /** The key of {@code handle}, or null if none was unpacked (or its region is gone). */
  Key find(long handle) {
    return keys.get(handle);
  }

  /** Keeps a key just unpacked for {@code handle}, with its region's bounds. */
  Key add(long handle, UcpRemoteKey rkey, long address, long length) {
    Key k = new Key(handle, rkey, address, length);
    UcxResources.REMOTE_KEYS.incrementAndGet();
    keys.put(handle, k);
    return k;
  }

  /** A GET of {@code k} is posted. */
  void getStarted(Key k) {
    k.inFlight++;
  }

  /** A GET of {@code k} ended: the last one of a gone key destroys and acknowledges it. */
  void getEnded(Key k) {
    k.inFlight--;
    if (gone.contains(k) && k.inFlight == 0) {
      destroy(k);
    }
  }

  /** The peer closed the region of {@code handle}: destroy its key now or after its last GET. */
  void gone(long handle) {
    Key k = keys.remove(handle);
    if (k == null) {
      ack.accept(handle);
    } else if (k.inFlight == 0) {
      destroy(k);
      ack.accept(handle);
    } else {
      gone.add(k);
    }
  }

  private void destroy(Key k) {
    k.rkey.close();
    UcxResources.REMOTE_KEYS.decrementAndGet();
    if (gone.remove(k)) {
      ack.accept(k.handle);
    }
  }

  /** Destroys every key, acknowledging none (the connection is closed, its endpoint first). */
  void destroyAll() {
    for (Key k : keys.values()) {
      k.rkey.close();
      UcxResources.REMOTE_KEYS.decrementAndGet();
    }
    keys.clear();
    for (Key k : gone) {
      k.rkey.close();
      UcxResources.REMOTE_KEYS.decrementAndGet();
    }
    gone.clear();
  }
}
