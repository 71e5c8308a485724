package org.apache.hadoop.shaded.org.iq80.leveldb;

import java.io.Closeable;

/** Changes applied together by {@link DB#write}. */
public interface WriteBatch extends Closeable {
  /** Adds setting {@code key} to {@code value}; returns this. */
  WriteBatch put(byte[] key, byte[] value);

  /** Adds removing {@code key}; returns this. */
  WriteBatch delete(byte[] key);

  /** Discards the batch. */
  @Override
  void close();
}
