package org.apache.hadoop.shaded.org.iq80.leveldb;

import java.io.Closeable;
import java.util.Iterator;
import java.util.Map;

/** A cursor over a {@link DB}'s entries in key order. */
public interface DBIterator extends Iterator<Map.Entry<byte[], byte[]>>, Closeable {
  /** Moves to the first entry whose key is not below {@code key}. */
  void seek(byte[] key);

  /** Moves to the first entry. */
  void seekToFirst();

  /** Moves to the last entry. */
  void seekToLast();

  /** The entry {@link #next} would return, without moving. */
  Map.Entry<byte[], byte[]> peekNext();

  /** Whether there is an entry before the cursor. */
  boolean hasPrev();

  /** The entry before the cursor, moving back to it. */
  Map.Entry<byte[], byte[]> prev();

  /** The entry before the cursor, without moving. */
  Map.Entry<byte[], byte[]> peekPrev();

  /** Releases nothing: the iterator reads a snapshot. */
  @Override
  void close();
}
