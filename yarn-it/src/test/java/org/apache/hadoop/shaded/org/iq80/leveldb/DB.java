package org.apache.hadoop.shaded.org.iq80.leveldb;

import java.io.Closeable;
import java.util.Map;

/** A sorted byte-key store: the members the NodeManager's state store calls. */
public interface DB extends Iterable<Map.Entry<byte[], byte[]>>, Closeable {
  /** The value of {@code key}, or null. */
  byte[] get(byte[] key);

  /** Sets {@code key} to {@code value}, durably. */
  void put(byte[] key, byte[] value);

  /** Removes {@code key}, durably. */
  void delete(byte[] key);

  /** A batch of changes for {@link #write}. */
  WriteBatch createWriteBatch();

  /** Applies {@code batch} at once, durably. */
  void write(WriteBatch batch);

  /** An iterator over a snapshot of the store, in unsigned key order. */
  @Override
  DBIterator iterator();

  /** As {@link #iterator()}; the options are ignored. */
  DBIterator iterator(ReadOptions options);

  /** Nothing to compact here. */
  void compactRange(byte[] begin, byte[] end);
}
